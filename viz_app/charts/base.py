"""What every chart shares: the Chart record, token labels safe for plotly, and the common layout."""
from __future__ import annotations

import html
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
from plotly.basedatatypes import BasePlotlyType

WORD_COLOUR = "#3b6fb6"  # whole words
PIECE_COLOUR = "#e08a2e"  # "##" pieces that continue a word
HIGHLIGHT_COLOUR = "#d62728"
PART_COLOURS = {"token": "#3b6fb6", "position": "#e08a2e", "segment": "#2ca02c", "sum": "#7f7f7f"}
# Blues that rise early, so that diffuse heads (1/tokens per cell) still show
ATTENTION_SCALE = [
    [0.0, "#f7fbff"], [0.05, "#deebf7"], [0.2, "#9ecae1"], [0.45, "#4292c6"], [0.75, "#1361a9"], [1.0, "#08306b"]
]
FONT = dict(family="Source Sans Pro, sans-serif", size=13)


@dataclass(frozen=True)
class Chart:
    figure: go.Figure
    data: pd.DataFrame  # the numbers behind the figure, for the CSV download
    name: str  # file name for downloads, without extension
    caption: str = ""  # one line under the chart: how to read it
    keep_index: bool = False  # write the DataFrame's index into the CSV (wide matrices with row labels)


def token_labels(tokens: list[str]) -> list[str]:
    """Axis labels for plotly: HTML-escaped (plotly reads a few tags in text) and unique, since a categorical
    axis merges equal labels: a repeated token gets invisible zero-width suffixes."""
    labels, seen = [], {}
    for token in tokens:
        seen[token] = seen.get(token, 0) + 1
        labels.append(html.escape(token, quote=False) + "\u200b" * (seen[token] - 1))
    return labels


def row_labels(tokens: list[str]) -> list[str]:
    """Plain-text labels for CSV rows and columns: "3 dog"."""
    return [f"{i} {token}" for i, token in enumerate(tokens)]


def layout(figure: go.Figure, title: str, height: int | None = None, **more) -> go.Figure:
    """Title (escaped: it may hold user tokens), font, tight margins, height; `more` as update_layout takes it, with
    the same result. Each key is set on the layout by itself, a dict merged into what the key holds (as
    update_layout merges it): update_layout's path machinery cost 5-10 ms a chart, most of a cached page's rerun on
    some pages. A key update_layout merges otherwise (a list into a non-empty list of annotations or shapes, a
    magic-underscore path, a subplot axis the figure lacks) goes through update_layout."""
    settings = figure.layout
    rest = {}
    for key, value in layout_spec(title, height, **more).items():
        if "_" in key or key not in settings:
            rest[key] = value
            continue
        current = settings[key]
        if isinstance(value, dict) and isinstance(current, BasePlotlyType):
            settings[key] = _merged(current.to_plotly_json(), value)
        elif isinstance(value, (list, tuple)) and current:
            rest[key] = value
        else:
            settings[key] = value
    if rest:
        figure.update_layout(**rest)
    return figure


def _merged(current: dict, update: dict) -> dict:
    """`update` over `current`, dicts merged key by key, everything else replaced."""
    merged = dict(current)
    for key, value in update.items():
        merged[key] = _merged(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def layout_spec(title: str, height: int | None = None, **more) -> dict:
    """What layout() sets, as a plain dict (for a figure built from dicts, see unchecked_figure)."""
    return dict(
        title=dict(
            text=html.escape(title, quote=False), x=0, xanchor="left", y=0.985, yref="container", yanchor="top",
            font=dict(size=15),
        ),
        font=dict(FONT),
        margin=more.pop("margin", dict(l=10, r=10, t=48, b=10)),
        height=height,
        **more,
    )


def unchecked_figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain dicts, skipping plotly's property-by-property validation, which costs about 30 ms of
    server CPU for a small bar chart, on every rerun of every session (the figure is otherwise the same). For the
    charts of the pages a whole class opens at once; their tests check the dicts with plotly's validation."""
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def legend_on_top(**extra) -> dict:
    """layout() arguments that put a horizontal legend between the title and the plot, without overlap."""
    return dict(
        legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0, **extra), margin=dict(l=10, r=10, t=96, b=10)
    )


def heatmap_height(rows: int, per_row: int = 22, least: int = 260, most: int = 820) -> int:
    return int(min(most, max(least, 90 + per_row * rows)))
