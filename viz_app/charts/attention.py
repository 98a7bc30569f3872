"""Charts for the attention page: one head's pattern, one token's attention, all heads at a glance, statistics."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from bert.layers import head_short_label, layer_labels
from viz_app.charts.base import (
    ATTENTION_SCALE,
    HIGHLIGHT_COLOUR,
    WORD_COLOUR,
    Chart,
    heatmap_height,
    layout,
    row_labels,
    token_labels,
)

OVERVIEW_TILE = 32  # a head's pattern is average-pooled to at most this many rows and columns in the overview


OUTSIDE_WINDOW = "outside the window"  # the name of the trace that greys the pairs a local layer cannot reach
OUTSIDE_SCALE = [[0, "rgba(120, 120, 120, 0.55)"], [1, "rgba(120, 120, 120, 0.55)"]]


def pattern_heatmap(pattern: np.ndarray, tokens: list[str], positions: list[int], layer: int, head: int,
                    band: np.ndarray | None = None) -> Chart:
    """pattern [query, key] of one head, restricted to `positions` (e.g. without [CLS]/[SEP]). band: bool [query,
    key] over every position, True where a local layer's query sees the key (bert.attention.window_band); the
    pairs outside it are greyed by a second heatmap trace named OUTSIDE_WINDOW (1 there, empty inside). None: a
    global layer, every pair reachable."""
    shown = _restrict(pattern, positions)
    names = [tokens[p] for p in positions]
    labels = token_labels(names)
    figure = go.Figure(
        go.Heatmap(
            z=shown,
            x=labels,
            y=labels,
            colorscale=ATTENTION_SCALE,
            zmin=0,
            zmax=max(float(shown.max(initial=0)), 1e-6),
            colorbar=dict(title="attention", thickness=12),
            hovertemplate="<b>%{y}</b> looks at <b>%{x}</b><br>attention %{z:.3f}<extra></extra>",
        )
    )
    if band is not None:
        outside = np.where(_restrict(np.asarray(band, dtype=bool), positions), np.nan, 1.0)
        figure.add_trace(go.Heatmap(
            z=outside, x=labels, y=labels, name=OUTSIDE_WINDOW, colorscale=OUTSIDE_SCALE, zmin=0, zmax=1,
            showscale=False, hoverongaps=False,
            hovertemplate="<b>%{y}</b> cannot reach <b>%{x}</b>: outside this layer's window<extra></extra>",
        ))
    layout(
        figure,
        f"Layer {layer}, head {head}: where each token (row) looks",
        height=heatmap_height(len(positions), per_row=20, least=360, most=760),
        xaxis=dict(title="key: the token looked at", type="category", tickangle=-60, side="bottom"),
        yaxis=dict(title="query: the token looking", type="category", autorange="reversed"),
    )
    every_row = row_labels(tokens)
    rows = [every_row[p] for p in positions]
    return Chart(
        figure,
        pd.DataFrame(shown, index=pd.Index(rows, name="query \\ key"), columns=rows),
        f"attention_L{layer}_H{head}",
        keep_index=True,
    )


def attention_bars(
    row: np.ndarray, tokens: list[str], positions: list[int], focus: int, layer: int, head: int
) -> Chart:
    """How much token `focus` attends to each token (one row of the pattern)."""
    labels = token_labels([tokens[p] for p in positions])
    values = row[positions]
    colours = [HIGHLIGHT_COLOUR if p == focus else WORD_COLOUR for p in positions]
    figure = go.Figure(
        go.Bar(
            x=values,
            y=labels,
            orientation="h",
            marker_color=colours,
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
        )
    )
    layout(
        figure,
        f"Where “{tokens[focus]}” looks (layer {layer}, head {head})",
        height=heatmap_height(len(positions), per_row=20, least=300, most=760),
        xaxis=dict(title="attention", rangemode="tozero"),
        yaxis=dict(type="category", autorange="reversed"),
        showlegend=False,
    )
    data = pd.DataFrame(
        {"position": positions, "token": [tokens[p] for p in positions], "attention": values.astype(float)}
    )
    return Chart(figure, data, f"attention_from_{focus}_L{layer}_H{head}")


def heads_overview(attention: np.ndarray, positions: list[int], selected: tuple[int, int]) -> Chart:
    """Every head's pattern as a small tile, layers down, heads across: one heatmap with gaps between tiles.
    Long inputs are coarsened to OVERVIEW_TILE x OVERVIEW_TILE per tile (see _pool)."""
    layers, heads = attention.shape[:2]
    patterns = _restrict(attention, positions)  # [layer, head, query, key]
    tile = min(len(positions), OVERVIEW_TILE)
    pooled = _pool(patterns, tile)  # [layer, head, tile, tile]
    step = tile + max(1, tile // 8)  # tile plus a gap
    grid = np.full((layers * step, heads * step), np.nan, dtype=np.float32)
    for layer in range(layers):
        for head in range(heads):
            grid[layer * step : layer * step + tile, head * step : head * step + tile] = pooled[layer, head]
    figure = go.Figure(
        go.Heatmap(
            z=grid,
            colorscale=ATTENTION_SCALE,
            zmin=0,
            zmax=1,
            hoverongaps=False,
            colorbar=dict(title="attention", thickness=12),
            customdata=_tile_ids(layers, heads, tile, step),
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br>attention %{z:.2f}<extra></extra>",
        )
    )
    layer, head = selected
    figure.add_shape(
        type="rect",
        x0=head * step - 1,
        x1=head * step + tile,
        y0=layer * step - 1,
        y1=layer * step + tile,
        line=dict(color=HIGHLIGHT_COLOUR, width=2),
    )
    centre = (tile - 1) / 2
    pooled_note = f" (each coarsened to {tile}×{tile})" if tile < len(positions) else ""
    layout(
        figure,
        f"All {layers * heads} heads at a glance{pooled_note}",
        height=int(min(900, max(300, 60 + layers * 64))),
        xaxis=dict(
            tickvals=[h * step + centre for h in range(heads)],
            ticktext=[f"H{h}" for h in range(heads)],
            showgrid=False,
            zeroline=False,
            side="top",
        ),
        yaxis=dict(
            tickvals=[layer_ * step + centre for layer_ in range(layers)],
            ticktext=[f"L{layer_}" for layer_ in range(layers)],
            autorange="reversed",
            showgrid=False,
            zeroline=False,
            scaleanchor="x",
        ),
        plot_bgcolor="white",
        margin=dict(l=10, r=10, t=80, b=10),
    )
    index = np.indices(pooled.shape).reshape(4, -1)
    data = pd.DataFrame(
        {"layer": index[0], "head": index[1], "query_block": index[2], "key_block": index[3],
         "attention": pooled.ravel()}
    )
    return Chart(figure, data, "attention_all_heads")


def statistic_heatmap(values: np.ndarray, name: str, description: str, selected: tuple[int, int]) -> Chart:
    """One statistic for every head: layers down, heads across, the value written in each cell."""
    layers, heads = values.shape
    is_share = name != "entropy"
    figure = go.Figure(
        go.Heatmap(
            z=values,
            x=[f"H{h}" for h in range(heads)],
            y=[f"L{l}" for l in range(layers)],
            colorscale="Viridis" if not is_share else ATTENTION_SCALE,
            zmin=0,
            zmax=1 if is_share else None,
            texttemplate="%{z:.2f}",
            textfont=dict(size=10),
            colorbar=dict(title=name, thickness=12),
            hovertemplate="layer %{y}, head %{x}<br>" + name + " %{z:.3f}<extra></extra>",
        )
    )
    layer, head = selected
    figure.add_shape(
        type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5,
        line=dict(color=HIGHLIGHT_COLOUR, width=2),
    )
    layout(
        figure,
        f"{name.capitalize()} of every head" + (" (bits)" if name == "entropy" else " (share of attention)"),
        height=int(min(700, max(260, 90 + 34 * layers))),
        xaxis=dict(side="top", type="category"),
        yaxis=dict(autorange="reversed", type="category"),
        margin=dict(l=10, r=10, t=80, b=10),
    )
    data = pd.DataFrame(
        values,
        index=pd.Index(layer_labels(layers), name="layer \\ head"),
        columns=[head_short_label(h) for h in range(heads)],
    )
    return Chart(figure, data, f"head_{name}", caption=f"{name}: {description}.", keep_index=True)


def _restrict(pattern: np.ndarray, positions: list[int]) -> np.ndarray:
    """pattern [..., query, key] at these query and key positions; no copy when that is all of them."""
    if len(positions) == pattern.shape[-1]:
        return pattern
    return pattern.take(positions, axis=-2).take(positions, axis=-1)


def _pool(patterns: np.ndarray, tile: int) -> np.ndarray:
    """Coarsen [..., query, key] from n to `tile` bins of nearly equal size: the mean over the queries of a bin,
    the sum over the keys of a bin, so each pooled row still sums to 1 like a pattern row."""
    n = patterns.shape[-1]
    if tile == n:
        return patterns
    edges = np.linspace(0, n, tile + 1).astype(int)
    keys = np.add.reduceat(patterns, edges[:-1], axis=-1)  # the keys first: along memory, and n / tile times less to pool next
    return np.add.reduceat(keys, edges[:-1], axis=-2) / np.diff(edges)[:, None]


def _tile_ids(layers: int, heads: int, tile: int, step: int) -> np.ndarray:
    """[rows, cols, 2]: the (layer, head) each cell of the overview grid belongs to."""
    rows = np.repeat(np.arange(layers * step) // step, heads * step).reshape(layers * step, heads * step)
    cols = np.tile(np.arange(heads * step) // step, (layers * step, 1))
    return np.stack([rows, cols], axis=-1)
