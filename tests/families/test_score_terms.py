"""bert.analysis.attention.score_terms against transformers' DeBERTa-v2 on the same random weights (He et al. 2021,
eq. 4): the three terms of every head add up to the scores transformers' own attention hands to its softmax, and
each term is a hand computation, for one head, from the q, k and relative-position tensors transformers' layer reads
(its layer input, its relative positions, its LayerNorm'd relative embeddings, recorded by a pre-hook on
DisentangledSelfAttention). The sentence is longer than the tiny config's exact distances (8 buckets: exact below 4),
so the log buckets are in play. A model without relative attention gets the typed error that says why."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bert
from bert.analysis.attention.score_terms import TERMS, ScoreTerms, check_has_terms, score_terms, score_terms_cost
from bert.config import BertConfig
from bert.errors import InvalidInputError, NoPositionTermsError
from family_support import build_hf, deberta_pass, load_saved

SENTENCE = "the dog barked at the cat and the man went to the park with the [MASK]."


@pytest.fixture(scope="module")
def deberta(tmp_path_factory, tiny_vocab_file):
    """(ours, its tokenizer, transformers' DebertaV2ForMaskedLM) on the same random weights."""
    theirs = build_hf("deberta-v2", "DebertaV2ForMaskedLM")
    folder = tmp_path_factory.mktemp("deberta_terms")
    ours = load_saved(theirs, folder, tiny_vocab_file)
    return ours, bert.load_pretrained(str(folder))[1], theirs


def by_hand(read: dict, head: int, heads: int) -> dict[str, np.ndarray]:
    """One head's three terms from transformers' layer input: c2c[i, j] = q_i · k_j, c2p[i, j] = q_i · Kr[δ(i, j)],
    p2c[i, j] = Qr[δ(i, j)] · k_j, with δ(i, j) transformers' bucketed i − j shifted by the span and clipped to the
    table, Qr and Kr the relative embeddings through the layer's query and key maps; all over sqrt(3 * head_dim)."""
    module, x = read["module"], read["x"].double()
    size = x.shape[-1] // heads
    rows = slice(head * size, (head + 1) * size)

    def mapped(linear, values):
        return values @ linear.weight.detach().double()[rows].T + linear.bias.detach().double()[rows]

    span = module.pos_ebd_size
    table = read["embeddings"].double()[: 2 * span]
    q, k = mapped(module.query_proj, x), mapped(module.key_proj, x)  # [seq, head_dim]
    position_q, position_k = mapped(module.query_proj, table), mapped(module.key_proj, table)  # [2 span, head_dim]
    index = (read["relative"].reshape(x.shape[0], x.shape[0]) + span).clamp(0, 2 * span - 1)  # [query, key]
    scale = (3 * size) ** 0.5
    seq = range(x.shape[0])
    c2p = [[float(q[i] @ position_k[index[i, j]]) for j in seq] for i in seq]
    p2c = [[float(position_q[index[i, j]] @ k[j]) for j in seq] for i in seq]
    return {"c2c": (q @ k.T).numpy() / scale, "c2p": np.array(c2p) / scale, "p2c": np.array(p2c) / scale}


def test_terms_sum_to_transformers_scores_and_each_is_the_hand_computation(deberta):
    ours, tokenizer, theirs = deberta
    encoding = tokenizer.encode(SENTENCE)
    assert len(encoding) > 8  # beyond the exact distances: the log buckets are used
    terms = score_terms(ours, encoding)
    heads, layers = ours.config.num_heads, ours.config.num_layers
    assert set(terms) == {(layer, head) for layer in range(layers) for head in range(heads)}
    reads, scores = deberta_pass(theirs, torch.tensor([encoding.input_ids]))
    for (layer, head), split in terms.items():
        assert (split.layer, split.head, split.tokens) == (layer, head, tuple(encoding.tokens))
        np.testing.assert_allclose(split.scores, scores[layer][head].double().numpy(), atol=1e-5)
        expected = by_hand(reads[layer], head, heads)
        for term, values in split.terms().items():
            np.testing.assert_allclose(values, expected[term], atol=1e-5, err_msg=f"layer {layer} head {head} {term}")
            assert np.abs(values).max() > 1e-3 and not values.flags.writeable  # every term is there, read-only
    one_layer = score_terms(ours, encoding, layer=1)
    assert set(one_layer) == {(1, head) for head in range(heads)}
    np.testing.assert_allclose(one_layer[1, 0].content_to_position, terms[1, 0].content_to_position, atol=1e-6)


def test_a_term_the_model_does_not_compute_is_zeros(tmp_path, tiny_vocab_file):
    """A DeBERTa with content → position only (pos_att_type "c2p", exact distances): position → content is zeros,
    and the other two add up to transformers' softmax input (scaled by sqrt(2 * head_dim))."""
    import transformers

    from family_support import hf_family_config

    fields = hf_family_config("deberta-v2").to_dict() | dict(pos_att_type="c2p", position_buckets=-1, max_relative_positions=12)
    torch.manual_seed(0)
    theirs = transformers.DebertaV2ForMaskedLM(transformers.DebertaV2Config(**fields)).eval()
    ours = load_saved(theirs, tmp_path, tiny_vocab_file)
    encoding = bert.load_pretrained(str(tmp_path))[1].encode(SENTENCE)
    _, scores = deberta_pass(theirs, torch.tensor([encoding.input_ids]))
    split = score_terms(ours, encoding, layer=1)[1, 1]
    assert not split.position_to_content.any() and np.abs(split.content_to_position).max() > 1e-3
    np.testing.assert_allclose(split.scores, scores[1][1].double().numpy(), atol=1e-5)


def test_shares_are_each_terms_part_of_the_total_magnitude():
    """Hand-computed: |c2c| sums to 4, |c2p| to 2, |p2c| to 2 (of 8)."""
    split = ScoreTerms(0, 0, ("a", "b"), np.array([[1.0, -1], [1, -1]]), np.array([[0.5, 0], [-1, 0.5]]),
                       np.array([[0.0, -2], [0, 0]]))
    assert split.shares() == {"c2c": 0.5, "c2p": 0.25, "p2c": 0.25}
    np.testing.assert_array_equal(split.scores, [[1.5, -3], [0, -0.5]])
    assert list(TERMS.values()) == ["content → content", "content → position", "position → content"]


def test_a_bert_model_gets_the_typed_error(tiny_model, tokenizer, deberta):
    with pytest.raises(NoPositionTermsError, match="adds absolute positions to its input.*only DeBERTa splits"):
        score_terms(tiny_model, tokenizer.encode("the dog barked"))
    ours, deberta_tokenizer, _ = deberta
    with pytest.raises(InvalidInputError, match="layer 5 is outside the model's 2 layers"):
        score_terms(ours, deberta_tokenizer.encode("the dog"), layer=5)


@pytest.mark.parametrize("family,words", [("modernbert", "turns each head's q and k by their positions"),
                                          ("roberta", "adds absolute positions")])
def test_each_family_is_told_how_it_takes_positions(family, words):
    with pytest.raises(NoPositionTermsError, match=f"{words}.*only DeBERTa splits.*Load a DeBERTa model"):
        check_has_terms(BertConfig.of_family(family, hidden_size=16, num_heads=2))
    check_has_terms(BertConfig.of_family("deberta-v2", hidden_size=16, num_heads=2))  # DeBERTa has them: no error


def test_the_cost_is_the_one_pass_it_makes(deberta, monkeypatch):
    ours, tokenizer, _ = deberta
    encoding = tokenizer.encode(SENTENCE)
    calls = []
    run = ours.run_with_cache
    monkeypatch.setattr(ours, "run_with_cache", lambda input_ids, *args, **kwargs: calls.append(input_ids.shape) or run(input_ids, *args, **kwargs))
    score_terms(ours, encoding, layer=0)
    cost = score_terms_cost(len(encoding))
    assert [shape[0] for shape in calls] == [cost.forward_passes] and calls[0][1] == cost.tokens
