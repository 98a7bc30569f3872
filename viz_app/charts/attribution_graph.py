"""The attribution graph of one [MASK] guess (bert/analysis/tracing/): the input embeddings on the bottom row, each
layer's transcoder features and MLP error nodes on its row (features merged by hand: one diamond, a supernode),
the target on top, each node in its token's column;
nodes sized by their influence on the target, edges drawn blue where the source raises what it feeds, red where it
lowers it, as wide as their weight against the largest drawn. Arrays and names in, a Chart out
(viz_app/charts/base.py)."""
from __future__ import annotations

import html
import math
from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import Chart, layout, legend_on_top, token_labels

RAISES, LOWERS = "#2166ac", "#b2182b"
COLOURS = {"feature": "#4d9221", "supernode": "#762a83", "error": "#999999", "embedding": "#555555", "target": "#f2c12e"}
NAMES = {"embedding": "input embeddings", "error": "MLP errors", "feature": "transcoder features",
         "supernode": "features merged (a supernode)", "target": "the target"}
SPREAD = 0.7  # the share of a column the nodes of one (row, position) spread over


def node_places(nodes: Sequence[dict], num_layers: int) -> dict[str, tuple[float, float]]:
    """id -> (x, y): x the token's position, the nodes sharing a row and position spread across its column (the
    error node last); y 0 for the embeddings, layer + 1 for a layer's nodes, num_layers + 1 for the target."""
    groups: dict[tuple[float, int], list[dict]] = {}
    for node in nodes:
        row = 0.0 if node["kind"] == "embedding" else float(num_layers + 1 if node["kind"] == "target" else node["layer"] + 1)
        groups.setdefault((row, node["position"]), []).append(node)
    places = {}
    for (row, position), group in groups.items():
        group = sorted(group, key=lambda n: (n["kind"] == "error", -n["influence"]))
        for rank, node in enumerate(group):
            offset = 0.0 if len(group) == 1 else SPREAD * (rank / (len(group) - 1) - 0.5)
            places[node["id"]] = (position + offset, row)
    return places


def graph_chart(nodes: Sequence[dict], edges: Sequence[dict], tokens: list[str], num_layers: int, title: str,
                name: str, picked: str = "") -> Chart:
    """nodes: {"id", "kind" (feature, supernode, error, embedding, target), "layer", "position", "influence", "words"};
    edges: {"from", "to", "weight"} between drawn nodes. A feature's marker carries its id in its customdata (what a
    click switches off); `picked`, the feature switched off, is ringed."""
    places = node_places(nodes, num_layers)
    largest = max((abs(e["weight"]) for e in edges), default=1.0) or 1.0
    strongest = max((n["influence"] for n in nodes if n["kind"] != "target"), default=1.0) or 1.0
    figure = go.Figure()
    for edge in edges:
        (x0, y0), (x1, y1) = places[edge["from"]], places[edge["to"]]
        figure.add_trace(go.Scatter(x=[x0, x1], y=[y0, y1], mode="lines", hoverinfo="skip", showlegend=False,
                                    line=dict(color=RAISES if edge["weight"] >= 0 else LOWERS,
                                              width=0.5 + 4.5 * abs(edge["weight"]) / largest), opacity=0.6))
    for sign, colour in (("raises", RAISES), ("lowers", LOWERS)):
        if any((edge["weight"] >= 0) == (sign == "raises") for edge in edges):
            figure.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=colour, width=4),
                                        name=f"the source {sign} what it feeds"))
    if picked in places:
        figure.add_trace(go.Scatter(x=[places[picked][0]], y=[places[picked][1]], mode="markers", hoverinfo="skip",
                                    name="switched off", marker=dict(size=30, color="rgba(0,0,0,0)",
                                                                     line=dict(width=3, color="#f2c12e"))))
    for kind in ("embedding", "error", "feature", "supernode", "target"):
        drawn = [n for n in nodes if n["kind"] == kind]
        if not drawn:
            continue
        sizes = [22 if kind == "target" else 6 + 22 * math.sqrt(min(max(n["influence"], 0.0) / strongest, 1.0)) for n in drawn]
        figure.add_trace(go.Scatter(
            x=[places[n["id"]][0] for n in drawn], y=[places[n["id"]][1] for n in drawn], mode="markers",
            name=NAMES[kind],
            marker=dict(size=sizes, color=COLOURS[kind],
                        symbol={"embedding": "square", "error": "square", "supernode": "diamond"}.get(kind, "circle"),
                        line=dict(width=1, color="#333")),
            customdata=[n["id"] if kind == "feature" else "" for n in drawn],
            hovertext=[html.escape(f"{n['words']}; influence {n['influence']:.3f}", quote=False) for n in drawn],
            hoverinfo="text", selected=dict(marker=dict(opacity=1.0)), unselected=dict(marker=dict(opacity=1.0))))
    layout(figure, title, height=max(420, 70 * (num_layers + 2)), **legend_on_top())
    figure.update_xaxes(tickvals=list(range(len(tokens))), ticktext=token_labels(tokens), showgrid=False, zeroline=False,
                        range=[-0.6, len(tokens) - 0.4])
    figure.update_yaxes(tickvals=list(range(num_layers + 2)),
                        ticktext=["embeddings", *(f"layer {layer}" for layer in range(num_layers)), "target"],
                        showgrid=False, zeroline=False)
    data = pd.DataFrame([{"from": e["from"], "to": e["to"], "weight": e["weight"]} for e in edges],
                        columns=["from", "to", "weight"])
    caption = ("A node's size: its influence on the target through every path. An edge: the source's direct, exact "
               "contribution to what it feeds (blue raises it, red lowers it). Hover a node to read it; click a "
               "feature to switch it off.")
    return Chart(figure, data, name, caption)
