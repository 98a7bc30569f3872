"""The probes page's view: a finished probe run and the page's settings in, its charts out. The page, the lessons
and the exported handouts all draw the probes with `probes_view`.

    charts = probes_view(ProbeViewSettings.from_state(state), run)   # run: viz_app.specs.probes.runs.ProbeRun
    charts["curves"]      # the chosen measure by layer for every task (controls dashed, layer 0 dotted)
    charts["tree"]        # when the distance probe ran: one test sentence's predicted tree against its gold tree
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from bert.analysis.probing.task_table import task
from viz_app.charts.base import Chart
from viz_app.charts.dependency_tree import tree_chart
from viz_app.charts.probe_layers import layer_curves_chart, measures_in
from viz_app.specs.probes.runs import PIECES, ProbeRun
from viz_app.specs.base import setting


@dataclass(frozen=True)
class ProbeViewSettings:
    measure: str | None = None  # one of measures_in(run); None (or one the run lacks): its first
    controls: bool = True  # the control tasks' curves, dashed
    embeddings_line: bool = True  # each task's score at the embeddings, dotted
    tree_sentence: int = 0  # which of the run's test sentences with a tree (an index into run.trees)
    tree_layer: int | None = None  # None (or a layer the model lacks): the distance probe's best layer

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "ProbeViewSettings":
        """From a lesson step's or a link's values (probe_measure, probe_show_controls, ...); missing keys take
        the defaults above, and `probes_view` clamps what the run lacks as the page's pickers would."""
        return cls(setting(state, "probe_measure"), bool(state.get("probe_show_controls", True)),
                   bool(state.get("probe_show_layer0", True)), setting(state, "probe_tree_sentence") or 0,
                   setting(state, "probe_tree_layer"))


def probes_view(settings: ProbeViewSettings, run: ProbeRun) -> dict[str, Chart]:
    """{"curves": ...} and, when the distance probe ran, {"tree": ...}; empty when no task could run."""
    result = run.run
    if not result["tasks"]:
        return {}
    names = result["residual_names"]
    measures = measures_in(result)
    measure = settings.measure if settings.measure in measures else measures[0]
    note = pieces_note(result["pieces"]) if reads_words(result) else ""
    charts = {"curves": layer_curves_chart(result, measure, names, settings.controls, settings.embeddings_line, note=note)}
    if run.trees:
        index = settings.tree_sentence if 0 <= settings.tree_sentence < len(run.trees) else 0
        layer = settings.tree_layer
        if not (isinstance(layer, int) and 0 <= layer < len(names)):
            layer = result["tasks"]["distance"]["best_hidden_states_index"]
        charts["tree"] = sentence_tree_chart(run, index, layer)
    return charts


def sentence_tree_chart(run: ProbeRun, index: int, layer: int) -> Chart:
    names = run.run["residual_names"]
    tree = run.trees[index]
    predicted = tree.predicted[layer]
    found = len(set(tree.gold) & set(predicted))
    return tree_chart(tree.words, tree.gold, predicted, f"{names[layer]}: {found} of the {len(tree.gold)} gold arcs found",
                      gold_labels=tree.labels, excluded=tree.excluded, name=f"probe_tree_{index + 1}_layer_{layer}")


def reads_words(run: dict) -> bool:
    """Whether some task of the run reads word vectors (the text tasks read single word pieces)."""
    return any(task(name).kind != "text" for name in run["tasks"])


def pieces_note(pieces: str) -> str:
    return f"a word's vector is {PIECES[pieces]}"
