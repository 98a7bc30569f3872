"""Charts for the Features page: sparse-autoencoder features of a sentence, a feature's (or a neuron's)
activation histogram over a corpus, the tokens a feature promotes, and the [MASK] guess before and after a change."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from bert.layers import residual_label
from viz_app.charts.base import HIGHLIGHT_COLOUR, WORD_COLOUR, Chart, heatmap_height, layout, row_labels, token_labels


def strongest_features(z: np.ndarray, count: int) -> np.ndarray:
    """z [seq, feature] -> the `count` features with the highest peak on this input, strongest first (only
    features that fire somewhere)."""
    peak = z.max(axis=0)
    firing = np.flatnonzero(peak > 0)
    return firing[np.argsort(-peak[firing], kind="stable")][:count]


def feature_label(feature: int, labels: dict[int, str] | None = None) -> str:
    """"f812" or "f812 · plural nouns" with the user's label."""
    name = (labels or {}).get(feature, "")
    return f"f{feature}" + (f" · {name}" if name else "")


def token_feature_heatmap(z: np.ndarray, tokens: list[str], features: np.ndarray, layer: int,
                          labels: dict[int, str] | None = None) -> Chart:
    """z [seq, feature] for the chosen features (columns, in that order): which feature fires on which token."""
    shown = z[:, features]
    names = [feature_label(int(f), labels) for f in features]
    figure = go.Figure(go.Heatmap(
        z=shown, x=token_labels(names), y=token_labels(tokens), colorscale="Oranges", zmin=0,
        zmax=max(float(shown.max(initial=0)), 1e-6), colorbar=dict(title="activation", thickness=12),
        hovertemplate="<b>%{y}</b>, feature %{x}<br>activation %{z:.3f}<extra></extra>",
    ))
    layout(figure, f"Sparse-autoencoder features {residual_label(layer)}: the {len(features)} strongest on this sentence",
           height=heatmap_height(len(tokens), per_row=20, least=320, most=820),
           xaxis=dict(title="feature", type="category", tickangle=-60), yaxis=dict(type="category", autorange="reversed"))
    data = pd.DataFrame(shown, index=pd.Index(row_labels(tokens), name="token \\ feature"), columns=[f"f{f}" for f in features])
    caption = "Each token uses at most k features; a blank cell means the feature is off there."
    return Chart(figure, data, f"features_L{layer}", caption=caption, keep_index=True)


def activation_histogram(bin_edges: np.ndarray, counts: np.ndarray, unit: str, active_only: bool = False) -> Chart:
    """Counts per bin of one unit's activations over a corpus (a log scale: the few strong ones still show)."""
    centres = (bin_edges[:-1] + bin_edges[1:]) / 2
    widths = np.diff(bin_edges)
    figure = go.Figure(go.Bar(x=centres, y=counts, width=widths, marker_color=WORD_COLOUR,
                              hovertemplate="%{x:.2f}: %{y} tokens<extra></extra>"))
    where = "tokens where it fires" if active_only else "every token"
    layout(figure, f"{unit}: activations over the corpus ({where})", height=300,
           xaxis=dict(title="activation"), yaxis=dict(title="tokens (log scale)", type="log"), bargap=0)
    data = pd.DataFrame({"bin_start": bin_edges[:-1], "bin_end": bin_edges[1:], "tokens": counts})
    caption = f"The last bar also holds everything above {bin_edges[-1]:.1f}." if not active_only else ""
    return Chart(figure, data, f"{unit.replace(' ', '_')}_histogram", caption=caption)


def promoted_tokens_chart(tokens: list[str], rises: np.ndarray, feature: int) -> Chart:
    """The tokens whose masked-LM logits rise most along the feature's decoder direction, largest first."""
    figure = go.Figure(go.Bar(x=rises[::-1], y=token_labels(tokens[::-1]), orientation="h", marker_color=HIGHLIGHT_COLOUR,
                              hovertemplate="%{y}: +%{x:.2f}<extra></extra>"))
    layout(figure, f"Tokens feature {feature} promotes (logit lens)", height=heatmap_height(len(tokens), per_row=18, least=260),
           xaxis=dict(title="logit rise"), yaxis=dict(type="category"))
    return Chart(figure, pd.DataFrame({"token": tokens, "logit_rise": rises}), f"f{feature}_promoted")


def guess_change_chart(tokens: list[str], before: np.ndarray, after: np.ndarray, change: str) -> Chart:
    """Probabilities of the [MASK]'s top candidates with the model as it is and after the change."""
    labels = token_labels(tokens)
    figure = go.Figure([
        go.Bar(name="as it is", x=labels, y=before, marker_color=WORD_COLOUR, hovertemplate="%{x}: %{y:.1%}<extra></extra>"),
        go.Bar(name=change, x=labels, y=after, marker_color=HIGHLIGHT_COLOUR, hovertemplate="%{x}: %{y:.1%}<extra></extra>"),
    ])
    layout(figure, f"The [MASK] guess, before and after: {change}", height=320, barmode="group",
           yaxis=dict(title="probability", tickformat=".0%"), xaxis=dict(type="category"),
           legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0), margin=dict(l=10, r=10, t=80, b=10))
    data = pd.DataFrame({"token": tokens, "before": before, "after": after})
    return Chart(figure, data, "mask_guess_change")


def tag_mix_chart(mix: dict[str, tuple[float, float]], unit: str, column: str) -> Chart:
    """The tag shares among a unit's top examples against the whole corpus."""
    tags = list(mix)
    top, corpus = [mix[t][0] for t in tags], [mix[t][1] for t in tags]
    figure = go.Figure([
        go.Bar(name="top examples", x=tags, y=top, marker_color=HIGHLIGHT_COLOUR),
        go.Bar(name="whole corpus", x=tags, y=corpus, marker_color=WORD_COLOUR),
    ])
    layout(figure, f"{unit}: {column.upper()} of its top examples against the corpus", height=320, barmode="group",
           yaxis=dict(title="share", tickformat=".0%"), legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0),
           margin=dict(l=10, r=10, t=80, b=10))
    return Chart(figure, pd.DataFrame({"tag": tags, "top_examples": top, "corpus": corpus}), f"{unit.replace(' ', '_')}_{column}")
