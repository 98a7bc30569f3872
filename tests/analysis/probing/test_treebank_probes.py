"""Treebank probes end to end on tiny random models: word-piece alignment checked by hand and against the model's
own residual stream, long sentences skipped and counted, MDL against hand-computed and synthetic cases, the report's
shape and determinism, the torchrun split against one process."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bert import BertTokenizer
from bert.analysis.corpus.batching import residual_hooks
from bert.analysis.probing.mdl import EPSILON, block_ends, online_codelength
from bert.analysis.probing.treebank import TreebankSentence, read_treebank
from bert.analysis.probing.pipeline import ProbeSettings, expected_hidden_states_index, run_probes
from bert.analysis.probing.word_features import extract_word_features, word_pieces
from bert.errors import InvalidInputError
from bert_test_support import spawn_two_gloo_ranks, synthetic_conllu

@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    import bert

    return bert.load_pretrained(str(tiny_mlm_folder))


@pytest.fixture(scope="module")
def treebank():
    return read_treebank(synthetic_conllu(40).encode(), name="synthetic.conllu")


def test_word_pieces_first_mean_last_by_hand(tiny_vocab_file):
    tokenizer = BertTokenizer.from_vocab(tiny_vocab_file)
    encoding = tokenizer.encode_words(["the", "mailman", "barked", "zq"])
    assert encoding.tokens == ["[CLS]", "the", "mail", "##man", "barked", "z", "##q", "[SEP]"]
    assert encoding.word_ids == [None, 0, 1, 1, 2, 3, 3, None]
    assert word_pieces(encoding, 4, "first") == [[1], [2], [4], [5]]
    assert word_pieces(encoding, 4, "last") == [[1], [3], [4], [6]]
    assert word_pieces(encoding, 4, "mean") == [[1], [2, 3], [4], [5, 6]]
    assert tokenizer.encode_words(["\x07"]).tokens == ["[CLS]", "[UNK]", "[SEP]"]  # a word with no piece: [UNK]
    with pytest.raises(InvalidInputError, match="pieces"):
        word_pieces(encoding, 4, "middle")


@pytest.mark.parametrize("pieces", ["first", "mean", "last"])
def test_word_features_are_the_residual_stream_at_the_pieces(tiny, pieces):
    model, tokenizer = tiny
    sentences = [TreebankSentence(("the", "mailman", "barked"), {}), TreebankSentence(("her", "cat", "went", "to", "the", "park"), {})]
    features = extract_word_features(model, tokenizer, sentences, pieces, batch_size=1)
    assert features.vectors.shape == (model.config.num_layers + 1, 9, model.config.hidden_size)
    assert features.starts == (0, 3, 9) and features.pieces == pieces
    encoding = tokenizer.encode_words(["the", "mailman", "barked"])
    input_ids, token_type_ids = encoding.tensors()
    _, cache = model.run_with_cache(input_ids, token_type_ids, names=residual_hooks(model))
    stream = torch.stack([cache[h][0] for h in residual_hooks(model)])  # [layer, token, hidden]
    mailman = {"first": stream[:, 2], "last": stream[:, 3], "mean": stream[:, 2:4].mean(1)}[pieces]
    torch.testing.assert_close(features.sentence(0)[:, 1], mailman, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(features.sentence(0)[:, 0], stream[:, 1], atol=1e-5, rtol=1e-5)
    half = extract_word_features(model, tokenizer, sentences, pieces, dtype=torch.float16)
    assert half.vectors.dtype == torch.float16
    torch.testing.assert_close(half.vectors.float(), features.vectors, atol=1e-2, rtol=1e-2)


def test_a_sentence_over_512_pieces_is_skipped_and_counted(minilm):
    model, tokenizer = minilm
    long = TreebankSentence(tuple(["dog"] * 520), {}, line=5)
    short = TreebankSentence(("a", "dog", "barked"), {}, line=1)
    features = extract_word_features(model, tokenizer, [short, long, short])
    assert len(features.sentences) == 2 and features.vectors.shape[1] == 6  # never cut: left out whole
    assert len(features.skipped) == 1 and features.skipped[0].line == 5
    assert "522 word pieces, over the model's 512 positions" in features.skipped[0].reason


def test_mdl_blocks_and_a_hand_computed_code():
    assert block_ends(1000) == [1, 2, 4, 8, 16, 32, 62, 125, 250, 500, 1000]
    assert block_ends(3) == [1, 2, 3]
    x = np.array([[0.0], [1.0]])
    code = online_codelength(x, np.array([2, 2]), num_classes=4)
    # the first label with the uniform code (2 bits); the second from a "probe" that has seen only class 2
    assert code.codelength == pytest.approx(2 + -math.log2(1 - EPSILON + EPSILON / 4))
    assert code.uniform_codelength == 4 and code.compression == pytest.approx(4 / code.codelength)


def test_mdl_is_shorter_for_a_learnable_task_than_for_its_random_control():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 2000)
    x = rng.normal(size=(2000, 8)) + 2.0 * np.eye(8)[labels]  # the label moves the vector along its own axis
    control = rng.permutation(labels)  # the same label counts, no relation to x
    learnable, random = online_codelength(x, labels, 4), online_codelength(x, control, 4)
    assert learnable.codelength < 0.5 * random.codelength
    assert learnable.compression > 2 and random.compression == pytest.approx(1, abs=0.1)


def test_expected_layer_of_hand_made_gains():
    assert expected_hidden_states_index([0.5, 0.7, 0.8, 0.8]) == pytest.approx((1 * 0.2 + 2 * 0.1) / 0.3)
    # a layer worse than one below it gains nothing (running best 0.5 0.7 0.7 0.9): gains 0.2 at 1, 0.2 at 3
    assert expected_hidden_states_index([0.5, 0.7, 0.6, 0.9]) == pytest.approx((1 * 0.2 + 3 * 0.2) / 0.4)
    assert expected_hidden_states_index([0.5, 0.4, 0.4]) is None


@pytest.mark.slow
def test_report_shape_and_determinism(tiny, treebank):
    model, tokenizer = tiny
    settings = ProbeSettings(seed=1, mdl=True, max_train_words=100)
    report = run_probes(model, tokenizer, treebank, settings=settings, model_name="tiny")
    assert set(report.tasks) == {"upos", "deprel", "arcs", "distance", "depth"}  # xpos is "_" throughout: no task
    assert report.num_train_sentences == 32 and report.num_test_sentences == 8
    layers = model.config.num_layers + 1
    for name in ("upos", "deprel", "arcs"):
        result = report.tasks[name]
        assert [l["hidden_states_index"] for l in result.layers] == list(range(layers))
        assert all(l["selectivity"] == pytest.approx(l["accuracy"] - l["control_accuracy"]) for l in result.layers)
        assert result.selectivity_at_best == result.layers[result.best_hidden_states_index]["selectivity"]
        assert result.num_train == 100 and any("seeded sample of 100" in note for note in result.notes)
    assert {"codelength", "compression", "control_codelength"} <= set(report.tasks["upos"].layers[0])
    assert "codelength" not in report.tasks["arcs"].layers[0]  # MDL: word-tag tasks only
    assert {"uuas", "spearman"} <= set(report.tasks["distance"].layers[0]) and "root_accuracy" in report.tasks["depth"].layers[0]
    # synthetic sentences all have one shape: the chain finds the/NOUN, NOUN/VERB, at/the... 3 of 5 edges
    assert report.baselines["linear_uuas"] == pytest.approx(3 / 5)
    assert report.baselines["embeddings_uuas"] == report.tasks["distance"].layers[0]["uuas"]
    again = run_probes(model, tokenizer, treebank, settings=settings, model_name="tiny")
    assert again.to_dict() | {"timings_s": {}} == report.to_dict() | {"timings_s": {}}
    edges = report.predicted_edges(0, 1)
    assert len(edges) == 5 and report.gold_edges(0) == {(0, 1), (1, 2), (2, 5), (3, 5), (4, 5)}


def test_bad_task_requests_are_refused(tiny, treebank):
    model, tokenizer = tiny
    with pytest.raises(InvalidInputError, match="does not support the task 'xpos'"):
        run_probes(model, tokenizer, treebank, tasks=["xpos"])
    with pytest.raises(InvalidInputError, match="pieces"):
        run_probes(model, tokenizer, treebank, settings=ProbeSettings(pieces="middle"))


def _extract_on_rank(rank: int, folder: str, text: str, out: str) -> None:
    import bert

    model, tokenizer = bert.load_pretrained(folder)
    sentences = read_treebank(text.encode(), name="synthetic.conllu").sentences
    torch.save(extract_word_features(model, tokenizer, sentences, "mean", batch_size=3).vectors, f"{out}-{rank}.pt")


@pytest.mark.slow
def test_two_ranks_give_the_features_of_one_process(tiny, tiny_mlm_folder, tmp_path):
    model, tokenizer = tiny
    text = synthetic_conllu(11, seed=4)
    spawn_two_gloo_ranks(_extract_on_rank, [(str(tiny_mlm_folder), text, str(tmp_path / "vectors"))])
    alone = extract_word_features(model, tokenizer, read_treebank(text.encode(), name="s.conllu").sentences, "mean")
    for rank in range(2):
        torch.testing.assert_close(torch.load(tmp_path / f"vectors-{rank}.pt", weights_only=True), alone.vectors, atol=1e-5, rtol=1e-5)


def test_bert_base_distance_probe_peaks_in_the_middle_layers():
    """Hewitt & Manning (2019) find BERT-base's distance probe best in layers 6-9 of 12 (on the Penn Treebank)."""
    from bert import hub
    from bert.analysis.probing.treebank import builtin_treebank

    folder = hub.cached_snapshot("bert-base-uncased")
    if folder is None or not hub.has_weights(folder):
        pytest.skip("bert-base-uncased is not in the local Hugging Face cache (python -m bert download bert-base-uncased)")
    import bert

    model, tokenizer = bert.load_pretrained("bert-base-uncased")
    report = run_probes(model, tokenizer, builtin_treebank("dev"), builtin_treebank("test"), tasks=["distance"])
    uuas = report.tasks["distance"].measure("uuas")
    assert 6 <= report.tasks["distance"].best_hidden_states_index <= 9, uuas
    assert max(uuas) > report.baselines["linear_uuas"] and max(uuas) > uuas[0]
