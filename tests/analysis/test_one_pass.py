"""The walk of one forward pass (bert/analysis/one_pass.py, the page "One pass, step by step"): every step
recomputed in float64 from the values the page shows, with transformers' own modules on the same weights, matches
the next shown step and transformers' hidden states and logits. For BERT and for RoBERTa (one segment embedding,
positions counted after the padding id), tiny random checkpoints built by transformers' classes.

Tolerance: the shown values are float32 (relative rounding 6e-8) of magnitude up to about 10 here, summed over at
most 64 terms: 1e-5 absolute and relative holds with and without AVX-512.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bert
from bert.analysis.one_pass import record_one_pass, softmax
from bert_test_support import TINY_CONFIGS, hf_config, randomize_
from families.family_support import build_hf, write_tiny_tokenizer

TOLERANCE = dict(atol=1e-5, rtol=1e-5)
WORDS = "the dog barked at the [MASK] man ."
LAYER, HEAD = 1, 1


def close(mine, reference) -> None:
    np.testing.assert_allclose(np.asarray(mine, np.float64), np.asarray(reference, np.float64), **TOLERANCE)


def layer_norm(x: np.ndarray, norm: torch.nn.LayerNorm) -> np.ndarray:
    """LayerNorm in float64 with transformers' module's scale, shift and eps."""
    x = np.asarray(x, np.float64)
    centred = x - x.mean(-1, keepdims=True)
    normed = centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + norm.eps)
    return normed * norm.weight.detach().double().numpy() + norm.bias.detach().double().numpy()


def linear(x: np.ndarray, module: torch.nn.Linear) -> np.ndarray:
    return np.asarray(x, np.float64) @ module.weight.detach().double().numpy().T + module.bias.detach().double().numpy()


@pytest.fixture(params=["bert", "roberta"])
def pair(request, tmp_path, tiny_vocab_file):
    """(family, transformers' model, ours, ids [1, seq], the [MASK] positions) on the same weights."""
    family = request.param
    if family == "bert":
        import transformers

        torch.manual_seed(0)
        theirs = randomize_(transformers.BertForMaskedLM(hf_config(**TINY_CONFIGS["2layers-h64-4heads-gelu_new"])), seed=1)
    else:
        theirs = build_hf("roberta", "RobertaForMaskedLM")
    theirs.eval()
    theirs.save_pretrained(tmp_path)
    write_tiny_tokenizer(tmp_path, tiny_vocab_file)
    ours, tokenizer = bert.load_pretrained(str(tmp_path))
    encoding = tokenizer.encode(WORDS)
    ids = torch.tensor([encoding.input_ids])
    masks = tuple(i for i, token in enumerate(encoding.tokens) if token == "[MASK]")
    return family, theirs, ours, ids, masks


def test_every_step_recomputed_from_the_shown_values(pair):
    family, theirs, ours, ids, masks = pair
    shown = record_one_pass(ours, ids, None, LAYER, HEAD, masks)
    with torch.no_grad():
        reference = theirs(ids, output_hidden_states=True)
    base = getattr(theirs, family)
    hidden = [h[0].double().numpy() for h in reference.hidden_states]

    # the embeddings: their sum, then LayerNorm with the shown scale and shift
    expected_parts = {"token", "position", "segment"}
    assert set(shown.parts) == expected_parts
    close(sum(shown.parts.values()), shown.embedding_sum)
    close(layer_norm(shown.embedding_sum, base.embeddings.LayerNorm), shown.embedding_norm)
    close(shown.norm_scale, base.embeddings.LayerNorm.weight.detach().numpy())
    close(shown.embedding_out, hidden[0])
    close(shown.layer_in, hidden[LAYER])

    # one head: q·k / sqrt(d), softmax, the weighted values
    head_dim = shown.q.shape[-1]
    assert shown.scale == pytest.approx(np.sqrt(head_dim))
    scores = shown.q.astype(np.float64) @ shown.k.T.astype(np.float64) / shown.scale
    close(scores, shown.scores)
    close(softmax(shown.scores), shown.pattern)
    close(shown.pattern.astype(np.float64) @ shown.v, shown.z[:, HEAD * head_dim:(HEAD + 1) * head_dim])

    # heads concatenated and projected, the residual and LayerNorm
    layer = base.encoder.layer[LAYER]
    close(linear(shown.z, layer.attention.output.dense), shown.attention_result)
    close(layer_norm(shown.layer_in.astype(np.float64) + shown.attention_result, layer.attention.output.LayerNorm),
          shown.attention_out)

    # the MLP: expansion, GELU, contraction, residual and LayerNorm
    close(linear(shown.mlp_in, layer.intermediate.dense), shown.mlp_pre)
    with torch.no_grad():
        activated = layer.intermediate.intermediate_act_fn(torch.tensor(shown.mlp_pre, dtype=torch.float64)).numpy()
    close(activated,
          shown.mlp_post)
    close(linear(shown.mlp_post, layer.output.dense), shown.mlp_result)
    close(layer_norm(shown.attention_out.astype(np.float64) + shown.mlp_result, layer.output.LayerNorm), shown.layer_out)
    close(shown.layer_out, hidden[LAYER + 1])

    # the masked-LM head at the [MASK]: the final vector, its logits (transformers'), the softmax
    close(shown.final, hidden[-1][list(masks)])
    close(shown.logits, reference.logits[0, list(masks)].numpy())
    probabilities = softmax(shown.logits)
    close(probabilities.sum(-1), np.ones(len(masks)))
    assert np.argmax(softmax(shown.logits, temperature=0.5)) == np.argmax(probabilities)


def test_each_blocks_change_is_measured_on_the_recorded_residual(pair):
    family, theirs, ours, ids, masks = pair
    shown = record_one_pass(ours, ids, None, LAYER, HEAD, masks)
    before = shown.layer_in.astype(np.float64)
    close(shown.changes[LAYER, 0], np.linalg.norm(shown.attention_out - before, axis=-1) / np.linalg.norm(before, axis=-1))
    middle = shown.attention_out.astype(np.float64)
    close(shown.changes[LAYER, 1], np.linalg.norm(shown.layer_out - middle, axis=-1) / np.linalg.norm(middle, axis=-1))


def test_the_residual_streams_length_is_transformers_hidden_states(pair):
    """After the embeddings and after each layer (every second point of the stream), transformers' hidden states."""
    family, theirs, ours, ids, masks = pair
    shown = record_one_pass(ours, ids, None, LAYER, HEAD, masks)
    with torch.no_grad():
        hidden = theirs(ids, output_hidden_states=True).hidden_states
    assert len(shown.stream_norms) == 2 * len(hidden) - 1
    close(shown.stream_norms[::2], np.stack([np.linalg.norm(h[0].double().numpy(), axis=-1) for h in hidden]))
    close(shown.stream_norms[2 * LAYER + 1], np.linalg.norm(shown.attention_out.astype(np.float64), axis=-1))


def test_zeroing_a_head_matches_transformers_with_that_heads_slice_zeroed(pair):
    """Zeroing one head's weighted values (Michel et al. 2019): in transformers, that head's slice of the input of
    the output projection (attention.output.dense) set to zero by a forward pre-hook."""
    family, theirs, ours, ids, masks = pair
    zeroed = record_one_pass(ours, ids, None, LAYER, HEAD, masks, zero_head=(LAYER, HEAD))
    head_dim = theirs.config.hidden_size // theirs.config.num_attention_heads

    def zero_slice(module, args):
        concatenated = args[0].clone()
        concatenated[..., HEAD * head_dim:(HEAD + 1) * head_dim] = 0
        return (concatenated,)

    projection = getattr(theirs, family).encoder.layer[LAYER].attention.output.dense
    handle = projection.register_forward_pre_hook(zero_slice)
    try:
        with torch.no_grad():
            reference = theirs(ids)
    finally:
        handle.remove()
    close(zeroed.logits, reference.logits[0, list(masks)].numpy())
    assert not np.allclose(zeroed.logits, record_one_pass(ours, ids, None, LAYER, HEAD, masks).logits)


def test_the_walk_of_a_model_without_an_embedding_layer_norm(tmp_path, tiny_vocab_file):
    """ESM-2 (Lin et al. 2023) has no LayerNorm on its embeddings: the walk shows none (no scale, no shift), the sum
    (after its token dropout) is what enters layer 0, and the guess at the mask is transformers' EsmForMaskedLM's."""
    theirs = build_hf("esm", "EsmForMaskedLM").eval()
    theirs.save_pretrained(tmp_path)
    write_tiny_tokenizer(tmp_path, tiny_vocab_file)
    ours, tokenizer = bert.load_pretrained(str(tmp_path))
    encoding = tokenizer.encode(WORDS)
    ids = torch.tensor([encoding.input_ids])
    masks = tuple(i for i, token in enumerate(encoding.tokens) if token == "[MASK]")
    one = record_one_pass(ours, ids, None, LAYER, HEAD, masks)
    assert one.norm_scale is None and one.norm_shift is None and masks
    with torch.no_grad():
        reference = theirs(input_ids=ids, output_hidden_states=True)
    close(one.embedding_norm, one.embedding_sum)
    close(one.embedding_out, reference.hidden_states[0][0].numpy())
    close(one.logits, reference.logits[0, list(masks)].numpy())
