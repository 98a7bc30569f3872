"""Each family's tokenizer (bert/tokenizer.py's `load_tokenizer`) against `transformers`' own tokenizer of the same
folder: ids, offsets, word ids and token types on the sample inputs and more (accents, emoji, CJK, long words,
numbers, punctuation, sentence pairs), special tokens by role, a typed "[MASK]", and how pieces are shown.
The tokenizers are built offline by tests/tokenizer_support.py with transformers' class of each family.
"""
from __future__ import annotations

import json

import pytest

from bert import InputTooLongError, load_tokenizer
from bert.analysis.attention.words import word_groups
from bert.errors import ModelNotFoundError
from tokenizer_support import CONFIGS, FAMILIES, INPUTS, MORE_PAIRS, build_tokenizer
from bert_test_support import PAIRS

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    reference = build_tokenizer(request.param, folder)
    return request.param, folder, reference, load_tokenizer(folder)


def _expected(reference, text: str, pair: str | None, **options) -> dict:
    encoded = reference(text, pair, return_offsets_mapping=True, return_token_type_ids=True, **options)
    return {"ids": encoded["input_ids"], "offsets": [tuple(o) for o in encoded["offset_mapping"]],
            "word_ids": encoded.word_ids(), "types": encoded["token_type_ids"],
            "special": [s is None for s in encoded.sequence_ids()]}


def test_inputs_are_many_and_varied():
    assert len(INPUTS) >= 50 and sum(p is not None for _, p in INPUTS) >= 10


def test_ids_offsets_and_word_ids_equal_transformers(family):
    name, _, reference, ours = family
    for text, pair in INPUTS:
        expected = _expected(reference, text, pair)
        encoding = ours.encode(text, pair)
        assert encoding.input_ids == expected["ids"], (name, text, pair)
        assert encoding.offsets == expected["offsets"], (name, text, pair)
        assert encoding.word_ids == expected["word_ids"], (name, text, pair)
        assert encoding.special == expected["special"], (name, text, pair)
        assert encoding.tokens == reference.convert_ids_to_tokens(expected["ids"])
        if ours.token_types == 2:  # BERT, ELECTRA, ALBERT: segment A 0, B 1, as transformers gives them
            assert encoding.token_type_ids == expected["types"], (name, text, pair)
        else:  # RoBERTa and DistilBERT have one token type (DistilBERT none): every id is 0
            assert set(encoding.token_type_ids) == {0}


def test_truncation_cuts_as_transformers_longest_first(family):
    _, _, reference, ours = family
    for text, pair in MORE_PAIRS[2:4] + PAIRS[3:4]:
        for length in (8, 11, 16):
            expected = _expected(reference, text, pair, truncation="longest_first", max_length=length)
            encoding = ours.encode(text, pair, max_length=length, truncate=True)
            assert (encoding.input_ids, encoding.offsets) == (expected["ids"], expected["offsets"]), (text, length)
            assert encoding.truncated == len(ours.encode(text, pair)) - len(encoding)
            if encoding.truncated:
                with pytest.raises(InputTooLongError):
                    ours.encode(text, pair, max_length=length)


