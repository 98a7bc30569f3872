"""MLP neurons across a corpus: the one-pass scan against a brute-force pass with transformers forward hooks on
the same weights; histograms against numpy; the tag mix against a hand count; the ranking probe against
scikit-learn's own score; ablation through the intervention against a transformers hook doing the same."""
from collections import Counter

import numpy as np
import pytest
import torch

from bert.analysis.features.corpora import corpus_from_texts, corpus_from_treebank, load_corpus
from bert.analysis.features.neuron_ranking import ablate_ranked, rank_neurons, set_neurons, word_activations
from bert.analysis.features.neurons import NEURON_BINS, scan_neurons, tag_mix, top_examples
from bert.analysis.probing.treebank import read_treebank
from bert.errors import InvalidInputError
from bert.hooks import hook_name
from bert.pretrained import load_folder
from bert_test_support import TWO_SENTENCE_CONLLU

TEXTS = ["the dog barked at the mail man", "her cat went to the park", "the cat is at the park and the dog is to",
         "a dog went to her park", "the mail man is at the dog park", "her dog barked and the cat went",
         "cat", "the park is to the dog and to her cat and to the mail man"]


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    model, tokenizer = load_folder(tiny_mlm_folder)
    return model.eval(), tokenizer


@pytest.fixture(scope="module")
def reference_activations(tiny_mlm_folder, tiny):
    """[row, neuron] per layer: each sentence alone through transformers, GELU outputs caught by forward hooks."""
    from transformers import BertModel

    _, tokenizer = tiny
    reference = BertModel.from_pretrained(tiny_mlm_folder, add_pooling_layer=False).eval()
    caught: dict[int, list[torch.Tensor]] = {}
    for number, layer in enumerate(reference.encoder.layer):
        layer.intermediate.register_forward_hook(lambda module, inputs, output, n=number: caught.setdefault(n, []).append(output[0]))
    with torch.no_grad():
        for text in TEXTS:
            input_ids, token_type_ids = tokenizer.encode(text).tensors()
            reference(input_ids, token_type_ids=token_type_ids)
    return {layer: torch.cat(parts).numpy() for layer, parts in caught.items()}


@pytest.mark.parametrize("layer", [0, 1])
def test_top_k_equals_a_brute_force_pass_with_transformers(tiny, reference_activations, layer):
    model, tokenizer = tiny
    corpus = corpus_from_texts("test", TEXTS, tokenizer)
    k = 7
    scan = scan_neurons(model, corpus, layer, tokenizer.pad_id, k=k, batch_size=3)  # several length-sorted batches
    expected = reference_activations[layer]  # [row, neuron] in corpus order
    assert expected.shape == (corpus.num_tokens, model.config.intermediate_size)
    order = np.argsort(-expected, axis=0, kind="stable")[:k].T  # [neuron, k]
    np.testing.assert_allclose(scan.top_values, np.take_along_axis(expected.T, order, 1), atol=1e-5)
    gaps = np.diff(-np.sort(-expected, axis=0)[: k + 1], axis=0).T  # no near-ties: the rows must be the same
    clear = (np.abs(gaps) > 1e-4).all(1)
    assert clear.mean() > 0.9
    np.testing.assert_array_equal(scan.top_rows[clear], order[clear])
    np.testing.assert_allclose(scan.means, expected.mean(0), atol=1e-5)
    clipped = np.clip(expected, NEURON_BINS[0], NEURON_BINS[-1])
    for neuron in range(0, model.config.intermediate_size, 17):
        counts, _ = np.histogram(clipped[:, neuron], NEURON_BINS)
        np.testing.assert_array_equal(scan.counts[neuron], counts)


def test_top_examples_name_sentence_position_and_token(tiny, reference_activations):
    model, tokenizer = tiny
    corpus = corpus_from_texts("test", TEXTS, tokenizer)
    scan = scan_neurons(model, corpus, 1, tokenizer.pad_id, k=5)
    expected = reference_activations[1][:, 3]
    for example in top_examples(scan, corpus, 3):
        encoding = tokenizer.encode(example.sentence)
        row = corpus.offsets[example.sentence_index] + example.position
        assert example.sentence == TEXTS[example.sentence_index]
        assert example.token == encoding.tokens[example.position]
        assert example.activation == pytest.approx(float(expected[row]), abs=1e-5)


def test_a_corpus_smaller_than_k_gives_every_token(tiny):
    model, tokenizer = tiny
    corpus = corpus_from_texts("one word", ["cat"], tokenizer)
    scan = scan_neurons(model, corpus, 0, tokenizer.pad_id, k=10)
    examples = top_examples(scan, corpus, 0)
    assert sorted(e.token for e in examples) == ["[CLS]", "[SEP]", "cat"]


