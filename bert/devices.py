"""Where the model runs and in what precision: one place for the device logic of the library, the CLI and the app.

PyTorch's conventions: a model lives on one device; every tensor a function makes for it goes to
`model_device(model)`; results that leave for numpy come back with `as_numpy`.
"""
from __future__ import annotations

import argparse
import logging
import os

import numpy as np
import torch
from torch import nn

from .errors import InvalidInputError

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def default_device() -> torch.device:
    """A GPU when one is present (CUDA, then Apple's MPS), else the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """None or "auto" -> `default_device()`; else the named device, checked to exist on this machine."""
    if device is None or device == "auto":
        return default_device()
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise InvalidInputError(f"{device!r} is not a device: use cpu, cuda, cuda:N or mps") from error
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InvalidInputError("device cuda was asked for, but PyTorch sees no CUDA GPU here: use \"cpu\" instead")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise InvalidInputError(f"there is no {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    if device.type == "mps" and not _mps_available():
        raise InvalidInputError("device mps was asked for, but PyTorch sees no Apple GPU here: use \"cpu\" instead")
    return device


def process_device(device: str | torch.device | None) -> torch.device:
    """`resolve_device`, and under torchrun, where every process of a machine sees the same GPUs, a bare "cuda"
    becomes this process's own GPU: cuda:LOCAL_RANK."""
    chosen = resolve_device(device)
    if chosen.type == "cuda" and chosen.index is None and "LOCAL_RANK" in os.environ:
        chosen = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(chosen)
    return chosen


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """A torch dtype from a dtype or its name ("bfloat16", "float16", "float32"); None stays None."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise InvalidInputError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    return DTYPES[dtype]


def model_device(model: nn.Module) -> torch.device:
    """The device of the model's parameters (a model lives on one device)."""
    return next(model.parameters()).device


def autocast_dtype(device: torch.device) -> torch.dtype | None:
    """The reduced precision worth training in on `device`: bfloat16 on CUDA GPUs and CPUs that compute it
    natively (AVX512-BF16 or AMX), None (stay in float32) elsewhere."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    if device.type == "cpu":
        native = [getattr(torch.cpu, name, lambda: False)() for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
        return torch.bfloat16 if any(native) else None
    return None


def as_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A detached CPU numpy array; bfloat16 and float16 become float32 (numpy has no bfloat16). It shares memory
    with a tensor already on the CPU in a numpy dtype (a copy otherwise): copy it before writing to it."""
    tensor = tensor.detach()
    if tensor.dtype in (torch.bfloat16, torch.float16):
        tensor = tensor.float()
    return tensor.cpu().numpy()


def describe(device: torch.device, dtype: torch.dtype | None = None) -> str:
    """For a log line: "cuda:0 (NVIDIA H100 80GB HBM3), float32"."""
    name = str(device)
    if device.type == "cuda":
        name = f"{device} ({torch.cuda.get_device_name(device)})"
    return f"{name}, {str(dtype or torch.float32).removeprefix('torch.')}"


def log_device(model: nn.Module) -> None:
    """The one line every command prints about where it runs."""
    parameter = next(model.parameters())
    log.info("device: %s", describe(parameter.device, parameter.dtype))


def add_device_argument(parser: argparse.ArgumentParser) -> None:
    """`--device` for every command line."""
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or mps (default auto: a GPU when present, else the CPU)")


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps and mps.is_available())
