"""The page "Logit lens" (address `logit_lens`): what each layer would predict at a [MASK] if the model stopped
there (nostalgebraist 2020): the LM head read at every layer's residual stream, one recorded pass
(bert/analysis/representations/logit_lens.py). Its spec (viz_app/specs/base.py). Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from bert.analysis.representations.logit_lens import logit_lens
from bert.costs import Cost
from viz_app.charts.base import Chart
from viz_app.charts.logit_lens import lens_chart
from viz_app.specs.base import Computation, HasInputs, Planned, chosen_mask, setting

NAME = "logit_lens"
TOP = 5  # each layer's own top guesses in the table
LESSON_CHARTS = ("lens",)


@dataclass(frozen=True)
class LensWork:
    top_k: int  # each layer's top guesses kept


LENS = Computation(  # one pass recording every layer's residual stream; the LM head at the [MASK]s only
    "logit_lens.lens", lambda work: "The logit lens",
    cost=lambda inputs, work: Cost(1, len(inputs.prepared.masked)),
    compute=lambda inputs, work: logit_lens(inputs.loaded.model, inputs.loaded.tokenizer, inputs.prepared.masked,
                                            work.top_k), work=LensWork)


@dataclass(frozen=True)
class Settings:
    mask: int | None  # the [MASK]'s position; None: the input has none

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        return cls(chosen_mask(setting(state, "lens_mask"), inputs.prepared.all_masks))


def computations(settings: Settings) -> Planned:
    """"lens", unless the input has no [MASK] (a model with no masked-LM head: the lens raises InvalidInputError)."""
    return {} if settings.mask is None else {"lens": (LENS, LensWork(TOP))}


def lens_at(lenses: list, position: int):
    """The lens of the [MASK] at `position`, from bert.analysis.representations.logit_lens.logit_lens's list."""
    return next(lens for lens in lenses if lens.position == position)


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"lens": rank and probability of the final prediction, layer by layer, at the chosen [MASK]."""
    if results.get("lens") is None:
        return {}
    return {"lens": lens_chart(lens_at(results["lens"], settings.mask), inputs.prepared.masked.tokens)}


def layer_table(lens) -> pd.DataFrame:
    """One row per layer: the final prediction's rank and probability there, and the layer's own top guesses."""
    return pd.DataFrame([
        {"layer": layer.name, "rank of final": layer.final_rank, "p(final)": layer.final_probability,
         **{f"#{i + 1}": f"{c.token} ({c.probability:.1%})" for i, c in enumerate(layer.top)}}
        for layer in lens.layers])
