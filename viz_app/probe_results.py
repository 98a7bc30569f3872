"""The probes page's treebank results: the cached run, the per-layer curves with their controls and baselines, a
summary per task, one sentence's predicted tree against the gold tree, and the CSV and JSON downloads.

A run is kept in its JSON form (plain numbers and strings: cheap to cache, the same as `python -m bert probe
--json` writes), plus, for the distance probe, every test sentence's predicted tree at every layer.
"""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from viz_app import state, widgets
from viz_app.charts.dependency_tree import tree_chart
from viz_app.charts.probe_layers import MEASURES, layer_curves_chart, measures_in
from viz_app.probe_data import PIECES, ProbeData

HEADLINE = ("accuracy", "uuas", "root_accuracy", "codelength")  # a task's main measure: the first it has


def headline(task: dict) -> str:
    return next(m for m in HEADLINE if m in task["layers"][0])


def layer_table(run: dict, layer_names: list[str]) -> pd.DataFrame:
    """Every task's measures at every layer, one row per (task, layer): the CSV download."""
    return pd.DataFrame([{"task": name, "layer": row["layer"], "layer_name": layer_names[row["layer"]],
                          **{k: v for k, v in row.items() if k != "layer"}}
                         for name, task in run["tasks"].items() for row in task["layers"]])


def summary_table(run: dict, layer_names: list[str]) -> pd.DataFrame:
    """Per task: its main measure at the best layer, the best layer, Tenney's expected layer, selectivity there."""
    rows = []
    for name, task in run["tasks"].items():
        measure = headline(task)
        best = task["best_layer"]
        at_best = next(row for row in task["layers"] if row["layer"] == best)
        expected = task.get("expected_layer")
        rows.append({"task": name, "measure": MEASURES[measure][0], "best layer": layer_names[best],
                     "score at the best layer": at_best[measure],
                     "score at layer 0": task["layers"][0][measure],
                     "expected layer": None if expected is None else round(expected, 2),
                     "selectivity at the best layer": at_best.get("selectivity")})
    return pd.DataFrame(rows)


def show_curves(run: dict, layer_names: list[str]) -> None:
    measures = measures_in(run)
    state.clamp("probe_measure", measures, measures[0])
    left, middle, right = st.columns([2, 1, 1])
    measure = left.selectbox("Measure", measures, format_func=lambda m: MEASURES[m][0], key="probe_measure",
                             persist_state="session")
    controls = middle.toggle("Control tasks", value=True, key="probe_show_controls",
                             help="Dashed: the same probe on random labels fixed per word type (Hewitt & Liang 2019).")
    layer0 = right.toggle("Layer-0 lines", value=True, key="probe_show_layer0",
                          help="Dotted: each task's score at the embeddings, before any layer has mixed the words.")
    widgets.show_chart(layer_curves_chart(run, measure, layer_names, controls, layer0), key="probe_curves")


def show_summary(run: dict, layer_names: list[str], pieces: str) -> pd.DataFrame:
    table = summary_table(run, layer_names)
    percent = st.column_config.NumberColumn(format="%.3f")
    st.dataframe(table, hide_index=True, column_config={c: percent for c in
                 ("score at the best layer", "score at layer 0", "selectivity at the best layer")})
    baseline = run.get("baselines", {}).get("linear_uuas")
    st.caption(
        f"Word vectors: {PIECES[pieces]} ({pieces}). Expected layer (Tenney et al. 2019): the layers weighted by how "
        "much each adds to the score, so a task solved early has a low expected layer. "
        + ("" if baseline is None else f"Linear-chain baseline UUAS (each word joined to the next): {baseline:.3f}.")
    )
    return table


def downloads(run: dict, layer_names: list[str], name: str) -> None:
    left, right = st.columns(2)
    left.download_button("JSON of the whole run", data=lambda: json.dumps(run, indent=2), file_name=f"{name}.json",
                         mime="application/json", key="probe_json", on_click="ignore", icon=":material/download:")
    table = layer_table(run, layer_names)
    right.download_button("CSV: every task at every layer", data=lambda: table.to_csv(index=False),
                          file_name=f"{name}.csv", mime="text/csv", key="probe_csv", on_click="ignore",
                          icon=":material/download:")


def show_tree(trees, layer_names: list[str], best_layer: int) -> None:
    """trees: the distance probe's predicted trees of the test sentences (see probe_trees)."""
    st.subheader("One sentence: predicted tree against the gold tree")
    options = list(range(len(trees.sentences)))
    widgets.clamp_choice("probe_tree_sentence", options, 0)
    index = st.selectbox("Sentence (of the scored ones)", options, key="probe_tree_sentence", persist_state="session",
                         format_func=lambda i: f"{i + 1}: {_shorten(' '.join(trees.sentences[i].words))}")
    layers = list(range(len(layer_names)))
    state.clamp("probe_tree_layer", layers, best_layer)
    layer = st.select_slider("Layer", layers, key="probe_tree_layer", format_func=layer_names.__getitem__,
                             persist_state="session")
    sentence = trees.sentences[index]
    gold, predicted = trees.gold[index], trees.predicted[layer][index]
    found = len({frozenset(e) for e in gold} & {frozenset(e) for e in predicted})
    chart = tree_chart(sentence.words, gold, predicted, f"{layer_names[layer]}: {found} of {len(gold)} gold arcs found",
                       gold_labels=trees.labels[index], excluded=trees.excluded[index],
                       name=f"probe_tree_{index + 1}_layer_{layer}")
    widgets.show_chart(chart, key="probe_tree")


def _shorten(text: str, most: int = 90) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
