"""Hook points: named places in the forward pass where an activation can be recorded or replaced.

A HookPoint is an identity module. The root model names each one by its module path, so
`transformer.0.attention.attention.hook_pattern` is at once the path, the cache key and what a user types.

Recording and intervening are per call, never state on the (shared) model: `Bert.run_with_cache` opens a
`HookRun` in a context variable, which every thread (and so every Streamlit session) sees on its own. A hook
that the run neither keeps nor intervenes on returns its input at once.

A layer applied more than once (ALBERT's shared layers, bert/shared_layers.py's SharedLayer, several of them in
LayerGroups) is recorded once per application, under its depth: its hook points are named
`transformer.{depth}.<path in the layer>`, and the run knows the depth it is at (`HookRun.depth`, set by the
SharedLayer as it applies the layer), so the model holds no state of a call.

`hook_name(kind, layer)` is the one place that spells a hook's name: code says `hook_name("pattern", 3)`, never
the path by hand. What a run records comes back as an ActivationCache (bert/activation_cache.py).
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Mapping, Union

import torch
from torch import nn

from .errors import InvalidInputError, UnknownHookError
from .recording_memory import RECORDING_MEMORY

Intervention = Callable[[torch.Tensor, str], torch.Tensor]  # (activation, hook name) -> new activation
NameFilter = Union[None, Iterable[str], Callable[[str], bool]]

_ACTIVE_RUN: ContextVar["HookRun | None"] = ContextVar("bert_active_hook_run", default=None)

EMBEDDING_HOOKS = {  # kind -> name
    "token": "embedding.hook_token",
    "position": "embedding.hook_position",
    "token_type": "embedding.hook_token_type",
    "embedding_sum": "embedding.hook_sum",
    "embedding_out": "embedding.hook_out",
}
LAYER_HOOKS = {  # kind -> path below transformer.{layer}
    "q": "attention.attention.hook_q",
    "k": "attention.attention.hook_k",
    "v": "attention.attention.hook_v",
    "scores": "attention.attention.hook_scores",
    "pattern": "attention.attention.hook_pattern",
    "z": "attention.attention.hook_z",
    "attention_result": "attention.hook_result",
    "attention_out": "attention.hook_out",
    "mlp_pre": "residual.hook_pre",
    "mlp_post": "residual.hook_post",
    "mlp_result": "residual.hook_result",
    "layer_out": "hook_out",
}
# what some families have more (hook_name spells them; a model lists them when it has them)
FAMILY_HOOKS = {
    "embedding_norm": "embedding.hook_norm",  # ALBERT, small ELECTRAs: [batch, seq, embedding_size] before the projection to H
    "replaced_logits": "discriminator.hook_logits",  # ELECTRA's discriminator: [batch, seq], one logit per token
    "final_norm": "final_norm.hook_out",  # pre-norm models (ModernBERT): [batch, seq, hidden] the last layer's output, LayerNorm'd
    "relative_embeddings": "relative_positions.hook_embeddings",  # DeBERTa: [2 * span, hidden] the relative-position rows after LayerNorm
}
# per layer, what some families have more (ModernBERT's pre-norm layers and gated MLP, Warner et al. 2024)
FAMILY_LAYER_HOOKS = {
    "attention_in": "attention.hook_in",  # [batch, seq, hidden] the LayerNorm'd input of attention (pre-norm; not in layer 0)
    "mlp_in": "residual.hook_in",  # [batch, seq, hidden] the LayerNorm'd input of the MLP (pre-norm)
    "mlp_gate": "residual.hook_gate",  # [batch, seq, intermediate] the GeGLU gate, multiplied with the activation
    # DeBERTa's disentangled attention (He et al. 2021): the three terms of the scores, each [batch, head, query, key],
    # each already scaled; their sum is the scores before masking
    "scores_c2c": "attention.attention.hook_scores_c2c",  # content-to-content
    "scores_c2p": "attention.attention.hook_scores_c2p",  # content-to-position
    "scores_p2c": "attention.attention.hook_scores_p2c",  # position-to-content
}
MLM_HOOKS = {"lm_transform": "lm_head.hook_transform", "logits": "lm_head.hook_logits"}  # the masked-LM output head
# the pooler and the other output heads, present when the model has them (reached by run_with_cache's output=...)
OUTPUT_HEAD_HOOKS = {
    "pooled": "pooler.hook_out",
    "nsp_logits": "nsp_head.hook_logits",
    "classifier_logits": "classifier.hook_logits",
    "tagger_logits": "tagger.hook_logits",
}
# the three embeddings that are summed, by the names the app and saliency give them (segment = token type)
EMBEDDING_PARTS = {"token": EMBEDDING_HOOKS["token"], "position": EMBEDDING_HOOKS["position"], "segment": EMBEDDING_HOOKS["token_type"]}
# [batch, head, seq, ...]: positions on axis 2 (DeBERTa's score terms too)
PER_HEAD_KINDS = frozenset({"q", "k", "v", "scores", "pattern", "z", "scores_c2c", "scores_c2p", "scores_p2c"})


def hook_name(kind: str, layer: int | None = None) -> str:
    """The name of a hook: `hook_name("pattern", 3)`, `hook_name("token")`, `hook_name("logits")`.
    Per-layer kinds need a layer, the others take none (the kinds are the keys of the tables above)."""
    per_layer = LAYER_HOOKS | FAMILY_LAYER_HOOKS
    kinds = EMBEDDING_HOOKS | per_layer | MLM_HOOKS | OUTPUT_HEAD_HOOKS | FAMILY_HOOKS
    if kind not in kinds:
        raise UnknownHookError(f"unknown hook kind {kind!r}; kinds: {sorted(kinds)}")
    if kind in per_layer:
        if layer is None:
            raise InvalidInputError(f"hook kind {kind!r} is per layer: give a layer")
        return f"transformer.{int(layer)}.{per_layer[kind]}"
    if layer is not None:
        raise InvalidInputError(f"hook kind {kind!r} is not per layer; per-layer kinds are {sorted(LAYER_HOOKS)}")
    return EMBEDDING_HOOKS.get(kind) or MLM_HOOKS.get(kind) or OUTPUT_HEAD_HOOKS.get(kind) or FAMILY_HOOKS[kind]


def every_layer(kind: str, num_layers: int) -> list[str]:
    """`hook_name(kind, layer)` for every layer, in order."""
    return [hook_name(kind, layer) for layer in range(num_layers)]


def every_hook_name(num_layers: int, lm_head: bool = True, output_hooks: Iterable[str] = ()) -> list[str]:
    """Every name `hook_name` builds for a model of `num_layers` layers (with or without the LM head, with the
    OUTPUT_HEAD_HOOKS kinds in `output_hooks`, e.g. ("pooled", "nsp_logits")): for users who want the list of what a run can
    record before running one (the library itself records by name)."""
    names = list(EMBEDDING_HOOKS.values())
    names += [name for layer in range(num_layers) for name in (hook_name(kind, layer) for kind in LAYER_HOOKS)]
    return names + (list(MLM_HOOKS.values()) if lm_head else []) + [hook_name(kind) for kind in output_hooks]


def is_per_head(name: str) -> bool:
    """Whether the hook holds [batch, head, seq, ...] (q, k, v, scores, pattern, z; DeBERTa's score terms)."""
    per_layer = LAYER_HOOKS | FAMILY_LAYER_HOOKS
    return any(name.endswith("." + per_layer[kind]) for kind in PER_HEAD_KINDS)


def stack_layers(cache: Mapping[str, torch.Tensor], kind: str) -> torch.Tensor:
    """A per-layer hook from every layer of a cache, stacked: [layer, *the hook's shape]."""
    tensors = []
    while hook_name(kind, len(tensors)) in cache:
        tensors.append(cache[hook_name(kind, len(tensors))])
    if not tensors:
        raise UnknownHookError(f"the cache holds no {kind!r} hook (keep {hook_name(kind, 0)!r} and the others)")
    return torch.stack(tensors)


class HookPoint(nn.Module):
    """Identity, unless a HookRun is active in this thread: then it records and/or replaces its input."""

    def __init__(self):
        super().__init__()
        self.name = "<unnamed>"  # set by the root model to this module's path ("{depth}" in it: in a shared layer)
        self.repeated = False  # True in a layer applied more than once: the name takes the run's depth

    def forward(self, activation: torch.Tensor) -> torch.Tensor:
        run = _ACTIVE_RUN.get()
        return activation if run is None else run.visit(self.name_in(run), activation)

    def name_in(self, run: "HookRun") -> str:
        """This point's name in this run: with the depth the run is at, in a shared layer."""
        return self.name.format(depth=run.depth) if self.repeated else self.name

    def __call__(self, activation: torch.Tensor) -> torch.Tensor:
        """Straight to forward, past nn.Module's call machinery (it costs more than the identity itself, about
        200 times per BERT-base forward pass), unless PyTorch's own hooks were registered on this point."""
        if self._forward_hooks or self._forward_pre_hooks:
            return super().__call__(activation)
        return self.forward(activation)

    def slot(self, shape: tuple[int, ...], *inputs: torch.Tensor) -> torch.Tensor | None:
        """Where this call records this point's activation, for the op that computes it from `inputs` to write there
        at once (its `out=`): its layer's slice of the run's [layer, ...] tensor, of `shape`, the first input's dtype
        and device, when the run keeps this point at every layer, replaces nothing here and no gradient flows
        through the inputs; else None (compute as usual: the point then copies what it records into the slice)."""
        run = _ACTIVE_RUN.get()
        if run is None or self._forward_hooks or self._forward_pre_hooks:
            return None
        return run.slot(self.name_in(run), shape, inputs)

    def is_watched(self) -> bool:
        """Whether this call records or replaces this point's activation, or a PyTorch hook sits on it
        (else the point is the identity, and the pass may skip computing what only it would show)."""
        run = _ACTIVE_RUN.get()
        return bool(self._forward_hooks or self._forward_pre_hooks) or (run is not None and run.watches(self.name_in(run)))

    def extra_repr(self) -> str:
        return self.name


@dataclass
class HookRun:
    """What one forward pass records (`cache`) and which activations it replaces (`interventions`).

    `known` is every hook name of the model; the run works out once which of them it touches, so that the
    others pass straight through. A per-layer kind kept at every layer is recorded into one [layer, ...] tensor
    (`stacks`) as the pass goes; on the CPU its memory comes from the recording pool (bert/recording_memory.py)."""

    keep: Callable[[str], bool]
    interventions: dict[str, list[Intervention]]
    known: Iterable[str]
    detach: bool = True
    num_layers: int = 0  # the model's, to stack the kinds kept at every layer
    cache: dict[str, torch.Tensor] = field(default_factory=dict)
    stacks: dict[str, torch.Tensor] = field(default_factory=dict)
    depth: int = 0  # the application of a shared layer the pass is in (set by SharedLayer; 0 elsewhere)

    def __post_init__(self):
        self.kept = frozenset(name for name in self.known if self.keep(name))
        self.touched = self.kept | frozenset(self.interventions)
        layers = range(self.num_layers)
        every = [kind for kind in LAYER_HOOKS if layers and all(hook_name(kind, layer) in self.kept for layer in layers)]
        self.slots = {hook_name(kind, layer): (kind, layer) for kind in every for layer in layers}

    def watches(self, name: str) -> bool:
        """Whether this run needs the activation at `name` (to record or replace it)."""
        return name in self.touched

    def visit(self, name: str, activation: torch.Tensor) -> torch.Tensor:
        if name not in self.touched:
            return activation
        for intervene in self.interventions.get(name, ()):
            replaced = intervene(activation, name)
            if not isinstance(replaced, torch.Tensor) or replaced.shape != activation.shape:
                got = getattr(replaced, "shape", type(replaced).__name__)
                raise InvalidInputError(
                    f"intervention on {name} must return a tensor of shape {tuple(activation.shape)}, got {got}"
                )
            activation = replaced
        if name in self.kept:
            recorded = activation.detach() if self.detach else activation
            if name in self.slots and not activation.requires_grad:
                # into its layer's slice (unless the op wrote it there already: `slot`); the pass goes on with that
                # copy, so the original is freed right away
                slot = self._slot(name, recorded.shape, recorded)
                if not _same_memory(slot, recorded):
                    slot.copy_(recorded)
                activation = recorded = slot
            self.cache[name] = recorded
        return activation

    def slot(self, name: str, shape: tuple[int, ...], inputs: tuple[torch.Tensor, ...]) -> torch.Tensor | None:
        """HookPoint.slot's answer for the point named `name`."""
        if name not in self.slots or name in self.interventions or (torch.is_grad_enabled() and any(x.requires_grad for x in inputs)):
            return None
        return self._slot(name, tuple(shape), inputs[0])

    def _slot(self, name: str, shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        kind, layer = self.slots[name]
        if kind not in self.stacks:  # on the CPU in memory earlier passes wrote and let go (bert/recording_memory.py)
            stacked = (self.num_layers, *shape)
            on_cpu = like.device.type == "cpu"
            self.stacks[kind] = RECORDING_MEMORY.empty(stacked, like.dtype) if on_cpu else like.new_empty(stacked)
        return self.stacks[kind][layer]


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether a and b are the same elements of the same memory (an op wrote b into its slot a)."""
    return a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype


def name_hook_points(root: nn.Module) -> list[str]:
    """Give every HookPoint below `root` its module path as its name; return the names in forward order.

    Below a module applied at several depths (one with `depths` and a `layer`: ALBERT's SharedLayer), a hook
    point is named `{stack}.{depth}.{path in the layer}`, where `stack` is the top-level module holding it
    (`transformer`), and the names list every depth's names in turn (`transformer.0....`, `transformer.1....`)."""
    names: list[str] = []
    repeated: dict[str, list[int]] = {}  # path of each repeating module -> the depths it is applied at
    templates: dict[int, list[str]] = {}  # depth -> its names, with {depth}
    for path, module in root.named_modules():
        owner = next((prefix for prefix in repeated if path.startswith(prefix + ".layer.")), None)
        if hasattr(module, "depths") and hasattr(module, "layer"):
            repeated[path] = module.depths
            if "{depth}" not in names:
                names.append("{depth}")  # a placeholder: every application's names go here
        elif isinstance(module, HookPoint) and owner is not None:
            module.name = owner.split(".")[0] + ".{depth}." + path[len(owner) + len(".layer."):]
            module.repeated = True
            for depth in repeated[owner]:
                templates.setdefault(depth, []).append(module.name)
        elif isinstance(module, HookPoint):
            module.name, module.repeated = path, False
            names.append(path)
    expanded = []
    for name in names:
        if name == "{depth}":
            expanded += [template.format(depth=depth) for depth in sorted(templates) for template in templates[depth]]
        else:
            expanded.append(name)
    return expanded


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
