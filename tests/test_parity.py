"""Our BERT against Hugging Face `transformers` (the reference): same weights in, same numbers out.

Tiny random models for every layout a checkpoint can have, then the real MiniLM on real sentences.
Compared at non-padded positions only: what a padded query computes is meaningless in both.
"""
from __future__ import annotations

import pytest
import torch

import bert
from bert.checkpoint import save_hf_folder
from bert_test_support import PAIRS, SENTENCES, TINY_VOCAB, hf_config, pad_rows, randomize_, random_rows

TOLERANCE = dict(atol=1e-5, rtol=1e-5)


def assert_close_where(ours: torch.Tensor, theirs: torch.Tensor, keep: torch.Tensor, what: str, tolerance=TOLERANCE):
    """Compare at the positions where keep ([batch, seq] bool) is True."""
    assert ours.shape == theirs.shape, f"{what}: shape {tuple(ours.shape)} vs transformers {tuple(theirs.shape)}"
    torch.testing.assert_close(ours[keep], theirs[keep], **tolerance, msg=lambda m: f"{what}: {m}")


def assert_same_pattern(ours: torch.Tensor, theirs: torch.Tensor, mask: torch.Tensor, what: str, tolerance=TOLERANCE):
    """Attention [batch, head, query, key]: every real query's row, over all keys (padded keys must be ~0 in both)."""
    real_query = mask.bool()[:, None, :].expand(ours.shape[:3])
    assert ours.shape == theirs.shape, f"{what}: shape {tuple(ours.shape)} vs transformers {tuple(theirs.shape)}"
    torch.testing.assert_close(ours[real_query], theirs[real_query], **tolerance, msg=lambda m: f"{what}: {m}")


def compare_with_transformers(ours: bert.Bert, theirs, batch, tolerance=TOLERANCE) -> None:
    """Logits (if any), NSP logits (if any), every hidden state and every attention pattern."""
    input_ids, token_type_ids, attention_mask = batch
    keep = attention_mask.bool()
    with torch.no_grad():
        reference = theirs(
            input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
            output_hidden_states=True, output_attentions=True,
        )
        logits, cache = ours.run_with_cache(input_ids, token_type_ids, attention_mask)
    num_layers = ours.config.num_layers
    assert len(reference.hidden_states) == num_layers + 1 and len(reference.attentions) == num_layers
    assert_close_where(cache["embedding.hook_out"], reference.hidden_states[0], keep, "embedding output", tolerance)
    for i in range(num_layers):
        assert_close_where(cache[f"transformer.{i}.hook_out"], reference.hidden_states[i + 1], keep, f"layer {i} output", tolerance)
        pattern = cache[f"transformer.{i}.attention.attention.hook_pattern"]
        assert_same_pattern(pattern, reference.attentions[i], attention_mask, f"layer {i} attention", tolerance)
    if hasattr(reference, "prediction_logits"):  # BertForPreTraining
        assert_close_where(logits, reference.prediction_logits, keep, "MLM logits", tolerance)
        nsp = ours.nsp_logits(cache[f"transformer.{num_layers - 1}.hook_out"])
        torch.testing.assert_close(nsp, reference.seq_relationship_logits, **tolerance, msg=lambda m: f"NSP logits: {m}")
    elif hasattr(reference, "logits"):  # BertForMaskedLM
        assert_close_where(logits, reference.logits, keep, "MLM logits", tolerance)
    else:  # BertModel
        assert logits is None
        assert_close_where(ours.encode(input_ids, token_type_ids, attention_mask), reference.last_hidden_state, keep, "last hidden state", tolerance)
        if getattr(reference, "pooler_output", None) is not None:
            torch.testing.assert_close(ours.pooler(reference.last_hidden_state), reference.pooler_output, **tolerance)


@pytest.mark.parametrize("architecture", ["BertForMaskedLM", "BertForPreTraining"])
def test_transformers_checkpoint_loads_and_matches(architecture, tiny_hf_config, tiny_batch, save_hf_model):
    import transformers

    torch.manual_seed(0)
    theirs = randomize_(getattr(transformers, architecture)(tiny_hf_config), seed=3)
    folder = save_hf_model(theirs)
    ours, _ = bert.load_pretrained(str(folder))
    assert ours.has_mlm_head and (ours.nsp_head is not None) == (architecture == "BertForPreTraining")
    batch = tuple(t[:, : tiny_hf_config.max_position_embeddings] for t in tiny_batch)
    compare_with_transformers(ours, theirs, batch)


def test_encoder_only_checkpoint_loads_with_pooler(tiny_batch, save_hf_model):
    from transformers import BertModel

    theirs = randomize_(BertModel(hf_config(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=40)), seed=4)
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    assert not ours.has_mlm_head and ours.pooler is not None
    compare_with_transformers(ours, theirs, tiny_batch)


