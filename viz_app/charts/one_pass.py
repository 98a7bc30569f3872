"""Charts of the page "One pass, step by step" (viz_app/specs/one_pass.py): the word pieces with their ids as
digits; vectors as their first numbers, "…" and their length (every number in a strip on demand); the token ×
token matrices of one head, each on its own colour scale with its values printed; a head's slice of a weight
matrix; the residual stream's length through the layers; the overview of how much each block changes each token's
vector. Token labels stand upright or horizontal with the margin they need (automargin), so that none is cut at a
laptop's 1366 × 768."""
from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import (ATTENTION_SCALE, HIGHLIGHT_COLOUR, Chart, heatmap_height, layout, layout_spec,
                                 token_labels, unchecked_figure)
from viz_app.charts.query_key import DIVERGING

FIRST_NUMBERS = 8  # a vector is shown as its first numbers, "…" and its length
PRINTED_TOKENS = 14  # a token × token matrix prints its values up to this many tokens (hover beyond)
QUIET = "#f4f4f4"  # the fill of cells that carry digits, not colours
ELLIPSIS, LENGTH = "…", "length ‖v‖"


def token_axis(labels: list[str], room: int = 900, **more) -> dict:
    """An axis of token labels: categorical; horizontal where every label fits in `room` pixels (about 7 a
    character), else upright; with the margin they need either way (never cut at the edge)."""
    fits = len(labels) * (7 * max(map(len, labels), default=0) + 10) <= room
    return dict(type="category", tickangle=0 if fits else -90, automargin=True, **more)


def token_ids(tokens: list[str], ids: list[int], title: str, name: str, caption: str = "") -> Chart:
    """One cell per token, its id printed as digits on a quiet fill (an id is a row number, not a quantity)."""
    labels = token_labels(tokens)
    figure = go.Figure(go.Heatmap(
        z=[[0] * len(ids)], x=labels, y=["id"], text=[[str(i) for i in ids]], texttemplate="%{text}",
        textfont=dict(size=13 if len(ids) <= 20 else 10), colorscale=[[0, QUIET], [1, QUIET]], showscale=False,
        xgap=2, hovertemplate="%{x}: id %{text}<extra></extra>"))
    layout(figure, title, height=170, xaxis=token_axis(labels, side="top"), yaxis=dict(type="category", automargin=True))
    data = pd.DataFrame({"token": tokens, "id": ids})
    return Chart(figure, data, name, caption)


def vector_rows(rows: dict[str, np.ndarray], title: str, name: str, caption: str = "", shown: int = FIRST_NUMBERS) -> Chart:
    """Each row a vector: its first `shown` numbers printed on a diverging scale, "…", and its length; every number
    of every row in the CSV (and in `number_rows`, the strip the page shows on demand)."""
    labels = token_labels(list(rows))
    first = min(shown, min(len(values) for values in rows.values()))
    matrix = np.array([np.asarray(values[:first], np.float64) for values in rows.values()])
    limit = max(float(np.abs(matrix).max(initial=0)), 1e-6)
    norms = [float(np.linalg.norm(np.asarray(values, np.float64))) for values in rows.values()]
    widths = sorted({len(values) for values in rows.values()})
    columns = [str(i) for i in range(first)]
    figure = go.Figure([
        go.Heatmap(z=matrix, x=columns, y=labels, colorscale=DIVERGING, zmid=0, zmin=-limit, zmax=limit, xgap=1, ygap=1,
                   texttemplate="%{z:.2f}", textfont=dict(size=11 if first <= 12 else 9), colorbar=dict(thickness=10, len=0.9),
                   hovertemplate="%{y}<br>dimension %{x}: %{z:.4f}<extra></extra>"),
        go.Scatter(x=[ELLIPSIS] * len(labels), y=labels, mode="text", text=[ELLIPSIS] * len(labels), hoverinfo="skip",
                   showlegend=False),
        go.Scatter(x=[LENGTH] * len(labels), y=labels, mode="text", text=[f"{norm:.2f}" for norm in norms],
                   textfont=dict(size=12), showlegend=False,
                   hovertemplate="%{y}<br>length of all its numbers: %{text}<extra></extra>"),
    ])
    layout(figure, title, height=heatmap_height(len(labels), per_row=28, least=150, most=560),
           yaxis=dict(autorange="reversed", type="category", automargin=True),
           xaxis=dict(type="category", categoryorder="array", categoryarray=[*columns, ELLIPSIS, LENGTH],
                      title=f"the first {first} of {' or '.join(map(str, widths))} numbers, then the length"))
    full = np.full((len(rows), widths[-1]), np.nan)  # rows of different lengths (the MLP's 1536 beside 384) end blank
    for row, values in enumerate(rows.values()):
        full[row, :len(values)] = values
    data = pd.DataFrame(full, index=list(rows))
    data.insert(0, "length", norms)
    return Chart(figure, data, name, caption, keep_index=True)


