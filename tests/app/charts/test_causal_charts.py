"""The causal tracing page's chart builders: what the heatmaps show and hover is the grid given, user tokens are
escaped, the CSV holds every cell, and the scatter's r is numpy's."""
from __future__ import annotations

import numpy as np
import pytest

from app_helpers import array
from viz_app.charts.causal import attribution_scatter, patching_heatmap, probability_heatmap

TOKENS = ["[CLS]", "the", "<b>man</b>", "[MASK]", "the", "[SEP]"]


def test_patching_heatmap_shows_the_grid_and_escapes_tokens():
    grid = np.arange(18, dtype=float).reshape(3, 6) / 10 - 0.5
    chart = patching_heatmap(grid, ["layer 0", "layer 1", "layer 2"], TOKENS, "Residual <stream>", "residual", "how to read")
    trace = chart.figure.data[0]
    np.testing.assert_array_equal(array(trace.z), grid)
    assert list(trace.x)[2] == "&lt;b&gt;man&lt;/b&gt;" and len(set(trace.x)) == 6  # escaped, repeats kept apart
    assert trace.zmid == 0 and trace.zmin == -trace.zmax == -1.2  # symmetric, at least [-1, 1]
    assert "restored: %{z:.3f}" in trace.hovertemplate
    assert chart.figure.layout.title.text == "Residual &lt;stream&gt;"
    assert len(chart.data) == 18 and chart.data["restored"].tolist() == pytest.approx(grid.ravel().tolist())
    assert chart.data["token"].tolist()[:3] == ["0 [CLS]", "1 the", "2 <b>man</b>"]  # the CSV keeps the text as typed


def test_head_grid_keeps_head_labels():
    chart = patching_heatmap(np.zeros((2, 4)), ["layer 0", "layer 1"], [f"head {h}" for h in range(4)], "Heads", "heads", "",
                             column_axis="head")
    assert list(chart.figure.data[0].x) == ["head 0", "head 1", "head 2", "head 3"]
    assert chart.data.columns.tolist() == ["row", "head", "restored"]


def test_probability_heatmap_starts_at_the_noisy_probability():
    values = np.array([[0.1, 0.4], [0.2, 0.3]])
    chart = probability_heatmap(values, ["layer 0", "layer 1"], ["a", "b"], "Trace", "trace", "", low=0.1)
    assert chart.figure.data[0].zmin == 0.1 and chart.figure.data[0].zmax == 0.4
    assert chart.data["probability"].tolist() == [0.1, 0.4, 0.2, 0.3]


def test_attribution_scatter_reports_pearsons_r():
    exact = np.array([0.0, 0.5, 1.0, 0.2])
    approximate = np.array([0.1, 0.4, 1.3, 0.1])
    chart = attribution_scatter(exact, approximate, ["a", "b", "c", "d"], "attribution")
    assert f"{np.corrcoef(exact, approximate)[0, 1]:.3f}" in chart.figure.layout.title.text
    assert chart.data["attribution"].tolist() == approximate.tolist()
    assert "nan" in attribution_scatter(np.zeros(3), np.ones(3), ["a", "b", "c"], "flat").figure.layout.title.text


def test_the_views_draw_the_library_results(tiny_mlm_folder):
    import bert
    from bert.analysis.causal.patching import attribution_sweep, patching_sweep, prepare_contrast
    from bert.analysis.causal.tracing import causal_trace
    from viz_app.specs.causal_tracing import patching_view, tracing_view

    model, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    contrast = prepare_contrast(tokenizer, "the dog [MASK] at the park .", "her cat [MASK] to the mail .", "barked", "mail")
    exact = patching_sweep(model, contrast, head_layer=1)
    approximate = attribution_sweep(model, contrast, head_layer=1)
    charts = patching_view(exact, approximate, compare="mlp")
    assert list(charts) == ["residual", "attention", "mlp", "heads", "head_positions", "comparison"]
    for name in ("residual", "attention", "mlp", "heads", "head_positions"):
        np.testing.assert_allclose(array(charts[name].figure.data[0].z), getattr(exact, name).numpy(), rtol=1e-6)
    assert list(charts["residual"].figure.data[0].y) == ["embeddings", "after layer 0", "after layer 1"]
    np.testing.assert_allclose(charts["comparison"].data["attribution"], approximate.mlp.numpy().ravel(), rtol=1e-6)
    assert list(patching_view(approximate)) == ["residual", "attention", "mlp", "heads", "head_positions"]
    trace = causal_trace(model, tokenizer, tokenizer.encode("the dog [MASK] at the park ."), [2], sites=("residual", "mlp"), samples=2)
    traced = tracing_view(trace)
    assert list(traced) == ["residual", "mlp"]
    np.testing.assert_allclose(array(traced["mlp"].figure.data[0].z), trace.restored["mlp"].numpy(), rtol=1e-6)


def test_erasure_bars_show_before_after_and_the_control():
    from viz_app.charts.causal import erasure_bars

    probe = {"before": 0.9, "after": 0.2, "majority": 0.2, "random_control": 0.88}
    mlm = {"before": 0.33, "after": 0.29, "random_control": 0.32}
    chart = erasure_bars(probe, mlm, "upos", "layer 3")
    assert [trace.name for trace in chart.figure.data] == ["before", "after erasing it (LEACE)", "after a random erasure of the same rank"]
    assert [list(trace.y) for trace in chart.figure.data] == [[0.9, 0.33], [0.2, 0.29], [0.88, 0.32]]
    assert chart.figure.layout.shapes[0].y0 == 0.2  # the majority baseline
    assert chart.data["random_control"].tolist() == [0.88, 0.32]
