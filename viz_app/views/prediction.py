"""The prediction page's view: a bar chart of the candidates at each [MASK]."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from viz_app.charts.base import Chart
from viz_app.charts.prediction import prediction_bars
from viz_app.app.forward import ForwardResult
from viz_app.views import setting


@dataclass(frozen=True)
class PredictionSettings:
    top_k: int = 10  # candidates per [MASK]
    shown: tuple[int, ...] | None = None  # which masks (by their order in the input) get a chart; None: all

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> PredictionSettings:
        return cls(setting(state, "top_k"))


def prediction_view(settings: PredictionSettings, result: ForwardResult) -> dict[str, Chart]:
    """"mask_<i>" -> the candidates at the i-th [MASK] (from 0), for the masks shown."""
    shown = range(len(result.masks)) if settings.shown is None else settings.shown
    return {f"mask_{index}": prediction_bars(result.masks[index], settings.top_k, index + 1, result.pieces)
            for index in shown}
