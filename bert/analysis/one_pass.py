"""One forward pass, step by step: the recorded values a reader follows from the word pieces to the guess for
[MASK], in the order the model computes them (the page "One pass, step by step", viz_app/specs/one_pass.py).

Every array is a hook's recorded value of the one pass (bert/model.py names them), for one input row:

    embeddings     token, position, segment [seq, E] (None where the family has none), their sum, the
                   embedding LayerNorm's output (ALBERT: then the projection E -> H), and the LayerNorm's
                   scale and shift [E]
    chosen layer   its input [seq, H]; one head's q, k, v [seq, head_dim], scores and pattern [query, key]
                   (DeBERTa: the score terms too), and that head's slices of W_Q, W_K, W_V [H, head_dim] and
                   their biases (rotary: the angles that turn q and k); every head's weighted values z [seq, H] (heads concatenated);
                   the attention result, the residual + LayerNorm, the MLP's pre, post [seq, I], result, output
    every layer    how much each block changes each token's vector: ||after - before|| / ||before||, and the
                   length of each token's vector after the embeddings and after each block (the residual stream)
    masked-LM head the final vectors at the [MASK]s, the head's transform and logits [mask, vocab]

Recomputing each step from the ones before (the sum, the LayerNorm with its scale and shift, softmax of the scores,
pattern x values, ...) gives the next recorded step: tests/analysis/test_one_pass.py checks that against
transformers' hidden states. `zero_head` sets one head's weighted values to zero (TransformerLens's head ablation)
for the "what if" knob: the guess with that head gone.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bert import attention as attn
from bert.devices import as_numpy, model_device
from bert.hooks import hook_name

BLOCKS = ("attention", "mlp")  # the two blocks of every layer, in order


@dataclass(frozen=True)
class OnePass:
    """The values of one recorded pass that the walk shows (one input row; numpy, float32)."""

    layer: int  # the chosen layer, counted from 0
    head: int  # the chosen head of that layer
    parts: dict[str, np.ndarray]  # "token", "position", "segment" [seq, E]: the embeddings the family adds
    embedding_sum: np.ndarray  # [seq, E]
    embedding_norm: np.ndarray  # [seq, E] the embedding norm's output (ESM-2 and EuroBERT, which have none: the sum)
    norm_scale: np.ndarray | None  # [E] the embedding norm's weight (gamma); None where there is none (ESM-2, EuroBERT)
    norm_shift: np.ndarray | None  # [E] its bias (beta); None where the family has no biases
    embedding_out: np.ndarray  # [seq, H] what enters layer 0 (ALBERT: after the projection)
    layer_in: np.ndarray  # [seq, H] what enters the chosen layer
    attention_in: np.ndarray  # [seq, H] what its attention reads (pre-norm: LayerNorm'd; else layer_in)
    q: np.ndarray  # [seq, head_dim] the chosen head's queries (rotary: turned)
    k: np.ndarray  # [seq, head_dim]
    v: np.ndarray  # [seq, head_dim]
    weights: dict[str, np.ndarray]  # "q", "k", "v": [H, head_dim] the head's slice of W (x @ W + b before the turn)
    biases: dict[str, np.ndarray]  # "q", "k", "v": [head_dim] the head's slice of b; empty where the family has none
    rotation: tuple[np.ndarray, np.ndarray] | None  # rotary: (cos, sin) [seq, head_dim] that turn q and k; else None
    scale: float  # the scores' divisor: sqrt(head_dim) (DeBERTa with both position terms: sqrt(3 head_dim))
    score_terms: dict[str, np.ndarray]  # DeBERTa: "c2c", "c2p", "p2c" [query, key], each scaled; else empty
    scores: np.ndarray  # [query, key] scaled, masked (outside a local window: the dtype's minimum)
    pattern: np.ndarray  # [query, key] softmax of the scores
    z: np.ndarray  # [seq, heads * head_dim] every head's weighted values, heads concatenated
    attention_result: np.ndarray  # [seq, H] the projection of z: what attention adds to the residual
    attention_out: np.ndarray  # [seq, H] after the residual (post-LN: and the LayerNorm)
    mlp_in: np.ndarray  # [seq, H] what the MLP reads (pre-norm: LayerNorm'd attention_out)
    mlp_pre: np.ndarray  # [seq, I] the expansion, before the activation
    mlp_post: np.ndarray  # [seq, I] after the activation (gated: times the gate)
    mlp_result: np.ndarray  # [seq, H] the contraction: what the MLP adds
    layer_out: np.ndarray  # [seq, H] the chosen layer's output
    changes: np.ndarray  # [layer, block, seq] ||after - before|| / ||before|| of each block (BLOCKS)
    stream_norms: np.ndarray  # [1 + layer * block, seq] ||h|| of the residual stream after the embeddings and each block
    masks: tuple[int, ...]  # positions of the [MASK]s whose logits are recorded
    final: np.ndarray | None  # [mask, H] the final vectors there (pre-norm: after the final LayerNorm)
    transform: np.ndarray | None  # [mask, E] the masked-LM head's transform of them
    logits: np.ndarray | None  # [mask, vocab]; None without a masked-LM head


def names_for(model, layer: int) -> list[str]:
    """The hooks the walk keeps: the embeddings, every hook of the chosen layer, every layer's block outputs (for
    the overview), the final norm and the masked-LM head."""
    known = set(model.hook_names())
    per_layer = [hook_name(kind, i) for i in range(model.config.num_layers) for kind in ("attention_out", "layer_out")]
    chosen = [name for name in known if name.startswith(f"transformer.{layer}.")]
    return [name for name in model.hook_names() if name in set(per_layer + chosen) or not name.startswith("transformer.")]


def record_one_pass(model, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None, layer: int, head: int,
                    masks: tuple[int, ...] = (), zero_head: tuple[int, int] | None = None) -> OnePass:
    """One recorded forward pass of one row ([1, seq] ids) and the values the walk shows (OnePass); the masked-LM
    head runs at `masks` (the [MASK] positions) only. `zero_head`: (layer, head) whose weighted values are set to
    zero in this pass."""
    device = model_device(model)
    input_ids = input_ids.to(device)
    token_type_ids = None if token_type_ids is None else token_type_ids.to(device)
    masks = tuple(int(i) for i in masks)
    logit_mask = torch.zeros_like(input_ids, dtype=torch.bool)  # the head runs at the [MASK]s only
    logit_mask[0, list(masks)] = True
    interventions = {}
    if zero_head is not None:
        interventions[hook_name("z", zero_head[0])] = lambda z, name, h=zero_head[1]: zeroed(z, h)
    with torch.no_grad():
        logits, cache = model.run_with_cache(input_ids, token_type_ids, names=names_for(model, layer),
                                             interventions=interventions, logit_mask=logit_mask,
                                             output="mlm")  # None without the head
    return _read(model, cache, layer, head, masks, logits if masks else None)


def zeroed(z: torch.Tensor, head: int) -> torch.Tensor:
    """z [batch, head, seq, head_dim] with one head's weighted values set to zero."""
    z = z.clone()
    z[:, head] = 0
    return z