def token_matrices(matrices: dict[str, np.ndarray], tokens: list[str], followed: int, title: str, name: str,
                   caption: str = "", shares: tuple[str, ...] = ()) -> Chart:
    """[query, key] matrices side by side (q·k, the scores, the softmax), each on its own colour scale: a diverging one
    centred on 0 from its own largest value, or 0 to 1 for the names in `shares`; values printed up to
    PRINTED_TOKENS tokens (two decimals, one beyond 9 tokens but for `shares`); a masked cell (the dtype's lowest score) blank; the followed query's row outlined."""
    labels = token_labels(tokens)
    count, gap = len(matrices), 0.06
    width = (1 - gap * count) / count
    figure, axes, shapes = go.Figure(), {}, []
    printed = len(tokens) <= PRINTED_TOKENS
    for index, (label, matrix) in enumerate(matrices.items()):
        shown = np.where(np.abs(matrix) > 1e30, np.nan, np.asarray(matrix, np.float64))
        start = index * (width + gap)
        axis = "" if index == 0 else str(index + 1)
        if label in shares:
            scale = dict(colorscale=ATTENTION_SCALE, zmin=0, zmax=1)
        else:
            limit = max(float(np.nanmax(np.abs(shown), initial=0)), 1e-6)
            scale = dict(colorscale=DIVERGING, zmid=0, zmin=-limit, zmax=limit)
        figure.add_trace(go.Heatmap(
            z=shown, x=labels, y=labels, xaxis=f"x{axis}", yaxis=f"y{axis}", **scale, xgap=1, ygap=1,
            texttemplate=("%{z:.2f}" if label in shares or len(tokens) <= 9 else "%{z:.1f}") if printed else None,
            textfont=dict(size=10 if len(tokens) > 9 else 11),
            colorbar=dict(x=start + width + 0.005, xanchor="left", thickness=8, len=0.8, y=0.5),
            hovertemplate=label + "<br>query %{y}, key %{x}: %{z:.4f}<extra></extra>"))
        axes[f"xaxis{axis}"] = token_axis(labels, int(900 * width), domain=[start, start + width], title=label)
        axes[f"yaxis{axis}"] = dict(type="category", autorange="reversed", automargin=True, showticklabels=index == 0,
                                    **({} if index == 0 else {"matches": "y"}))
        shapes.append(dict(type="rect", xref=f"x{axis}", yref=f"y{axis}", x0=-0.5, x1=len(tokens) - 0.5,
                           y0=followed - 0.5, y1=followed + 0.5, line=dict(color=HIGHLIGHT_COLOUR, width=2)))
    layout(figure, title, height=int(min(620, max(300, 150 + 30 * len(tokens)))), shapes=shapes, **axes)
    rows = [f"{i} {token}" for i, token in enumerate(tokens)]
    data = pd.concat({label: pd.DataFrame(matrix, index=rows, columns=rows) for label, matrix in matrices.items()})
    return Chart(figure, data, name, caption, keep_index=True)


