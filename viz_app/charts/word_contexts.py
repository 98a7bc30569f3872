"""Charts of the "One word, many contexts" page: self-similarity against the random-token baseline by layer."""
from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import HIGHLIGHT_COLOUR, WORD_COLOUR, Chart, layout, legend_on_top


def self_similarity_chart(word: str, layers: list[str], similarity: np.ndarray, baseline: np.ndarray) -> Chart:
    figure = go.Figure()
    figure.add_scatter(x=layers, y=similarity, name=f"“{html.escape(word, quote=False)}” across the sentences", mode="lines+markers",
                       line=dict(color=WORD_COLOUR))
    figure.add_scatter(x=layers, y=baseline, name="random tokens (baseline)", mode="lines+markers",
                       line=dict(color="#7f7f7f", dash="dash"))
    figure.add_scatter(x=layers, y=similarity - baseline, name="difference", mode="lines",
                       line=dict(color=HIGHLIGHT_COLOUR, dash="dot"))
    layout(figure, f"How alike are the vectors of '{word}' in different sentences?", height=420,
           yaxis=dict(title="mean cosine similarity", range=[min(0.0, float((similarity - baseline).min())) - 0.02, 1.02]),
           **legend_on_top())
    data = pd.DataFrame({"layer": layers, "self_similarity": similarity, "baseline": baseline,
                         "difference": similarity - baseline})
    return Chart(figure, data, "self_similarity_" + re.sub(r"\W+", "_", word),
                 "Blue: the mean cosine similarity of the word's vectors over every pair of sentences (1 = the same "
                 "direction). Grey: the same for random pairs of tokens. Red: the difference.")
