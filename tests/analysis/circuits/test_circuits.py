"""Circuits: CPR and CMD on hand-computed curves (MIB's areas), top-n and pruned circuits on a hand-made score
vector, the faithfulness curve's ends, the built-in and user pairs (a bad line named), and each method's cost
against the passes it makes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bert
from bert.analysis.circuits import edge_scores as edge_scores_module
from bert.analysis.circuits.edge_scores import edge_scores, edge_scores_cost
from bert.analysis.circuits.faithfulness import (
    area_scores, circuit_edges, faithfulness_cost, faithfulness_curve, pruned_circuit, random_ranking,
)
from bert.analysis.circuits.encoder_parts import EncoderParts
from bert.analysis.circuits.graph import CircuitGraph
from bert.analysis.circuits.tasks import TASKS, builtin_pairs, contrasts, read_pairs
from bert.analysis.causal.patching import prepare_contrast
from bert.errors import DataFileError, InvalidInputError

CLEAN, CORRUPTED, ANSWER, FOIL = "the dog [MASK] at the park .", "her cat [MASK] to the mail .", "barked", "mail"


def test_cpr_and_cmd_are_trapezoid_areas_by_hand():
    # f = 0.5 at x = 0.5 and 1 at x = 1, from (0, 0): CPR = 0.5*0.5*0.5 + 0.5*(0.5+1)/2 = 0.125 + 0.375 = 0.5
    # |1 - f|: 1, 0.5, 0 -> 0.5*(1+0.5)/2 + 0.5*(0.5+0)/2 = 0.375 + 0.125 = 0.5
    assert area_scores([0.5, 1.0], [0.5, 1.0]) == pytest.approx((0.5, 0.5))
    # a perfect circuit from the smallest size on: f = 1 at 0.1 and 1 (and 0 at 0): CPR = 0.05 + 0.9, CMD = 0.05
    assert area_scores([0.1, 1.0], [1.0, 1.0]) == pytest.approx((0.95, 0.05))
    # overshooting counts in CMD, not against CPR: f = 2 at 0.5
    assert area_scores([0.0, 0.5, 1.0], [0.0, 2.0, 1.0]) == pytest.approx((0.5 * 2 / 2 + 0.5 * 3 / 2, 0.5 * 2 / 2 + 0.5 * 1 / 2))


def test_top_n_nodes_and_pruning_on_hand_made_scores():
    graph = CircuitGraph(2, 2)  # senders: embeddings, a0.h0, a0.h1, m0, a1.h0, a1.h1, m1
    names = [edge.name for edge in graph.edges]
    scores = torch.zeros(len(graph))
    for name, value in (("embeddings->a0.h0<v>", 3.0), ("a0.h0->m0", -2.5), ("m0->logits", 2.0), ("a1.h1->logits", 5.0)):
        scores[names.index(name)] = value
    top = circuit_edges(graph, scores, 4)
    assert {names[i] for i in range(len(graph)) if top[i]} == {"embeddings->a0.h0<v>", "a0.h0->m0", "m0->logits", "a1.h1->logits"}
    pruned = pruned_circuit(graph, scores, 4)  # a1.h1 receives nothing in the circuit: its edge goes
    assert {names[i] for i in range(len(graph)) if pruned[i]} == {"embeddings->a0.h0<v>", "a0.h0->m0", "m0->logits"}
    nodes = torch.tensor([0.0, 1.0, 0.0, 4.0, 0.0, 0.0, 0.0])  # m0 then a0.h0
    kept = circuit_edges(graph, nodes, 1, nodes=True)
    assert {graph.edges[i].sender.name for i in range(len(graph)) if kept[i]} == {"embeddings", "m0"}
    assert sorted(random_ranking(5, seed=1).tolist()) == [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    model, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    return model, prepare_contrast(tokenizer, CLEAN, CORRUPTED, ANSWER, FOIL)


def test_the_curve_ends_at_one_and_exact_ranking_beats_random(tiny):
    model, contrast = tiny
    scores = edge_scores(model, [contrast], "exact", batch_size=64)
    curve = faithfulness_curve(model, [contrast], scores.scores, fractions=(0.05, 0.2, 0.5, 1.0))
    assert curve.kept[-1] == pytest.approx(1.0, abs=1e-4) and curve.sizes[-1] == len(scores.graph)
    baseline = faithfulness_curve(model, [contrast], random_ranking(len(scores.graph)), fractions=(0.05, 0.2, 0.5, 1.0))
    assert curve.cpr > baseline.cpr and curve.cmd < baseline.cmd
    nodes = faithfulness_curve(model, [contrast], scores.nodes, fractions=(0.5, 1.0), nodes=True)
    assert nodes.kept[-1] == pytest.approx(1.0, abs=1e-4)


def test_builtin_pairs_cover_the_four_tasks_and_encode(minilm_path):
    _, tokenizer = bert.load_pretrained("minilm")
    pairs = builtin_pairs()
    assert {pair.task for pair in pairs} == set(TASKS) and len(pairs) == 32
    checked = contrasts(tokenizer, pairs)
    assert all(len(c.clean) == len(c.corrupted) for c in checked)
    assert [p.answer for p in builtin_pairs("pronoun")] == ["he"] * 8


def test_a_bad_pair_names_its_line(tmp_path, tokenizer):
    good = f"{CLEAN}\t{CORRUPTED}\t{ANSWER}\t{FOIL}"
    path = tmp_path / "pairs.tsv"
    path.write_text(f"clean\tcorrupted\tanswer\tfoil\n{good}\nthe dog [MASK] .\tthe dog [MASK] at .\tbarked\tmail\n")
    with pytest.raises(InvalidInputError, match=r"^line 3: the sentences must have the same number"):
        contrasts(tokenizer, read_pairs(path))
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text('{"clean": "a [MASK]", "corrupted": "b [MASK]", "answer": "x", "foil": "y"}\n[1, 2]\n')
    with pytest.raises(DataFileError, match=r"^line 2: not a JSON object"):
        read_pairs(jsonl)
    path.write_text("clean\tanswer\n")
    with pytest.raises(DataFileError, match="line 1: the header must name"):
        read_pairs(path)


@pytest.mark.parametrize("method,steps", [("exact", None), ("eap", None), ("eap-ig", 4), ("eap-ig-activations", 2)])
def test_each_cost_is_the_passes_made(tiny, monkeypatch, method, steps):
    """Every pass goes through the circuit run: its rows are forward passes, and the rows of a run whose edge mask
    takes gradients are backward passes too (one torch.autograd.grad per such run)."""
    model, contrast = tiny
    counted = {"forward": 0, "backward": 0}
    run_graph = edge_scores_module.run_graph

    def counting_run(parts, graph, embeddings, *args, **kwargs):
        counted["forward"] += embeddings.shape[0]
        mask = args[1] if len(args) > 1 else kwargs.get("mask")
        if mask is not None and mask.requires_grad:
            counted["backward"] += embeddings.shape[0]
        return run_graph(parts, graph, embeddings, *args, **kwargs)

    monkeypatch.setattr(edge_scores_module, "run_graph", counting_run)
    edge_metrics, mlp_sublayer = edge_scores_module.edge_metrics, EncoderParts.mlp_sublayer

    def counting_edges(parts, *args, **kwargs):  # exact patching's edge rows run only some layers: passes' worth
        layer_rows = []
        monkeypatch.setattr(EncoderParts, "mlp_sublayer", lambda self, layer, x, *a: layer_rows.append(x.shape[0]) or mlp_sublayer(self, layer, x, *a))
        values = edge_metrics(parts, *args, **kwargs)
        monkeypatch.setattr(EncoderParts, "mlp_sublayer", mlp_sublayer)
        counted["forward"] += -(-sum(layer_rows) // model.config.num_layers)
        return values

    monkeypatch.setattr(edge_scores_module, "edge_metrics", counting_edges)
    edge_scores(model, [contrast, contrast], method, steps=steps or 1, batch_size=3 if method.startswith("eap-ig") else 64)
    cost = edge_scores_cost(model.config, len(contrast.clean), method, steps, pairs=2)
    assert (counted["forward"], counted["backward"]) == (cost.forward_passes, cost.backward_passes)
    if method == "eap-ig":  # about steps + 2 passes with gradients per pair
        assert cost.forward_passes == 2 * (steps + 2) and cost.backward_passes == 2 * steps
    if method == "eap-ig-activations":  # steps per group: the embeddings, each layer's heads and MLP
        assert cost.backward_passes == 2 * steps * (1 + 2 * model.config.num_layers)


def test_the_curve_costs_the_rows_it_runs(tiny, monkeypatch):
    from bert.analysis.circuits import faithfulness as faithfulness_module

    model, contrast = tiny
    rows = []
    run_graph = edge_scores_module.run_graph
    monkeypatch.setattr(edge_scores_module, "run_graph", lambda parts, graph, embeddings, *a, **k: rows.append(embeddings.shape[0]) or run_graph(parts, graph, embeddings, *a, **k))
    faithfulness_curve(model, [contrast, contrast], random_ranking(len(CircuitGraph.of(model.config))), fractions=(0.1, 0.5, 1.0), batch_size=2)
    assert sum(rows) == faithfulness_cost(model.config, len(contrast.clean), pairs=2, points=3).forward_passes == 2 * (2 + 3)
    assert faithfulness_module.MIB_FRACTIONS[-1] == 1.0


def test_flow_routes_by_hand():
    """Two layers over three positions: into position 2 at the top, layer 1 gives 0.5 from 2, 0.45 from 0 and 0.05
    from 1; at threshold 0.1 positions 2 and 0 are reached, and layer 0's edges into them above 0.1 are kept."""
    from bert.analysis.circuits.flow_routes import routes_from_mixing

    layers = np.array([
        [[0.8, 0.2, 0.0], [0.3, 0.3, 0.4], [0.05, 0.9, 0.05]],
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.45, 0.05, 0.5]],
    ])
    edges = routes_from_mixing(layers, target=2, threshold=0.1)
    assert [(layer, source, to) for layer, source, to, _ in edges] == [(1, 0, 2), (1, 2, 2), (0, 0, 0), (0, 1, 0), (0, 1, 2)]
    assert edges[0][3] == pytest.approx(0.45) and edges[-1][3] == pytest.approx(0.9)


