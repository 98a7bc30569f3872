"""A cap on a graph's active features (circuit-tracer's `max_feature_nodes`): at 128 tokens the built-in model's
transcoders have up to 6 layers × 128 positions × k active features, and the dense adjacency grows with their
square (2.6 GB at k = 32). The cap keeps the `max_features` most influential and folds every other one into its
MLP's error node at its position, so the graph stays exact: each error node then carries the MLP's real output
minus what the kept features and the transcoder's bias write, and completeness still holds to float32 rounding.

Influence here is each feature's whole effect on the target in the replacement model with later features
following linearly (their active set kept): its activation times the target's gradient with respect to it, from
one backward pass. It is minus what ablation.predicted_ablation(graph, node, "linear") predicts for switching it
off, without the full graph.

    frozen = freeze(model, transcoders, input_ids, token_type_ids, target)
    kept = cap_features(frozen, 500)          # a FrozenRun with at most 500 active features, the rest in the errors
"""
from __future__ import annotations

from dataclasses import replace

import torch

from ...errors import InvalidInputError
from .replacement import FrozenRun, Sources, replacement_outputs


def feature_effects(frozen: FrozenRun) -> list[torch.Tensor]:
    """Per layer [active]: how much each active feature adds to the target (its activation × the target's
    gradient with respect to it, later features following)."""
    offsets = [torch.zeros_like(a, requires_grad=True) for a in frozen.activations]
    sources = frozen.unit_sources()
    with torch.enable_grad():
        _, target = replacement_outputs(frozen, Sources(sources.embeddings, offsets, sources.errors), follow=True)
        gradients = torch.autograd.grad(target, offsets, allow_unused=True, materialize_grads=True)
    return [g.detach() * a for g, a in zip(gradients, frozen.activations)]


def cap_features(frozen: FrozenRun, max_features: int) -> FrozenRun:
    """The same run with only the `max_features` active features of largest |effect| (ties: the earlier ones);
    the others' output (activation × decoder direction) moves into their MLP's error at their position."""
    if max_features < 0:
        raise InvalidInputError(f"the cap on features must be 0 or more, not {max_features}")
    total = sum(len(a) for a in frozen.activations)
    if total <= max_features:
        return frozen
    effects = torch.cat(feature_effects(frozen)).abs()
    order = effects.argsort(descending=True, stable=True)
    keep = torch.zeros(total, dtype=torch.bool, device=effects.device)
    keep[order[:max_features]] = True
    transcoders, errors = frozen.transcoders, frozen.errors.clone()
    features, activations, start = [], [], 0
    for layer, (active, values) in enumerate(zip(frozen.features, frozen.activations)):
        kept = keep[start : start + len(values)]
        start += len(values)
        positions, indices = active[~kept].unbind(1)
        directions = transcoders.W_dec[layer][indices].detach() / transcoders.output_scale[layer]
        errors[layer].index_add_(0, positions, (directions * values[~kept, None]).to(errors.dtype))
        features.append(active[kept])
        activations.append(values[kept])
    return replace(frozen, features=features, activations=activations, errors=errors)