def weight_slice(weights: np.ndarray, column: int, title: str, name: str, caption: str = "", rows: int = 12) -> Chart:
    """A [in, out] weight matrix as its first `rows` rows (values printed) and "…", the chosen column outlined; the
    whole slice in the CSV."""
    shown = np.asarray(weights[:rows], np.float64)
    limit = max(float(np.abs(shown).max(initial=0)), 1e-6)
    x, y = [str(j) for j in range(weights.shape[1])], [str(i) for i in range(len(shown))]
    figure = go.Figure(go.Heatmap(
        z=shown, x=x, y=y, colorscale=DIVERGING, zmid=0, zmin=-limit, zmax=limit, xgap=1, ygap=1,
        texttemplate="%{z:.2f}" if weights.shape[1] <= 40 else None, textfont=dict(size=9),
        colorbar=dict(thickness=10), hovertemplate="row %{y}, column %{x}: %{z:.4f}<extra></extra>"))
    figure.add_shape(type="rect", xref="x", yref="paper", x0=column - 0.5, x1=column + 0.5, y0=0, y1=1,
                     line=dict(color=HIGHLIGHT_COLOUR, width=2))
    layout(figure, title, height=heatmap_height(len(shown), per_row=24, least=200, most=420),
           xaxis=dict(type="category", title="column (one per dimension of the head)", automargin=True),
           yaxis=dict(type="category", autorange="reversed", automargin=True,
                      title=f"rows 0–{len(shown) - 1} of {weights.shape[0]} ({ELLIPSIS})"))
    return Chart(figure, pd.DataFrame(weights), name, caption, keep_index=True)


def residual_stream(norms: np.ndarray, stages: list[str], tokens: list[str], followed: int) -> Chart:
    """[stage, seq] -> one line per token through the stages (the embeddings, each layer's attention and MLP): the
    length of its vector in the residual stream, the followed token's line thick."""
    labels = token_labels(tokens)
    traces = [go.Scatter(x=stages, y=norms[:, t], mode="lines", name=labels[t], line=dict(color="#c7c7c7", width=1),
                         hovertemplate=labels[t] + "<br>%{x}: length %{y:.2f}<extra></extra>", showlegend=False)
              for t in range(len(tokens)) if t != followed]
    traces.append(go.Scatter(x=stages, y=norms[:, followed], mode="lines+markers", name=labels[followed],
                             line=dict(color=HIGHLIGHT_COLOUR, width=3),
                             hovertemplate=labels[followed] + "<br>%{x}: length %{y:.2f}<extra></extra>"))
    figure = go.Figure(traces)
    layout(figure, f"The residual stream of {tokens[followed]} through the whole pass (grey: the other tokens)", height=340,
           xaxis=dict(type="category", tickangle=-90, automargin=True), yaxis=dict(title="length of the vector", automargin=True),
           showlegend=False)
    data = pd.DataFrame(norms, index=stages, columns=[f"{i} {t}" for i, t in enumerate(tokens)])
    return Chart(figure, data, "one_pass_residual_stream",
                 "Each point: the length of a token's vector where it leaves the embeddings and each block; the "
                 "vector itself flows on unbroken, each block adding to it.", keep_index=True)


def number_rows(rows: dict[str, np.ndarray], title: str, name: str, caption: str = "",
                columns: list[str] | None = None, shares: bool = False) -> Chart:
    """Each row a vector of the pass (a token's embedding, a query, a softmax row), one cell per number, its value
    on hover; on a diverging scale centred on 0, or (`shares`) from 0 up. `columns`: the column labels (tokens),
    else the dimensions 0, 1, 2, ... Rows of different lengths (ALBERT's 128-wide embeddings beside its
    768-wide layers) end blank. The CSV has the numbers, one row per vector."""
    labels = list(rows)
    width = max(len(values) for values in rows.values())
    matrix = np.full((len(rows), width), np.nan)
    for row, values in enumerate(rows.values()):
        matrix[row, :len(values)] = values
    x = token_labels(columns) if columns is not None else list(range(matrix.shape[1]))
    shown = np.where(np.isfinite(matrix), matrix, np.nan)  # a masked score (the dtype's minimum) is left blank
    limit = max(float(np.nanmax(np.where(np.abs(shown) > 1e30, np.nan, np.abs(shown)), initial=0)), 1e-6)
    scale = dict(colorscale=ATTENTION_SCALE, zmin=0) if shares else dict(colorscale=DIVERGING, zmid=0, zmin=-limit, zmax=limit)
    figure = go.Figure(go.Heatmap(
        z=np.where(np.abs(shown) > 1e30, np.nan, shown), x=x, y=token_labels(labels), **scale,
        hovertemplate="%{y}<br>" + ("%{x}" if columns is not None else "dimension %{x}") + ": %{z:.4f}<extra></extra>"))
    layout(figure, title, height=heatmap_height(len(labels), per_row=30, least=150, most=520),
           yaxis=dict(autorange="reversed", type="category", automargin=True),
           xaxis=token_axis(x) if columns is not None else dict(title="dimension"))
    data = pd.DataFrame(matrix, index=labels, columns=columns if columns is not None else None)
    return Chart(figure, data, name, caption, keep_index=True)


