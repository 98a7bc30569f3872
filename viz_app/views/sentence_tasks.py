"""The sentence tasks page's view: a classifier's class probabilities, the chosen class marked."""
from __future__ import annotations

import numpy as np
import pandas as pd

from viz_app.charts.base import Chart
from viz_app.charts.sentence_tasks import probability_chart


def chosen_class(table: pd.DataFrame, requested: str | None) -> str:
    """The class to explain: the requested one if the model has it, else the most probable."""
    labels = list(table["label"])
    return requested if requested in labels else str(labels[int(np.argmax(table["probability"]))])


def classes_view(table: pd.DataFrame, chosen: str) -> dict[str, Chart]:
    """"classes": every class's probability for this input, `chosen` marked."""
    return {"classes": probability_chart(table, chosen)}
