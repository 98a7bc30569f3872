"""The attribution graph of one [MASK] on a tiny random model with a tiny random transcoder per layer: the frozen
run is the model itself (against transformers), completeness (every receiver = Σ incoming edges + its biases, the
error nodes among the edges), a feature's ablation run forward through the replacement model moves the
target by what the edges predict, and the real model run by hand moves by it to first order, pruning and scores
against circuit-tracer's own functions (and a case by hand), the JSON against circuit-tracer's graph models, and
the command line."""
from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest
import torch

from bert.__main__ import main
from bert.analysis.corpus.model_fingerprint import model_fingerprint
from bert.analysis.tracing.ablation import frozen_ablation, predicted_ablation
from bert.analysis.tracing.attribution_graph import AttributionGraph, attribution_graph, target_for
from bert.analysis.tracing.graph_json import graph_json
from bert.analysis.tracing.graph_pruning import graph_scores, node_influence, prune
from bert.analysis.tracing.replacement import Sources, Target, freeze, read_target, replacement_outputs
from bert.analysis.tracing.transcoder import TranscoderConfig, Transcoders
from bert.pretrained import load_folder

TEXT = "the dog [MASK] at the mail man and her cat"


def random_transcoders(model, features=40, k=5, seed=0) -> Transcoders:
    config = TranscoderConfig("tiny", model_fingerprint(model), model.config.num_layers, model.config.hidden_size, features, k,
                              "attention_out", [1.3] * model.config.num_layers, [0.7] * model.config.num_layers)
    transcoders = Transcoders(config)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in transcoders.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    transcoders.normalize_decoder()
    return transcoders.eval()


@pytest.fixture(scope="module")
def setup(tiny_mlm_folder):
    model, tokenizer = load_folder(tiny_mlm_folder)
    model.eval()
    transcoders = random_transcoders(model)
    graph = attribution_graph(model, tokenizer, transcoders, TEXT, "a", "the")
    return model, tokenizer, transcoders, graph


def _tolerance(graph: AttributionGraph, row: int) -> float:
    """float32 rounding of a sum of these terms: 1e-4 of their sizes' sum."""
    return 1e-4 * float(graph.adjacency[row].abs().sum() + graph.bias[row].abs() + 1.0)


def test_the_frozen_run_is_the_model_itself(setup, tiny_mlm_folder):
    from transformers import BertForMaskedLM

    model, tokenizer, transcoders, graph = setup
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    encoding = tokenizer.encode(TEXT)
    with torch.no_grad():
        logits = reference(torch.tensor([encoding.input_ids])).logits[0, graph.target.position]
    expected = float(logits[graph.target.token] - logits[graph.target.foil])
    assert graph.inputs[graph.target_index] == pytest.approx(expected, abs=1e-4)
    assert graph.target_probability == pytest.approx(float(logits.softmax(-1)[graph.target.token]), abs=1e-5)
    assert graph.tokens[graph.target.position] == "[MASK]"


@pytest.mark.parametrize("foil", [None, "the"])
def test_completeness_every_receiver_is_the_sum_of_its_edges_and_biases(setup, foil):
    model, tokenizer, transcoders, graph = setup
    if foil is None:
        graph = attribution_graph(model, tokenizer, transcoders, TEXT, "a", None, batch_rows=7)
    target = graph.target_index
    assert float(graph.inputs[target]) == pytest.approx(float(graph.adjacency[target].sum() + graph.bias[target]), abs=_tolerance(graph, target))
    for row in range(graph.num_features):  # an active feature's input is its pre-activation, its activation
        assert float(graph.inputs[row]) == pytest.approx(float(graph.activations[row]), abs=1e-5)
        assert float(graph.inputs[row]) == pytest.approx(float(graph.adjacency[row].sum() + graph.bias[row]), abs=_tolerance(graph, row))
    errors = graph.adjacency[target, graph.error_start:graph.embedding_start]
    assert float(errors.abs().sum()) > 1e-3  # random transcoders: the error nodes carry part of the target
    assert not graph.adjacency[graph.error_start:target].any()  # errors and embeddings receive nothing
    layers = graph.features[:, 0]
    assert not graph.adjacency[: graph.num_features, : graph.num_features][layers[:, None] <= layers[None, :]].any()  # only later layers