def test_tag_mix_counts_the_top_examples_tags(tiny):
    model, tokenizer = tiny
    corpus = corpus_from_treebank("tiny", read_treebank(TWO_SENTENCE_CONLLU.encode(), name="t.conllu").sentences, tokenizer)
    scan = scan_neurons(model, corpus, 1, tokenizer.pad_id, k=4)
    tags = [tag or "[special]" for sentence in corpus.tags["upos"] for tag in sentence]
    mix = tag_mix(scan, corpus, 5, "upos")
    top = Counter(tags[row] for row in scan.top_rows[5])
    for tag, (share, corpus_share) in mix.items():
        assert share == pytest.approx(top[tag] / 4)
        assert corpus_share == pytest.approx(tags.count(tag) / len(tags))
    assert set(mix) == set(tags)
    with pytest.raises(InvalidInputError, match="no 'xpos' tags"):
        tag_mix(scan, corpus, 5, "xpos")


def test_bad_layer_neuron_and_corpus_are_refused(tiny, tmp_path):
    model, tokenizer = tiny
    corpus = corpus_from_texts("test", TEXTS, tokenizer)
    with pytest.raises(InvalidInputError, match="layer must be"):
        scan_neurons(model, corpus, model.config.num_layers, tokenizer.pad_id)
    scan = scan_neurons(model, corpus, 0, tokenizer.pad_id, k=2)
    with pytest.raises(InvalidInputError, match="outside"):
        top_examples(scan, corpus, model.config.intermediate_size)
    with pytest.raises(InvalidInputError, match="neither a file nor a folder"):
        load_corpus(tmp_path / "missing.txt", tokenizer)
    with pytest.raises(InvalidInputError, match="empty"):
        corpus_from_texts("blank", ["the dog", "  "], tokenizer)
    with pytest.raises(InvalidInputError, match="too long"):
        corpus_from_texts("long", ["the dog " * 40], tokenizer, max_length=32)


def test_ranking_probe_is_scikit_learns_and_ablation_matches_a_transformers_hook(tiny, tiny_mlm_folder):
    from transformers import BertForMaskedLM

    model, tokenizer = tiny
    treebank = read_treebank((TWO_SENTENCE_CONLLU * 6).encode(), name="t.conllu")
    corpus = corpus_from_treebank("tiny", treebank.sentences, tokenizer)
    ranking = rank_neurons(model, corpus, 1, "upos", tokenizer.pad_id, max_words=None)
    features, labels = word_activations(model, corpus, 1, "upos", tokenizer.pad_id)
    assert features.shape == (treebank.num_words, model.config.intermediate_size)
    assert list(labels[:3]) == ["DET", "NOUN", "VERB"]
    importance = np.abs(ranking.probe[-1].coef_).sum(0)
    assert list(ranking.order[:5]) == list(np.argsort(-importance, kind="stable")[:5])
    result = ablate_ranked(model, tokenizer, ranking, corpus, share=0.05, mode="zero", draws=2, max_words=None)
    assert result.probe_accuracy["intact"] == pytest.approx(ranking.probe.score(features, labels))
    assert result.neurons == round(0.05 * model.config.intermediate_size)
    # the model-side ablation against transformers with a forward hook that zeroes the same neurons
    neurons = result.top
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder).eval()

    def zero_them(module, inputs, output):
        output = output.clone()
        output[..., neurons] = 0
        return output

    reference.bert.encoder.layer[1].intermediate.register_forward_hook(zero_them)
    input_ids, token_type_ids = tokenizer.encode("the dog barked at her cat").tensors()
    with torch.no_grad():
        expected = reference(input_ids, token_type_ids=token_type_ids).logits
        ours, _ = model.run_with_cache(input_ids, token_type_ids, names=[], interventions={
            hook_name("mlp_post", 1): set_neurons(neurons, torch.zeros(model.config.intermediate_size))})
    torch.testing.assert_close(ours, expected, atol=1e-4, rtol=1e-4)
    with pytest.raises(InvalidInputError, match="mode"):
        ablate_ranked(model, tokenizer, ranking, corpus, mode="half")


@pytest.mark.parametrize("version", ["installed", "1.3.0"])
def test_the_ranking_probe_is_an_elastic_net_on_every_scikit_learn_it_allows(version, monkeypatch):
    """Synthetic data: 3 informative inputs out of 60. The L1 part of the penalty sets weights exactly to zero,
    which an L2 probe (l1_ratio 0) never does; "1.3.0" plays the oldest scikit-learn pyproject.toml allows, which
    ignores l1_ratio unless the penalty is named."""
    import warnings

    import sklearn

    from bert.analysis.features.neuron_ranking import elastic_net_probe

    if version != "installed":
        monkeypatch.setattr(sklearn, "__version__", version)
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(400, 60))
    labels = np.array(["a", "b", "c"])[(inputs[:, :3] + 0.3 * rng.normal(size=(400, 3))).argmax(1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # newer scikit-learn: `penalty` is deprecated
        probe = elastic_net_probe(l1_ratio=0.5, strength=0.1, max_iter=1000).fit(inputs, labels)[-1]
        dense = elastic_net_probe(l1_ratio=0.0, strength=0.1, max_iter=1000).fit(inputs, labels)[-1].coef_
    if version != "installed":  # before 1.8, l1_ratio counts only with this penalty named
        assert probe.penalty == "elasticnet"
    sparse = probe.coef_
    assert (sparse == 0).sum() > sparse.size // 4
    assert (dense == 0).sum() == 0
    assert (sparse[:, :3] != 0).all()  # the informative inputs keep their weights
