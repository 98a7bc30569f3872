"""Each family's tokenizer (bert/tokenizer.py's `load_tokenizer`) against `transformers`' own tokenizer of the same
folder: ids, offsets, word ids and token types on the sample inputs and more (accents, emoji, CJK, long words,
numbers, punctuation, sentence pairs), special tokens by role, a typed "[MASK]", and how pieces are shown.

The tokenizers are built here, offline: a vocabulary trained with the `tokenizers` library on a small corpus, handed
to transformers' class of each family (`RobertaTokenizer(vocab, merges)`, `AlbertTokenizer(vocab)`...), which builds
the family's whole pipeline (normaliser, pre-tokenizer, special tokens, pair template) and saves it with
`save_pretrained`, as the hub's folders are made.
"""
from __future__ import annotations

import json

import pytest

from bert import InputTooLongError, load_tokenizer
from bert.errors import ModelNotFoundError
from bert_test_support import PAIRS, SENTENCES

transformers = pytest.importorskip("transformers")

MORE_SENTENCES = [
    "Zoë's résumé mentions Ångström, Dvořák and São Paulo.",
    "Über-cool façades in Kraków and Reykjavík!",
    "東京は日本の首都です。",
    "北京欢迎你 and 서울 too.",
    "Emoji time: 😀😃 🎉🎉 👍🏽 ❤️.",
    "Antidisestablishmentarianism and pneumonoultramicroscopicsilicovolcanoconiosis are long words.",
    "Call 555-0199 or +44 20 7946 0958 before 3:45pm on 2024-03-01.",
    "π ≈ 3.14159, e ≈ 2.71828 and 1/3 = 0.333…",
    "\"Quoted,\" she said -- (parenthetically) [bracketed] {braced}.",
    "Wait... what?! No way!!!",
    "   leading and trailing spaces   ",
    "tabs\tand\nnew lines",
    "UPPER CASE and MiXeD cAsE words.",
    "e-mail: someone@example.com, web: https://example.org/path?q=1",
    "C'est la vie, n'est-ce pas?",
    "The price rose 12.5% to €1,234.56 (about $1,300).",
    "naïve coöperate rôle",
    "Ελληνικά και русский язык.",
    "مرحبا بالعالم",
    "हिन्दी भाषा",
    "It's the dogs' bone, not the dog's.",
    "x",
    "unbelievably unforgettable uncharacteristically",
    "##hash and Ġ and ▁ typed by hand",
    "Tokenization tokenizes tokens; tokenizers tokenize.",
    "A sentence with a typed <mask> token.",
    "Numbers: 1 22 333 4444 55555 666666 7777777.",
    "ﬁne ligatures and full-width ＡＢＣ",
]
MORE_PAIRS = [
    ("Der Bär läuft.", "Le café est fermé."),
    ("東京に行きました。", "It was fun 🎉."),
    ("Short.", "A much longer second sentence that goes on and on with many words in it."),
    ("What is 2+2?", "It's 4."),
    ("", "Only the second sentence."),
]
INPUTS = [(s, None) for s in SENTENCES + MORE_SENTENCES] + PAIRS + MORE_PAIRS
CORPUS = [s for s, _ in INPUTS] + [p for _, p in INPUTS if p] + [
    "the of and to in is was for that on with as by at from his her they this which",
    "Paris capital city France country river Seine tower museum painting",
]
FAMILIES = ("bert", "distilbert", "electra", "roberta", "albert")
# what each family's config.json says about its input (base-size models' numbers)
CONFIGS = {
    "bert": {"model_type": "bert", "max_position_embeddings": 512, "type_vocab_size": 2},
    "distilbert": {"model_type": "distilbert", "max_position_embeddings": 512},
    "electra": {"model_type": "electra", "max_position_embeddings": 512, "type_vocab_size": 2},
    "roberta": {"model_type": "roberta", "max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1},
    "albert": {"model_type": "albert", "max_position_embeddings": 512, "type_vocab_size": 2},
}


def _wordpiece_vocab() -> dict[str, int]:
    from tokenizers.implementations import BertWordPieceTokenizer

    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(CORPUS, vocab_size=400, min_frequency=1)
    return trainer.get_vocab()


def _reference(family: str, folder):
    """transformers' tokenizer of `family`, built from a vocabulary trained here, saved into `folder`."""
    from tokenizers import AddedToken
    from tokenizers.implementations import ByteLevelBPETokenizer, SentencePieceUnigramTokenizer

    if family in ("bert", "distilbert", "electra"):
        cls = {"bert": transformers.BertTokenizer, "distilbert": transformers.DistilBertTokenizer,
               "electra": transformers.ElectraTokenizer}[family]
        reference = cls(vocab=_wordpiece_vocab())
    elif family == "roberta":
        trainer = ByteLevelBPETokenizer()
        trainer.train_from_iterator(CORPUS, vocab_size=500, min_frequency=1,
                                    special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        model = json.loads(trainer._tokenizer.to_str())["model"]
        reference = transformers.RobertaTokenizer(  # roberta-base's <mask> takes the space before it
            vocab=model["vocab"], merges=[tuple(m) for m in model["merges"]], mask_token=AddedToken("<mask>", lstrip=True))
        trainer.save_model(str(folder))  # vocab.json and merges.txt, as roberta-base's folder also has them
    else:
        trainer = SentencePieceUnigramTokenizer()
        trainer.train_from_iterator(CORPUS, vocab_size=300, unk_token="<unk>",
                                    special_tokens=["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"])
        reference = transformers.AlbertTokenizer(vocab=[tuple(v) for v in json.loads(trainer._tokenizer.to_str())["model"]["vocab"]])
    reference.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(CONFIGS[family]))
    return reference


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    reference = _reference(request.param, folder)
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
    expected = {"roberta": ("<s>", "</s>", "<mask>", "<pad>", "<unk>"), "albert": ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>")}
    assert tuple(roles.values()) == expected.get(name, ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"))


def test_the_longest_input_is_the_models(family):
    name, _, _, ours = family
    assert ours.max_length == 512  # RoBERTa: 514 positions, numbered from its padding index + 1
    with pytest.raises(InputTooLongError, match="512 positions"):
        ours.encode("word " * 600)


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
    _reference("roberta", folder)
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
    if name == "albert":
        return _spiece_only_is_refused_with_how_to_convert(tmp_path)
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
    with pytest.raises(ModelNotFoundError, match="spiece.model.*tokenizer.json.*sentencepiece"):
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

