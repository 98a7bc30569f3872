"""Comparing two models whose tokenizers differ (BERT's WordPiece, RoBERTa's byte-level BPE, ALBERT's
SentencePiece): word by word, each word the mean of its pieces. Checked against `transformers` on the same
weights (its tokenizer's offsets, its hidden states) and against linear CKA written in the examples' space
(Kornblith et al. 2019, the kernel form), a formula other than the library's.

The models are tiny random ones built by transformers' classes, each with its family's own tokenizer trained
offline (tests/tokenizer_support.py), saved in temporary folders.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bert import load_pretrained
from bert.analysis.corpus.batching import residual_hooks
from bert.analysis.representations.compare import compare_models, comparison_cost, pool_words, shared_words
from bert.errors import InvalidInputError
from bert_test_support import SENTENCES
from tokenizer_support import family_folder

transformers = pytest.importorskip("transformers")

HAND = "The dog's bone, isn't it?"
# The words both tokenizers agree on, by hand: WordPiece splits "dog", "'", "s" and "isn", "'", "t"; byte-level BPE
# "dog", "'s" and "isn", "'t"; the finest split both agree on joins "'" and "s" (and "'" and "t").
HAND_WORDS = ["The", "dog", "'s", "bone", ",", "isn", "'t", "it", "?"]
ZERO_WIDTH = "a \u200b b"  # WordPiece drops the zero-width space; byte-level BPE keeps it as a word of its own


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {"bert": family_folder("bert", root / "bert"), "roberta": family_folder("roberta", root / "roberta", seed=4),
            "albert": family_folder("albert", root / "albert", seed=5)}  # ALBERT: one layer applied three times


@pytest.fixture(scope="module")
def loaded(folders):
    return {name: load_pretrained(str(folder)) for name, folder in folders.items()}


def spans_of(text: str, words: list[str]) -> list[tuple[int, int]]:
    """Each word's characters in the text, found left to right."""
    spans, cursor = [], 0
    for word in words:
        start = text.index(word, cursor)
        spans.append((start, start + len(word)))
        cursor = start + len(word)
    return spans


