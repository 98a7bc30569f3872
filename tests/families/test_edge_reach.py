"""Exact edge patching from the receiver's layer on (bert/analysis/circuits/edge_reach.py) against the pass that
patches one edge and recomputes everything (graph_run.py, one edge a row): every edge of a tiny random post-LN BERT
and a pre-norm ModernBERT, in both directions and with both metrics."""
from __future__ import annotations

import pytest
import torch

import bert
from bert.analysis.causal.patching import prepare_contrast
from bert.analysis.circuits.edge_scores import METRICS, edge_scores, exact_edge_metrics, pair_runs, patched_metrics
from bert.analysis.circuits.encoder_parts import EncoderParts
from bert.analysis.circuits.graph import CircuitGraph
from family_support import build_hf, write_tiny_tokenizer

CLEAN, CORRUPTED = "the dog [MASK] at the park .", "her cat [MASK] to the mail ."


@pytest.fixture(scope="module", params=["bert", "modernbert"])
def family_model(request, tmp_path_factory, tiny_vocab_file, tiny_mlm_folder):
    """(ours, a contrast whose answer and foil the two runs move apart, so a wrong patch shows)."""
    if request.param == "bert":
        ours, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    else:
        folder = tmp_path_factory.mktemp("modernbert_reach")
        build_hf("modernbert", "ModernBertForMaskedLM").save_pretrained(folder)
        write_tiny_tokenizer(folder, tiny_vocab_file)
        ours, tokenizer = bert.load_pretrained(str(folder))
    first = prepare_contrast(tokenizer, CLEAN, CORRUPTED, "barked", "mail")
    with torch.no_grad():
        change = (ours(*first.clean.tensors()) - ours(*first.corrupted.tensors()))[0, first.mask_position]
    return ours, prepare_contrast(tokenizer, CLEAN, CORRUPTED, int(change.argmax()), int(change.argmin()))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("direction", ["noise", "denoise"])
def test_every_edge_equals_its_whole_patched_pass(family_model, direction, metric):
    model, contrast = family_model
    parts, graph = EncoderParts.of(model), CircuitGraph.of(model.config)
    runs = pair_runs(parts, graph, contrast, metric)
    whole = patched_metrics(parts, graph, runs, metric, direction, torch.eye(len(graph), dtype=torch.bool), batch_size=len(graph))
    reach = exact_edge_metrics(parts, graph, runs, metric, direction, batch_size=7)  # rows of several receivers a batch
    run, _ = runs.oriented(direction)
    assert (whole - runs.metrics[run]).abs().max() > 1e-3  # the patches move the metric (100 times the tolerance)
    torch.testing.assert_close(reach, whole, atol=1e-5, rtol=0)
    some = [len(graph) - 1, 0, len(graph) // 2]  # a subset, in any order
    torch.testing.assert_close(exact_edge_metrics(parts, graph, runs, metric, direction, some, batch_size=2), whole[some],
                               atol=1e-5, rtol=0)


def test_exact_scores_are_the_patched_metrics_minus_the_run(family_model):
    model, contrast = family_model
    scores = edge_scores(model, [contrast], "exact", batch_size=16)
    parts, graph = EncoderParts.of(model), CircuitGraph.of(model.config)
    runs = pair_runs(parts, graph, contrast, "logit-difference")
    whole = patched_metrics(parts, graph, runs, "logit-difference", "noise", torch.eye(len(graph), dtype=torch.bool), 64)
    torch.testing.assert_close(scores.scores, whole - runs.metrics["clean"], atol=1e-5, rtol=0)
