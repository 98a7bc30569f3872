"""A feature switched off: what the graph predicts, and what running the model says.

- `predicted_ablation(graph, node, downstream)`: from the graph's edges alone. downstream "fixed": every other
  node keeps its value, so the target moves by minus the feature's edge into it; "linear": the later active
  features follow their pre-activations (their active set and every frozen or linearised map kept), so the
  change travels along every path of feature edges, (I − J)⁻¹ with J the edges per unit of the source. The
  edges are the real model's derivatives with attention frozen and the active set kept (replacement.py), so
  this is the measured change to first order.
- `frozen_ablation(frozen, layer, index, downstream)`: the same two, run forward through the replacement model
  (replacement.py), not read off the edges.
- `measured_ablation(model, transcoders, frozen, input_ids, token_type_ids, layer, index, frozen_attention)`: the
  real model with each MLP replaced by its transcoder plus the run's error at each position, the feature's
  activation zeroed, every later feature chosen afresh by its top-k, every LayerNorm live; attention patterns
  frozen at the run (through hook_pattern) or live.
Each returns the change of the target (ablated − run).
"""
from __future__ import annotations

import torch

from ...errors import InvalidInputError
from ...hooks import hook_name
from ...model import Bert
from .attribution_graph import AttributionGraph
from .replacement import FrozenRun, Sources, read_target, replacement_outputs
from .transcoder import Transcoders

DOWNSTREAM = ("fixed", "linear")


def _check(downstream: str) -> None:
    if downstream not in DOWNSTREAM:
        raise InvalidInputError(f"downstream must be one of {DOWNSTREAM}, not {downstream!r}")


def predicted_ablation(graph: AttributionGraph, node: int, downstream: str = "fixed") -> float:
    _check(downstream)
    if not 0 <= node < graph.num_features:
        raise InvalidInputError(f"node {node} is not a feature node (0 .. {graph.num_features - 1})")
    target = graph.target_index
    if downstream == "fixed":
        return -float(graph.adjacency[target, node])
    features = graph.num_features
    per_unit = graph.adjacency[:, :features].double() / graph.activations.double()  # [receiver, feature source]
    start = torch.zeros(features, dtype=torch.float64)
    start[node] = -float(graph.activations[node])
    change = torch.linalg.solve(torch.eye(features, dtype=torch.float64) - per_unit[:features], start)  # every feature's change
    return float(per_unit[target] @ change)


@torch.no_grad()
def frozen_ablation(frozen: FrozenRun, layer: int, index: int, downstream: str = "fixed") -> float:
    """index: the feature's place among layer's active features (frozen.features[layer][index])."""
    _check(downstream)
    sources = frozen.unit_sources()
    sources.activations[layer][index] = 0.0
    _, run_target = replacement_outputs(frozen, frozen.unit_sources())
    if downstream == "linear":
        for later in range(layer + 1, frozen.num_layers):  # each later layer's features take their new pre-activations
            pre_activations, _ = replacement_outputs(frozen, sources)
            sources.activations[later] = pre_activations[later]
    _, target = replacement_outputs(frozen, sources)
    return float(target - run_target)


@torch.no_grad()
def measured_ablation(model: Bert, transcoders: Transcoders, frozen: FrozenRun, input_ids: torch.Tensor,
                      token_type_ids: torch.Tensor | None, layer: int, index: int, frozen_attention: bool = True) -> float:
    run, ablated = ablation_logits(model, transcoders, frozen, input_ids, token_type_ids, layer, index, frozen_attention)
    return float(read_target(ablated, frozen.target) - read_target(run, frozen.target))


@torch.no_grad()
def ablation_logits(model: Bert, transcoders: Transcoders, frozen: FrozenRun, input_ids: torch.Tensor,
                    token_type_ids: torch.Tensor | None, layer: int, index: int, frozen_attention: bool = True
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """The logits [vocab] at the target's position, float32: (the run, the feature switched off), as
    measured_ablation runs them (two forward passes)."""
    position, feature = frozen.features[layer][index].tolist()
    logit_mask = torch.zeros_like(input_ids, dtype=torch.bool)
    logit_mask[0, frozen.target.position] = True
    runs = []
    for ablate in (False, True):
        interventions = _replaced_mlps(transcoders, frozen, (layer, position, feature) if ablate else None)
        if frozen_attention:
            for depth, pattern in enumerate(frozen.patterns):
                interventions[hook_name("pattern", depth)] = lambda old, name, pattern=pattern: pattern.to(old.dtype)
        logits, _ = model.run_with_cache(input_ids, token_type_ids, names=[], interventions=interventions, logit_mask=logit_mask)
        runs.append(logits[0].float())
    return runs[0], runs[1]


def _replaced_mlps(transcoders: Transcoders, frozen: FrozenRun, ablated: tuple[int, int, int] | None) -> dict:
    """Interventions: each MLP's output -> its transcoder's (from the MLP's input in this pass) + the run's error,
    with the `ablated` (layer, position, feature) switched off."""
    config, read, interventions = transcoders.config, {}, {}
    for layer in range(config.layers):
        def keep_input(x, name, layer=layer):
            read[layer] = x
            return x

        def replace_output(y, name, layer=layer):
            z = transcoders.encode(read.pop(layer)[0].float(), layer)  # [seq, feature]
            if ablated is not None and ablated[0] == layer:
                z[ablated[1], ablated[2]] = 0.0
            return (transcoders.decode(z, layer) + frozen.errors[layer])[None].to(y.dtype)

        interventions[config.input_hook(layer)] = keep_input
        interventions[config.output_hook(layer)] = replace_output
    return interventions