def reference_word_vectors(folder, text: str, spans: list[tuple[int, int]]) -> torch.Tensor:
    """transformers on the folder: [layer + 1, word, hidden], each word the mean of the hidden states of the pieces
    whose characters (its tokenizer's offsets) lie inside the word's span, a lone "Ġ" (no character: offsets (4, 4)
    where a word starts at 4) included."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    encoded = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = encoded.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        hidden = torch.stack(model(**encoded, output_hidden_states=True).hidden_states)[:, 0]  # [layer + 1, seq, hidden]
    special = set(tokenizer.all_special_ids)
    ids = encoded["input_ids"][0].tolist()
    vectors = []
    for start, end in spans:
        pieces = [i for i, (a, b) in enumerate(offsets) if ids[i] not in special and start <= a and b <= end]
        assert pieces, (text, start, end)
        vectors.append(hidden[:, pieces].mean(1))
    return torch.stack(vectors, 1)


def our_word_vectors(loaded_model, text: str, token_words) -> torch.Tensor:
    model, tokenizer = loaded_model
    ids, types = tokenizer.encode(text).tensors()
    with torch.no_grad():
        _, cache = model.run_with_cache(ids, types, names=residual_hooks(model))
    return pool_words(cache.residual_stream()[:, 0], token_words)


def word_texts(text: str, encoding, token_words) -> list[str]:
    spans: dict[int, tuple[int, int]] = {}
    for word, (start, end) in zip(token_words, encoding.offsets):
        if word is not None:
            first, last = spans.get(word, (start, end))
            spans[word] = (min(first, start), max(last, end))
    return [text[slice(*spans[w])] for w in sorted(spans)]


def test_the_shared_words_are_the_finest_split_both_tokenizers_agree_on(loaded):
    (_, bert_tokenizer), (_, roberta_tokenizer) = loaded["bert"], loaded["roberta"]
    a, b = bert_tokenizer.encode(HAND), roberta_tokenizer.encode(HAND)
    words_a, words_b = shared_words(HAND, a, b)
    assert word_texts(HAND, a, words_a) == word_texts(HAND, b, words_b) == HAND_WORDS
    assert [w for w, special in zip(words_a, a.special) if special] == [None, None]  # [CLS] and [SEP]: no word
    # against SentencePiece, which splits at spaces only, "isn't" and "dog's" stay whole
    albert = loaded["albert"][1].encode(HAND)
    words_a, words_c = shared_words(HAND, a, albert)
    assert word_texts(HAND, albert, words_c) == ["The", "dog's", "bone,", "isn't", "it?"]


def test_each_word_is_the_mean_of_its_pieces_as_transformers_computes_them(loaded, folders):
    a, b = (loaded[name][1].encode(HAND) for name in ("bert", "roberta"))
    words_a, words_b = shared_words(HAND, a, b)
    spans = spans_of(HAND, HAND_WORDS)
    for name, words in (("bert", words_a), ("roberta", words_b)):
        ours = our_word_vectors(loaded[name], HAND, words)
        expected = reference_word_vectors(folders[name], HAND, spans)
        assert ours.shape == expected.shape == (3, len(HAND_WORDS), 32)
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-5)


def test_pool_words_hand_computed():
    states = torch.arange(12, dtype=torch.float32).reshape(6, 2)  # [seq, hidden]: rows [0, 1], [2, 3], ...
    pooled = pool_words(states, [None, 0, 0, 1, 1, None])  # [CLS] w0 w0 w1 w1 [SEP]
    torch.testing.assert_close(pooled, torch.tensor([[3.0, 4.0], [7.0, 8.0]]))  # (2+4)/2, (3+5)/2; (6+8)/2, (7+9)/2
    with pytest.raises(InvalidInputError, match="at least one piece"):
        pool_words(states, [None, 0, 0, 2, 2, None])


def kernel_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA in the examples' space (Kornblith et al. 2019, eq. 2 with linear kernels): HSIC(K, L) /
    sqrt(HSIC(K, K) HSIC(L, L)), K = X Xᵀ, L = Y Yᵀ, HSIC(K, L) = tr(K H L H) with H = I - 1/n."""
    n = x.shape[0]
    h = np.eye(n) - np.ones((n, n)) / n
    k, l = x @ x.T, y @ y.T
    hsic = lambda p, q: np.trace(p @ h @ q @ h)
    return hsic(k, l) / np.sqrt(hsic(k, k) * hsic(l, l))


