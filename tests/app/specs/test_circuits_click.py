"""A click in the circuit graph picks what the page "Which connections carry the answer?" patches: the marker's
customdata (viz_app/charts/circuits.py), carried in the selection event Streamlit hands the page's callback,
maps to the picker's value (viz_app/specs/circuits.py's clicked_part). An AppTest cannot click Plotly, so the
event is built here as Streamlit's plotly_chart documents it; the real click is in
tests/browser/test_browser_circuits.py."""
from __future__ import annotations

from bert.analysis.circuits.graph import CircuitGraph
from viz_app.charts.circuits import circuit_graph
from viz_app.specs.circuits import clicked_part

GRAPH = CircuitGraph(2, 2)
EDGES = [{"from": edge.sender.name, "to": edge.receiver.node.name, "input": edge.receiver.input, "score": score,
          "name": edge.name} for edge, score in zip(GRAPH.edges[3:6], (0.5, -0.25, 0.1))]
NODES = [{"name": node.name, "kind": node.kind, "layer": node.layer, "head": node.head, "score": 0.0}
         for node in GRAPH.nodes]
PARTS = ["", *(f"edge:{edge['name']}" for edge in EDGES), *(f"node:{node.name}" for node in GRAPH.senders[1:])]


def trace(name: str) -> dict:
    figure = circuit_graph(NODES, EDGES, GRAPH.num_layers, GRAPH.num_heads, "t", "t", 1.0, "m").figure.to_plotly_json()
    return next(t for t in figure["data"] if t.get("name") == name)


def event(*points: dict) -> dict:
    """The selection event as st.plotly_chart(on_select=...) gives it."""
    return {"selection": {"points": list(points), "point_indices": [p["point_index"] for p in points],
                          "box": [], "lasso": []}}


def point(trace_number: int, index: int, customdata) -> dict:
    return {"curve_number": trace_number, "point_number": index, "point_index": index, "x": 1.0, "y": 1.0,
            "customdata": customdata}


def test_a_clicked_edge_diamond_picks_that_edge_with_its_query_key_or_value_input():
    diamonds = trace("edges")["customdata"]
    for index, edge in enumerate(EDGES):
        part = clicked_part(event(point(3, index, diamonds[index])), PARTS)
        assert part == f"edge:{edge['name']}" and "<" in part  # the head's q, k or v input, as the picker names it


def test_a_clicked_node_circle_picks_the_node_and_the_embeddings_and_logits_pick_nothing():
    circles = list(trace("nodes")["customdata"])
    head = circles.index("node:a1.h0")
    assert clicked_part(event(point(4, head, circles[head])), PARTS) == "node:a1.h0"
    assert clicked_part(event(point(4, 0, circles[0])), PARTS) is None  # the embeddings: not offered
    assert clicked_part(event(point(4, len(circles) - 1, circles[-1])), PARTS) is None  # the logits


def test_customdata_as_a_list_and_empty_or_unknown_selections():
    assert clicked_part(event(point(4, 2, ["node:m0"])), PARTS) == "node:m0"  # 2-D customdata, as plotly express
    assert clicked_part(event(point(4, 1, "node:a0.h0"), point(4, 2, "node:m0")), PARTS) == "node:m0"  # the last
    assert clicked_part(event(), PARTS) is None
    assert clicked_part({}, PARTS) is None
    assert clicked_part(event(point(3, 0, "edge:a0.h0->nowhere")), PARTS) is None  # no longer drawn
    assert clicked_part(event({"point_index": 0, "curve_number": 1}), PARTS) is None  # a point with no customdata
