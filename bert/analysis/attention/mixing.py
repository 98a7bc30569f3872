"""What each token's output takes from each input token: context mixing, by method, for one recorded sentence.

    _, cache = record_for_mixing(model, input_ids, token_type_ids)
    mixing = context_mixing(model, cache, "alti")
    mixing.layers        # [layer, query, key], layer 0 the first transformer layer
    mixing.whole_model   # [query, key] the rollout over every layer, or None where the method's paper has none

Methods (definitions in the modules named):
- attention: the attention weights, the mean of the heads (rollout: Abnar & Zuidema 2020, Eq. 1 over 0.5·A + 0.5·I;
  rollout.py).
- norm: ‖Σ_h α^h_ij f^h(x_j)‖ (Kobayashi et al. 2020; norm_based.py). No rollout.
- norm-residual: the same through the residual and LN1 (Kobayashi et al. 2021; norm_based.py). No rollout.
- globenc: also through the second residual and LN2 (Modarressi et al. 2022; norm_based.py); rollout of the
  row-normalised matrices, with no extra residual.
- alti: Manhattan-distance contributions through the residual and LN1 (Ferrando et al. 2022; norm_based.py);
  rollout with no extra residual.
- value-zeroing: the cosine distance of each output when one token's values are zeroed (Mohebbi et al. 2023;
  value_zeroing.py); rollout with no extra residual.
- decompx: each token's vector decomposed over the input tokens through every layer and the output head
  (Modarressi et al. 2023; decompx.py). whole_model: each position's predicted logit over the input tokens.

Cost (`mixing_cost`, a bert.costs.Cost in forward passes of the sentence): the recorded pass, then the norm-based
methods' arithmetic, which grows with the tokens (at 512 tokens as long as 7 to 18 passes, measured); value zeroing
and DecompX seq + 1 rows through every layer (one per input token, batched, and the unchanged or bias row), so
seq + 1 forward passes' worth.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn

from ...activation_cache import ActivationCache
from ...config import BertConfig
from ...costs import FLOAT_BYTES, Cost, pass_bytes
from ...devices import as_numpy
from ...errors import InvalidInputError
from .decompx import PARTS_BUDGET as DECOMPX_BUDGET, decompx
from .mixing_parts import mixing_hook_names, recorded_layers
from .norm_based import NORM_METHODS, PARTS_BUDGET as NORM_BUDGET, norm_matrix
from .rollout import RESIDUAL_WEIGHT, attention_rollout
from .value_zeroing import value_zeroing, zeroing_bytes

Progress = Callable[[int, int], None]  # (steps done, steps in all), called between batched passes


@dataclass(frozen=True)
class MethodInfo:
    title: str
    paper: str
    rows_sum_to_one: bool  # whether each layer's rows are shares (else norms, in the hidden space's units)
    rollout_residual: float | None  # the residual share rollout adds (None: the paper has no rollout)
    heavy: bool  # about seq layer passes per layer (value zeroing, DecompX) rather than a few


METHODS: dict[str, MethodInfo] = {
    "attention": MethodInfo("Attention weights", "Abnar & Zuidema 2020 (rollout)", True, RESIDUAL_WEIGHT, False),
    "norm": MethodInfo("Norm ‖αf(x)‖", "Kobayashi et al. 2020", False, None, False),
    "norm-residual": MethodInfo("Norm through residual and LayerNorm", "Kobayashi et al. 2021", False, None, False),
    "globenc": MethodInfo("GlobEnc", "Modarressi et al. 2022", False, 0.0, False),
    "alti": MethodInfo("ALTI", "Ferrando et al. 2022", True, 0.0, False),
    "value-zeroing": MethodInfo("Value zeroing", "Mohebbi et al. 2023", True, 0.0, True),
    "decompx": MethodInfo("DecompX", "Modarressi et al. 2023", True, None, True),
}


@dataclass(frozen=True)
class ContextMixing:
    method: str
    layers: np.ndarray  # [layer, query, key]
    whole_model: np.ndarray | None  # [query, key]; None where the method's paper aggregates nothing


# Why the decompositions skip a pre-norm model: each one splits a post-LN layer (LayerNorm after the residual).
PRE_NORM_REASON = ("the decompositions follow BERT's post-LN layers (LayerNorm after each residual); this model's "
                   "layers are pre-norm (ModernBERT: LayerNorm before each sub-layer), which they do not cover yet")


# Why they skip a gated MLP: each one passes the MLP's parts through one map, the activation and another map.
GATED_MLP_REASON = ("the decompositions follow BERT's MLP (one map, the activation, another map); this model's MLP "
                    "is gated (GTE: the activation times a second map of the same input), which they do not cover yet")


def attention_only_reason(config) -> str | None:
    """Why only the attention weights apply to a model of this config (PRE_NORM_REASON, GATED_MLP_REASON); None
    where every method does."""
    if config.pre_norm:
        return PRE_NORM_REASON
    return GATED_MLP_REASON if config.gated_mlp else None


def methods_for(config) -> list[str]:
    """The METHODS that apply to a model of this config: all of them for BERT's post-LN layers, the attention
    weights alone for pre-norm ones or a gated MLP (attention_only_reason)."""
    return ["attention"] if attention_only_reason(config) else list(METHODS)


def check_method(method: str) -> MethodInfo:
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    return METHODS[method]


# The norm-based methods' time at 512 tokens in recorded passes, rounded up (`python -m bench.mixing`, BERT-base
# shape, one thread: norm 6.5, norm-residual 9.9, GlobEnc 15.6, ALTI 17.5; docs/benchmarks.md). Their work per layer
# grows as tokens² × hidden (every query's part from every key), a pass's as tokens × hidden², so the ratio grows
# linearly with the tokens: 128 tokens measured 1.3, 2.4, 4.0 and 4.6.
NORM_PASSES_AT_512 = {"norm": 7, "norm-residual": 10, "globenc": 16, "alti": 18}
CHECKED_LENGTH = 512


def mixing_cost(method: str, tokens: int, config: BertConfig | None = None) -> Cost:
    """What `record_for_mixing` and `context_mixing(method)` cost over a sentence of `tokens` tokens, in forward
    passes of it: the recorded pass, then
    - value zeroing and DecompX: tokens + 1 rows through every layer (each counts as a forward pass);
    - the norm-based methods: their arithmetic on the recorded vectors, as the forward passes it takes as long as
      (NORM_PASSES_AT_512 scaled by tokens / 512, at least one);
    - attention: nothing more.
    With the model's `config`, its peak too (`mixing_bytes`)."""
    if check_method(method).heavy:
        extra = tokens + 1
    elif method == "attention":
        extra = 0
    else:
        extra = max(1, math.ceil(NORM_PASSES_AT_512[method] * tokens / CHECKED_LENGTH))
    peak = 0 if config is None else mixing_bytes(method, tokens, config)
    return Cost(1 + extra, tokens, ("the method", "a shorter text"), peak_bytes=peak, rows_at_once=0 if config else 1)


