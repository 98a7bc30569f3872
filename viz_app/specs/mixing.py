"""The page "What each word takes from the others" (address `mixing`; the old `rollout` still opens it): context
mixing by method (bert/analysis/attention/mixing.py), one method or two side by side, a layer's [query, key] matrix,
the whole model's and one query token's row as bars; attention flow (Abnar & Zuidema 2020) on request. Its spec
(viz_app/specs/base.py): `Settings`, `computations`, `view`; plus the shares the lesson "What each word takes from
the others" reads. Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from bert.analysis.attention.decompx import default_output
from bert.analysis.attention.mixing import METHODS, ContextMixing, context_mixing, mixing_cost, record_for_mixing
from bert.analysis.attention.rollout import attention_flow, attention_flow_cost
from bert.devices import model_device
from viz_app.app.forward import PreparedInput
from viz_app.app.models import LoadedModel
from viz_app.charts.base import Chart
from viz_app.charts.mixing import mixing_heatmap, row_bars
from viz_app.charts.token_matrix import token_heatmap
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting, within

NAME = "mixing"
NO_SECOND = "none"
METHOD_TITLES = {name: f"{info.title} ({info.paper})" for name, info in METHODS.items()}
SIDES = ("first", "second")  # the chosen method and the one beside it
LESSON_CHARTS = ("first_layer", "first_row", "second_layer", "second_row")  # a lesson step's (the whole model's: the app)
WHOLE = {  # how each method's whole-model matrix is made, for the captions
    "attention": "rollout with 0.5·A + 0.5·I per layer (Abnar & Zuidema 2020)",
    "globenc": "rollout of the row-normalised layers; the residual is inside each",
    "alti": "rollout of the layers; the residual is inside each",
    "value-zeroing": "rollout of the layers; the residual is inside each",
    "decompx": "each position's predicted logit split over the input tokens (red lowers it, blue raises it)",
}


def matrices(loaded: LoadedModel, prepared: PreparedInput, method: str) -> ContextMixing:
    """The method's matrices for the input the model reads (its masks applied). A watcher (bert/stopping.py) may
    stop the heavy methods between their batched passes."""
    output = default_output(loaded.model) if method == "decompx" else "mlm"
    input_ids, token_type_ids = prepared.masked.tensors(model_device(loaded.model))
    _, cache = record_for_mixing(loaded.model, input_ids, token_type_ids)
    return context_mixing(loaded.model, cache, method, decompx_output=output)


@dataclass(frozen=True)
class MethodWork:
    method: str  # a key of METHODS


@dataclass(frozen=True)
class FlowWork:
    layer: int  # the flow up to this layer's output


def _tokens(inputs: Inputs) -> int:
    return len(inputs.prepared.masked)


METHOD = Computation(
    "mixing.method", lambda work: METHODS[work.method].title,
    cost=lambda inputs, work: mixing_cost(work.method, _tokens(inputs), inputs.loaded.model.config),  # the recorded pass included
    compute=lambda inputs, work: matrices(inputs.loaded, inputs.prepared, work.method), work=MethodWork)
FLOW = Computation(  # the head-averaged attention weights (one recorded pass), then tokens² max-flow problems
    "mixing.flow", lambda work: "Attention flow",
    cost=lambda inputs, work: (mixing_cost("attention", _tokens(inputs), inputs.loaded.model.config)
                               + attention_flow_cost(_tokens(inputs))),
    compute=lambda inputs, work: attention_flow(matrices(inputs.loaded, inputs.prepared, "attention").layers,
                                                layer=work.layer), work=FlowWork)


@dataclass(frozen=True)
class Settings:
    method: str  # a key of METHODS
    compare: str  # another key of METHODS, or NO_SECOND
    layer: int  # 0 is the first transformer layer
    query: int  # the token whose row is drawn as bars
    flow: bool = False  # attention flow asked for (offered up to FLOW_TOKEN_LIMIT tokens)

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """The settings a link or a lesson step gives, made valid for this model and input as the widgets would."""
        num_layers, tokens = inputs.loaded.summary.layers, list(inputs.prepared.masked.tokens)
        method = setting(state, "mixing_method")
        compare = setting(state, "mixing_compare")
        method = method if method in METHODS else "attention"
        compare = compare if compare in METHODS or compare == NO_SECOND else NO_SECOND
        query = setting(state, "mixing_query")
        default_query = tokens.index("[MASK]") if "[MASK]" in tokens else min(1, len(tokens) - 1)
        return cls(method, compare, within(setting(state, "rollout_layer"), num_layers, num_layers - 1),
                   within(query, len(tokens), default_query))


def computations(settings: Settings) -> Planned:
    """"first" (settings.method), "second" (settings.compare, unless NO_SECOND) and "flow" when asked for."""
    planned: Planned = {"first": (METHOD, MethodWork(settings.method))}
    if settings.compare != NO_SECOND:
        planned["second"] = (METHOD, MethodWork(settings.compare))
    if settings.flow:
        planned["flow"] = (FLOW, FlowWork(settings.layer))
    return planned


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"first_*" and "second_*" for the methods computed (method_charts), "flow" when computed."""
    tokens = list(inputs.prepared.masked.tokens)
    charts = {}
    for side in SIDES:
        if results.get(side) is not None:
            charts |= method_charts(settings, tokens, results[side], side)
    if results.get("flow") is not None:
        charts["flow"] = token_heatmap(results["flow"], tokens, f"Attention flow up to layer {settings.layer}",
                                       "attention_flow")
    return charts


