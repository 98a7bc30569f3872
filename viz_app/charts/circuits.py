"""The circuit graph (the embeddings on the left, each layer's heads and MLP in its column, the logits on the right,
the strongest edges as lines) and the faithfulness curve. Arrays and names in, a Chart out (viz_app/charts/base.py).

The graph reads in words: each node is named as the rest of the app names it (bert/layers.py: "layer 3, head 7"),
each edge by what it carries ("layer 3, head 7's output, read by layer 5, head 2's values: patching it lowers
logit(are) − logit(is) by 0.80"), with the sender's token positions that carry it where the scores have them.
Colours sit on one scale per pair, symmetric around 0: ± the whole change from the clean sentence to the
counterfactual one, so two methods, or two runs, of a pair are drawn alike."""
from __future__ import annotations

import html
from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from bert.layers import head_label, layer_label
from viz_app.charts.base import Chart, layout, legend_on_top

RAISES, LOWERS = "#2166ac", "#b2182b"  # an edge whose patching raises the metric / lowers it (RdBu's ends)
NODE_SCALE = "RdBu"  # red low, blue high: the edges' colours at its ends
# a clicked marker (the part patched) grows; the others keep their look instead of Plotly's faded unselected points
KEEP_UNSELECTED = dict(selected=dict(marker=dict(size=16)), unselected=dict(marker=dict(opacity=1.0)))
# what an edge enters: the line's dash, the letter at its end, the words
ENTERS = {"q": ("dash", "q", "queries"), "k": ("dot", "k", "keys"), "v": ("solid", "v", "values"),
          None: ("solid", "", "input")}
END_OFFSET = {"q": -0.25, "k": 0.0, "v": 0.25}  # where on a head's marker each input's edges end (rows down)
WIDEST = 6.0  # an edge as large as the pair's whole change


def node_place(kind: str, layer: int | None, head: int | None, num_layers: int, num_heads: int) -> tuple[float, float]:
    """(column, row): the embeddings in column 0, layer l's heads and MLP in column l + 1 (the MLP below its heads),
    the logits last; the embeddings and the logits halfway down, between two rows (never on a head's row)."""
    if kind in ("embeddings", "logits"):
        middle = (num_heads - 1) / 2
        return (0.0 if kind == "embeddings" else float(num_layers + 1)), middle + (0.5 if middle.is_integer() else 0.0)
    return float(layer + 1) + (0.25 if kind == "mlp" else 0.0), float(num_heads if kind == "mlp" else head)


def node_title(node: dict) -> str:
    """"the embeddings", "layer 3, head 7", "layer 3's MLP", "the logits"."""
    if node["kind"] == "head":
        return head_label(node["layer"], node["head"])
    if node["kind"] == "mlp":
        return f"{layer_label(node['layer'])}'s MLP"
    return f"the {node['kind']}"


def possessive(title: str) -> str:
    """"layer 3, head 7's", "the embeddings'"."""
    return title + ("'" if title.endswith("s") else "'s")


def reader_title(node: dict, input: str | None) -> str:
    """What reads an edge: "layer 5, head 2's values", "layer 3's MLP", "the logits"."""
    if node["kind"] == "head":
        return f"{possessive(node_title(node))} {ENTERS[input][2]}"
    return node_title(node)


def effect(score: float, metric: str) -> str:
    """"lowers logit(are) − logit(is) by 0.80" (score: the metric patched minus the metric)."""
    if score == 0:
        return f"leaves {metric} as it is"
    return f"{'raises' if score > 0 else 'lowers'} {metric} by {abs(score):.2f}"


def from_positions(positions: Sequence[tuple[int, str, float]]) -> str:
    """"from `keys` (position 2) −0.61, `[CLS]` (position 0) −0.12": the sender's positions that carry the most."""
    return ", ".join(f"`{token}` (position {position}) {value:+.2f}" for position, token, value in positions)


def edge_text(edge: dict, nodes: dict[str, dict], metric: str) -> str:
    """An edge in words, plain text: what sends, what reads, what patching it does, from which positions."""
    text = (f"{possessive(node_title(nodes[edge['from']]))} output, read by {reader_title(nodes[edge['to']], edge['input'])}: "
            f"patching it {effect(edge['score'], metric)}")
    if edge.get("positions"):
        text += f"; from {from_positions(edge['positions'])}"
    return text


def node_text(node: dict, metric: str) -> str:
    """A node in words, plain text: what patching all its outgoing edges does."""
    if node["kind"] == "logits":
        return f"the logits: {metric} is read here"
    return f"{node_title(node)}: patching all its outputs {effect(node['score'], metric)}"


def edge_colour(score: float) -> str:
    return RAISES if score >= 0 else LOWERS