CHUNK_COPIES = 4  # tensors as wide as a batch's widest that the norm-based methods and DecompX hold at once


def rollout_bytes(tokens: int, config: BertConfig) -> int:
    """What `context_mixing` holds after a method's matrices (T = `tokens`, L layers), in bytes: in float64 (two
    floats a number) the matrices, with_residual's scaled copy and its result, and the rollout after each layer
    (6·L·T²); the identity and its scaled copy, or the rollout's running product and the next (4·T²); the row sums
    (2·L·T). Measured with tracemalloc: tests/analysis/attention/test_value_zeroing_memory.py."""
    T, L = tokens, config.num_layers
    return FLOAT_BYTES * (6 * L * T * T + 4 * T * T + 2 * L * T)


def mixing_bytes(method: str, tokens: int, config: BertConfig) -> int:
    """What `record_for_mixing` and `context_mixing(method)` hold at most over T = `tokens` tokens, in float32 bytes:
    the recorded pass's layers (`mixing_hook_names`: per layer the pattern, heads·T², the attention's and the
    layer's outputs, 4·T·hidden, and the MLP's intermediate, T·intermediate; and the embeddings, T·hidden), the
    pass itself (`pass_bytes`), and
    - value zeroing: the larger of what it holds itself (value_zeroing.zeroing_bytes, tensor by tensor) and the
      rollout of its matrices (`rollout_bytes`);
    - the norm-based methods and DecompX: CHUNK_COPIES tensors as wide as their batches' widest, rows × T × width
      floats, at most norm_based.PARTS_BUDGET or decompx.PARTS_BUDGET (width: the intermediate size for DecompX, the
      hidden size for the norm-based ones; rows at most T)."""
    hidden, intermediate = config.hidden_size, config.intermediate_size
    recorded = config.num_layers * (config.num_heads * tokens * tokens + 4 * tokens * hidden + tokens * intermediate)
    recorded += tokens * hidden
    if method == "value-zeroing":
        method_bytes = max(zeroing_bytes(tokens, config), rollout_bytes(tokens, config))
    elif method == "attention":
        method_bytes = 0
    else:
        budget, width = (DECOMPX_BUDGET, intermediate) if method == "decompx" else (NORM_BUDGET, hidden)
        method_bytes = CHUNK_COPIES * min(budget, tokens * tokens * width) * FLOAT_BYTES
    return recorded * FLOAT_BYTES + method_bytes + pass_bytes(config, tokens)


