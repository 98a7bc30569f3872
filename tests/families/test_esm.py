"""ESM-2 (Lin et al. 2023), a protein masked-LM, against `transformers` on the same random weights: a tiny checkpoint
saved by transformers' own EsmForMaskedLM (rotary positions, pre-norm layers, no LayerNorm on the embeddings, token
dropout, its contact head) loads strictly through bert.load_pretrained and gives the same logits, every hidden state
and every attention pattern within 1e-5 on a padded batch of amino-acid strings with mask tokens in it; the
tokenizer (bert/character_vocab.py) gives transformers' EsmTokenizer's ids on amino-acid strings and on text in other
scripts; what is not ESM-2 is refused in one line."""
from __future__ import annotations

import json

import pytest
import torch

import bert
from bert.config import BertConfig
from bert.errors import CheckpointError, ConfigError
from bert_test_support import randomize_
from family_support import TOLERANCE, compare, run_transformers

transformers = pytest.importorskip("transformers")

# ESM-2's vocabulary, in its order (facebook/esm2_t6_8M_UR50D's vocab.txt)
VOCAB = ("<cls> <pad> <eos> <unk> L A G V S E R T I D P K Q N F Y M H W C X B U Z O . - <null_1> <mask>").split()
PROTEINS = ["MKTAYIAKQRQISFVKSHFSRQ", "MK<mask>AYIAK", "GSHMSLFDFFKNKGSAATATDRLKLVL<mask>R", "ACDEFGHIKLMNPQRSTVWY"]
OTHER_TEXT = ["Zoë visited Kraków.", "Привет, мир!", "مرحبا بالعالم", "東京は日本の首都です。", "Emoji 😀🎉 👍🏽",
              "mktayiak (lower case)", "M K T  A\tY", "MKTJJBZOU.-X", "[MASK] typed by hand", ""]


def _esm_config(**fields):
    settings = dict(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40,
                    max_position_embeddings=66, position_embedding_type="rotary", emb_layer_norm_before=False,
                    token_dropout=True, pad_token_id=VOCAB.index("<pad>"), mask_token_id=VOCAB.index("<mask>"),
                    layer_norm_eps=1e-5, attn_implementation="eager", num_labels=3)
    return transformers.EsmConfig(**(settings | fields))


def _save(theirs, folder):
    theirs.save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    transformers.EsmTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def esm(tmp_path_factory):
    """(ours, transformers' EsmForMaskedLM, our tokenizer, transformers' EsmTokenizer) on the same random weights."""
    torch.manual_seed(0)
    theirs = randomize_(transformers.EsmForMaskedLM(_esm_config()), seed=3).eval()
    folder = _save(theirs, tmp_path_factory.mktemp("esm"))
    ours, tokenizer = bert.load_pretrained(str(folder))
    return ours, theirs, tokenizer, transformers.EsmTokenizer.from_pretrained(folder), folder


def _batch(tokenizer):
    """The proteins as one padded batch (pad id 1, on the right)."""
    rows = [tokenizer.encode(protein).input_ids for protein in PROTEINS]
    longest = max(map(len, rows))
    input_ids = torch.tensor([row + [tokenizer.pad_id] * (longest - len(row)) for row in rows])
    attention_mask = torch.tensor([[1] * len(row) + [0] * (longest - len(row)) for row in rows])
    return input_ids, torch.zeros_like(input_ids), attention_mask


def test_a_checkpoint_loads_strictly_and_matches_transformers(esm):
    ours, theirs, tokenizer, _, _ = esm
    config = ours.config
    assert (config.family, config.pre_norm, config.rotary, config.embedding_norm, config.token_dropout) == ("esm", True, True, False, True)
    assert ours.embedding.position_embedding is None and ours.embedding.token_type_embedding is None
    assert all(layer.attention.layer_norm is not None for layer in ours.transformer)  # layer 0's attention normed too
    batch = _batch(tokenizer)
    assert not batch[2].all() and (batch[0] == tokenizer.mask_id).any()  # padded, with mask tokens
    compare(ours, theirs, "esm", "EsmForMaskedLM", batch)
    input_ids, _, attention_mask = batch
    with torch.no_grad():  # the fused attention path (nothing recorded) too
        fused = ours(input_ids, attention_mask=attention_mask)
    keep = attention_mask.bool()
    torch.testing.assert_close(fused[keep], run_transformers(theirs, "esm", batch).logits[keep], **TOLERANCE)