def change_overview(changes: np.ndarray, tokens: list[str], token: int, blocks: tuple[str, ...]) -> Chart:
    """[layer, block, seq] -> a heatmap, one row per block in the order the pass runs them ("layer 0 attention",
    "layer 0 MLP", ...), one column per token, the picked token's column outlined: how far each block moves each
    token's vector (||after - before|| / ||before||)."""
    layers = changes.shape[0]
    rows = [f"layer {layer} {block}" for layer in range(layers) for block in blocks]
    matrix = changes.reshape(layers * len(blocks), -1)
    labels = token_labels(tokens)
    figure = go.Figure(go.Heatmap(
        z=matrix, x=labels, y=rows, colorscale=ATTENTION_SCALE, zmin=0, colorbar=dict(title="change", thickness=12),
        hovertemplate="%{y}<br>%{x}: changed by %{z:.1%} of its length<extra></extra>"))
    figure.add_shape(type="rect", xref="x", yref="paper", x0=token - 0.5, x1=token + 0.5, y0=0, y1=1,
                     line=dict(color=HIGHLIGHT_COLOUR, width=2))
    layout(figure, f"How much each block changes each token's vector (outlined: {tokens[token]})",
           height=heatmap_height(len(rows), per_row=18, least=260, most=700),
           yaxis=dict(autorange="reversed", type="category", automargin=True), xaxis=token_axis(labels))
    data = pd.DataFrame(matrix, index=rows, columns=[f"{i} {t}" for i, t in enumerate(tokens)])
    return Chart(figure, data, "one_pass_overview",
                 "Each cell: the length of what the block added (after the residual and, in BERT's post-LN layers, "
                 "the LayerNorm) over the length of the vector before it.", keep_index=True)


@dataclass(frozen=True)
class Block:
    """A block of the pass diagram: a box at column `column` spanning rows `rows` (bottom, top), its label, and the
    step it opens (with the layer it opens, or None)."""

    column: int
    rows: tuple[float, float]
    label: str
    step: str
    layer: int | None = None
    current: bool = False  # the opened step's block: drawn highlighted

    @property
    def stop(self) -> tuple[float, float]:
        """Where the row of tokens stands in this block: at its foot, under its label."""
        return float(self.column), self.rows[0] + TOKEN_ROW_LIFT


TOKEN_ROW_LIFT = 0.14  # the row of tokens above a block's lower edge (a block is 1 high, its label in the middle)
TOKEN_ROW_WIDTH = 0.76  # the most of a column (1 wide) the row of tokens takes


