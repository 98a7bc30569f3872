"""The logit lens page's view: what each layer would predict at one [MASK]."""
from __future__ import annotations

from viz_app.charts.base import Chart
from viz_app.charts.logit_lens import lens_chart
from viz_app.app.forward import PreparedInput


def lens_at(lenses: list, position: int):
    """The lens of the [MASK] at `position`, from bert.analysis.representations.logit_lens.logit_lens's list."""
    return next(lens for lens in lenses if lens.position == position)


def logit_lens_view(lenses: list, position: int, prepared: PreparedInput) -> dict[str, Chart]:
    """"lens": rank and probability of the final prediction, layer by layer, at the [MASK] at `position`."""
    return {"lens": lens_chart(lens_at(lenses, position), prepared.masked.tokens)}
