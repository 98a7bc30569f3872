"""The circuit graph a class reads (viz_app/specs/circuits.py's view, viz_app/charts/circuits.py), checked against
the scores the library computes (bert/analysis/circuits/edge_scores.py) on a tiny random model: where each node
sits, its colour and its scale, what each edge's words say (sender, the input it enters, the change, the sender's
positions), and the legend's signs. No Streamlit."""
from __future__ import annotations

import html

import pytest
import torch

from bert.analysis.circuits.edge_scores import edge_scores
from bert.analysis.circuits.tasks import PairText
from bert.layers import head_label
from viz_app.app.models import ModelKey, load
from viz_app.charts.circuits import node_place
from viz_app.specs import circuits
from viz_app.specs.base import Inputs

PAIR = PairText("the dog [MASK] at the park .", "her cat [MASK] to the mail .", "barked", "mail")
INPUT_WORDS = {"q": "queries", "k": "keys", "v": "values"}


@pytest.fixture(scope="module")
def drawn(tiny_mlm_folder):
    """(the library's EAP scores with their per-position split, the spec's result, the graph's figure as JSON)."""
    loaded = load(ModelKey.of(str(tiny_mlm_folder)))
    contrast = circuits.contrast_of(loaded, PAIR)
    library = edge_scores(loaded.model, [contrast], "eap", per_position=True)
    result = circuits.compute_scores(Inputs(loaded), circuits.ScoreWork(PAIR, "eap", 1))
    settings = circuits.Settings(PAIR, "eap", 1, 12)
    figure = circuits.view(settings, Inputs(loaded), {"scores": result})["graph"].figure.to_plotly_json()
    return library, result, figure, loaded


def trace(figure: dict, name: str) -> dict:
    return next(t for t in figure["data"] if t.get("name") == name)


def test_embeddings_left_logits_right_heads_in_their_layers_column_and_never_on_a_heads_row(drawn):
    library, _, figure, _ = drawn
    graph = library.graph
    nodes = trace(figure, "nodes")
    places = {name.partition(":")[2]: (x, y) for name, x, y in zip(nodes["customdata"], nodes["x"], nodes["y"])}
    columns = [x for x, _ in places.values()]
    assert places["embeddings"][0] == min(columns) == 0 and places["logits"][0] == max(columns) == graph.num_layers + 1
    for node in graph.senders[1:]:
        x, y = places[node.name]
        assert int(x) == node.layer + 1  # its layer's column (an MLP a quarter to the right)
        assert y == (node.head if node.kind == "head" else graph.num_heads)
    for end in ("embeddings", "logits"):
        assert places[end][1] not in range(graph.num_heads + 1)  # between two rows, not on "head h"
    for heads in (1, 2, 3, 12):
        assert not node_place("embeddings", None, None, 2, heads)[1].is_integer()


def test_node_colours_are_the_librarys_node_scores_on_a_scale_fixed_by_the_pair_and_symmetric(drawn):
    library, result, figure, loaded = drawn
    marker = trace(figure, "nodes")["marker"]
    expected = [*library.nodes.tolist(), 0.0]  # the logits send nothing
    torch.testing.assert_close(torch.tensor(marker["color"]), torch.tensor(expected), atol=1e-5, rtol=1e-4)
    whole = abs(library.clean_metric - library.corrupted_metric)
    assert marker["cmax"] == pytest.approx(whole, rel=1e-5) and marker["cmin"] == -marker["cmax"]
    exact = circuits.compute_scores(Inputs(loaded), circuits.ScoreWork(PAIR, "exact", 1))
    assert circuits.colour_scale(exact) == pytest.approx(whole, rel=1e-5)  # another method, the same scale


def test_each_edges_words_name_its_sender_the_input_it_enters_its_change_and_its_positions(drawn):
    library, _, figure, _ = drawn
    diamonds = trace(figure, "edges")
    top = library.top(12)
    assert list(diamonds["customdata"]) == [f"edge:{edge.name}" for edge, _ in top]
    for (edge, score), text in zip(top, map(html.unescape, diamonds["text"])):
        reader = "the logits" if edge.receiver.node.kind == "logits" else (
            f"{head_label(edge.receiver.node.layer, edge.receiver.node.head)}'s {INPUT_WORDS[edge.receiver.input]}"
            if edge.receiver.input else f"layer {edge.receiver.node.layer}'s MLP")
        change = "raises" if score > 0 else "lowers"
        assert f"read by {reader}: patching it {change} logit(barked) − logit(mail) by {abs(score):.2f}" in text
        sender = edge.sender
        assert text.startswith("the embeddings" if sender.kind == "embeddings" else
                               head_label(sender.layer, sender.head) if sender.kind == "head" else f"layer {sender.layer}'s MLP")
        parts = library.positions[edge.index]
        largest = int(parts.abs().argmax())
        assert f"from `{library.tokens[largest]}` (position {largest}) {float(parts[largest]):+.2f}" in text


def test_the_legend_names_only_the_signs_and_inputs_drawn(drawn):
    library, _, figure, _ = drawn
    names = {t.get("name") for t in figure["data"] if t.get("showlegend") is not False}
    scores = [score for _, score in library.top(12)]
    assert ("patching it raises logit(barked) − logit(mail)" in names) == any(s >= 0 for s in scores)
    assert ("patching it lowers logit(barked) − logit(mail)" in names) == any(s < 0 for s in scores)
    entered = {edge.receiver.input for edge, _ in library.top(12)} - {None}
    assert {name for name in names if name and name.startswith("enters")} == {
        f"enters a head's {INPUT_WORDS[i]}" for i in entered}


def test_a_patched_part_is_marked_and_its_words_are_the_graphs(drawn):
    library, result, _, _ = drawn
    edge, _ = library.top(1)[0]
    settings = circuits.Settings(PAIR, "eap", 1, 12, part=f"edge:{edge.name}")
    figure = circuits.view(settings, None, {"scores": result})["graph"].figure.to_plotly_json()
    [marked] = [t for t in figure["data"] if t.get("name") == "patched"]
    assert marked["x"][0] == trace(figure, "nodes")["x"][library.graph.sender_index(edge.sender.name)]
    assert circuits.part_label(library.graph, f"edge:{edge.name}").startswith("edge: ")
