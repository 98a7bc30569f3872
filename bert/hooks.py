"""Hook points: named places in the forward pass where an activation can be recorded or replaced.

A HookPoint is an identity module. The root model names each one by its module path, so
`transformer.0.attention.attention.hook_pattern` is at once the path, the cache key and what a user types.

Recording and intervening are per call, never state on the (shared) model: `Bert.run_with_cache` opens a
`HookRun` in a context variable, which every thread (and so every Streamlit session) sees on its own.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping, Union

import torch
from torch import nn

from .errors import InvalidInputError, UnknownHookError

Intervention = Callable[[torch.Tensor, str], torch.Tensor]  # (activation, hook name) -> new activation
NameFilter = Union[None, Iterable[str], Callable[[str], bool]]

_ACTIVE_RUN: ContextVar["HookRun | None"] = ContextVar("bert_active_hook_run", default=None)


class HookPoint(nn.Module):
    """Identity, unless a HookRun is active in this thread: then it records and/or replaces its input."""

    def __init__(self):
        super().__init__()
        self.name = "<unnamed>"  # set by the root model to this module's path

    def forward(self, activation: torch.Tensor) -> torch.Tensor:
        run = _ACTIVE_RUN.get()
        return activation if run is None else run.visit(self.name, activation)

    def extra_repr(self) -> str:
        return self.name


@dataclass
class HookRun:
    """What one forward pass records (`cache`) and which activations it replaces (`interventions`)."""

    keep: Callable[[str], bool]
    interventions: dict[str, list[Intervention]]
    detach: bool = True
    cache: dict[str, torch.Tensor] = field(default_factory=dict)

    def visit(self, name: str, activation: torch.Tensor) -> torch.Tensor:
        for intervene in self.interventions.get(name, ()):
            replaced = intervene(activation, name)
            if not isinstance(replaced, torch.Tensor) or replaced.shape != activation.shape:
                got = getattr(replaced, "shape", type(replaced).__name__)
                raise InvalidInputError(
                    f"intervention on {name} must return a tensor of shape {tuple(activation.shape)}, got {got}"
                )
            activation = replaced
        if self.keep(name):
            self.cache[name] = activation.detach() if self.detach else activation
        return activation


def name_hook_points(root: nn.Module) -> list[str]:
    """Give every HookPoint below `root` its module path as its name; return the names in forward order."""
    names = []
    for path, module in root.named_modules():
        if isinstance(module, HookPoint):
            module.name = path
            names.append(path)
    return names


def make_filter(names: NameFilter, known: list[str]) -> Callable[[str], bool]:
    if names is None:
        return lambda name: True
    if callable(names):
        return names
    wanted = {names} if isinstance(names, str) else set(names)
    _check_known(wanted, known)
    return wanted.__contains__


def group_interventions(
    interventions: Mapping[str, Intervention] | Iterable[tuple[str, Intervention]] | None, known: list[str]
) -> dict[str, list[Intervention]]:
    pairs = interventions.items() if isinstance(interventions, Mapping) else (interventions or ())
    grouped: dict[str, list[Intervention]] = {}
    for name, intervene in pairs:
        grouped.setdefault(name, []).append(intervene)
    _check_known(set(grouped), known)
    return grouped


def _check_known(names: set[str], known: list[str]) -> None:
    unknown = sorted(names - set(known))
    if unknown:
        raise UnknownHookError(
            f"unknown hook name(s) {unknown}; the model's hook names are listed by model.hook_names() "
            f"(for example {known[:3]})"
        )


@contextlib.contextmanager
def active_run(run: HookRun) -> Iterator[HookRun]:
    token = _ACTIVE_RUN.set(run)
    try:
        yield run
    finally:
        _ACTIVE_RUN.reset(token)
