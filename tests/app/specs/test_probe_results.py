"""The probes page's results on a tiny random BERT and a few UD EWT sentences: the trees the page draws are the
ones the library predicts, the summary reads the run, the CSV has a row per task and layer."""
from __future__ import annotations

from dataclasses import replace

import pytest

from bert import BertTokenizer
from bert.analysis.probing.treebank import builtin_treebank
from bert.analysis.probing.structural_probe import StructuralProbeSettings
from bert.analysis.probing.pipeline import ProbeSettings, run_probes
from viz_app.app.probe_results import summary_table
from viz_app.specs.probes.runs import sentence_trees


@pytest.fixture(scope="module")
def report(tiny_model, tiny_vocab_file):
    dev = builtin_treebank("dev")
    few = [s for s in dev.sentences if 3 <= len(s) <= 12][:16]  # the tiny model has 64 positions
    settings = ProbeSettings(structural=StructuralProbeSettings(rank=8, epochs=2))
    return run_probes(tiny_model, BertTokenizer.from_vocab(tiny_vocab_file), replace(dev, sentences=tuple(few)),
                               tasks=["upos", "distance"], settings=settings)


def test_the_trees_drawn_are_the_librarys_trees(report):
    trees = sentence_trees(report, most=3)
    assert len(trees) == 3
    sentences = [i for i in range(len(report.test_features.sentences)) if report.gold_edges(i)][:3]
    for tree, index in zip(trees, sentences):
        sentence = report.test_features.sentences[index]
        assert tree.words == sentence.words and set(tree.gold) == report.gold_edges(index)
        for layer, predicted in enumerate(tree.predicted):
            assert set(predicted) == report.predicted_edges(index, layer)
        assert [i for i in range(len(sentence)) if sentence.labels["upos"][i] == "PUNCT"] == list(tree.excluded)
        for word, head in enumerate(sentence.heads):
            if head:
                assert tree.labels[frozenset((word, head - 1))] == sentence.labels["deprel"][word]


def test_the_summary_reads_the_run(report):
    run = report.to_dict()
    table = summary_table(run, list(report.residual_names))
    upos = report.tasks["upos"]
    row = table.set_index("task").loc["upos"]
    assert row["best hidden state"] == report.residual_names[upos.best_hidden_states_index]
    assert row["score at the best hidden state"] == upos.layers[upos.best_hidden_states_index]["accuracy"] == max(upos.measure("accuracy"))
    assert row["selectivity at the best hidden state"] == upos.selectivity_at_best
    assert table.set_index("task").loc["distance", "measure"] == "UUAS"
