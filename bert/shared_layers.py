"""ALBERT's cross-layer parameter sharing (Lan et al. 2020, section 3.1): one layer's weights applied at every
depth (`SharedLayer`), or several shared layers in groups (`LayerGroups`, Hugging Face's num_hidden_groups and
inner_group_num).

Iterating either gives one callable per depth (`LayerApplication`), so that `for layer in model.transformer`
reads as for BERT's ModuleList, and each application records its hooks under its own depth (`transformer.3....`
for the fourth): the run, not the model, knows the depth it is at (bert/hooks.py). Every application takes the
same arguments as any layer: (x, attention_mask, relative).
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import nn

from .hooks import _ACTIVE_RUN


class LayerApplication:
    """The shared layer at one depth: calling it applies the layer with the run's hooks at that depth. Its
    parameters are the shared layer's (freezing or training one application does so for all)."""

    def __init__(self, layer: nn.Module, depth: int):
        self.layer, self.depth = layer, depth

    def __call__(self, x: torch.Tensor, attention_mask: torch.Tensor | None, relative=None) -> torch.Tensor:
        run = _ACTIVE_RUN.get()
        if run is None:
            return self.layer(x, attention_mask, relative)
        outer, run.depth = run.depth, self.depth
        try:
            return self.layer(x, attention_mask, relative)
        finally:
            run.depth = outer

    def parameters(self):
        return self.layer.parameters()

    def requires_grad_(self, requires_grad: bool = True) -> "LayerApplication":
        self.layer.requires_grad_(requires_grad)
        return self


class SharedLayer(nn.Module):
    """ALBERT's one layer (`make_layer()`, a BertLayer), applied at every depth; within LayerGroups, one of several
    shared layers, applied at `depths` only."""

    def __init__(self, config, make_layer: Callable[[], nn.Module], depths: Sequence[int] | None = None):
        super().__init__()
        self.layer = make_layer()
        self.depths = list(range(config.num_layers)) if depths is None else list(depths)
        self.every_depth = depths is None
        self.repeats = len(self.depths)

    def extra_repr(self) -> str:
        where = "" if self.every_depth else f", at depths {', '.join(map(str, self.depths))}"
        return f"applied {self.repeats} times{where}"

    def __len__(self) -> int:
        return self.repeats

    def __iter__(self):
        return iter([LayerApplication(self.layer, depth) for depth in self.depths])

    def __getitem__(self, index):
        return list(self)[index]


class LayerGroups(nn.Module):
    """ALBERT with several shared layers: `groups[g][j]` is inner layer j of group g, a SharedLayer. Each
    application of a group runs its inner layers in order, and every inner layer's application is a layer of its
    own (a depth, with its hooks and its hidden state, as transformers' hidden_states and attentions count them).
    The group applications go to group 0 first, then group 1, ... (BertConfig.shared_layer_at)."""

    def __init__(self, config, make_layer: Callable[[], nn.Module]):
        super().__init__()
        self.groups = nn.ModuleList(
            nn.ModuleList(SharedLayer(config, make_layer, config.depths_of(group, inner)) for inner in range(config.layers_per_group))
            for group in range(config.layer_groups)
        )
        self.num_layers = config.num_layers

    def extra_repr(self) -> str:
        groups, inner = len(self.groups), len(self.groups[0])
        return f"{groups} groups of {inner} layers, {self.num_layers} layer applications"

    def __len__(self) -> int:
        return self.num_layers

    def __iter__(self):
        applications = [application for group in self.groups for shared in group for application in shared]
        return iter(sorted(applications, key=lambda application: application.depth))

    def __getitem__(self, index):
        return list(self)[index]


def one_shared_layer(config) -> bool:
    """Whether the shared layers are one (the released checkpoints) rather than groups."""
    return (config.layer_groups, config.layers_per_group) == (1, 1)


def shared_layers(config, make_layer: Callable[[], nn.Module]) -> nn.Module:
    """The encoder's layers where they are shared: one SharedLayer, or LayerGroups."""
    return SharedLayer(config, make_layer) if one_shared_layer(config) else LayerGroups(config, make_layer)


def shared_layer_path(config, group: int, inner: int) -> str:
    """Where inner layer `inner` of group `group` sits in the module tree: `transformer.layer` for the one shared
    layer, `transformer.groups.{group}.{inner}.layer` in LayerGroups."""
    return "transformer.layer" if one_shared_layer(config) else f"transformer.groups.{group}.{inner}.layer"
