"""The probes page's results, from a run as viz_app/specs/probes/runs.py keeps it, whatever the sentences: the per-layer
curves with their controls and baselines, a summary per task, one sentence's predicted tree against the gold tree
(when the distance probe ran), and the CSV and JSON downloads. The charts are view.py's."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from bert.errors import BertError
from viz_app import heavy
from viz_app.app import show as show_text, state, widgets  # `show` here draws a probe run
from viz_app.charts.causal import erasure_bars
from viz_app.app.page_context import Context
from viz_app.charts.probe_layers import MEASURES, measures_in
from viz_app.specs.probes.runs import ERASURE_MLM_WORDS, ProbeData, ProbeRun, erasable_tasks
from viz_app.specs.probes import ERASE, EraseWork
from viz_app.specs.probes.view import ProbeViewSettings, pieces_note, probes_view, reads_words


def show(result: ProbeRun, data: ProbeData) -> None:
    """Everything a finished run shows, top to bottom."""
    run = result.run
    names = run["residual_names"]
    for task, reason in run["skipped_tasks"].items():
        show_text.warning("{}: {}", task, reason)
    if not run["tasks"]:
        return
    measure, controls, embeddings_line = curve_settings(run)
    curves = st.container()
    st.subheader("Summary per task")
    show_summary(run, names)
    if run["notes"]:
        show_text.caption("{}.", "; ".join(run["notes"]))
    show_text.caption("On {}: {} sentences trained the probes and {} scored them; seed {}.", data.description,
                      run['num_train_sentences'], run['num_test_sentences'], run['seed'])
    downloads(result, f"probes_{data.key[0]}")
    sentence, layer, tree = 0, None, None
    if result.trees:
        st.subheader("One sentence: the predicted tree against the gold tree")
        sentence, layer = tree_pickers(result, names)
        tree = st.container()
    elif "distance" in data.tasks:
        st.caption("Add the distance task to see one sentence's predicted tree drawn against its gold tree.")
    charts = probes_view(ProbeViewSettings(measure, controls, embeddings_line, sentence, layer), result)
    with curves:
        widgets.show_chart(charts["curves"], key="probe_curves")
    if tree is not None:
        with tree:
            widgets.show_chart(charts["tree"], key="probe_tree")


def erase_property(context: Context, result: ProbeRun, data: ProbeData, seed: int) -> None:
    """"Erase this property": amnesic probing (Elazar et al. 2021) of one probed label at one layer, with LEACE, and
    the before/after bars beside a random erasure of the same rank."""
    run = result.run
    tasks = erasable_tasks(data, run)
    if not tasks:
        return
    st.subheader("Erase this property")
    names = run["residual_names"]
    columns = st.columns([2, 2, 1])
    task = columns[0].selectbox("Property", tasks, **state.kept("probe_erase_task", tasks))
    best = run["tasks"][task]["best_hidden_states_index"]
    with columns[1]:
        layer = widgets.select_int("From the layer", "probe_erase_layer", list(range(len(names))), format_func=names.__getitem__,
                                   default=best, help="Its best layer is chosen first.")
    erase = columns[2].toggle("Erase it", **state.kept("probe_erase"),
                              help="Fits LEACE on the training words, then measures the probe and the masked LM again.")
    show_text.caption("LEACE (Belrose et al. 2023) removes {} from {}'s word vectors so that no linear probe can read "
                      "it; the forward pass then goes on from the erased layer (every position erased). Masked-LM "
                      "accuracy: up to {:,} test words that are one word piece, each masked alone in its sentence, the "
                      "top guess compared with the word. The control erases as many random directions.", task,
                      names[layer], ERASURE_MLM_WORDS)
    if not erase:
        return
    if not context.loaded.summary.has_mlm_head:
        st.warning("This model has no masked-LM head, so there are no guesses to compare. Pick minilm or a BERT with its MLM head.")
        return
    try:
        report = heavy.run(context, ERASE, EraseWork(data, task, layer, seed))
    except BertError as error:
        show_text.warning("The property cannot be erased here: {}.", error)
        return
    if report is None:
        return
    values = report.to_dict()
    widgets.show_chart(erasure_bars(values["probe"], values["mlm"], task, names[layer]), key="probe_erasure")
    show_text.caption("Rank {} (directions removed); {:,} training words, {:,} test words, {:,} masked.", report.rank,
                      report.num_train_words, report.num_test_words, report.num_mlm_words)


def summary_table(run: dict, residual_names: list[str]) -> pd.DataFrame:
    """Per task: its main measure at its best hidden state and at the embeddings, that hidden state's label
    (bert/layers.py), Tenney's expected layer as a hidden_states index, the
    selectivity at the best layer, the majority baseline and how many examples trained and scored the probes."""
    rows = []
    for name, task in run["tasks"].items():
        measure, best = task["primary_measure"], task["best_hidden_states_index"]
        expected = task["expected_hidden_states_index"]
        rows.append({"task": name, "measure": MEASURES[measure][0], "best hidden state": residual_names[best],
                     "score at the best hidden state": task["layers"][best][measure],
                     "score at the embeddings": task["layers"][0][measure],
                     "expected hidden_states index": None if expected is None else round(expected, 2),
                     "selectivity at the best hidden state": task["selectivity_at_best"],
                     "majority baseline": task["majority_accuracy"],
                     "training examples": task["num_train"], "test examples": task["num_test"]})
    return pd.DataFrame(rows)


def curve_settings(run: dict) -> tuple[str, bool, bool]:
    measures = measures_in(run)
    left, middle, right = st.columns([2, 1, 1])
    measure = left.selectbox("Measure", measures, format_func=lambda m: MEASURES[m][0],
                             **state.kept("probe_measure", measures, measures[0]))
    controls = middle.toggle("Control tasks", value=True, key="probe_show_controls",
                             help="Dashed: the same probe on random labels fixed per word type (Hewitt & Liang 2019).")
    embeddings_line = right.toggle("Embeddings lines", value=True, key="probe_show_layer0",
                          help="Dotted: each task's score at the embeddings, before any layer has mixed the words.")
    return measure, controls, embeddings_line


def show_summary(run: dict, residual_names: list[str]) -> None:
    scores = {column: st.column_config.NumberColumn(format="%.3f") for column in
              ("score at the best hidden state", "score at the embeddings", "selectivity at the best hidden state")}
    scores["expected hidden_states index"] = st.column_config.NumberColumn(
        help="Tenney et al.'s expected layer: the sum over hidden_states indices i (i = after layer i-1) of i × its "
        "gain, divided by the sum of the gains; a gain is how much hidden_states[i] raises the best score so far. "
        "Empty when no layer beats the embeddings.")
    scores["majority baseline"] = st.column_config.NumberColumn(
        format="%.3f", help="Accuracy of always answering the label most frequent in training.")
    st.dataframe(summary_table(run, residual_names), hide_index=True, column_config=scores)
    baseline = run["baselines"].get("linear_uuas")
    pieces = f"{pieces_note(run['pieces']).capitalize()} ({run['pieces']}). " if reads_words(run) else ""
    show_text.caption("{}Expected layer (Tenney et al. 2019): the layers weighted by how much each adds to the score, "
                      "so a task solved early has a low expected layer.{}", pieces,
                      "" if baseline is None else f" UUAS of the linear chain (each word joined to the next): {baseline:.3f}.")


def downloads(result: ProbeRun, name: str) -> None:
    left, right = st.columns(2)
    left.download_button("JSON of the whole run", data=result.json,
                         file_name=f"{name}.json", mime="application/json", key="probe_json", on_click="ignore",
                         icon=":material/download:")
    right.download_button("CSV: every task at every layer", data=lambda: pd.DataFrame(result.rows).assign(pieces=result.run["pieces"]).to_csv(index=False),
                          file_name=f"{name}.csv", mime="text/csv", key="probe_csv", on_click="ignore",
                          icon=":material/download:")


def tree_pickers(result: ProbeRun, residual_names: list[str]) -> tuple[int, int]:
    trees = result.trees
    options = list(range(len(trees)))
    index = st.selectbox(f"Sentence (the first {len(trees)} scored ones)", options, **state.kept("probe_tree_sentence", options),
                         format_func=lambda i: f"{i + 1}: {_shorten(' '.join(trees[i].words))}")
    layers = list(range(len(residual_names)))
    best = result.run["tasks"]["distance"]["best_hidden_states_index"]
    layer = st.select_slider("Hidden state", layers, format_func=residual_names.__getitem__,
                             **state.kept("probe_tree_layer", layers, best),
                             help="Starts at the distance probe's best hidden state (highest UUAS).")
    return index, layer


def _shorten(text: str, most: int = 90) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