def record_for_mixing(model: nn.Module, input_ids: torch.Tensor, token_type_ids: torch.Tensor,
                      output: str = "mlm") -> tuple[torch.Tensor | None, ActivationCache]:
    """One recorded pass with what every method needs (inputs [1, seq]): run_with_cache's (output, cache)."""
    with torch.no_grad():
        return model.run_with_cache(input_ids, token_type_ids, names=mixing_hook_names(model.config.num_layers),
                                    output=output)


def rollout(matrices: np.ndarray, residual: float) -> np.ndarray:
    """The whole-model matrix: rows renormalised, (1 − residual)·M + residual·I per layer, multiplied from the
    first layer to the last (rollout.attention_rollout's last entry; Abnar & Zuidema 2020, Eq. 1)."""
    return attention_rollout(matrices, residual)[-1]


def context_mixing(model: nn.Module, cache: ActivationCache, method: str,
                   row: int = 0, length: int | None = None, progress: Progress | None = None,
                   decompx_output: str = "mlm") -> ContextMixing:
    """The method's [query, key] matrix for every layer of sentence `row` of a recorded pass (its first `length`
    positions: the real tokens), and the whole model's. progress(done, total) between batched passes (value
    zeroing, DecompX): raise there to stop. decompx_output: the head DecompX decomposes ("mlm" or "classifier")."""
    info = check_method(method)
    if method not in methods_for(model.config):
        raise InvalidInputError(f"{method}: {attention_only_reason(model.config)}; use the attention weights ('attention')")
    layers = recorded_layers(model, cache, row, length)
    if method == "decompx":
        result = decompx(model, layers, output=decompx_output, progress=progress)
        return ContextMixing(method, as_numpy(result.layers).astype(np.float64), as_numpy(result.logit_parts).astype(np.float64))
    if method == "attention":
        matrices = torch.stack([recorded.pattern.mean(0) for recorded in layers])
    elif method == "value-zeroing":
        matrices = value_zeroing(layers, progress)
    else:
        assert method in NORM_METHODS
        matrices = torch.stack([norm_matrix(recorded, method) for recorded in layers])
    matrices = as_numpy(matrices).astype(np.float64)
    whole = None if info.rollout_residual is None else rollout(matrices, info.rollout_residual)
    return ContextMixing(method, matrices, whole)