def test_flow_routes_on_a_sentence_keep_only_shares_above_the_threshold(tiny_mlm_folder):
    from bert.analysis.attention.mixing import context_mixing, record_for_mixing
    from bert.analysis.circuits.flow_routes import flow_routes_cost, information_flow_routes

    model, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    contrast = prepare_contrast(tokenizer, CLEAN, CORRUPTED, ANSWER, FOIL)
    routes = information_flow_routes(model, tokenizer, contrast.clean, threshold=0.1)
    _, cache = record_for_mixing(model, *contrast.clean.tensors())
    alti = context_mixing(model, cache, "alti").layers
    assert routes.target == contrast.mask_position and routes.edges
    for layer, source, to, share in routes.edges:
        assert share >= 0.1 and share == pytest.approx(alti[layer, to, source] / alti[layer, to].sum())
        assert (layer + 1, to) in routes.nodes()
    assert flow_routes_cost(len(contrast.clean)).forward_passes >= 1


@pytest.mark.parametrize("method", ["exact", "eap-ig"])
def test_a_watcher_stops_the_scores_at_its_next_check(tiny, method):
    """The circuit run checks in before each pass and between layers (bert/stopping.py), as the model does: a
    visitor who leaves stops exact patching and EAP-IG alike."""
    from bert.errors import StoppedError
    from bert.stopping import watching

    model, contrast = tiny
    checks = []

    def stop(rows: int) -> None:
        checks.append(rows)
        if len(checks) == 2:
            raise StoppedError("the visitor left")

    with watching(stop), pytest.raises(StoppedError):
        edge_scores(model, [contrast], method, steps=3)
    assert len(checks) == 2 and checks[0] == 1  # the clean run's one row, then its first layer


def test_a_shape_s_graph_is_built_once_and_another_shape_gets_its_own():
    from bert import BertConfig

    small = CircuitGraph.of(BertConfig(vocab_size=50, hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32))
    assert CircuitGraph.of(BertConfig(vocab_size=99, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64)) is small
    other = CircuitGraph.of(BertConfig(vocab_size=50, hidden_size=24, num_layers=2, num_heads=3, intermediate_size=32))
    assert other is not small and len(other.senders) == 1 + 2 * (3 + 1) and len(small.senders) == 1 + 2 * (2 + 1)
