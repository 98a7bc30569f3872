"""Charts for the embeddings page: does BERT's input embedding behave like a concatenation or an overlap?"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the analyses' results, read here, never imported at run time
    from bert.analysis.representations.embedding_subspaces import Decomposition, SubspaceReport

from viz_app.charts.base import HIGHLIGHT_COLOUR, PART_COLOURS, Chart, layout, legend_on_top, token_labels

PAIR_COLOURS = {("token", "position"): "#8c564b", ("token", "segment"): "#17becf", ("position", "segment"): "#bcbd22"}
TOKEN_AXIS = dict(type="category", tickangle=-60)


def part_norms(parts: Decomposition, tokens: list[str]) -> Chart:
    """Grouped bars per token: |token|, |position|, |segment| and |sum| of its input vector (before LayerNorm)."""
    labels = token_labels(tokens)
    figure = go.Figure()
    for name in parts.norms:  # token, position, segment, sum
        figure.add_bar(
            x=labels,
            y=parts.norms[name],
            name=f"|{name}|",
            marker_color=PART_COLOURS[name],
            hovertemplate="%{x}: %{y:.3f}<extra>|" + name + "|</extra>",
        )
    layout(
        figure,
        "Length of each part of every token's input vector",
        height=380,
        barmode="group",
        xaxis=TOKEN_AXIS,
        yaxis=dict(title="norm"),
        **legend_on_top(),
    )
    data = pd.DataFrame(
        {
            "position": range(len(tokens)),
            "token": tokens,
            **{f"norm_{name}": values for name, values in parts.norms.items()},
            "cross_share": parts.cross_share,
        }
    )
    return Chart(figure, data, "embedding_part_norms")


def part_cosines(parts: Decomposition, tokens: list[str]) -> Chart:
    """Per token: the cosine between each pair of parts, and the overlap share of |sum|²."""
    labels = token_labels(tokens)
    figure = go.Figure()
    for pair in parts.cosines:  # each pair of parts
        figure.add_scatter(
            x=labels,
            y=parts.cosines[pair],
            mode="lines+markers",
            name=f"{pair[0]}·{pair[1]}",
            line=dict(color=PAIR_COLOURS[pair]),
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
        )
    figure.add_scatter(
        x=labels,
        y=parts.cross_share,
        mode="lines",
        name="overlap share",
        line=dict(color="#444", dash="dot"),
        hovertemplate="%{x}: %{y:.3f}<extra>overlap share of |sum|²</extra>",
    )
    figure.add_hline(y=0, line=dict(color="#999", width=1))
    layout(
        figure,
        "Cosine between the parts (0 everywhere = a concatenation)",
        height=380,
        xaxis=TOKEN_AXIS,
        yaxis=dict(title="cosine", range=[-1, 1]),
        **legend_on_top(),
    )
    data = pd.DataFrame(
        {
            "position": range(len(tokens)),
            "token": tokens,
            **{f"cos_{a}_{b}": values for (a, b), values in parts.cosines.items()},
            "cross_share": parts.cross_share,
        }
    )
    return Chart(figure, data, "embedding_part_cosines")


def explained_variance(token_variance: np.ndarray, position_variance: np.ndarray, hidden: int) -> Chart:
    """Cumulative share of variance against the number of principal components, for both tables."""
    curves = {"token": token_variance, "position": position_variance}
    figure = go.Figure()
    for name, ratio in curves.items():
        figure.add_scatter(
            x=np.arange(1, len(ratio) + 1),
            y=np.cumsum(ratio),
            mode="lines",
            name=f"{name} table",
            line=dict(color=PART_COLOURS[name], width=2.5),
            hovertemplate="%{x} components: %{y:.1%}<extra>" + name + "</extra>",
        )
    figure.add_hline(
        y=0.9, line=dict(color="#999", dash="dot"), annotation_text="90%", annotation_position="bottom right"
    )
    layout(
        figure,
        "How many directions does each table use? (cumulative variance)",
        height=380,
        xaxis=dict(
            title="principal components (log scale)", type="log", tickvals=[1, 2, 5, 10, 20, 50, 100, 200, hidden]
        ),
        yaxis=dict(title="share of variance", tickformat=".0%", range=[0, 1.02]),
        **legend_on_top(),
    )
    longest = max(len(ratio) for ratio in curves.values())
    data = pd.DataFrame({"components": np.arange(1, longest + 1)})
    for name, ratio in curves.items():
        data[f"{name}_cumulative"] = _pad(np.cumsum(ratio), longest)
    return Chart(figure, data, "embedding_explained_variance")


def position_curve(coords: np.ndarray, used: int) -> Chart:
    """Every position embedding along PC1/PC2 of its table, joined in order; the positions this input uses circled."""
    positions = np.arange(len(coords))
    figure = go.Figure()
    figure.add_scatter(
        x=coords[:, 0],
        y=coords[:, 1],
        mode="lines+markers",
        line=dict(color="#bbb", width=1),
        marker=dict(color=positions, colorscale="Viridis", size=5, colorbar=dict(title="position", thickness=12)),
        customdata=positions,
        hovertemplate="position %{customdata}<extra></extra>",
        name="all positions",
    )
    figure.add_scatter(
        x=coords[:used, 0],
        y=coords[:used, 1],
        mode="markers",
        marker=dict(color="rgba(0,0,0,0)", size=10, line=dict(color=HIGHLIGHT_COLOUR, width=1.5)),
        customdata=positions[:used],
        hovertemplate="position %{customdata} (in this input)<extra></extra>",
        name="used by this input",
    )
    layout(
        figure,
        "Position embeddings as a curve through PCA space",
        height=440,
        xaxis=dict(title="PC1"),
        yaxis=dict(title="PC2", scaleanchor="x"),
        **legend_on_top(),
    )
    data = pd.DataFrame({"position": positions, "pc1": coords[:, 0], "pc2": coords[:, 1]})
    if coords.shape[1] > 2:
        data["pc3"] = coords[:, 2]
    return Chart(figure, data, "position_embedding_pca")


def position_cosines(cosines: np.ndarray) -> Chart:
    n = len(cosines)
    figure = go.Figure(
        go.Heatmap(
            z=cosines,
            colorscale="RdBu_r",
            zmin=-1,
            zmax=1,
            zmid=0,
            colorbar=dict(title="cosine", thickness=12),
            hovertemplate="positions %{y} and %{x}: %{z:.3f}<extra></extra>",
        )
    )
    layout(
        figure,
        f"Cosine similarity between the {n} position embeddings",
        height=460,
        xaxis=dict(title="position", constrain="domain"),
        yaxis=dict(title="position", autorange="reversed", scaleanchor="x"),
    )
    data = pd.DataFrame(cosines, index=pd.Index(range(n), name="position"), columns=range(n))
    return Chart(figure, data, "position_cosine_similarity", keep_index=True)


def token_scatter(sample_tokens: list[str], sample_coords: np.ndarray, tokens: list[str], coords: np.ndarray) -> Chart:
    """A fixed sample of the vocabulary (grey) and this sentence's tokens (red) in the token table's PCA plane."""
    figure = go.Figure()
    figure.add_scattergl(
        x=sample_coords[:, 0],
        y=sample_coords[:, 1],
        mode="markers",
        marker=dict(color="#9aa7b8", size=4, opacity=0.6),
        text=token_labels(sample_tokens),
        hovertemplate="%{text}<extra>vocabulary</extra>",
        name=f"{len(sample_tokens)} vocabulary words",
    )
    figure.add_scatter(
        x=coords[:, 0],
        y=coords[:, 1],
        mode="markers+text",
        marker=dict(color=HIGHLIGHT_COLOUR, size=8),
        text=token_labels(tokens),
        textposition="top center",
        hovertemplate="%{text}<extra>this sentence</extra>",
        name="this sentence",
    )
    layout(
        figure,
        "Token embeddings in the token table's first two principal components",
        height=440,
        xaxis=dict(title="PC1"),
        yaxis=dict(title="PC2"),
        **legend_on_top(),
    )
    data = pd.DataFrame(
        {
            "token": list(sample_tokens) + list(tokens),
            "pc1": np.r_[sample_coords[:, 0], coords[:, 0]],
            "pc2": np.r_[sample_coords[:, 1], coords[:, 1]],
            "in_sentence": [False] * len(sample_tokens) + [True] * len(tokens),
        }
    )
    return Chart(figure, data, "token_embedding_pca")


def angle_curves(report: SubspaceReport) -> Chart:
    """Principal angles of each pair of subspaces, smallest first, with random subspaces of the same sizes dotted."""
    figure = go.Figure()
    rows = []
    pairs = list(report.angles)
    for pair in pairs:
        angles, baseline = report.angles[pair], report.random_angles[pair]
        index = np.arange(1, len(angles) + 1)
        label = f"{pair[0]}–{pair[1]}"
        figure.add_scatter(
            x=index,
            y=angles,
            mode="lines+markers",
            name=label,
            line=dict(color=PAIR_COLOURS[pair], width=2.5),
            hovertemplate="angle %{x}: %{y:.1f}°<extra>" + label + "</extra>",
        )
        figure.add_scatter(
            x=index,
            y=baseline,
            mode="lines",
            name="random",
            line=dict(color=PAIR_COLOURS[pair], dash="dot", width=1),
            showlegend=pair == pairs[0],
            hovertemplate="random: %{y:.1f}°<extra></extra>",
        )
        rows += [
            {"pair": label, "index": i, "angle_degrees": a, "random_degrees": b}
            for i, a, b in zip(index, angles, baseline)
        ]
    figure.add_hline(y=90, line=dict(color="#999", width=1))
    layout(
        figure,
        "Principal angles between the subspaces",
        height=400,
        xaxis=dict(
            title="principal angle number (smallest first)", dtick=1 if max(report.dims.values()) <= 20 else None
        ),
        yaxis=dict(title="degrees", range=[0, 92]),
        **legend_on_top(),
    )
    return Chart(figure, pd.DataFrame(rows), "embedding_principal_angles")


def surviving_matrix(report: SubspaceReport) -> Chart:
    """3 x 3: the mean share of each table's vectors' length inside each table's top-k subspace."""
    names = list(report.dims)  # token, position, segment
    values = np.array([[report.surviving[(part, onto)] for onto in names] for part in names])
    figure = go.Figure(
        go.Heatmap(
            z=values,
            x=[f"onto {p} ({report.dims[p]}d)" for p in names],
            y=[f"{p} vectors" for p in names],
            colorscale="Blues",
            zmin=0,
            zmax=1,
            texttemplate="%{z:.0%}",
            textfont=dict(size=14),
            colorbar=dict(title="|Px|/|x|", thickness=12),
            hovertemplate="%{y} %{x}: %{z:.1%}<extra></extra>",
        )
    )
    layout(figure, "How much of each table's vectors survives projection", height=340, yaxis=dict(autorange="reversed"))
    baseline = ", ".join(f"{report.random_surviving[p]:.0%} onto {p}" for p in names)
    caption = (
        f"A random direction would keep about {baseline}. "
        "The diagonal is how much of each table its own top-k subspace holds."
    )
    data = pd.DataFrame(
        values,
        index=pd.Index([f"{p} vectors" for p in names], name="part \\ onto"),
        columns=[f"onto {p}" for p in names],
    )
    return Chart(figure, data, "embedding_surviving_fraction", caption=caption, keep_index=True)


def _pad(values: np.ndarray, length: int) -> np.ndarray:
    return np.r_[values, np.full(length - len(values), np.nan)]
