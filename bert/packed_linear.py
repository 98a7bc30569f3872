"""A pass for CPU inference: `pack_for_cpu_inference(model)` swaps each nn.Linear for a PackedLinear over the
same parameters, which multiplies through oneDNN, the kernel library inside PyTorch, instead of nn.Linear's Intel
MKL call, whose single-precision kernels are slower on AMD EPYC processors (figures: docs/benchmarks.md#forward-pass).
Two ways:
- reorder=True (`load_pretrained(..., pack_for_cpu=True)`, the app's path): oneDNN multiplies with a copy of each
  weight reordered once into its blocked layout (what `torch.compile`'s freezing does for a CPU model): one more
  copy of every weight in memory (BERT-base 413 MB), the fastest on short inputs.
- reorder=False (what `load_pretrained` applies by default on the CPU; `cpu_kernels=False` turns it off): oneDNN's
  product on the weight as it is, which oneDNN blocks as it goes: no copy, nothing to keep up to date.

A PackedLinear prints, saves and loads as the nn.Linear it replaces (print(model) shows `Linear(...)`; the same
parameters, so the same state_dict keys and hook names). It is nn.Linear in train mode, whenever a gradient is
wanted (of the input, the weight or the bias), on a GPU, for dtypes other than float32 and bfloat16 (bfloat16 only
where the CPU has oneDNN's path), and for weights made under inference_mode.
- The packed copy (reorder=True) is remade when the weight changes: an in-place edit, an optimizer step,
  `load_state_dict`, `model.to(dtype)`, a new tensor (`model.train()` drops it). Edits through `weight.data` are not
  seen: call `forget_packed_weights(model)` after them. Without the copy there is nothing to remake.
- Results differ from nn.Linear's by float rounding (about 1e-6 relative). With the packed copy a row's result does
  not depend on the other rows, and the copy is a pure function of the weight, so app sessions sharing one model get
  the same numbers; on the weight as it is a single row takes another kernel than a batch (as with nn.Linear), so
  its result may differ from the same row's in a batch by float rounding.
- Should PyTorch's private oneDNN op fail where nn.Linear works, that module takes nn.Linear's path for good.
"""
from __future__ import annotations

import functools
import logging
import platform
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger(__name__)

PACKABLE_DTYPES = (torch.float32, torch.bfloat16)


def pack_for_cpu_inference(model: nn.Module, reorder: bool = True) -> nn.Module:
    """Swap every nn.Linear below `model` (not its subclasses, such as the small task heads) for a PackedLinear
    over the same parameters, in place: nothing is copied or initialised, tied weights stay tied. Returns `model`.
    reorder: multiply with a copy of each weight in oneDNN's blocked layout, made on first use (one more copy of
    the weights in memory); False: oneDNN's product on the weights as they are. A PackedLinear already there takes
    the `reorder` asked for. Where this PyTorch lacks the private op or it fails on a small product, `model` keeps
    nn.Linear (one log line)."""
    problem = packing_problem()
    if problem is not None:
        log.warning("weight packing is off, the model keeps nn.Linear: PyTorch %s %s", torch.__version__, problem)
        return model
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if type(child) is nn.Linear:
                setattr(parent, name, PackedLinear.over(child, reorder))
            elif isinstance(child, PackedLinear) and child.reorder != reorder:
                child.reorder = reorder
                child.forget_packed_weight()
    return model


def packing_problem() -> str | None:
    """None where this PyTorch packs and multiplies a small weight as nn.Linear does; else what went wrong."""
    weight, x, bias = torch.arange(15.0).reshape(5, 3) / 7, torch.arange(6.0).reshape(2, 3) / 5 - 0.5, torch.ones(5)
    try:
        with torch.no_grad():
            product = _packed_product(x, _reorder(weight), bias)
    except (RuntimeError, AttributeError, TypeError, NotImplementedError) as error:
        return f"has no usable oneDNN linear op ({_one_line(error)})"
    if not torch.allclose(product, torch.nn.functional.linear(x, weight, bias), atol=1e-5):
        return "gives another result through its oneDNN linear op than nn.Linear"
    return None


def onednn_by_default() -> bool:
    """Whether `load_pretrained` applies the pass without being asked: on x86-64 processors (where nn.Linear calls
    Intel MKL; measured on AMD EPYC, docs/benchmarks.md#forward-pass) whose PyTorch has a usable oneDNN op. Elsewhere
    (ARM: Apple silicon, Graviton) nn.Linear's own library is the one measured, so the default leaves it."""
    return platform.machine().lower() in ("x86_64", "amd64") and packing_problem() is None


def forget_packed_weights(model: nn.Module) -> None:
    """Drop every packed copy in `model` (after editing weights through `.data`); they are remade on use."""
    for module in model.modules():
        if isinstance(module, PackedLinear):
            module.forget_packed_weight()