def test_a_features_ablation_moves_the_target_by_what_the_graph_predicts(setup):
    model, tokenizer, transcoders, graph = setup
    encoding = tokenizer.encode(TEXT)
    input_ids, token_type_ids = encoding.tensors()
    frozen = freeze(model, transcoders, input_ids, token_type_ids, graph.target)
    strongest = node_influence(graph)[: graph.num_features].argsort(descending=True)[:6].tolist()
    for node in strongest:
        layer, position, feature = graph.features[node].tolist()
        index = int(((frozen.features[layer][:, 0] == position) & (frozen.features[layer][:, 1] == feature)).nonzero()[0, 0])
        for downstream in ("fixed", "linear"):
            predicted, run = predicted_ablation(graph, node, downstream), frozen_ablation(frozen, layer, index, downstream)
            assert run == pytest.approx(predicted, abs=1e-4 * (1 + abs(predicted))), (node, downstream)
    # an input embedding switched off (every other source kept): minus its edge
    sources = frozen.unit_sources()
    sources.embeddings[3] = 0.0
    with torch.no_grad():
        _, ablated = replacement_outputs(frozen, sources)
    edge = float(graph.adjacency[graph.target_index, graph.embedding_start + 3])
    assert float(ablated) - frozen.target_value == pytest.approx(-edge, abs=_tolerance(graph, graph.target_index))


def _real_target(model, transcoders, frozen, input_ids, scaled: tuple[int, int, int], scale: float) -> float:
    """The real model run by hand, not through replacement.py: each MLP's output is its transcoder's from the MLP's
    input in this pass, with the run's active features kept active (their activation their pre-activation, every
    other feature off) plus the run's error; attention patterns frozen at the run (hook_pattern); every LayerNorm
    and the masked-LM head live. The `scaled` (layer, position, feature) times `scale`."""
    from bert.hooks import hook_name

    read, interventions = {}, {}
    for layer in range(model.config.num_layers):
        active = torch.zeros(input_ids.shape[1], transcoders.config.features, dtype=torch.bool)
        active[frozen.features[layer][:, 0], frozen.features[layer][:, 1]] = True

        def keep(x, name, layer=layer):
            read[layer] = x
            return x

        def replace(y, name, layer=layer, active=active):
            z = transcoders.pre_activations(read.pop(layer)[0], layer) * active
            if layer == scaled[0]:
                z[scaled[1], scaled[2]] = z[scaled[1], scaled[2]] * scale
            return (transcoders.decode(z, layer) + frozen.errors[layer])[None]

        interventions[transcoders.config.input_hook(layer)] = keep
        interventions[transcoders.config.output_hook(layer)] = replace
        interventions[hook_name("pattern", layer)] = lambda old, name, pattern=frozen.patterns[layer]: pattern
    with torch.no_grad():
        logits, _ = model.run_with_cache(input_ids, None, names=[], interventions=interventions)
    return float(read_target(logits[0, frozen.target.position], frozen.target))


def test_the_prediction_is_the_real_models_first_order_change(setup):
    """With attention frozen and the active set kept, the real model (LayerNorms live) moves, for a small change of
    one feature, by what the graph predicts with later features following: its edges are that model's derivatives
    (each LayerNorm and the head's activation replaced by their tangents at the run). Checked against a central
    difference of the model run by hand, and by the misses of removing a tenth and a thousandth of the feature,
    which shrink as the square of the part removed."""
    model, tokenizer, transcoders, graph = setup
    input_ids, token_type_ids = tokenizer.encode(TEXT).tensors()
    frozen = freeze(model, transcoders, input_ids, token_type_ids, graph.target)
    run = _real_target(model, transcoders, frozen, input_ids, (0, 0, 0), 1.0)
    assert run == pytest.approx(frozen.target_value, abs=1e-4)
    strongest = node_influence(graph)[: graph.num_features].argsort(descending=True)[:6].tolist()
    for node in strongest:
        feature = tuple(graph.features[node].tolist())
        predicted = predicted_ablation(graph, node, "linear")  # the change when the activation goes to 0
        step = 1e-2
        up, down = (_real_target(model, transcoders, frozen, input_ids, feature, 1 + sign * step) for sign in (1, -1))
        assert -(up - down) / (2 * step) == pytest.approx(predicted, abs=2e-3 * (1 + abs(predicted))), feature
        # what is left is of second order: a tenth removed misses by about a hundred times a thousandth's miss
        tenth, thousandth = (abs(_real_target(model, transcoders, frozen, input_ids, feature, 1 - part) - run - part * predicted)
                             for part in (0.1, 0.001))
        assert thousandth <= tenth / 1000 + 1e-5, feature


