"""The tokenizer against `transformers`' BERT tokenizers, and what the model accepts as input.

References: `BertTokenizerLegacy` (transformers' pure-Python WordPiece, independent of the `tokenizers` library
we build on) and transformers' `BertTokenizer` (the Rust one, for truncation of pairs).
"""
from __future__ import annotations

import json
import unicodedata

import pytest
import torch

from bert import BertTokenizer, InputTooLongError, InvalidInputError
from bert_test_support import PAIRS, SENTENCES, TINY_VOCAB

CASED_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Hello", "hello", "World", "world", "Paris", "paris",
               "is", "in", "France", "the", "The", "city", ".", ",", "!", "P", "p", "##aris", "##ARIS", "H", "##ELLO"]


@pytest.fixture(scope="module")
def tokenizer(minilm_path) -> BertTokenizer:
    return BertTokenizer.from_folder(minilm_path)  # MiniLM's tokenizer.json


@pytest.fixture(scope="module")
def legacy(minilm_path):
    from transformers import BertTokenizerLegacy

    return BertTokenizerLegacy(str(minilm_path / "vocab.txt"), do_lower_case=True)


@pytest.fixture
def cased_folder(tmp_path):
    folder = tmp_path / "tiny-bert"
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(CASED_VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    return folder


@pytest.mark.parametrize("text, pair", [(s, None) for s in SENTENCES] + PAIRS)
def test_ids_match_transformers(tokenizer, legacy, text, pair):
    encoding = tokenizer.encode(text, pair)
    expected = legacy(text, pair, return_token_type_ids=True)
    assert encoding.input_ids == expected["input_ids"]
    assert encoding.token_type_ids == expected["token_type_ids"]
    assert encoding.tokens == legacy.convert_ids_to_tokens(expected["input_ids"])


def test_vocab_txt_and_tokenizer_json_agree(tokenizer, minilm_path):
    from_vocab = BertTokenizer.from_vocab(minilm_path / "vocab.txt", lowercase=True)
    for text, pair in [(s, None) for s in SENTENCES] + PAIRS:
        assert from_vocab.encode(text, pair) == tokenizer.encode(text, pair)


def test_pair_layout_and_segment_ids(tokenizer):
    encoding = tokenizer.encode("The man went to the store.", "He bought milk.")
    assert encoding.tokens == ["[CLS]", "the", "man", "went", "to", "the", "store", ".", "[SEP]", "he", "bought", "milk", ".", "[SEP]"]
    assert encoding.token_type_ids == [0] * 9 + [1] * 5
    assert encoding.special == [True] + [False] * 7 + [True] + [False] * 4 + [True]
    assert encoding.word_ids[:3] == [None, 0, 1] and encoding.word_ids[9] == 0  # B's words count from 0


def _plain(text: str) -> str:
    """What the uncased normaliser does to a span: lower case, accents stripped."""
    return "".join(c for c in unicodedata.normalize("NFD", text.lower()) if unicodedata.category(c) != "Mn")


@pytest.mark.parametrize("text, pair", [(s, None) for s in SENTENCES] + PAIRS[:3])
def test_offsets_map_back_to_the_text(tokenizer, text, pair):
    encoding = tokenizer.encode(text, pair)
    for token, (start, end), segment, special in zip(encoding.tokens, encoding.offsets, encoding.token_type_ids, encoding.special):
        if special:
            assert (start, end) == (0, 0)
            continue
        source = (text, pair)[segment]
        if token == "[UNK]":
            assert source[start:end] == "🎻"
        else:
            assert _plain(source[start:end]) == token.removeprefix("##"), (token, source[start:end])


@pytest.mark.parametrize("typed", ["[mask]", "[MASK]", "[Mask]", "[mAsK]"])
@pytest.mark.parametrize("source", ["tokenizer.json", "vocab.txt"])
def test_typed_mask_in_any_case_is_the_mask_token(tokenizer, minilm_path, typed, source):
    if source == "vocab.txt":
        tokenizer = BertTokenizer.from_vocab(minilm_path / "vocab.txt")
    encoding = tokenizer.encode(f"The {typed} barked at the {typed}.")
    assert tokenizer.mask_id == 103  # BERT's uncased vocabulary
    assert encoding.input_ids.count(tokenizer.mask_id) == 2
    assert encoding.tokens == ["[CLS]", "the", "[MASK]", "barked", "at", "the", "[MASK]", ".", "[SEP]"]
    start, end = encoding.offsets[2]
    assert f"The {typed} barked"[start:end] == typed


def test_mask_in_the_second_sentence(tokenizer):
    encoding = tokenizer.encode("The man went to the store.", "He bought a [mask] of milk.")
    position = encoding.input_ids.index(tokenizer.mask_id)
    assert encoding.token_type_ids[position] == 1


def test_first_sentence_is_the_text_encoded_alone(tokenizer):
    alone = tokenizer.encode("The man went to the store.")
    pair = tokenizer.encode("The man went to the store.", "He bought a [mask] of milk.")
    assert pair.first_sentence() == alone
    assert alone.first_sentence() == alone


def test_an_unknown_word_splits_into_word_pieces_as_transformers_splits_it(tokenizer, legacy):
    """A made-up word is spelled in word pieces, the first whole and the rest continuations ("##"), as the
    reference tokenizer (transformers, same vocabulary) splits it."""
    assert tokenizer.subwords("kroxldyphivc") == legacy.tokenize("kroxldyphivc") == ["k", "##ro", "##x", "##ld", "##yp", "##hi", "##vc"]
    encoding = tokenizer.encode("kroxldyphivc")
    assert encoding.word_ids == [None] + [0] * 7 + [None]
    assert [encoding.is_continuation(i) for i in range(1, 8)] == [False] + [True] * 6


def test_word_spans_cover_whole_words(tokenizer):
    text = "A kroxldyphivc sat, quietly."
    spans = tokenizer.encode(text).word_spans()
    assert [text[start:end] for start, end in spans.values()] == ["A", "kroxldyphivc", "sat", ",", "quietly", "."]
    pair = tokenizer.encode("Hi there.", "Goodbye.")
    assert [pair.word_spans()[w] for w in range(3)] == [(0, 2), (3, 8), (8, 9)]  # sentence A only


def test_cased_vocabulary_keeps_case(cased_folder):
    from transformers import BertTokenizerLegacy

    ours = BertTokenizer.from_folder(cased_folder)
    reference = BertTokenizerLegacy(str(cased_folder / "vocab.txt"), do_lower_case=False)
    for text in ["Hello World!", "hello world.", "Paris is in France, the city PARIS.", "HELLO"]:
        encoding = ours.encode(text)
        assert encoding.input_ids == reference(text)["input_ids"], text
    assert ours.encode("Hello hello").tokens == ["[CLS]", "Hello", "hello", "[SEP]"]


def test_uncased_reading_of_the_same_vocabulary(cased_folder):
    ours = BertTokenizer.from_vocab(cased_folder / "vocab.txt", lowercase=True)
    assert ours.encode("Hello WORLD").tokens == ["[CLS]", "hello", "world", "[SEP]"]


def test_folder_without_tokenizer_config_is_read_by_its_name(cased_folder, tmp_path):
    (cased_folder / "tokenizer_config.json").unlink()
    for name, lowercase in [("bert-base-cased", False), ("bert-base-uncased", True), ("my-model", True)]:
        folder = cased_folder.rename(tmp_path / name)
        tokens = BertTokenizer.from_folder(folder).encode("Hello").tokens
        assert tokens[1] == ("hello" if lowercase else "Hello"), name
        cased_folder = folder


def test_too_long_raises_with_the_lengths(tokenizer):
    text = " ".join(["word"] * 600)
    with pytest.raises(InputTooLongError) as error:
        tokenizer.encode(text)
    assert (error.value.num_tokens, error.value.max_tokens) == (602, 512)
    assert "truncate=True" in str(error.value)
    with pytest.raises(InputTooLongError):
        tokenizer.encode("one two three", max_length=4)
    assert len(tokenizer.encode("one two three", max_length=5)) == 5  # exactly fits


def test_truncate_cuts_to_max_length_and_reports_the_cut(tokenizer):
    text = " ".join(["word"] * 600)
    encoding = tokenizer.encode(text, truncate=True)
    assert len(encoding) == 512 and encoding.truncated == 600 - 510
    assert encoding.tokens[-1] == "[SEP]" and len(encoding.offsets) == len(encoding.word_ids) == 512
    assert tokenizer.encode("short text", truncate=True).truncated == 0


@pytest.mark.parametrize(
    "a, b, max_length",
    [
        ("one two three four five six seven eight nine ten eleven", "alpha beta gamma", 10),
        ("alpha beta gamma", "one two three four five six seven eight nine ten eleven", 12),
        ("one two three", "four five six", 6),
        ("one two three four five", "six seven eight nine", 8),
    ],
)
def test_pair_truncation_matches_transformers_longest_first(tokenizer, minilm_path, a, b, max_length):
    from transformers import BertTokenizer as RustBertTokenizer

    reference = RustBertTokenizer.from_pretrained(minilm_path)
    expected = reference(a, b, truncation="longest_first", max_length=max_length)
    encoding = tokenizer.encode(a, b, max_length=max_length, truncate=True)
    assert encoding.input_ids == expected["input_ids"]
    assert encoding.token_type_ids == expected["token_type_ids"]
    full = tokenizer.encode(a, b, max_length=512)
    assert encoding.truncated == len(full) - max_length


def test_pair_truncation_matches_transformers_for_every_length(tokenizer, minilm_path):
    """Every pair of lengths 1-9 and every budget that forces a cut: how many tokens each sentence keeps."""
    from transformers import BertTokenizer as RustBertTokenizer

    reference = RustBertTokenizer.from_pretrained(minilm_path)
    words = "one two three four five six seven eight nine".split()
    cases = [(na, nb, max_length) for na in range(1, 10) for nb in range(1, 10) for max_length in range(3, na + nb + 3)]
    a_b = [(" ".join(words[:na]), " ".join(words[:nb]), max_length) for na, nb, max_length in cases]
    ours = [tokenizer.encode(a, b, max_length=m, truncate=True).token_type_ids for a, b, m in a_b]
    theirs = [reference(a, b, truncation="longest_first", max_length=m)["token_type_ids"] for a, b, m in a_b]
    kept = lambda types: (types.count(0) - 2, types.count(1) - 1)  # minus [CLS] [SEP], minus [SEP]
    wrong = [(case, kept(o), kept(t)) for case, o, t in zip(cases, ours, theirs) if o != t]
    assert not wrong, f"{len(wrong)} of {len(cases)} differ, e.g. (len A, len B, max_length), ours, transformers: {wrong[:3]}"


def test_max_length_without_room_for_the_special_tokens(tokenizer):
    with pytest.raises(InvalidInputError, match="no room"):
        tokenizer.encode("one", "two", max_length=2, truncate=True)
    assert tokenizer.encode("one", "two", max_length=3, truncate=True).tokens == ["[CLS]", "[SEP]", "[SEP]"]


def test_with_masks(tokenizer):
    encoding = tokenizer.encode("The dog barked.")
    masked = encoding.with_masks([2], tokenizer.mask_id)
    assert masked.tokens[2] == "[MASK]" and masked.input_ids[2] == tokenizer.mask_id
    assert encoding.tokens[2] == "dog"  # the original is unchanged
    for bad in (0, len(encoding) - 1, len(encoding), -1):
        with pytest.raises(InvalidInputError):
            encoding.with_masks([bad], tokenizer.mask_id)


def test_text_must_be_a_string(tokenizer):
    with pytest.raises(InvalidInputError):
        tokenizer.encode(["a list"])
    with pytest.raises(InvalidInputError):
        tokenizer.encode("fine", pair=3)


def test_tensors_are_what_the_model_takes(tokenizer):
    input_ids, token_type_ids = tokenizer.encode("Hi.", "Bye.").tensors()
    assert input_ids.dtype == token_type_ids.dtype == torch.long
    assert input_ids.shape == token_type_ids.shape == (1, 7)


# What the model itself accepts: checked before any computation, with typed errors.

def _ids(*shape, dtype=torch.long, value=5):
    return torch.full(shape, value, dtype=dtype)


@pytest.mark.parametrize(
    "input_ids, token_type_ids, error",
    [
        (_ids(1, 4, value=len(TINY_VOCAB)), _ids(1, 4, value=0), InvalidInputError),  # one past the vocabulary
        (_ids(1, 4, value=-1), _ids(1, 4, value=0), InvalidInputError),
        (_ids(1, 4, dtype=torch.float32), _ids(1, 4, value=0), InvalidInputError),
        (_ids(1, 4, dtype=torch.int32), _ids(1, 4, value=0), InvalidInputError),
        (_ids(4), _ids(4, value=0), InvalidInputError),  # no batch axis
        (_ids(1, 0), _ids(1, 0), InvalidInputError),  # no tokens
        (_ids(1, 65), _ids(1, 65, value=0), InputTooLongError),  # the tiny model has 64 positions
        (_ids(1, 4), _ids(1, 4, value=2), InvalidInputError),  # segment 2 of 2
        (_ids(1, 4), _ids(1, 3, value=0), InvalidInputError),  # shapes differ
        ([[5, 5]], [[0, 0]], InvalidInputError),  # not a tensor
    ],
    ids=["id-too-large", "id-negative", "float-ids", "int32-ids", "1d", "empty", "too-long", "segment-2", "segment-shape", "list"],
)
def test_invalid_model_inputs(tiny_model, input_ids, token_type_ids, error):
    assert tiny_model.config.vocab_size == len(TINY_VOCAB) and tiny_model.config.max_position_embeddings == 64
    with pytest.raises(error):
        tiny_model(input_ids, token_type_ids)


def test_more_than_512_positions_in_a_real_model(minilm):
    model, _ = minilm
    with pytest.raises(InputTooLongError, match="513 tokens"):
        model.encode(_ids(1, 513), _ids(1, 513, value=0))


def test_attention_mask_of_the_wrong_shape(tiny_model):
    with pytest.raises(InvalidInputError, match="attention_mask"):
        tiny_model(_ids(2, 4), _ids(2, 4, value=0), attention_mask=torch.ones(2, 5))


def test_float_token_type_ids_are_invalid_input(tiny_model):
    with pytest.raises(InvalidInputError):
        tiny_model(_ids(1, 4), _ids(1, 4, dtype=torch.float32, value=0))


def test_empty_batch_is_invalid_input(tiny_model):
    with pytest.raises(InvalidInputError):
        tiny_model(_ids(0, 4), _ids(0, 4, value=0))