def test_bert_against_roberta_word_by_word_equals_the_reference(loaded, folders):
    sentences = [HAND, SENTENCES[1], SENTENCES[2], SENTENCES[7]]
    (model_a, tokenizer_a), (model_b, tokenizer_b) = loaded["bert"], loaded["roberta"]
    result = compare_models(model_a, model_b, tokenizer_a, sentences, tokenizer_b=tokenizer_b, batch_size=3)
    assert result.unit == "word" and result.skipped == 0 and result.attention_js is None
    assert result.cka.shape == (3, 3) and result.num_sentences == 4
    vectors = {name: [] for name in ("bert", "roberta")}
    for text in sentences:
        a, b = (loaded[name][1].encode(text) for name in ("bert", "roberta"))
        words_a, words_b = shared_words(text, a, b)
        spans = spans_of(text, word_texts(text, a, words_a))
        for name in vectors:
            vectors[name].append(reference_word_vectors(folders[name], text, spans))
    x, y = (torch.cat(vectors[name], 1).double().numpy() for name in ("bert", "roberta"))
    assert result.num_examples == x.shape[1] == 9 + 7 + 11 + 10  # words and full stops
    expected = np.array([[kernel_cka(x[i], y[j]) for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(result.cka, expected, atol=1e-6)


def test_a_model_against_itself_by_words_is_one_on_the_diagonal(loaded):
    model, tokenizer = loaded["roberta"]
    result = compare_models(model, model, tokenizer, SENTENCES[:6], unit="word")
    assert result.unit == "word" and result.cka.shape == (3, 3)
    np.testing.assert_allclose(result.layer_cka, 1.0, atol=1e-9)


def test_different_depths_give_a_rectangular_matrix(loaded):
    (model_a, tokenizer_a), (model_b, tokenizer_b) = loaded["bert"], loaded["albert"]
    result = compare_models(model_a, model_b, tokenizer_a, SENTENCES[:6], tokenizer_b=tokenizer_b)
    assert result.cka.shape == (3, 4) and result.layers_b[-1] == "after layer 2" and result.layer_cka is None
    assert ((result.cka > 0) & (result.cka <= 1 + 1e-9)).all()


def test_sentences_the_tokenizers_split_differently_are_skipped_and_counted(loaded):
    (model_a, tokenizer_a), (model_b, tokenizer_b) = loaded["bert"], loaded["roberta"]
    a, b = tokenizer_a.encode(ZERO_WIDTH), tokenizer_b.encode(ZERO_WIDTH)
    assert shared_words(ZERO_WIDTH, a, b) is None
    result = compare_models(model_a, model_b, tokenizer_a, [ZERO_WIDTH, *SENTENCES[:4]], tokenizer_b=tokenizer_b)
    assert (result.num_sentences, result.skipped) == (4, 1)
    with pytest.raises(InvalidInputError, match="all 2 sentences"):
        compare_models(model_a, model_b, tokenizer_a, [ZERO_WIDTH, ZERO_WIDTH], tokenizer_b=tokenizer_b)
    with pytest.raises(InvalidInputError, match="different vocabularies"):
        compare_models(model_a, model_b, tokenizer_a, SENTENCES[:4], tokenizer_b=tokenizer_b, unit="token")


def test_a_cut_sentence_keeps_the_words_before_the_cut_in_both(loaded):
    (_, tokenizer_a), (_, tokenizer_b) = loaded["bert"], loaded["roberta"]
    text = SENTENCES[11]  # "Tokenization splits rare words like kroxldyphivc into pieces."
    full = shared_words(text, tokenizer_a.encode(text), tokenizer_b.encode(text))
    whole = word_texts(text, tokenizer_a.encode(text), full[0])
    cut = tokenizer_b.encode(text, max_length=8, truncate=True)  # <s>, 6 pieces, </s>: the 6th may end inside a word
    assert cut.truncated > 0
    words_a, words_b = shared_words(text, tokenizer_a.encode(text), cut)
    kept = word_texts(text, cut, words_b)
    assert kept == word_texts(text, tokenizer_a.encode(text), words_a) == whole[:len(kept)]
    last_whole_word = max(w for w in cut.word_ids if w is not None) - 1  # RoBERTa's own words, the last one left out
    assert cut.word_spans()[last_whole_word][1] == text.index(kept[-1]) + len(kept[-1])


def test_the_cost_counts_each_models_own_tokens(loaded):
    (model_a, tokenizer_a), (model_b, tokenizer_b) = loaded["bert"], loaded["roberta"]
    sentences = [ZERO_WIDTH, *SENTENCES[:5]]
    rows = {"a": [], "b": []}
    handles = [m.embedding.register_forward_pre_hook(lambda module, args, side=side: rows[side].append(tuple(args[0].shape)))
               for side, m in (("a", model_a), ("b", model_b))]
    try:
        compare_models(model_a, model_b, tokenizer_a, sentences, tokenizer_b=tokenizer_b, batch_size=2)
    finally:
        for handle in handles:
            handle.remove()
    cost = comparison_cost(model_a, model_b, tokenizer_a, sentences, batch_size=2, tokenizer_b=tokenizer_b)
    passes = {side: sum(rows_ for rows_, _ in shapes) for side, shapes in rows.items()}
    assert passes == {"a": 5, "b": 5} and cost.forward_passes == 10  # the skipped sentence is run by neither
    padded = [sum(r * s for r, s in shapes) for shapes in rows.values()]
    assert max(padded) / 5 <= cost.tokens < max(padded) / 5 + 1  # the longer model's tokens per pass, rounded up


def test_of_a_pair_only_sentence_a_has_words(loaded):
    (_, tokenizer_a), (_, tokenizer_b) = loaded["bert"], loaded["roberta"]
    a, b = tokenizer_a.encode(HAND, "the dog"), tokenizer_b.encode(HAND, "the dog")
    for encoding, words in zip((a, b), shared_words(HAND, a, b)):
        assert word_texts(HAND, encoding, words) == HAND_WORDS
        assert all(w is None for w, sentence in zip(words, encoding.sentences) if sentence == 1)