def method_charts(settings: Settings, tokens: list[str], mixing: ContextMixing, side: str) -> dict[str, Chart]:
    """One method's charts, named "<side>_layer", "<side>_row" and, where it has one, "<side>_whole" and
    "<side>_whole_row"."""
    info, layer, query = METHODS[mixing.method], settings.layer, settings.query
    unit = "share of the row" if info.rows_sum_to_one else "norm"
    name = mixing.method.replace("-", "_")
    matrix = mixing.layers[layer]
    charts = {
        f"{side}_layer": mixing_heatmap(matrix, tokens, f"{info.title}, layer {layer}", f"{name}_layer_{layer}",
                                        f"Row i: what token i's output takes from each input token ({unit}); {info.paper}."),
        f"{side}_row": row_bars(matrix[query], tokens, f"{info.title}, layer {layer}: what {tokens[query]} takes",
                                f"{name}_layer_{layer}_row_{query}"),
    }
    whole = mixing.whole_model
    if whole is not None:
        title, caption = f"{info.title}, whole model", WHOLE[mixing.method] + "."
        if whole.shape[0] == len(tokens):
            charts[f"{side}_whole"] = mixing_heatmap(whole, tokens, title, f"{name}_whole", caption,
                                                     signed=mixing.method == "decompx")
            row, what, caption = whole[query], f"what {tokens[query]} takes", ""
        else:  # a classifier's DecompX: one row, the predicted class's logit
            row, what = whole[0], "the predicted class's logit"
        charts[f"{side}_whole_row"] = row_bars(row, tokens, f"{title}: {what}", f"{name}_whole_row_{query}", caption)
    return charts


# ---- the shares the lesson reads (viz_app/lessons/computed.py) ----------------------------------------------------


def middle_layers(num_layers: int) -> range:
    """The middle half of the layers (BERT-base: 3 to 8), where Kobayashi et al. 2020 compare weights and norms."""
    return range(num_layers // 4, num_layers - num_layers // 4)


def is_special(token: str, special: bool, position: int) -> bool:
    """[SEP] (a special token past the first: </s> in a RoBERTa-style vocabulary) and punctuation: the tokens
    Clark et al. 2019 found heads resting on."""
    return (special and position > 0) or (len(token) == 1 and not token.isalnum())


def shares_to(layers: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Per layer, the mean over the rows of each row's share (rows normalised to sum to 1) in `columns`: [layer]."""
    shares = layers / layers.sum(-1, keepdims=True)
    return shares[..., columns].sum(-1).mean(-1)


def own_share(layers: np.ndarray) -> np.ndarray:
    """Per layer, the mean share of each row on its own token (the diagonal, rows normalised): [layer]."""
    shares = layers / layers.sum(-1, keepdims=True)
    return np.diagonal(shares, axis1=-2, axis2=-1).mean(-1)
