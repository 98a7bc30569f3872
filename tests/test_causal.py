"""The left-to-right (causal) attention of BertConfig(causal=True): no position sees its right context, the
bidirectional model does; and the same numbers as Hugging Face's BertModel with is_decoder=True on the same weights."""
from __future__ import annotations

import pytest
import torch

from bert import Bert, BertConfig
from bert.checkpoint import save_hf_folder

VOCAB, SEQ, CHANGED = 60, 12, 7  # the token at position 7 is replaced


def model(causal: bool) -> Bert:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_layers=3, num_heads=4, intermediate_size=64,
                        max_position_embeddings=32, causal=causal)
    return Bert(config, nsp_head=True).eval()


def two_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, VOCAB, (2, SEQ), generator=generator)
    changed = ids.clone()
    changed[:, CHANGED] = (ids[:, CHANGED] + 1) % VOCAB
    return ids, changed, torch.zeros_like(ids)


def test_a_causal_model_never_sees_its_right_context():
    ours = model(causal=True)
    ids, changed, types = two_inputs()
    with torch.no_grad():
        before, after = ours(ids, types), ours(changed, types)
        patterns = ours.run_with_cache(ids, types, names=lambda name: name.endswith("hook_pattern"))[1]
    assert torch.equal(before[:, :CHANGED], after[:, :CHANGED]), "a position left of the change moved"
    assert not torch.allclose(before[:, CHANGED:], after[:, CHANGED:]), "the change itself and what follows must move"
    for name, pattern in patterns.items():  # [batch, head, query, key]: nothing above the diagonal
        assert torch.equal(pattern.triu(1), torch.zeros_like(pattern)), name


def test_the_bidirectional_model_does_see_it():
    ours = model(causal=False)
    ids, changed, types = two_inputs()
    with torch.no_grad():
        before, after = ours(ids, types), ours(changed, types)
    assert (before[:, :CHANGED] - after[:, :CHANGED]).abs().amax() > 1e-4


def test_causal_padding_still_hides_padded_keys():
    ours = model(causal=True)
    ids, _, types = two_inputs()
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0
    with torch.no_grad():
        padded = ours(ids, types, mask)[1, :9]
        alone = ours(ids[1:, :9], types[1:, :9])[0]
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-5)


def test_the_fused_and_step_by_step_paths_agree_with_the_causal_mask():
    """Plain calls take scaled_dot_product_attention (is_causal, or the future folded into the padding mask);
    recording the pattern takes the step-by-step path: the same logits, with and without padding."""
    ours = model(causal=True)
    ids, _, types = two_inputs()
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0
    for attention_mask in (None, mask):
        with torch.no_grad():
            fused = ours(ids, types, attention_mask)
            step_by_step, _ = ours.run_with_cache(ids, types, attention_mask, names=lambda name: name.endswith("hook_pattern"))
        torch.testing.assert_close(fused, step_by_step, atol=1e-5, rtol=1e-5)


def test_same_as_transformers_bertmodel_with_is_decoder(tmp_path):
    transformers = pytest.importorskip("transformers")
    ours = model(causal=True)
    folder = save_hf_folder(ours, tmp_path / "causal")
    theirs = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    assert theirs.config.is_decoder, "config.json carries causal as is_decoder"
    ids, _, types = two_inputs()
    mask = torch.ones_like(ids)
    mask[0, 10:] = 0
    with torch.no_grad():
        reference = theirs(input_ids=ids, token_type_ids=types, attention_mask=mask).last_hidden_state
        hidden = ours.encode(ids, types, mask)
    keep = mask.bool()
    torch.testing.assert_close(hidden[keep], reference[keep], atol=1e-5, rtol=1e-5)


def test_is_decoder_round_trips_through_config_json():
    assert BertConfig.from_hf_dict({"is_decoder": True}).causal
    assert not BertConfig.from_hf_dict({}).causal
    assert BertConfig(causal=True).to_hf_dict()["is_decoder"] is True
