"""The per-layer curves of a probe run, drawn from a hand-made run in the JSON form the probe runner writes."""
from __future__ import annotations

import pytest

from bert.layers import residual_labels
from viz_app.charts.probe_layers import layer_curves_chart, measures_in

NAMES = residual_labels(2)  # "embeddings", "after layer 0", "after layer 1"
RUN = {
    "tasks": {
        "upos": {"layers": [{"hidden_states_index": l, "accuracy": a, "control_accuracy": c, "selectivity": a - c}
                            for l, a, c in [(0, 0.6, 0.5), (1, 0.8, 0.55), (2, 0.9, 0.5)]], "best_hidden_states_index": 2},
        "distance": {"layers": [{"hidden_states_index": l, "uuas": u, "spearman": s} for l, u, s in [(0, 0.3, 0.5), (1, 0.5, 0.7), (2, 0.4, 0.6)]],
                     "best_hidden_states_index": 1},
    },
    "baselines": {"linear_uuas": 0.45},
}


def _traces(chart) -> dict:
    return {trace.name: trace for trace in chart.figure.data}


def test_the_measures_of_a_run_in_a_fixed_order():
    assert measures_in(RUN) == ["accuracy", "selectivity", "uuas", "spearman"]


def test_accuracy_with_its_control_dashed_and_the_embeddings_line():
    chart = layer_curves_chart(RUN, "accuracy", NAMES)
    traces = _traces(chart)
    assert set(traces) == {"upos", "upos (control task)", "upos at the embeddings"}  # distance has no accuracy
    assert list(traces["upos"].x) == NAMES and list(traces["upos"].y) == [0.6, 0.8, 0.9]
    assert list(traces["upos (control task)"].y) == [0.5, 0.55, 0.5] and traces["upos (control task)"].line.dash == "dash"
    assert list(traces["upos at the embeddings"].y) == [0.6, 0.6]
    assert chart.data["control_accuracy"].tolist() == [0.5, 0.55, 0.5]
    bare = _traces(layer_curves_chart(RUN, "accuracy", NAMES, controls=False, embeddings_line=False))
    assert set(bare) == {"upos"}


@pytest.mark.parametrize("measure, baseline", [("uuas", True), ("spearman", False)])
def test_the_linear_chain_baseline_goes_with_uuas_only(measure, baseline):
    chart = layer_curves_chart(RUN, measure, NAMES)
    traces = _traces(chart)
    chain = "linear chain (each word joined to the next)"
    assert (chain in traces) is baseline
    if baseline:
        assert list(traces[chain].y) == [0.45, 0.45]
        assert chart.data.iloc[-1][measure] == 0.45
    assert list(traces["distance"].y) == [row[measure] for row in RUN["tasks"]["distance"]["layers"]]


def test_a_task_named_by_an_uploaded_file_reaches_plotly_escaped():
    run = {"tasks": {"<b>ner</b>": RUN["tasks"]["upos"]}, "baselines": {}}
    chart = layer_curves_chart(run, "accuracy", NAMES)
    assert chart.figure.data[0].name == "&lt;b&gt;ner&lt;/b&gt;"
    assert chart.data["task"].iloc[0] == "<b>ner</b>"  # the CSV keeps the name as written