def test_token_dropout_is_what_changes_a_masked_input(esm, tmp_path):
    """Without token dropout the mask token's own embedding enters: the logits differ, and match transformers'
    model with token_dropout false (the same weights)."""
    ours, theirs, tokenizer, _, folder = esm
    hf = json.loads((folder / "config.json").read_text()) | {"token_dropout": False}
    (tmp_path / "config.json").write_text(json.dumps(hf))
    for name in ("model.safetensors", "vocab.txt", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    plain, _ = bert.load_pretrained(str(tmp_path))
    their_plain = transformers.EsmForMaskedLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    input_ids, _, attention_mask = _batch(tokenizer)
    with torch.no_grad():
        dropped, kept = ours(input_ids, attention_mask=attention_mask), plain(input_ids, attention_mask=attention_mask)
        expected = their_plain(input_ids=input_ids, attention_mask=attention_mask).logits
    keep = attention_mask.bool()
    assert not torch.allclose(dropped[keep], kept[keep], atol=1e-3)
    torch.testing.assert_close(kept[keep], expected[keep], **TOLERANCE)


def test_the_contact_head_and_rotary_buffers_are_skipped_and_nothing_else(esm, tmp_path):
    _, _, _, _, folder = esm
    from safetensors.torch import load_file, save_file

    state = load_file(folder / "model.safetensors")
    assert any(key.startswith("esm.contact_head.") for key in state)
    stored = next(tensor for key, tensor in state.items() if key.endswith("inv_freq"))  # what skipping it loses: nothing
    torch.testing.assert_close(stored, 1.0 / 10000.0 ** (torch.arange(0, 16, 2, dtype=torch.float) / 16), rtol=0, atol=0)
    state["esm.encoder.layer.1.attention.self.rotary_embeddings.inv_freq"] = torch.ones(8)  # the hub's per-layer name
    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    save_file(state, tmp_path / "model.safetensors")
    bert.load_pretrained(str(tmp_path))  # skipped by name
    save_file(state | {"esm.encoder.layer.1.attention.self.extra.weight": torch.ones(2)}, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match="unexpected tensor 'encoder.layer.1.attention.self.extra.weight'"):
        bert.load_pretrained(str(tmp_path))
    del state["esm.encoder.layer.0.attention.LayerNorm.gamma"]
    save_file(state, tmp_path / "model.safetensors")
    with pytest.raises(CheckpointError, match="missing tensor 'encoder.layer.0.attention.LayerNorm.weight'"):
        bert.load_pretrained(str(tmp_path))


def test_a_folder_we_save_loads_in_transformers_with_the_same_logits(esm, tmp_path):
    ours, theirs, tokenizer, _, _ = esm
    bert.save_hf_folder(ours, tmp_path)
    reloaded = transformers.EsmForMaskedLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    input_ids, _, attention_mask = _batch(tokenizer)
    keep = attention_mask.bool()
    with torch.no_grad():
        expected = theirs(input_ids=input_ids, attention_mask=attention_mask).logits
        torch.testing.assert_close(reloaded(input_ids=input_ids, attention_mask=attention_mask).logits[keep], expected[keep], **TOLERANCE)


def test_ids_equal_transformers_esm_tokenizer(esm):
    _, _, tokenizer, reference, _ = esm
    for text in PROTEINS + OTHER_TEXT:
        encoding = tokenizer.encode(text)
        expected = reference(text.replace("[MASK]", "<mask>"))["input_ids"]
        assert encoding.input_ids == expected, text
        assert encoding.tokens == reference.convert_ids_to_tokens(expected)
    pair = tokenizer.encode("MKTA", "GSHM")
    assert pair.input_ids == reference("MKTA", "GSHM")["input_ids"] and pair.sentences == [0] * 6 + [1] * 5
    assert tokenizer.special_tokens == {"cls": "<cls>", "sep": "<eos>", "mask": "<mask>", "pad": "<pad>", "unk": "<unk>"}
    assert tokenizer.model_max_length == 64  # 66 positions less ESM-1b's two rows before the first


def test_residues_are_pieces_without_a_marker_each_a_word(esm):
    _, _, tokenizer, _, _ = esm
    encoding = tokenizer.encode("MKT<mask>A")
    assert encoding.display_tokens() == ["<cls>", "M", "K", "T", "<mask>", "A", "<eos>"]
    assert encoding.word_ids == [None, 0, 1, 2, 3, 4, None]
    assert not any(encoding.is_continuation(i) for i in range(len(encoding)))
    assert tokenizer.pieces.scheme == "characters" and tokenizer.starts_word("M")
    assert tokenizer.pieces.marker_note == "no marker: each piece is one character, a word of its own"


@pytest.mark.parametrize("fields,refused", [
    (dict(position_embedding_type="absolute"), "position_embedding_type 'absolute' \\(ESM-1b, ESM-1v\\) is not supported"),
    (dict(emb_layer_norm_before=True), "emb_layer_norm_before"),
    (dict(is_folding_model=True), "ESMFold"),
    (dict(rope_theta=500000.0), "rotary base other than ESM-2's 10000"),
])
def test_what_is_not_esm_2_is_refused_in_one_line(fields, refused):
    hf = _esm_config(**fields).to_dict()
    with pytest.raises(ConfigError, match=refused) as caught:
        BertConfig.from_hf_dict(hf)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("architecture,output", [("EsmForSequenceClassification", "classifier"),
                                                 ("EsmForTokenClassification", "tagger")])
def test_the_task_heads_match_transformers(architecture, output, tmp_path, esm):
    """EsmClassificationHead (the first token through dense, tanh, out_proj) and the token classifier."""
    tokenizer = esm[2]
    torch.manual_seed(0)
    theirs = randomize_(getattr(transformers, architecture)(_esm_config()), seed=5).eval()
    ours, _ = bert.load_pretrained(str(_save(theirs, tmp_path)))
    assert ours.own_output == output
    input_ids, _, attention_mask = _batch(tokenizer)
    with torch.no_grad():
        logits, expected = ours(input_ids, attention_mask=attention_mask), theirs(input_ids=input_ids, attention_mask=attention_mask).logits
    keep = attention_mask.bool()
    torch.testing.assert_close(logits if output == "classifier" else logits[keep], expected if output == "classifier" else expected[keep],
                               **TOLERANCE)