def test_the_cost_bounds_the_backward_passes_and_the_adjacency(setup, monkeypatch):
    from bert.analysis.tracing import attribution_graph as module

    model, tokenizer, transcoders, graph = setup
    calls = []
    real = module._jacobian_rows
    monkeypatch.setattr(module, "_jacobian_rows", lambda *args: calls.append(args[2:]) or real(*args))
    counted = module.attribution_graph(model, tokenizer, transcoders, TEXT, "a", batch_rows=16)
    cost = module.graph_cost(model.config, counted.seq, transcoders.config.k, batch_rows=16)
    assert len(calls) == -(-(counted.num_features + 1) // 16) <= cost.backward_passes and cost.forward_passes == 1
    assert counted.adjacency.numel() * 4 <= cost.kept_bytes
    full = counted.seq * model.config.num_layers * transcoders.config.k  # every kept feature active: the bound is reached
    assert cost.backward_passes == -(-(full + 1) // 16)


def test_a_cap_keeps_the_most_influential_features_and_the_graph_stays_complete(setup, monkeypatch):
    from bert.analysis.tracing import attribution_graph as module

    model, tokenizer, transcoders, graph = setup
    calls = []
    real = module._jacobian_rows
    monkeypatch.setattr(module, "_jacobian_rows", lambda *args: calls.append(args[2:]) or real(*args))
    capped = module.attribution_graph(model, tokenizer, transcoders, TEXT, "a", "the", batch_rows=16, max_features=10)
    assert capped.num_features == 10 and capped.folded == graph.num_features - 10
    # the kept ones: the largest effects that the full graph predicts for switching each off (later features following)
    effects = torch.tensor([abs(predicted_ablation(graph, node, "linear")) for node in range(graph.num_features)])
    expected = {tuple(row) for row in graph.features[effects.argsort(descending=True)[:10]].tolist()}
    assert {tuple(row) for row in capped.features.tolist()} == expected
    target = capped.target_index
    assert float(capped.inputs[target]) == pytest.approx(float(graph.inputs[graph.target_index]), abs=1e-5)
    for row in [*range(capped.num_features), target]:  # still complete: the folded features are in the error nodes
        assert float(capped.inputs[row]) == pytest.approx(float(capped.adjacency[row].sum() + capped.bias[row]), abs=_tolerance(capped, row))
    errors = slice(capped.error_start, capped.embedding_start)
    assert not torch.allclose(capped.adjacency[target, errors], graph.adjacency[graph.target_index, graph.error_start:graph.embedding_start])
    cost = module.graph_cost(model.config, capped.seq, transcoders.config.k, batch_rows=16, max_features=10)
    assert cost.backward_passes == len(calls) + 1  # the batched rows and the ranking's one pass
    assert cost.kept_bytes == capped.adjacency.numel() * 4
    assert module.attribution_graph(model, tokenizer, transcoders, TEXT, "a", "the", max_features=10_000).folded == 0


def hand_graph(adjacency: torch.Tensor) -> AttributionGraph:
    """One layer, one position: a feature (node 0), an error (1), an embedding (2), the target (3)."""
    return AttributionGraph(["x"], [5], Target(0, 5), "x", torch.tensor([[0, 0, 7]]), torch.tensor([1.0]), 1, adjacency,
                            torch.zeros(4), torch.zeros(4), 0.5)


def test_influence_and_scores_by_hand():
    adjacency = torch.zeros(4, 4)
    adjacency[0, 2] = 2.0  # embedding -> feature
    adjacency[3, 0], adjacency[3, 1], adjacency[3, 2] = 3.0, -1.0, 1.0  # feature, error, embedding -> target
    graph = hand_graph(adjacency)
    # normalised target row: 0.6, 0.2, 0.2; the feature's row: the embedding 1. Influence: feature 0.6, error 0.2,
    # embedding 0.2 + 0.6 · 1 = 0.8
    assert node_influence(graph).tolist() == pytest.approx([0.6, 0.2, 0.8, 0.0])
    replacement, completeness = graph_scores(graph)
    assert replacement == pytest.approx(0.8 / (0.8 + 0.2))
    # non-error shares: 1, 1, 1, 0.8; weights: influence + the target's 1
    assert completeness == pytest.approx((0.6 + 0.2 + 0.8 + 0.8) / (0.6 + 0.2 + 0.8 + 1.0))


def test_pruning_and_scores_equal_circuit_tracers(setup):
    ct_graph = pytest.importorskip("circuit_tracer.graph")
    from circuit_tracer.attribution.targets import LogitTarget
    from circuit_tracer.utils.tl_nnsight_mapping import UnifiedConfig

    model, tokenizer, transcoders, graph = setup
    config = UnifiedConfig(n_layers=graph.num_layers, d_model=64, d_head=16, n_heads=4, d_mlp=96, d_vocab=model.config.vocab_size,
                           tokenizer_name="tiny", model_name="tiny", original_architecture="BertForMaskedLM")
    theirs = ct_graph.Graph(input_string=TEXT, input_tokens=torch.tensor(graph.input_ids), active_features=graph.features,
                            adjacency_matrix=graph.adjacency, cfg=config, selected_features=torch.arange(graph.num_features),
                            activation_values=graph.activations, logit_targets=[LogitTarget(token_str="a", vocab_idx=graph.target.token)],
                            logit_probabilities=torch.tensor([1.0]), scan="tiny")
    for node_threshold, edge_threshold in ((0.8, 0.98), (0.5, 0.9), (0.95, 0.995)):
        expected = ct_graph.prune_graph(theirs, node_threshold, edge_threshold)
        ours = prune(graph, node_threshold, edge_threshold)
        assert torch.equal(ours.nodes, expected.node_mask), node_threshold
        assert torch.equal(ours.edges, expected.edge_mask), node_threshold
        torch.testing.assert_close(ours.cumulative, expected.cumulative_scores)
    everything = prune(graph, 1.0, 1.0)  # circuit-tracer's cut-off then reaches edges of no influence; ours keeps none
    assert everything.edges.sum() <= (graph.adjacency != 0).sum() and everything.nodes[graph.embedding_start:].all()
    assert graph_scores(graph) == pytest.approx(ct_graph.compute_graph_scores(theirs), abs=1e-6)


def test_json_validates_against_circuit_tracers_graph_models(setup):
    model, tokenizer, transcoders, graph = setup
    pruned = prune(graph)
    labels = {tuple(graph.features[0, [0, 2]].tolist()): "a label <b>kept as text</b>"}
    result = json.loads(json.dumps(graph_json(graph, pruned, model.config.vocab_size, "slug", "tiny", 0.8, labels)))
    ids = [node["node_id"] for node in result["nodes"]]
    assert len(ids) == len(set(ids))
    assert all(link["source"] in ids and link["target"] in ids for link in result["links"])
    kinds = {node["feature_type"] for node in result["nodes"]}
    assert {"embedding", "logit"} <= kinds and kinds <= {"embedding", "logit", "cross layer transcoder", "mlp reconstruction error"}
    assert sum(node["feature_type"] == "embedding" for node in result["nodes"]) == graph.seq
    logit = next(node for node in result["nodes"] if node["feature_type"] == "logit")
    assert logit["is_target_logit"] and logit["clerp"].startswith('Output "a − the"')
    assert result["metadata"]["prompt"] == TEXT and result["metadata"]["prompt_tokens"] == graph.tokens
    first = f"{graph.features[0, 0]}_{graph.features[0, 2]}_{graph.features[0, 1]}"
    if first in ids:
        assert result["nodes"][ids.index(first)]["clerp"] == "a label <b>kept as text</b>"
    models = pytest.importorskip("circuit_tracer.frontend.graph_models")
    validated = models.Model(**result)
    assert len(validated.nodes) == len(result["nodes"]) and validated.metadata.prompt == TEXT


def test_target_needs_one_mask_and_one_token_each(setup):
    from bert.errors import InvalidInputError

    model, tokenizer, transcoders, graph = setup
    with pytest.raises(InvalidInputError, match="2 \\[MASK\\]"):
        target_for(tokenizer, tokenizer.encode("the [MASK] [MASK]"), "a")
    with pytest.raises(InvalidInputError, match="same token"):
        target_for(tokenizer, tokenizer.encode("the [MASK]"), "a", "a")


def test_graph_command_writes_the_json_and_refuses_bad_input(tiny_mlm_folder, tmp_path, capsys):
    model, _ = load_folder(tiny_mlm_folder)
    random_transcoders(model).save(tmp_path / "transcoders")
    out = tmp_path / "graph.json"
    common = ["graph", "--model", str(tiny_mlm_folder), "--transcoders", str(tmp_path / "transcoders"), "--device", "cpu"]
    assert main([*common, "--text", TEXT, "--target", "a", "--foil", "the", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "replacement score" in printed and "completeness score" in printed
    result = json.loads(out.read_text())
    assert set(result) == {"metadata", "qParams", "nodes", "links"} and result["links"]
    for arguments, message in ((["--text", "the [MASK] [MASK]", "--target", "a"], "2 [MASK]"),
                               (["--text", TEXT, "--target", "a", "--node-threshold", "2"], "--node-threshold"),
                               (["--text", TEXT, "--target", "zzzzqq"], "target")):
        assert main([*common, *arguments]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and error[0].startswith("error:") and message in error[0]
    assert main(["graph", "--model", str(tiny_mlm_folder), "--transcoders", str(tmp_path / "none"), "--text", TEXT, "--target", "a"]) == 2
    assert "transcoders train" in capsys.readouterr().err


def test_transcoders_command_trains_and_refuses_bad_input(tiny_mlm_folder, tmp_path, capsys):
    data, measure = tmp_path / "train.txt", tmp_path / "measure.txt"
    data.write_text("\n".join(["the dog barked at the mail man", "her cat went to the park"] * 60) + "\n")
    measure.write_text("the cat barked at her dog\n")
    common = ["transcoders", "train", "--model", str(tiny_mlm_folder), "--data", str(data), "--out", str(tmp_path / "t"),
              "--measure", str(measure), "--device", "cpu"]
    assert main([*common, "--features", "4", "--k", "8"]) == 2
    assert "features >= k" in capsys.readouterr().err
    assert main([*common, "--features", "16", "--k", "2", "--steps", "2", "--batch-tokens", "32", "--buffer-tokens", "64", "--float16"]) == 0
    from safetensors.torch import load_file

    assert load_file(tmp_path / "t" / "transcoders.safetensors")["W_enc"].dtype == torch.float16
    card = json.loads((tmp_path / "t" / "config.json").read_text())
    assert card["steps"] == 2 and len(card["held_out"]["layers"]) == 2 and card["input_kind"] == "attention_out"


@pytest.mark.parametrize("family, architecture", [("modernbert", "ModernBertForMaskedLM"), ("roberta", "RobertaForMaskedLM")])
def test_other_families_pre_norm_included_are_complete_and_the_model_itself(family, architecture, tmp_path, tiny_vocab_file):
    """ModernBERT is pre-norm (each MLP reads its own LayerNorm of the summed stream, a final LayerNorm before the
    head); RoBERTa post-LN with its own positions. transformers' logits are the reference for the frozen run."""
    from families.family_support import build_hf, write_tiny_tokenizer
    from transformers import AutoModelForMaskedLM

    build_hf(family, architecture, max_position_embeddings=64 + (2 if family == "roberta" else 0)).save_pretrained(tmp_path)
    write_tiny_tokenizer(tmp_path, tiny_vocab_file)
    model, tokenizer = load_folder(tmp_path)
    model.eval()
    transcoders = random_transcoders(model)
    if model.config.pre_norm:
        transcoders.config = dataclasses.replace(transcoders.config, input_kind="mlp_in")
    graph = attribution_graph(model, tokenizer, transcoders, TEXT, "a", "the")
    target = graph.target_index
    assert float(graph.inputs[target]) == pytest.approx(float(graph.adjacency[target].sum() + graph.bias[target]), abs=_tolerance(graph, target))
    for row in range(graph.num_features):
        assert float(graph.inputs[row]) == pytest.approx(float(graph.adjacency[row].sum() + graph.bias[row]), abs=_tolerance(graph, row))
    reference = AutoModelForMaskedLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    with torch.no_grad():
        logits = reference(torch.tensor([graph.input_ids])).logits[0, graph.target.position]
    assert float(graph.inputs[target]) == pytest.approx(float(logits[graph.target.token] - logits[graph.target.foil]), abs=1e-4)