def _read(model, cache, layer: int, head: int, masks: tuple[int, ...], logits) -> OnePass:
    def one(kind: str, at: int | None = None) -> np.ndarray | None:
        name = hook_name(kind, at) if at is not None else hook_name(kind)
        return as_numpy(cache[name][0]) if name in cache else None

    config, embedding = model.config, model.embedding
    parts = {part: one(kind) for part, kind in (("token", "token"), ("position", "position"), ("segment", "token_type"))}
    parts = {part: value for part, value in parts.items() if value is not None}
    residual = [one("embedding_out")] + [one("layer_out", i) for i in range(config.num_layers)]
    middle = [one("attention_out", i) for i in range(config.num_layers)]
    changes = np.stack([np.stack([change(residual[i], middle[i]), change(middle[i], residual[i + 1])])
                        for i in range(config.num_layers)])
    stream = [residual[0]] + [vector for i in range(config.num_layers) for vector in (middle[i], residual[i + 1])]
    z = one("z", layer)  # [head, seq, head_dim]
    attention_out = middle[layer]
    final = None
    if logits is not None:
        final_hidden = one("final_norm") if "final_norm.hook_out" in cache else residual[-1]
        final = final_hidden[list(masks)]
    norm = embedding.layer_norm  # None: no norm on the embeddings (ESM-2, EuroBERT)
    shift = None if norm is None else getattr(norm, "bias", None)  # an RMSNorm has no bias
    weights, biases, rotation = _head_projections(model, layer, head, one("q", layer).shape[-2])
    return OnePass(
        layer=layer, head=head, parts=parts, embedding_sum=one("embedding_sum"),
        embedding_norm=one("embedding_norm") if config.projects_embeddings else one("embedding_out"),
        norm_scale=None if norm is None else as_numpy(norm.weight.detach()),
        norm_shift=None if shift is None else as_numpy(shift.detach()),
        embedding_out=residual[0], layer_in=residual[layer],
        attention_in=_or(one("attention_in", layer), residual[layer]),
        q=one("q", layer)[head], k=one("k", layer)[head], v=one("v", layer)[head],
        weights=weights, biases=biases, rotation=rotation,
        scale=float((config.head_size * config.score_scale) ** 0.5),
        score_terms={term: one(f"scores_{term}", layer)[head] for term in ("c2c", "c2p", "p2c")
                     if hook_name(f"scores_{term}", layer) in cache},
        scores=one("scores", layer)[head], pattern=one("pattern", layer)[head],
        z=np.concatenate(list(z), axis=-1), attention_result=one("attention_result", layer),
        attention_out=attention_out, mlp_in=_or(one("mlp_in", layer), attention_out),
        mlp_pre=one("mlp_pre", layer), mlp_post=one("mlp_post", layer), mlp_result=one("mlp_result", layer),
        layer_out=residual[layer + 1], changes=changes,
        stream_norms=np.stack([np.linalg.norm(vector.astype(np.float64), axis=-1) for vector in stream]), masks=masks, final=final,
        transform=None if logits is None else as_numpy(cache[hook_name("lm_transform")]),
        logits=None if logits is None else as_numpy(logits),
    )


