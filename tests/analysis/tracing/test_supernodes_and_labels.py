"""Supernodes merged by hand on a small graph, feature labels against the activations read back from the model run
by hand, and both in the graph JSON, validated by circuit-tracer's own graph models (skipped without it)."""
from __future__ import annotations

import json

import pytest
import torch

from bert.__main__ import main
from bert.analysis.features.feature_labels import FeatureLabelsError
from bert.analysis.tracing.attribution_graph import attribution_graph
from bert.analysis.tracing.graph_json import graph_json, node_id
from bert.analysis.tracing.graph_pruning import prune
from bert.analysis.tracing.supernodes import Supernode, merge_nodes
from bert.analysis.tracing.transcoder_labels import read_feature_labels, top_token_labels, write_feature_labels
from bert.errors import InvalidInputError
from bert.hooks import hook_name
from bert.pretrained import load_folder

from analysis.tracing.test_attribution_graph import TEXT, random_transcoders

SENTENCES = ["the dog barked at the mail man", "her cat went to the park", "the man and the dog went home"]


@pytest.fixture(scope="module")
def setup(tiny_mlm_folder):
    model, tokenizer = load_folder(tiny_mlm_folder)
    model.eval()
    transcoders = random_transcoders(model)
    return model, tokenizer, transcoders, attribution_graph(model, tokenizer, transcoders, TEXT, "a", "the")


def test_a_supernode_sums_its_members_edges_by_hand():
    # nodes 0, 1, 2 features, 3 an embedding, 4 the target; adjacency[receiver, source]
    adjacency = torch.zeros(5, 5)
    adjacency[0, 3], adjacency[1, 3] = 1.0, 2.0
    adjacency[1, 0] = 0.25  # inside the group: drops out
    adjacency[2, 0], adjacency[2, 1] = 0.5, -1.0
    adjacency[4, 0], adjacency[4, 1], adjacency[4, 2] = 3.0, 4.0, -2.0
    merged, groups = merge_nodes(adjacency, [Supernode("g", (1, 0))])
    assert groups == [(0, 1), (2,), (3,), (4,)]
    expected = torch.zeros(4, 4)
    expected[0, 2] = 3.0  # embedding -> g: 1 + 2
    expected[1, 0] = -0.5  # g -> feature 2: 0.5 − 1
    expected[3, 0], expected[3, 1] = 7.0, -2.0  # g -> target: 3 + 4; feature 2 -> target
    assert torch.equal(merged, expected)
    for bad, message in (([Supernode("e", ())], "no members"), ([Supernode("o", (9,))], "not in the graph"),
                         ([Supernode("a", (0, 1)), Supernode("b", (1, 2))], "two supernodes")):
        with pytest.raises(InvalidInputError, match=message):
            merge_nodes(adjacency, bad)


def _activations_by_hand(model, tokenizer, transcoders, layer: int, feature: int) -> list[tuple[float, str]]:
    """(activation, word piece) of one feature at every token of SENTENCES, one sentence at a time."""
    found = []
    for text in SENTENCES:
        encoding = tokenizer.encode(text)
        input_ids, token_type_ids = encoding.tensors()
        name = hook_name(transcoders.config.input_kind, layer)
        with torch.no_grad():
            _, cache = model.run_with_cache(input_ids, token_type_ids, names=[name])
            z = transcoders.encode(cache[name][0].float(), layer)[:, feature]
        found += [(float(value), token) for value, token in zip(z, encoding.tokens) if value > 0]
    return sorted(found, key=lambda pair: -pair[0])


def test_labels_name_the_word_pieces_each_feature_fires_on_most(setup, tmp_path):
    model, tokenizer, transcoders, _ = setup
    labels = top_token_labels(model, tokenizer, transcoders, SENTENCES, batch_size=2, examples=4, words=2)
    checked = 0
    for layer in range(transcoders.config.layers):
        for feature in range(transcoders.config.features):
            found = _activations_by_hand(model, tokenizer, transcoders, layer, feature)[:4]
            pieces = list(dict.fromkeys(token for _, token in found))[:2]
            assert labels.get((layer, feature)) == (", ".join(pieces) if pieces else None), (layer, feature)
            checked += bool(pieces)
    assert checked > transcoders.config.features  # most features fire somewhere: the comparison is not empty
    write_feature_labels(tmp_path, labels, transcoders.config)
    assert read_feature_labels(tmp_path, transcoders.config) == labels
    (tmp_path / "feature_labels.json").write_text('{"7_1": "a layer the transcoders lack"}')
    with pytest.raises(FeatureLabelsError, match="layer_feature"):
        read_feature_labels(tmp_path, transcoders.config)


def test_the_json_carries_labels_as_clerps_and_supernodes_as_circuit_tracers_viewer_reads_them(setup):
    model, tokenizer, transcoders, graph = setup
    pruned = prune(graph)
    kept = [node for node in pruned.nodes.nonzero()[:, 0].tolist() if node < graph.num_features]
    labels = {(int(graph.features[node, 0]), int(graph.features[node, 2])): f"label {node} <i>as text</i>" for node in kept}
    group = Supernode("the subject <b>", tuple(kept[:3]))
    result = json.loads(json.dumps(graph_json(graph, pruned, model.config.vocab_size, "slug", "tiny", 0.8, labels, [group])))
    written = {node["node_id"]: node for node in result["nodes"]}
    members = [node_id(graph, node, model.config.vocab_size) for node in kept[:3]]
    members = [member for member in members if member in written]
    assert len(members) >= 2
    assert result["qParams"]["supernodes"] == [["the subject <b>", *members]]
    assert result["qParams"]["pinnedIds"] == members
    for node in kept:
        identifier = node_id(graph, node, model.config.vocab_size)
        if identifier in written:
            assert written[identifier]["clerp"] == f"label {node} <i>as text</i>"
    models = pytest.importorskip("circuit_tracer.frontend.graph_models")
    validated = models.Model(**result)
    assert validated.qParams.supernodes == [["the subject <b>", *members]]
    assert {node.clerp for node in validated.nodes if node.feature_type == "cross layer transcoder"} <= set(labels.values())


def test_the_label_command_writes_what_the_graph_command_puts_in_its_json(tiny_mlm_folder, tmp_path, capsys):
    model, tokenizer = load_folder(tiny_mlm_folder)
    transcoders = random_transcoders(model)
    transcoders.save(tmp_path / "transcoders")
    data = tmp_path / "lines.txt"
    data.write_text("\n".join(SENTENCES) + "\n")
    assert main(["transcoders", "label", "--transcoders", str(tmp_path / "transcoders"), "--model", str(tiny_mlm_folder),
                 "--data", str(data), "--device", "cpu"]) == 0
    labels = read_feature_labels(tmp_path / "transcoders", transcoders.config)
    assert labels == top_token_labels(model, tokenizer, transcoders, SENTENCES)
    out = tmp_path / "graph.json"
    assert main(["graph", "--model", str(tiny_mlm_folder), "--transcoders", str(tmp_path / "transcoders"), "--device", "cpu",
                 "--text", TEXT, "--target", "a", "--json", str(out)]) == 0
    features = [node for node in json.loads(out.read_text())["nodes"] if node["feature_type"] == "cross layer transcoder"]
    assert features and all(node["clerp"] == labels.get((int(node["layer"]), int(node["node_id"].split("_")[1])), "")
                            for node in features)
    assert main(["transcoders", "label", "--transcoders", str(tmp_path / "transcoders"), "--model", str(tiny_mlm_folder),
                 "--data", str(data), "--lines", "0"]) == 2
    capsys.readouterr()