class _Packed(NamedTuple):
    source: torch.Tensor  # the weight that was packed (a detached view: same memory, same version counter)
    version: int  # its version when packed
    weight: torch.Tensor  # the oneDNN copy


class PackedLinear(nn.Linear):
    """nn.Linear, with oneDNN's product on the CPU in eval mode without gradients (see the module's text)."""

    use_packed = True  # False for good once the oneDNN op failed on this module
    reorder = True  # multiply with a copy of the weight in oneDNN's blocked layout; False: with the weight as it is

    @classmethod
    def over(cls, linear: nn.Linear, reorder: bool = True) -> "PackedLinear":
        """A PackedLinear holding `linear`'s own parameters (built on the meta device: nothing drawn or copied)."""
        module = cls(linear.in_features, linear.out_features, bias=linear.bias is not None, device="meta")
        module.weight, module.bias, module.reorder = linear.weight, linear.bias, reorder
        return module.train(linear.training)

    def _get_name(self) -> str:
        """print(model) shows the nn.Linear this module computes: which kernel multiplies is no part of the outline."""
        return "Linear"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        packed = self._packed_weight(x)
        if packed is not None:
            try:
                return _packed_product(x, packed, self.bias)
            except (RuntimeError, TypeError, NotImplementedError) as error:
                failure = error  # nn.Linear below raises its own error if the input is wrong; if it does not, the op is unusable
        out = F.linear(x, self.weight, self.bias)
        if packed is not None:
            self._give_up(failure)
        return out

    def train(self, mode: bool = True) -> "PackedLinear":
        if mode:
            self.forget_packed_weight()
        return super().train(mode)

    def _packed_weight(self, x: torch.Tensor) -> torch.Tensor | None:
        weight = self.weight
        wants_gradient = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, self.bias))
        if self.training or wants_gradient or not self.use_packed or not _packable(x, weight):
            return None
        if not self.reorder:
            return weight
        cached = self.__dict__.get("_packed")
        # Holding `source` keeps the packed memory alive, so a new weight cannot reuse its address unnoticed.
        if cached is not None and cached.source.data_ptr() == weight.data_ptr() and cached.version == weight._version \
                and cached.source.dtype == weight.dtype and cached.source.shape == weight.shape:
            return cached.weight
        source = weight.detach()
        try:
            packed = _reorder(source)
        except (RuntimeError, AttributeError, NotImplementedError) as error:  # a PyTorch build without it: nn.Linear
            self._give_up(error)
            return None
        self.__dict__["_packed"] = _Packed(source, weight._version, packed)
        return packed

    def forget_packed_weight(self) -> None:
        self.__dict__.pop("_packed", None)

    def _give_up(self, error: Exception) -> None:
        """nn.Linear's path for good on this module; the first module to give up says so in the log."""
        global _failure_logged
        self.use_packed = False
        self.forget_packed_weight()
        if not _failure_logged:
            _failure_logged = True
            log.warning("weight packing failed, nn.Linear takes over: PyTorch %s: %s", torch.__version__, _one_line(error))

    def __getstate__(self):
        """copy.deepcopy and pickling leave the packed copy out (oneDNN tensors cannot be copied); it is remade."""
        state = super().__getstate__()  # a copy of __dict__
        state.pop("_packed", None)
        return state


_failure_logged = False  # one warning per process, not one per module


def _reorder(weight: torch.Tensor) -> torch.Tensor:
    """The weight in oneDNN's blocked layout (an op internal to PyTorch, hence the checks around it)."""
    return torch.ops.mkldnn._reorder_linear_weight(weight, None)


def _packed_product(x: torch.Tensor, packed: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x · Wᵀ + b with W packed by oneDNN (the op torch.compile's CPU freezing uses; internal to PyTorch, hence
    the fallback in PackedLinear.forward)."""
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def _one_line(error: Exception) -> str:
    return f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"


def _packable(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return (
        x.device.type == "cpu"
        and weight.device.type == "cpu"
        and x.dtype == weight.dtype
        and weight.dtype in PACKABLE_DTYPES
        and (weight.dtype != torch.bfloat16 or bfloat16_packs())
        and not weight.is_inference()  # inference tensors have no version counter to watch
    )


@functools.cache
def bfloat16_packs() -> bool:
    """Whether this CPU packs bfloat16 weights: oneDNN's bfloat16 path needs AVX-512 (BW, VL, DQ) or AVX-NE-CONVERT,
    which AMD EPYC Zen 3 and older lack. Where it does not, bfloat16 modules keep nn.Linear and float32 ones still pack."""
    try:
        _reorder(torch.ones(2, 2, dtype=torch.bfloat16))
    except (RuntimeError, AttributeError, NotImplementedError):
        return False
    return True
