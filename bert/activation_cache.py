"""What `Bert.run_with_cache` returns beside the output: the recorded activations of one forward pass.

A read-only mapping from full hook names to tensors (`cache["transformer.3.attention.attention.hook_pattern"]`),
that also takes the short forms a TransformerLens user types:

    cache["pattern", 3]              # hook_name("pattern", 3); layers count from 0, -1 is the last
    cache["token"]                   # a hook that is not per layer, by its kind
    cache.stack("pattern")           # [layer, batch, head, query, key]
    cache.residual_stream()          # [layer + 1, batch, seq, hidden]: the embeddings, then each layer's output
    cache.to_numpy()                 # {full hook name: numpy array}

    cache.shapes                     # {full hook name: shape} of every recorded activation

A per-layer kind kept at every layer is written, as the pass reaches it, into one [layer, ...] tensor, so
`stack` returns that tensor without copying (the per-layer entries are views into it).
"""
from __future__ import annotations

from typing import Iterator, Mapping, Union

import numpy as np
import torch

from .devices import as_numpy
from .errors import BertError, UnknownHookError
from .hooks import hook_name, stack_layers

CacheKey = Union[str, tuple[str, int]]  # a full hook name, a kind ("token", "logits") or (kind, layer)


class ActivationCache(Mapping[str, torch.Tensor]):
    def __init__(self, activations: dict[str, torch.Tensor], num_layers: int, stacks: dict[str, torch.Tensor] | None = None):
        self._activations = activations  # full hook name -> tensor, in the order the pass reached them
        self.num_layers = num_layers
        self._stacks = stacks or {}  # kind -> [layer, ...], filled during the pass

    def name(self, key: CacheKey) -> str:
        """The full hook name a key stands for."""
        if isinstance(key, tuple):
            kind, layer = key
            return hook_name(kind, layer % self.num_layers if isinstance(layer, int) and layer < 0 else layer)
        if "." in key or key in self._activations:
            return key
        return hook_name(key)  # a kind that is not per layer; an error that says what is wrong for the others

    def __getitem__(self, key: CacheKey) -> torch.Tensor:
        name = self.name(key)
        if name not in self._activations:
            raise UnknownHookError(f"the cache holds no {name!r}; pass it (or None, for all) as run_with_cache's names")
        return self._activations[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._activations)

    def __len__(self) -> int:
        return len(self._activations)

    def __contains__(self, key: object) -> bool:
        try:
            return self.name(key) in self._activations  # type: ignore[arg-type]
        except (BertError, TypeError, ValueError):
            return False

    def stack(self, kind: str) -> torch.Tensor:
        """A per-layer kind from every layer: [layer, *the hook's shape]."""
        stacked = self._stacks.get(kind)
        if stacked is not None:
            return stacked
        missing = [layer for layer in range(self.num_layers) if hook_name(kind, layer) not in self._activations]
        if missing and len(missing) < self.num_layers:
            raise UnknownHookError(f"the cache holds {kind!r} for some layers only (not {missing}): record every layer to stack them")
        return stack_layers(self._activations, kind)

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """{full hook name: shape} of every recorded activation, in the order the pass reached them."""
        return {name: tuple(tensor.shape) for name, tensor in self._activations.items()}

    def residual_stream(self) -> torch.Tensor:
        """The residual stream after the embeddings and after each layer: [layer + 1, *hidden's shape]."""
        return torch.cat([self["embedding_out"][None], self.stack("layer_out")])

    def to_numpy(self) -> dict[str, np.ndarray]:
        """{full hook name: a CPU numpy copy} (bfloat16 and float16 as float32)."""
        return {name: as_numpy(tensor) for name, tensor in self._activations.items()}

    def __repr__(self) -> str:
        return f"ActivationCache({len(self)} hooks, {self.num_layers} layers)"
