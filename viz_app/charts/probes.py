"""The probes page's charts: held-out accuracy by layer beside the control task, and selectivity."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from bert.analysis.probing import probes
from viz_app.charts.base import Chart, layout, legend_on_top


def probe_accuracy_chart(report: probes.ProbeReport) -> Chart:
    figure = go.Figure()
    rows = []
    palette = ["#3b6fb6", "#e08a2e", "#2ca02c", "#9467bd", "#8c564b", "#d62728", "#17becf"]
    for colour, (task, result) in zip(palette, report.results.items()):
        x = result.layer_names
        figure.add_scatter(x=x, y=result.accuracy, name=f"{task}", mode="lines+markers", line=dict(color=colour))
        figure.add_scatter(x=x, y=result.control_accuracy, name=f"{task} (control)", mode="lines",
                           line=dict(color=colour, dash="dash"), opacity=0.7)
        for layer, a, c in zip(x, result.accuracy, result.control_accuracy):
            rows.append({"task": task, "layer": layer, "accuracy": a, "control_accuracy": c, "selectivity": a - c,
                         "majority_baseline": result.majority_accuracy})
    layout(figure, "Held-out probe accuracy by layer (dashed: control task)", height=420,
           yaxis=dict(title="accuracy", range=[0, 1.02], tickformat=".0%"), **legend_on_top())
    return Chart(figure, pd.DataFrame(rows), "probe_accuracy",
                 "Solid: the probe on the real labels. Dashed: the same probe on random labels fixed per word type "
                 "(Hewitt & Liang's control task). The gap between them is the selectivity.")


def selectivity_chart(report: probes.ProbeReport) -> Chart:
    figure = go.Figure()
    rows = []
    for task, result in report.results.items():
        figure.add_bar(x=result.layer_names, y=result.selectivity, name=task)
        rows += [{"task": task, "layer": l, "selectivity": s} for l, s in zip(result.layer_names, result.selectivity)]
    layout(figure, "Selectivity = accuracy - control accuracy", height=360,
           yaxis=dict(title="selectivity", tickformat=".0%"), barmode="group", **legend_on_top())
    return Chart(figure, pd.DataFrame(rows), "probe_selectivity")
