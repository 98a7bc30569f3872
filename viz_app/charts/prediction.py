"""Charts for the masked-prediction page."""
from __future__ import annotations

from typing import TYPE_CHECKING

import html

import pandas as pd

if TYPE_CHECKING:  # the analyses' results, read here, never imported at run time
    from viz_app.app.forward import MaskResult

from bert.pieces import WORDPIECE, PieceStyle
from viz_app.charts.base import HIGHLIGHT_COLOUR, PIECE_COLOUR, WORD_COLOUR, Chart, layout_spec, unchecked_figure


def prediction_bars(mask: MaskResult, top_k: int, number: int, pieces: PieceStyle = WORDPIECE) -> Chart:
    """Top-k candidates for one [MASK] as horizontal bars, best on top; pieces that only continue a word ("##" in
    WordPiece, no "Ġ" in byte-level BPE: `pieces`, the tokenizer's scheme) in another colour;
    the masked-out original token, when it is among them, outlined in red. Built from plain dicts (see
    unchecked_figure): every student's key press draws one, so it must cost the server little."""
    k = min(top_k, len(mask.tokens))
    tokens = mask.tokens[:k]
    probabilities = mask.probabilities[:k].astype(float)
    piece_kind = pieces.continuation_kind
    kinds = [piece_kind if p else "whole word" for p in mask.is_continuation[:k]]
    is_original = [t == mask.original for t in tokens]
    labels = [f"{rank}. {html.escape(token, quote=False)}" for rank, token in enumerate(tokens, 1)]
    traces = []
    for kind, colour in (("whole word", WORD_COLOUR), (piece_kind, PIECE_COLOUR)):
        rows = [i for i in range(k) if kinds[i] == kind]
        if not rows:
            continue
        traces.append(dict(
            type="bar",
            x=probabilities[rows],
            y=[labels[i] for i in rows],
            orientation="h",
            name=kind,
            marker=dict(
                color=colour,
                line=dict(
                    color=[HIGHLIGHT_COLOUR if is_original[i] else colour for i in rows],
                    width=[3 if is_original[i] else 0 for i in rows],
                ),
            ),
            text=[f"{probabilities[i]:.1%}" for i in rows],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}: %{x:.2%}<extra></extra>",
        ))
    top = float(probabilities.max())
    where = f"position {mask.position}"
    title = f"[MASK] #{number} ({where}" + (f", was “{mask.original}”)" if mask.original else ")")
    figure = unchecked_figure(traces, layout_spec(
        title,
        height=max(220, 60 + 26 * k),
        xaxis=dict(
            title=dict(text="probability"), tickformat=".0%" if top > 0.05 else ".1%", range=[0, min(1.0, top * 1.3 + 0.005)]
        ),
        yaxis=dict(categoryorder="array", categoryarray=labels, autorange="reversed", type="category"),
        legend=dict(orientation="h", y=-0.18 if k > 3 else -0.4, x=0),
        bargap=0.25,
    ))
    data = pd.DataFrame(
        {"rank": range(1, k + 1), "token": tokens, "probability": probabilities, "kind": kinds, "is_original": is_original}
    )
    caption = f"Blue: whole words. Orange: pieces that only continue a word ({pieces.marker_note})."
    if mask.original is not None:
        caption += " Red outline: the token you masked, if it is among these."
    return Chart(figure, data, f"predictions_mask{number}_pos{mask.position}", caption=caption)