def _head_projections(model, layer: int, head: int, seq: int):
    """The chosen head's slices of W_Q, W_K, W_V as [H, head_dim] (nn.Linear keeps [out, in]), of their biases, and
    the rotary angles of that layer ((cos, sin) [seq, head_dim]; None without rotary positions)."""
    module = model.transformer[layer]
    attention = getattr(module, "layer", module).attention.attention  # ALBERT: the one shared layer at this depth
    size = model.config.head_size
    rows = slice(head * size, (head + 1) * size)
    projections = {"q": attention.project_query, "k": attention.project_key, "v": attention.project_value}
    weights = {kind: as_numpy(linear.weight.detach()[rows].T) for kind, linear in projections.items()}
    biases = {kind: as_numpy(linear.bias.detach()[rows]) for kind, linear in projections.items() if linear.bias is not None}
    rotation = None
    if attention.rope_theta is not None:
        cos, sin = attn.rotary_angles(seq, size, attention.rope_theta)
        rotation = (as_numpy(cos), as_numpy(sin))
    return weights, biases, rotation


def _or(value: np.ndarray | None, otherwise: np.ndarray) -> np.ndarray:
    return otherwise if value is None else value


def change(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """||after - before|| / ||before|| per token: how much a block turned and stretched each token's vector."""
    return np.linalg.norm(after - before, axis=-1) / np.maximum(np.linalg.norm(before, axis=-1), 1e-12)


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(logits / temperature) over the last axis, in float64 (the temperature knob needs no new pass)."""
    scaled = np.asarray(logits, dtype=np.float64) / temperature
    scaled -= scaled.max(-1, keepdims=True)
    exp = np.exp(scaled)
    return exp / exp.sum(-1, keepdims=True)
