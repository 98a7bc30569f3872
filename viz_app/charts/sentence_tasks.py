"""The sentence tasks page's chart: a classifier's class probabilities, the chosen class highlighted."""
from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import Chart, layout


def probability_chart(table: pd.DataFrame, chosen: str) -> Chart:
    figure = go.Figure(go.Bar(
        x=table["probability"], y=[html.escape(str(label)) for label in table["label"]], orientation="h",
        marker_color=["#d62728" if label == chosen else "#3b6fb6" for label in table["label"]],
        text=[f"{p:.1%}" for p in table["probability"]], textposition="outside",
    ))
    layout(figure, "Class probabilities", height=max(220, 60 + 28 * len(table)),
           xaxis=dict(title="probability", range=[0, 1.12]), yaxis=dict(autorange="reversed"))
    return Chart(figure, table, "class_probabilities")
