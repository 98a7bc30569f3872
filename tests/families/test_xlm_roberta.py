"""XLM-RoBERTa (Conneau et al. 2020) and CamemBERT (Martin et al. 2020): RoBERTa's tree with a SentencePiece unigram
vocabulary. A tiny checkpoint saved by transformers' own XLMRobertaForMaskedLM / CamembertForMaskedLM, with a unigram
vocabulary trained here by the `tokenizers` library and handed to transformers' XLMRobertaTokenizer /
CamembertTokenizer (which writes the tokenizer.json a hub folder holds), loads strictly through bert.load_pretrained
and gives the same logits, hidden states and attention patterns within 1e-5 on a padded batch of sentences in five
scripts; the tokenizer gives `tokenizers`' own ids and transformers' ids, offsets and word ids on them, and shows
SentencePiece's "▁"."""
from __future__ import annotations

import json

import pytest
import torch
from tokenizers import Tokenizer
from tokenizers.implementations import SentencePieceUnigramTokenizer

import bert
from bert.analysis.attention.words import word_groups
from bert_test_support import randomize_
from family_support import compare
from tokenizer_support import CORPUS

transformers = pytest.importorskip("transformers")

SCRIPTS = ["Zoë's café in Kraków is naïve.", "Привет, мир! Москва — столица.", "مرحبا بالعالم", "東京は日本の首都です。北京欢迎你",
           "Emoji time: 😀🎉 👍🏽 ❤️.", "Paris is the [MASK] of France."]
PAIRS = [("Der Bär läuft.", "Le café est fermé."), ("東京に行きました。", "Было весело 🎉.")]
CLASSES = {"xlm-roberta": ("XLMRobertaForMaskedLM", "XLMRobertaTokenizer", "XLMRobertaConfig"),
           "camembert": ("CamembertForMaskedLM", "CamembertTokenizer", "CamembertConfig")}


@pytest.fixture(scope="module")
def unigram_vocab():
    """A unigram vocabulary trained on the tests' multilingual corpus, RoBERTa's four special tokens first."""
    trainer = SentencePieceUnigramTokenizer()
    trainer.train_from_iterator(CORPUS + SCRIPTS, vocab_size=300, unk_token="<unk>", special_tokens=["<s>", "<pad>", "</s>", "<unk>"])
    return [tuple(piece) for piece in json.loads(trainer._tokenizer.to_str())["model"]["vocab"]]


@pytest.fixture(scope="module", params=list(CLASSES))
def family(request, unigram_vocab, tmp_path_factory):
    """(family, ours, transformers' masked-LM model, our tokenizer, transformers' tokenizer, the folder)."""
    model_class, tokenizer_class, config_class = CLASSES[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    reference = getattr(transformers, tokenizer_class)(vocab=unigram_vocab)
    reference.save_pretrained(folder)
    config = getattr(transformers, config_class)(
        vocab_size=len(reference), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40,
        max_position_embeddings=66, type_vocab_size=1, pad_token_id=reference.pad_token_id, bos_token_id=0, eos_token_id=2,
        layer_norm_eps=1e-5, attn_implementation="eager")
    torch.manual_seed(0)
    theirs = randomize_(getattr(transformers, model_class)(config), seed=3).eval()
    theirs.save_pretrained(folder)
    ours, tokenizer = bert.load_pretrained(str(folder))
    return request.param, ours, theirs, tokenizer, reference, folder


def test_a_checkpoint_loads_strictly_and_matches_transformers_on_five_scripts(family):
    name, ours, theirs, tokenizer, _, _ = family
    assert ours.config.family == name and ours.config.position_offset == 2  # RoBERTa's positions, after <pad> = 1
    rows = [tokenizer.encode(text).input_ids for text in SCRIPTS] + [tokenizer.encode(a, b).input_ids for a, b in PAIRS]
    longest = max(map(len, rows))
    input_ids = torch.tensor([row + [tokenizer.pad_id] * (longest - len(row)) for row in rows])
    attention_mask = torch.tensor([[1] * len(row) + [0] * (longest - len(row)) for row in rows])
    assert not attention_mask.all() and (input_ids == tokenizer.unk_id).sum() < input_ids.numel() // 4
    compare(ours, theirs, name, CLASSES[name][0], (input_ids, torch.zeros_like(input_ids), attention_mask))


def test_ids_equal_tokenizers_own_and_transformers(family):
    _, _, _, tokenizer, reference, folder = family
    own = Tokenizer.from_file(str(folder / "tokenizer.json"))  # the `tokenizers` library's reading of the folder
    for text, pair in [(text, None) for text in SCRIPTS] + PAIRS:
        typed = text.replace("[MASK]", reference.mask_token)
        encoding = tokenizer.encode(text, pair)
        assert encoding.input_ids == own.encode(typed, pair).ids, (text, pair)
        expected = reference(typed, pair, return_offsets_mapping=True)
        assert encoding.input_ids == expected["input_ids"] and encoding.word_ids == expected.word_ids(), (text, pair)
        assert encoding.offsets == [tuple(o) for o in expected["offset_mapping"]], (text, pair)
    assert tokenizer.special_tokens == {"cls": "<s>", "sep": "</s>", "mask": "<mask>", "pad": "<pad>", "unk": "<unk>"}
    assert tokenizer.model_max_length == 64  # 66 positions, numbered from the padding index + 1


def test_pieces_show_sentencepieces_marker(family):
    _, _, _, tokenizer, _, _ = family
    encoding = tokenizer.encode("Zoë's café in Kraków")
    assert tokenizer.pieces.scheme == "sentencepiece" and tokenizer.pieces.marker_note == "▁ marks a piece that starts a word"
    assert encoding.display_tokens() == encoding.tokens and any(t.startswith("▁") for t in encoding.tokens)
    assert list(word_groups(encoding).labels) == ["<s>", "Zoë's", "café", "in", "Kraków", "</s>"]
