"""The chart of ELECTRA's discriminator (Clark et al. 2020): how likely each word piece is to have been replaced."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from viz_app.charts.base import HIGHLIGHT_COLOUR, WORD_COLOUR, Chart, layout_spec, token_labels, unchecked_figure

TYPED, FILLED = "as typed", "filled by the generator"


def replaced_token_bars(positions: Sequence[int], tokens: Sequence[str], probabilities: np.ndarray,
                        filled: Sequence[bool]) -> Chart:
    """One bar per word piece, in sentence order: the discriminator's probability that it was replaced (sigmoid of
    its logit), a dashed line at 50% where it starts to say "replaced"; the pieces the generator wrote in red.
    `positions`: each piece's index in the input. Built from plain dicts (see unchecked_figure), like the other
    chart of the prediction page."""
    probabilities = np.asarray(probabilities, dtype=float)
    labels = token_labels([f"{position} {token}" for position, token in zip(positions, tokens)])
    kinds = [FILLED if was_filled else TYPED for was_filled in filled]
    traces = []
    for kind, colour in ((TYPED, WORD_COLOUR), (FILLED, HIGHLIGHT_COLOUR)):
        rows = [i for i, k in enumerate(kinds) if k == kind]
        if not rows:
            continue
        traces.append(dict(
            type="bar", x=[labels[i] for i in rows], y=probabilities[rows], name=kind, marker=dict(color=colour),
            text=[f"{probabilities[i]:.0%}" for i in rows], textposition="outside", cliponaxis=False,
            hovertemplate="%{x}: %{y:.1%} replaced<extra></extra>",
        ))
    figure = unchecked_figure(traces, layout_spec(
        "Which words look replaced?",
        height=340,
        xaxis=dict(categoryorder="array", categoryarray=labels, type="category", tickangle=-45 if len(labels) > 12 else 0),
        yaxis=dict(title=dict(text="probability it was replaced"), range=[0, 1.08], tickformat=".0%"),
        shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=0.5, y1=0.5, line=dict(color="#7f7f7f", dash="dash", width=1))],
        legend=dict(orientation="h", y=-0.3, x=0),
        bargap=0.2,
    ))
    data = pd.DataFrame({"position": list(positions), "token": list(tokens), "probability replaced": probabilities,
                         "filled by the generator": list(filled)})
    caption = ("Each bar: the discriminator's probability that this word piece was put there by the generator rather "
               "than written by the sentence's author. Above the dashed line (50%) it says “replaced”.")
    if any(filled):
        caption += " Red: the words the generator wrote into the blanks."
    return Chart(figure, data, "replaced_tokens", caption=caption)
