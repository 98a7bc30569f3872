"""The circuit graph (layers as columns, heads and MLPs as nodes, the strongest edges as lines) and the
faithfulness curve. Arrays and names in, a Chart out (viz_app/charts/base.py)."""
from __future__ import annotations

import html
from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import Chart, layout, legend_on_top

RAISES, LOWERS = "#2166ac", "#b2182b"  # an edge whose patching raises the metric / lowers it
# a clicked marker (the part patched) grows; the others keep their look instead of Plotly's faded unselected points
KEEP_UNSELECTED = dict(selected=dict(marker=dict(size=16)), unselected=dict(marker=dict(opacity=1.0)))


def node_place(kind: str, layer: int | None, head: int | None, num_layers: int, num_heads: int) -> tuple[float, float]:
    """(column, row): the embeddings in column 0, layer l's heads and MLP in column l + 1 (the MLP below its heads),
    the logits last."""
    if kind == "embeddings":
        return 0.0, num_heads / 2
    if kind == "logits":
        return float(num_layers + 1), num_heads / 2
    return float(layer + 1) + (0.25 if kind == "mlp" else 0.0), float(num_heads if kind == "mlp" else head)


def circuit_graph(nodes: Sequence[dict], edges: Sequence[dict], num_layers: int, num_heads: int, title: str,
                  name: str) -> Chart:
    """nodes: {"name", "kind", "layer", "head", "score"}; edges (the ones drawn): {"from", "to", "name", "score"}.
    Each edge is a line from its sender to its receiver, blue when patching it raises the metric, red when it
    lowers it, as wide as its |score| allows; its midpoint carries its name and score (hover, click). Each marker's
    customdata names what a click patches: "edge:<edge name>" or "node:<node name>"."""
    place = {node["name"]: node_place(node["kind"], node["layer"], node["head"], num_layers, num_heads) for node in nodes}
    largest = max((abs(edge["score"]) for edge in edges), default=0.0) or 1.0
    figure = go.Figure()
    for edge in edges:
        (x0, y0), (x1, y1) = place[edge["from"]], place[edge["to"]]
        figure.add_trace(go.Scatter(
            x=[x0, x1], y=[y0, y1], mode="lines", hoverinfo="skip", showlegend=False,
            line=dict(color=RAISES if edge["score"] >= 0 else LOWERS, width=1 + 5 * abs(edge["score"]) / largest)))
    labels = [html.escape(f"{edge['from']} → {edge['to']}") for edge in edges]
    figure.add_trace(go.Scatter(
        x=[(place[e["from"]][0] + place[e["to"]][0]) / 2 for e in edges],
        y=[(place[e["from"]][1] + place[e["to"]][1]) / 2 for e in edges],
        mode="markers", name="edges", marker=dict(size=7, color="#444", symbol="diamond"), **KEEP_UNSELECTED,
        customdata=[f"edge:{e['name']}" for e in edges],
        text=[f"{label}<br>score {edge['score']:+.4f}" for label, edge in zip(labels, edges)], hoverinfo="text"))
    figure.add_trace(go.Scatter(
        x=[place[n["name"]][0] for n in nodes], y=[place[n["name"]][1] for n in nodes], mode="markers", name="nodes",
        marker=dict(size=11, color=[n["score"] for n in nodes], colorscale="RdBu", cmid=0,
                    colorbar=dict(title="node score", thickness=10), line=dict(width=1, color="#333")),
        **KEEP_UNSELECTED,
        customdata=[f"node:{n['name']}" for n in nodes],
        text=[f"{n['name']}<br>score {n['score']:+.4f}" for n in nodes], hoverinfo="text"))
    ticks = list(range(num_layers + 2))
    tick_text = ["embeddings", *(f"layer {layer}" for layer in range(num_layers)), "logits"]
    layout(figure, title, height=max(360, 40 * (num_heads + 2)), **legend_on_top())
    figure.update_xaxes(tickvals=ticks, ticktext=tick_text, showgrid=False, zeroline=False)
    figure.update_yaxes(tickvals=[*range(num_heads), num_heads], ticktext=[*(f"head {h}" for h in range(num_heads)), "MLP"],
                        autorange="reversed", showgrid=False, zeroline=False)
    data = pd.DataFrame([{"from": e["from"], "to": e["to"], "score": e["score"]} for e in edges],
                        columns=["from", "to", "score"])
    caption = ("Blue: patching the edge with the counterfactual's value raises the metric; red: lowers it. "
               "Nodes coloured by patching all their outgoing edges at once.")
    return Chart(figure, data, name, caption)


def faithfulness_chart(curves: Sequence[tuple[str, Sequence[float], Sequence[float]]], title: str, name: str) -> Chart:
    """curves: (label, fractions of the edges kept, faithfulness) each, as MIB draws them (Mueller et al. 2025)."""
    figure = go.Figure()
    rows = []
    for label, fractions, kept in curves:
        figure.add_trace(go.Scatter(x=list(fractions), y=list(kept), mode="lines+markers", name=html.escape(label)))
        rows += [{"circuit": label, "fraction of edges": x, "faithfulness": f} for x, f in zip(fractions, kept)]
    figure.add_hline(y=1.0, line=dict(dash="dot", color="#888"))
    layout(figure, title, height=340, **legend_on_top())
    figure.update_xaxes(type="log", title="circuit size (fraction of the edges, top by |score|)")
    figure.update_yaxes(title="faithfulness f")
    caption = ("f = (m(circuit) − m(counterfactual)) / (m(clean) − m(counterfactual)): 1 keeps the whole model's "
               "behaviour. CPR: the area under the curve (higher is better); CMD: the area between it and 1 (lower).")
    return Chart(figure, pd.DataFrame(rows), name, caption)