def pass_diagram(blocks: list[Block], columns: list[str], title: str, notes: str = "", tokens: tuple[str, ...] = (),
                 followed: int = 0, route: tuple[tuple[float, float], ...] = ()) -> Chart:
    """The whole pass as boxes from left to right, the data flowing along the arrow under them; each box's centre
    a point whose click opens its step (customdata: [step, layer or −1]); the open step's boxes highlighted;
    `columns` (the pieces, the embeddings, each layer, the head) name the CSV's rows; `notes`: the model's own
    differences, one line under the diagram. `tokens`: a row of dots, one per word piece (the `followed` one in
    red), the last trace, standing at the end of `route` (a block's `stop`); a route of two stops or more is the
    way they came, from the block opened before, and the figure asks for them to flow along it when it is drawn
    (`layout.meta["flow"]`, played by viz_app/charts/flow.py). Built from plain dicts (unchecked_figure): some 60
    boxes, drawn on every run of the page."""
    shapes = [dict(type="rect", x0=b.column - 0.44, x1=b.column + 0.44, y0=b.rows[0] + 0.06, y1=b.rows[1] - 0.06,
                   line=dict(color=HIGHLIGHT_COLOUR if b.current else "#8aa6cf", width=3 if b.current else 1),
                   fillcolor="#fde3e1" if b.current else "#eef3fa", layer="below") for b in blocks]
    points = dict(
        type="scatter", x=[b.column for b in blocks], y=[sum(b.rows) / 2 for b in blocks], mode="markers+text",
        text=[b.label for b in blocks], textfont=dict(size=11 if len(columns) <= 10 else 9, color="#1f2a3a"),
        marker=dict(size=28, symbol="square", color="rgba(0,0,0,0.01)"),
        customdata=[[b.step, -1 if b.layer is None else b.layer] for b in blocks],
        hovertemplate="%{text}: click to open this step<extra></extra>", showlegend=False)
    traces = [points, *([_token_row(blocks, tokens, followed, route)] if tokens and route else [])]
    annotations = [dict(x=len(columns) - 0.5, y=-0.35, ax=-0.5, ay=-0.35, xref="x", yref="y", axref="x", ayref="y",
                        showarrow=True, arrowhead=3, arrowwidth=2, arrowcolor="#7f7f7f", text="")]
    if notes:
        annotations.append(dict(text=html.escape(notes, quote=False), xref="paper", yref="paper", x=0, y=-0.02,
                                yanchor="top", xanchor="left", showarrow=False, font=dict(size=12, color="#444")))
    figure = unchecked_figure(traces, layout_spec(
        title, height=270 if not notes else 290, margin=dict(l=10, r=10, t=40, b=10 if not notes else 40),
        xaxis=dict(range=[-0.55, len(columns) - 0.45], visible=False, fixedrange=True),
        yaxis=dict(range=[-0.6, max(b.rows[1] for b in blocks) + 0.05], visible=False, fixedrange=True),
        plot_bgcolor="white", dragmode=False, shapes=shapes, annotations=annotations,
        **({"meta": {"flow": [list(stop) for stop in route]}} if len(route) > 1 else {})))
    data = pd.DataFrame([{"column": columns[b.column], "block": b.label.replace("<br>", " "), "step": b.step,
                          "layer": b.layer} for b in blocks])
    return Chart(figure, data, "one_pass_diagram", "Click a block to open its step; the highlighted one is open. The "
                 "dots are your word pieces, one each (the followed one red): they flow from the step you had open "
                 "to the one you open, through every block between, as the model computes.")


def _token_row(blocks: list[Block], tokens: tuple[str, ...], followed: int, route) -> dict:
    """The tokens as a row of dots at the route's end, in the block that stands there (a click on them opens it)."""
    (x, y), count = route[-1], len(tokens)
    here = next(b for b in blocks if b.stop == tuple(route[-1]))
    gap = min(0.075, TOKEN_ROW_WIDTH / max(count - 1, 1))
    labels = [html.escape(token, quote=False) for token in tokens]  # plotly reads a few tags in text
    return dict(
        type="scatter", x=[x + gap * (i - (count - 1) / 2) for i in range(count)], y=[y] * count, mode="markers",
        marker=dict(size=6, color=[HIGHLIGHT_COLOUR if i == followed else "#4c6a92" for i in range(count)],
                    line=dict(width=0)),
        text=[f"{i}: {label}" for i, label in enumerate(labels)],
        customdata=[[here.step, -1 if here.layer is None else here.layer]] * count,
        hovertemplate="%{text}<extra></extra>", showlegend=False)