def circuit_graph(nodes: Sequence[dict], edges: Sequence[dict], num_layers: int, num_heads: int, title: str,
                  name: str, scale: float, metric: str, picked: str | None = None) -> Chart:
    """nodes: {"name", "kind", "layer", "head", "score"}; edges (the ones drawn): {"from", "to", "input", "name",
    "score"} and, where the scores are split over the sender's positions, "positions": [(position, token, part of
    the score)], largest first. `scale`: the colour scale's end, ± (the pair's whole change); `metric`: its name in
    words ("logit(are) − logit(is)"); `picked`: the part patched ("edge:<name>" or "node:<name>"), drawn marked.
    Each edge is a line from its sender to the input it enters (a head's query, key or value: dashed, dotted or
    solid, ending at the top, middle or bottom of the head's marker, with its letter), blue when patching it
    raises the metric, red when it lowers it, as wide as its |score| against the scale; its midpoint's diamond and
    each node's circle say in words what it does (hover) and, in their customdata, what a click patches
    ("edge:<edge name>" or "node:<node name>")."""
    place = {node["name"]: node_place(node["kind"], node["layer"], node["head"], num_layers, num_heads) for node in nodes}
    by_name = {node["name"]: node for node in nodes}
    scale = scale if scale > 0 else 1.0

    def end(edge: dict) -> tuple[float, float]:
        x, y = place[edge["to"]]
        return x - (0.08 if edge["input"] in END_OFFSET else 0.0), y + END_OFFSET.get(edge["input"], 0.0)

    figure = go.Figure()
    if picked:
        kind, _, picked_name = picked.partition(":")
        marked = [edge for edge in edges if edge["name"] == picked_name] if kind == "edge" else []
        for edge in marked:
            (x0, y0), (x1, y1) = place[edge["from"]], end(edge)
            figure.add_trace(go.Scatter(x=[x0, x1], y=[y0, y1], mode="lines", hoverinfo="skip", name="patched",
                                        line=dict(color="#f2c12e", width=WIDEST + 8), opacity=0.8))
        if kind == "node" and picked_name in place:
            figure.add_trace(go.Scatter(x=[place[picked_name][0]], y=[place[picked_name][1]], mode="markers",
                                        hoverinfo="skip", name="patched", marker=dict(
                                            size=26, color="#f2c12e", symbol="circle", opacity=0.8)))
    for edge in edges:
        (x0, y0), (x1, y1) = place[edge["from"]], end(edge)
        figure.add_trace(go.Scatter(
            x=[x0, x1], y=[y0, y1], mode="lines", hoverinfo="skip", showlegend=False,
            line=dict(color=edge_colour(edge["score"]), dash=ENTERS[edge["input"]][0],
                      width=1 + (WIDEST - 1) * min(1.0, abs(edge["score"]) / scale))))
    for sign, colour in (("raises", RAISES), ("lowers", LOWERS)):  # a legend entry only for a sign drawn
        if any((edge["score"] >= 0) == (sign == "raises") for edge in edges):
            figure.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=colour, width=4),
                                        name=html.escape(f"patching it {sign} {metric}", quote=False)))
    for input in ("q", "k", "v"):  # and for an input entered
        if any(edge["input"] == input for edge in edges):
            figure.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color="#555", dash=ENTERS[input][0]),
                                        name=f"enters a head's {ENTERS[input][2]}"))
    entered = [edge for edge in edges if edge["input"] in END_OFFSET]
    figure.add_trace(go.Scatter(
        x=[end(edge)[0] - 0.05 for edge in entered], y=[end(edge)[1] for edge in entered], mode="text",
        text=[ENTERS[edge["input"]][1] for edge in entered], textfont=dict(size=10, color="#333"),
        hoverinfo="skip", showlegend=False, name="inputs"))
    figure.add_trace(go.Scatter(
        x=[(place[e["from"]][0] + end(e)[0]) / 2 for e in edges], y=[(place[e["from"]][1] + end(e)[1]) / 2 for e in edges],
        mode="markers", name="edges", showlegend=False, marker=dict(size=7, color="#444", symbol="diamond"),
        **KEEP_UNSELECTED, customdata=[f"edge:{e['name']}" for e in edges],
        text=[html.escape(edge_text(e, by_name, metric), quote=False) for e in edges], hoverinfo="text"))
    ends = [node["kind"] in ("embeddings", "logits") for node in nodes]
    figure.add_trace(go.Scatter(
        x=[place[n["name"]][0] for n in nodes], y=[place[n["name"]][1] for n in nodes], mode="markers+text",
        name="nodes", showlegend=False,
        marker=dict(size=[18 if e else 11 for e in ends], symbol=["square" if e else "circle" for e in ends],
                    color=[n["score"] for n in nodes], colorscale=NODE_SCALE, cmin=-scale, cmax=scale,
                    colorbar=dict(title="node", thickness=10), line=dict(width=1, color="#333")),
        **KEEP_UNSELECTED, customdata=[f"node:{n['name']}" for n in nodes],
        textposition=["middle right" if n["kind"] == "embeddings" else "middle left" for n in nodes],
        text=[n["kind"] if e else "" for n, e in zip(nodes, ends)],
        hovertext=[html.escape(node_text(n, metric), quote=False) for n in nodes], hoverinfo="text"))
    ticks = list(range(num_layers + 2))
    tick_text = ["embeddings", *(layer_label(layer) for layer in range(num_layers)), "logits"]
    layout(figure, title, height=max(420, 40 * (num_heads + 2)), **legend_on_top())
    figure.update_xaxes(tickvals=ticks, ticktext=tick_text, showgrid=False, zeroline=False, range=[-0.4, num_layers + 1.4])
    figure.update_yaxes(tickvals=[*range(num_heads), num_heads], ticktext=[*(f"head {h}" for h in range(num_heads)), "MLP"],
                        autorange="reversed", showgrid=False, zeroline=False)
    data = pd.DataFrame([{"from": e["from"], "to": e["to"], "input": e["input"] or "", "score": e["score"],
                          "in words": edge_text(e, by_name, metric)} for e in edges],
                        columns=["from", "to", "input", "score", "in words"])
    signs = [sign for sign, drawn in (("blue: patching the edge with the counterfactual's value raises the metric",
                                       any(e["score"] >= 0 for e in edges)),
                                      ("red: patching the edge with the counterfactual's value lowers the metric",
                                       any(e["score"] < 0 for e in edges))) if drawn]
    caption = ("; ".join(signs).capitalize() + ". " if signs else "") + (
        f"Node and edge colours on one scale for this pair, ±{scale:.2f} (the whole change from the clean sentence "
        "to the counterfactual); a node is coloured by patching all its outgoing edges at once. Hover an edge's "
        "diamond to read it in words.")
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