@pytest.mark.parametrize(
    "heads, architecture",
    [
        (dict(mlm_head=True), "BertForMaskedLM"),
        (dict(mlm_head=True, nsp_head=True), "BertForPreTraining"),
        (dict(mlm_head=False, pooler=True), "BertModel"),
    ],
)
def test_our_saved_folder_loads_in_transformers(heads, architecture, tmp_path, tiny_vocab_file, tiny_batch):
    import json

    import transformers

    config = bert.BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=48, num_layers=2, num_heads=4, intermediate_size=64, max_position_embeddings=32)
    ours = randomize_(bert.Bert(config, **heads), seed=5)
    folder = save_hf_folder(ours, tmp_path / "ours", tiny_vocab_file)
    assert json.loads((folder / "config.json").read_text())["architectures"] == [architecture]
    theirs, loading = getattr(transformers, architecture).from_pretrained(
        folder, attn_implementation="eager", output_loading_info=True
    )
    assert not loading["missing_keys"], f"transformers found no value for {loading['missing_keys']}"
    assert not loading["mismatched_keys"]
    compare_with_transformers(ours, theirs.eval(), tiny_batch)


def _old_style(state: dict[str, torch.Tensor], prefix: bool) -> dict[str, torch.Tensor]:
    """As TensorFlow-era conversions wrote them: LayerNorm gamma/beta, with or without the `bert.` prefix."""
    renamed = {}
    for key, tensor in state.items():
        key = key.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        renamed[key if prefix else key.removeprefix("bert.")] = tensor.clone()
    return renamed


@pytest.mark.parametrize("prefix", [True, False], ids=["bert-prefix", "no-prefix"])
def test_old_style_bin_checkpoint(prefix, tmp_path, tiny_vocab_file, tiny_batch):
    from transformers import BertForPreTraining

    theirs = randomize_(BertForPreTraining(hf_config(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=40)), seed=6)
    folder = tmp_path / "old"
    folder.mkdir()
    theirs.config.to_json_file(folder / "config.json")
    state = _old_style(theirs.state_dict(), prefix)  # carries the tied cls.predictions.decoder.* copies too
    assert "cls.predictions.transform.LayerNorm.gamma" in state
    torch.save(state, folder / "pytorch_model.bin")
    (folder / "vocab.txt").write_bytes(tiny_vocab_file.read_bytes())
    ours, _ = bert.load_pretrained(str(folder))
    compare_with_transformers(ours, theirs, tiny_batch)


# The real MiniLM (6 layers, 384 wide, 12 heads), as sentence-transformers ships it: BertModel with a pooler.
MINILM_TOLERANCE = dict(atol=1e-4, rtol=1e-4)


@pytest.fixture(scope="module")
def minilm_reference(minilm_path):
    from transformers import BertModel

    return BertModel.from_pretrained(minilm_path, attn_implementation="eager").eval()


@pytest.mark.slow
def test_minilm_matches_transformers_on_real_sentences(minilm, minilm_batch, minilm_reference):
    model, _ = minilm
    assert len(SENTENCES) + len(PAIRS) >= 20 and minilm_batch[2].float().mean() < 1  # there is padding
    assert (minilm_batch[1] == 1).any()  # there are pairs
    compare_with_transformers(model, minilm_reference, minilm_batch, MINILM_TOLERANCE)


def test_minilm_single_sentence_without_attention_mask(minilm, minilm_reference):
    """One sentence, no padding, no mask passed: the path the app takes for one input."""
    model, tokenizer = minilm
    input_ids, token_type_ids = tokenizer.encode(SENTENCES[2]).tensors()
    with torch.no_grad():
        expected = minilm_reference(input_ids=input_ids, token_type_ids=token_type_ids).last_hidden_state
        torch.testing.assert_close(model.encode(input_ids, token_type_ids), expected, **MINILM_TOLERANCE)


def test_tiny_rows_helper_builds_pairs_and_padding():
    """The batch the tiny parity tests use really has pairs and padding (else they would test less)."""
    input_ids, token_type_ids, mask = pad_rows(random_rows(len(TINY_VOCAB), [(3, 0), (2, 2)], seed=0))
    assert mask.tolist() == [[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1]]
    assert token_type_ids.tolist() == [[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1]]
    sep = TINY_VOCAB.index("[SEP]")
    assert input_ids[1, 3] == sep and input_ids[1, 6] == sep


def test_logits_match_with_and_without_gradients(save_hf_model, tiny_batch):
    """Packed on request, without gradients every Linear multiplies with a oneDNN-packed copy of its weight
    (bert.packed_linear); with gradients it is nn.Linear. Both ways, and at the masks only, give transformers' logits."""
    from transformers import BertForMaskedLM

    vocab = 1174
    theirs = randomize_(BertForMaskedLM(hf_config(vocab_size=vocab, num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=40)), seed=9)
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)), pack_for_cpu=True)
    input_ids, token_type_ids, attention_mask = tiny_batch
    keep = attention_mask.bool()
    with torch.no_grad():
        reference = theirs(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).logits
        packed = ours(input_ids, token_type_ids, attention_mask)
    with torch.inference_mode():
        at_masks = ours(input_ids, token_type_ids, attention_mask, logit_mask=keep)
    whole = ours(input_ids, token_type_ids, attention_mask)  # gradients on: nn.Linear
    assert whole.requires_grad and packed.shape[-1] == vocab
    assert "_packed" in ours.lm_head.unembedding.__dict__  # the no-gradient pass did take the packed path
    assert_close_where(packed, reference, keep, "MLM logits, packed weights")
    assert_close_where(whole.detach(), reference, keep, "MLM logits, nn.Linear")
    torch.testing.assert_close(at_masks, reference[keep], **TOLERANCE)