def test_special_tokens_by_role(family):
    name, _, reference, ours = family
    roles = {"cls": reference.cls_token, "sep": reference.sep_token, "mask": reference.mask_token,
             "pad": reference.pad_token, "unk": reference.unk_token}
    assert ours.special_tokens == roles
    assert (ours.cls_id, ours.sep_id, ours.mask_id, ours.pad_id, ours.unk_id) == tuple(
        reference.convert_tokens_to_ids(roles[role]) for role in ("cls", "sep", "mask", "pad", "unk"))
    expected = {"roberta": ("<s>", "</s>", "<mask>", "<pad>", "<unk>"), "albert": ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>"),
                "xlm-roberta": ("<s>", "</s>", "<mask>", "<pad>", "<unk>")}
    assert tuple(roles.values()) == expected.get(name, ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"))


def test_the_longest_input_is_the_models(family):
    name, _, _, ours = family
    longest = 8192 if name == "modernbert" else 512  # RoBERTa: 514 positions, numbered from its padding index + 1
    assert ours.model_max_length == longest
    with pytest.raises(InputTooLongError, match=f"{longest} positions"):
        ours.encode("word " * (longest + 100))


def test_typed_mask_means_the_models_mask_token(family):
    name, _, reference, ours = family
    for typed in ("Paris is the [MASK] of France.", "Paris is the [mask] of France.", "[MASK] [Mask]!"):
        own = typed.replace("[MASK]", reference.mask_token).replace("[mask]", reference.mask_token).replace("[Mask]", reference.mask_token)
        expected = _expected(reference, own, None)
        encoding = ours.encode(typed)
        assert encoding.input_ids == expected["ids"] and encoding.offsets == expected["offsets"]
        assert ours.mask_positions(encoding) == [i for i, t in enumerate(encoding.tokens) if t == reference.mask_token]
        assert len(ours.mask_positions(encoding)) == typed.lower().count("[mask]")
    masked = ours.encode("Paris is the capital.").with_masks([1], ours.mask_id)
    assert masked.tokens[1] == reference.mask_token and ours.mask_positions(masked) == [1]


@pytest.fixture(scope="module")
def roberta(tmp_path_factory):
    folder = tmp_path_factory.mktemp("roberta-only")
    build_tokenizer("roberta", folder)
    return load_tokenizer(folder)


def test_roberta_pairs_and_mask(roberta):
    encoding = roberta.encode("Paris is the [MASK] of France.", "It is big.")
    assert encoding.tokens[0] == "<s>" and encoding.tokens.count("</s>") == 3
    first_end = encoding.tokens.index("</s>")
    assert encoding.tokens[first_end + 1] == "</s>"  # <s> A </s></s> B </s>
    assert "<mask>" in encoding.tokens and "[MASK]" not in encoding.tokens
    assert encoding.tokens[encoding.tokens.index("<mask>") - 1] == "Ġthe"  # <mask> took the space before it
    assert encoding.sentences == [0] * (first_end + 1) + [1] * (len(encoding) - first_end - 1)
    assert encoding.first_sentence().tokens == encoding.tokens[:first_end + 1]


def test_vocab_files_without_tokenizer_json_read_the_same(family, tmp_path):
    """The older layouts: vocab.txt (WordPiece) and vocab.json + merges.txt (byte-level BPE)."""
    name, folder, _, ours = family
    if name == "albert":  # ALBERT's spiece.model alone is not read
        return _spiece_only_is_refused_with_how_to_convert(tmp_path)
    if name == "deberta-v2":  # DeBERTa-v3's spm.model is read (tests/test_spm_tokenizer.py); a broken one is named
        (tmp_path / "spm.model").write_bytes(b"not a protobuf")
        (tmp_path / "config.json").write_text(json.dumps(CONFIGS[name]))
        with pytest.raises(ModelNotFoundError, match="spm.model is not"):
            load_tokenizer(tmp_path)
        return
    if name in ("modernbert", "xlm-roberta"):  # tokenizer.json only (XLM-R's SentencePiece model is not read)
        (tmp_path / "config.json").write_text(json.dumps(CONFIGS[name]))
        with pytest.raises(ModelNotFoundError, match="no tokenizer"):
            load_tokenizer(tmp_path)
        return
    for file in folder.iterdir():
        if file.name != "tokenizer.json":
            (tmp_path / file.name).write_bytes(file.read_bytes())
    if name != "roberta":
        vocab = sorted(ours._tokenizer.get_vocab().items(), key=lambda item: item[1])
        (tmp_path / "vocab.txt").write_text("".join(token + "\n" for token, _ in vocab), encoding="utf-8")
    legacy = load_tokenizer(tmp_path)
    for text, pair in INPUTS:
        assert legacy.encode(text, pair) == ours.encode(text, pair), (text, pair)


def _spiece_only_is_refused_with_how_to_convert(folder):
    (folder / "spiece.model").write_bytes(b"\x0a\x00")
    (folder / "config.json").write_text(json.dumps(CONFIGS["albert"]))
    with pytest.raises(ModelNotFoundError, match="spiece.model.*tokenizer.json"):
        load_tokenizer(folder)


def test_pieces_are_shown_in_each_schemes_way(family):
    name, _, reference, ours = family
    encoding = ours.encode("The café unbelievably 😀", "Tokenization!")
    shown = encoding.display_tokens()
    expected_words = reference("The café unbelievably 😀", "Tokenization!").word_ids()
    for index, token in enumerate(encoding.tokens):
        if encoding.special[index]:
            continue
        word = expected_words[index]
        same_word_as_before = index > 0 and expected_words[index - 1] == word and not encoding.special[index - 1]
        if name in ("bert", "distilbert", "electra"):
            assert encoding.is_continuation(index) == token.startswith("##") and shown[index] == token
        else:
            assert encoding.is_continuation(index) == same_word_as_before, (token, index)
    if name == "roberta":
        assert "Ġcafé" in "".join(shown) and any("Ã" in t for t in encoding.tokens)  # bytes decoded for reading
        assert all("Ã" not in s for s in shown)
        assert ours.display("ĠðŁĺĢ") == "Ġ😀" and ours.display("ðŁ") == "ðŁ"  # part of a character stays as written
        assert ours.display("ĠcafÃ©") == "Ġcafé" and ours.pieces.text("ĠcafÃ©") == "café"
        assert ours.starts_word("Ġcafé") and not ours.starts_word("ing") and ours.starts_word(",")
    words = word_groups(ours.encode("The café unbelievably tokenization!"))
    expected = {"albert": ["[CLS]", "the", "cafe", "unbelievably", "tokenization!", "[SEP]"],  # lower-cased, no accents
                "roberta": ["<s>", "The", "café", "unbelievably", "tokenization", "!", "</s>"],
                "modernbert": ["[CLS]", "The", "café", "unbelievably", "tokenization", "!", "[SEP]"],
                "deberta-v2": ["[CLS]", "The", "café", "unbelievably", "tokenization!", "[SEP]"],  # cased; words split at spaces
                "xlm-roberta": ["<s>", "The", "café", "unbelievably", "tokenization!", "</s>"]}
    assert list(words.labels) == expected.get(name, ["[CLS]", "the", "cafe", "unbelievably", "tokenization", "!", "[SEP]"])
    if name == "roberta":  # an emoji split over byte pieces is one word, whole again
        emoji = ours.encode("I like 🎻 music")
        pieces = [t for t, w in zip(emoji.tokens, emoji.word_ids) if w == 2]
        assert len(pieces) > 1 and all(ours.display(t) == t for t in pieces)  # each holds part of its bytes
        assert list(word_groups(emoji).labels) == ["<s>", "I", "like", "🎻", "music", "</s>"]
    if name == "albert":
        assert shown == encoding.tokens and any(t.startswith("▁") for t in shown)
        assert ours.pieces.text("▁play") == "play" and ours.starts_word("▁play") and not ours.starts_word("ing")
    if name == "bert":
        assert ours.pieces.text("##ing") == "ing" and not ours.starts_word("##ing") and ours.starts_word("play")


def test_word_ids_of_pre_split_words_keep_every_word(family):
    name, _, _, ours = family
    words = ["Zoë", "visited", "東京", "in", "2024", "😀", "!"]
    encoding = ours.encode_words(words)
    assert [w for w in encoding.word_ids if w is not None][0] == 0
    assert sorted({w for w in encoding.word_ids if w is not None}) == list(range(len(words)))
    joined = " ".join(words)
    for token, word, (start, end), special in zip(encoding.tokens, encoding.word_ids, encoding.offsets, encoding.special):
        if not special and token != ours.unk_token and end > start:
            assert joined[start:end].strip() in words[word] or words[word] in joined[start:end]


def test_modernbert_pairs_and_mask(tmp_path):
    """ModernBERT's byte-level BPE with BERT's special tokens: [CLS] A [SEP] B [SEP], one token type, and a typed
    [MASK] that takes the space before it, as transformers' fast tokenizer of the same tokenizer.json gives them."""
    reference = build_tokenizer("modernbert", tmp_path)
    ours = load_tokenizer(tmp_path)
    encoding = ours.encode("Paris is the [MASK] of France.", "It is big.")
    assert encoding.input_ids == reference("Paris is the [MASK] of France.", "It is big.")["input_ids"]
    assert encoding.tokens[0] == "[CLS]" and encoding.tokens.count("[SEP]") == 2
    assert encoding.tokens[encoding.tokens.index("[MASK]") - 1] == "Ġthe"  # [MASK] took the space before it
    first_end = encoding.tokens.index("[SEP]")
    assert encoding.sentences == [0] * (first_end + 1) + [1] * (len(encoding) - first_end - 1)
    assert set(encoding.token_type_ids) == {0}
    assert ours.display("ĠcafÃ©") == "Ġcafé" and ours.mask_id == reference.mask_token_id
