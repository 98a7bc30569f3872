"""mmBERT's tokenizer (Marone et al. 2025: a ModernBERT checkpoint with Gemma's vocabulary): a BPE with byte fallback
(a character outside the vocabulary becomes its UTF-8 bytes, pieces such as <0xE2>), "▁" for a space, Gemma's
special tokens. A small one is built here with the `tokenizers` library in the two ways a tokenizer.json writes the
"▁": Gemma's own (a normalizer that replaces " " with "▁", no pre-tokenizer) and a Metaspace pre-tokenizer; saved
beside a random ModernBERT checkpoint, bert.load_pretrained's tokenizer gives `tokenizers`' own ids on sentences in
five scripts and on pairs, shows "▁" as the scheme's marker, keeps the byte pieces, and the model predicts as
transformers' on them."""
from __future__ import annotations

import json

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

import bert
from bert_test_support import randomize_
from tokenizer_support import CORPUS

transformers = pytest.importorskip("transformers")

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]  # Gemma's ids 0-4
SCRIPTS = ["Zoë's café in Kraków is naïve.", "Привет, мир! Москва — столица.", "مرحبا بالعالم", "東京は日本の首都です。北京欢迎你",
           "Emoji time: 😀🎉 👍🏽 ❤️.", "Paris is the [MASK] of France."]
PAIRS = [("Der Bär läuft.", "Le café est fermé."), ("東京に行きました。", "Было весело 🎉.")]


def _gemma_like(spaces: str) -> Tokenizer:
    """A BPE trained on the tests' corpus with a small alphabet (rare characters fall back to bytes), the 256 byte
    pieces <0x00>..<0xFF> in its vocabulary, "▁" for a space written by `spaces` ("normalizer": Gemma's; "metaspace")."""
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    if spaces == "normalizer":
        tokenizer.normalizer = normalizers.Replace(" ", "▁")
    else:
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never")
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS, limit_alphabet=70, min_frequency=2)
    tokenizer.train_from_iterator(CORPUS + SCRIPTS[:3], trainer=trainer)
    description = json.loads(tokenizer.to_str())
    vocab = description["model"]["vocab"]
    for byte in range(256):
        vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    description["model"]["byte_fallback"] = True
    tokenizer = Tokenizer.from_str(json.dumps(description))
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", pair="<bos> $A <eos> $B:1 <eos>:1",
        special_tokens=[("<bos>", tokenizer.token_to_id("<bos>")), ("<eos>", tokenizer.token_to_id("<eos>"))])
    return tokenizer


@pytest.fixture(scope="module", params=["normalizer", "metaspace"])
def folder(request, tmp_path_factory):
    """A random ModernBERT checkpoint saved by transformers beside the Gemma-style tokenizer.json."""
    folder = tmp_path_factory.mktemp(f"gemma-{request.param}")
    tokenizer = _gemma_like(request.param)
    tokenizer.save(str(folder / "tokenizer.json"))
    roles = {"cls_token": "<bos>", "sep_token": "<eos>", "mask_token": "<mask>", "pad_token": "<pad>", "unk_token": "<unk>"}
    (folder / "special_tokens_map.json").write_text(json.dumps(roles))
    ids = {f"{role}_token_id": tokenizer.token_to_id(token) for role, token in
           (("pad", "<pad>"), ("cls", "<bos>"), ("bos", "<bos>"), ("sep", "<eos>"), ("eos", "<eos>"))}
    config = transformers.ModernBertConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                                           num_attention_heads=2, intermediate_size=40, max_position_embeddings=128,
                                           local_attention=8, attn_implementation="eager", **ids)
    torch.manual_seed(0)
    randomize_(transformers.ModernBertForMaskedLM(config), seed=3).eval().save_pretrained(folder)
    return folder


def test_ids_equal_tokenizers_own_with_byte_fallback_in_five_scripts(folder):
    _, tokenizer = bert.load_pretrained(str(folder))
    own = Tokenizer.from_file(str(folder / "tokenizer.json"))
    fell_back = set()
    for text, pair in [(text, None) for text in SCRIPTS] + PAIRS:
        encoding = tokenizer.encode(text, pair)
        expected = own.encode(text.replace("[MASK]", "<mask>"), pair)
        assert encoding.input_ids == expected.ids and encoding.tokens == expected.tokens, (text, pair)
        fell_back |= {token for token in encoding.tokens if token.startswith("<0x")}
    assert {"<0xF0>", "<0x9F>"} <= fell_back  # an emoji's four UTF-8 bytes, each a piece of its own
    assert tokenizer.special_tokens == {"cls": "<bos>", "sep": "<eos>", "mask": "<mask>", "pad": "<pad>", "unk": "<unk>"}


def test_the_piece_marker_shown_is_sentencepieces(folder):
    _, tokenizer = bert.load_pretrained(str(folder))
    assert tokenizer.pieces.word_start == "▁" and not tokenizer.pieces.continuation_prefix
    assert tokenizer.pieces.marker_note == "▁ marks a piece that starts a word"
    encoding = tokenizer.encode("Paris is big 😀")
    shown = encoding.display_tokens()
    assert shown == encoding.tokens  # as the vocabulary writes them: the "▁" of each space, the byte pieces
    assert any("▁" in token for token in shown) and "<0xF0>" in shown


def test_the_model_predicts_as_transformers_on_those_ids(folder):
    ours, tokenizer = bert.load_pretrained(str(folder))
    theirs = transformers.ModernBertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.tensor([tokenizer.encode(SCRIPTS[4] + " " + SCRIPTS[1]).input_ids])
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), theirs(input_ids=ids).logits, atol=1e-5, rtol=1e-5)
