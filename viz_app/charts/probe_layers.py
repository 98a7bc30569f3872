"""Per-layer curves of the treebank probes, read from a probe run's JSON form:

    {"tasks": {NAME: {"layers": [{"hidden_states_index": 0, "accuracy": ..., "control_accuracy": ...}, ...], "best_hidden_states_index": ...}},
     "baselines": {"linear_uuas": ...}}

One chart per measure: a line per task, its control task dashed (where the run has `control_<measure>`), the
task's layer-0 score as a thin dotted line, and the run's baselines for that measure as grey lines.
"""
from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import Chart, layout, legend_on_top

PALETTE = ["#3b6fb6", "#e08a2e", "#2ca02c", "#9467bd", "#8c564b", "#d62728", "#17becf", "#bcbd22", "#e377c2"]
BASELINE_COLOUR = "#7f7f7f"
# measure -> (what it is called, its axis title, shown as a percentage)
MEASURES = {
    "accuracy": ("Accuracy", "held-out accuracy", True),
    "selectivity": ("Selectivity", "accuracy - control accuracy", True),
    "uuas": ("UUAS", "undirected attachment score", True),
    "spearman": ("Spearman", "Spearman correlation", False),
    "root_accuracy": ("Root accuracy", "root accuracy", True),
    "codelength": ("Code length", "kbits (shorter = easier to learn)", False),
    "compression": ("Compression", "uniform code / online code", False),
}
BASELINES = {"linear_uuas": "linear chain (each word joined to the next)"}  # baseline key -> what it is


def measures_in(run: dict) -> list[str]:
    """The measures some task of the run reports, in MEASURES' order."""
    present = {key for task in run["tasks"].values() for row in task["layers"] for key in row}
    return [measure for measure in MEASURES if measure in present]


def layer_curves_chart(run: dict, measure: str, residual_names: list[str], controls: bool = True, embeddings_line: bool = True,
                       note: str = "") -> Chart:
    """residual_names[i]: the label of hidden_states[i] ("embeddings", "after layer 0", ...; bert/layers.py); note: said after the title (and in a
    column of the CSV), e.g. how a word's vector was made."""
    called, title, percent = MEASURES[measure]
    scale = 1e-3 if measure == "codelength" else 1.0
    figure = go.Figure()
    rows = []
    tasks = [(name, task) for name, task in run["tasks"].items() if any(measure in row for row in task["layers"])]
    for colour, (task_name, task) in zip(PALETTE * 4, tasks):
        name = html.escape(task_name, quote=False)  # an uploaded file names its columns; plotly reads tags in names
        layers = [row for row in task["layers"] if measure in row]
        x = [residual_names[row["hidden_states_index"]] for row in layers]
        y = [_scaled(row[measure], scale) for row in layers]
        figure.add_scatter(x=x, y=y, name=name, mode="lines+markers", line=dict(color=colour))
        control = [row.get(f"control_{measure}") for row in layers]
        if controls and any(f"control_{measure}" in row for row in layers):
            figure.add_scatter(x=x, y=[_scaled(value, scale) for value in control], name=f"{name} (control task)", mode="lines",
                               line=dict(color=colour, dash="dash"), opacity=0.7)
        if embeddings_line and layers[0]["hidden_states_index"] == 0 and y[0] is not None:
            figure.add_scatter(x=[x[0], x[-1]], y=[y[0], y[0]], name=f"{name} at the embeddings", mode="lines",
                               line=dict(color=colour, dash="dot", width=1))
        rows += [{"task": task_name, "hidden_states_index": row["hidden_states_index"], "residual_name": residual_names[row["hidden_states_index"]], measure: row[measure],
                  **({f"control_{measure}": row[f"control_{measure}"]} if f"control_{measure}" in row else {})}
                 for row in layers]
    x_all = list(residual_names)
    for key, what in BASELINES.items():
        value = run.get("baselines", {}).get(key)
        if value is not None and key.endswith(measure):
            figure.add_scatter(x=[x_all[0], x_all[-1]], y=[value * scale] * 2, name=what, mode="lines",
                               line=dict(color=BASELINE_COLOUR, dash="dashdot"))
            rows.append({"task": f"baseline: {what}", measure: value})
    axis = dict(title=title, tickformat=".0%" if percent else None)
    if percent and measure != "selectivity":
        axis["range"] = [0, 1.02]
    legend_rows = -(-len(figure.data) // 3)  # about three legend entries fit on a line
    legend = legend_on_top()
    legend["margin"]["t"] = 56 + 20 * legend_rows  # the title, then the legend's lines above the plot
    layout(figure, f"{called} by layer" + (f" · {note}" if note else ""), height=340 + 20 * legend_rows,
           xaxis=dict(categoryorder="array", categoryarray=x_all), yaxis=axis, **legend)
    data = pd.DataFrame(rows)
    if note:
        data["note"] = note
    return Chart(figure, data, f"probe_{measure}_by_layer", CAPTIONS.get(measure, ""))


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else value * scale  # None: a measure the run could not compute (NaN in its JSON)


CAPTIONS = {
    "accuracy": "Solid: the probe on the real labels, scored on held-out sentences. Dashed: the same probe on a control "
                "task (random labels fixed per word type, Hewitt & Liang 2019). Dotted: the score at the embeddings.",
    "uuas": "The share of the gold tree's arcs (punctuation left out) that the minimum spanning tree of the probe's "
            "distances recovers (Hewitt & Manning 2019). Grey: joining each word to the next one already gets this much.",
    "root_accuracy": "How often the word the depth probe puts shallowest is the sentence's root.",
    "spearman": "Spearman correlation between the probe's and the gold tree's distances (or depths), averaged over "
                "sentence lengths 5-50 (Hewitt & Manning 2019).",
    "codelength": "Online code length (Voita & Titov 2020): the bits needed to send the labels when the probe learns as "
                  "it goes. Dashed: the control task. A shorter code means the labels are easier to read off the layer.",
}
