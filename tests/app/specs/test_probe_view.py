"""The probes page's view function on a hand-made run: the measure and the tree's sentence and layer clamped as
the page's pickers clamp them, the same charts for a lesson step's state as for the page's settings."""
from __future__ import annotations

import json

from test_probe_layer_chart import NAMES
from test_probe_layer_chart import RUN as LAYER_RUN
from viz_app.specs.probes.runs import ProbeRun, SentenceTrees
from viz_app.specs.probes.view import ProbeViewSettings, probes_view

RUN = LAYER_RUN | {"residual_names": NAMES, "pieces": "mean"}  # the hand-made run of the curves' tests, as the page keeps it
TREE = SentenceTrees(("the", "dog", "barked"), ((0, 1), (1, 2)), (((0, 2), (1, 2)), ((0, 1), (1, 2)), ((0, 1), (0, 2))),
                     {frozenset((0, 1)): "det", frozenset((1, 2)): "nsubj"}, ())


def run(trees=(TREE,)) -> ProbeRun:
    return ProbeRun(json.dumps(RUN), RUN, [], trees)


def test_the_curves_of_the_chosen_measure_and_the_tree_at_the_best_layer():
    charts = probes_view(ProbeViewSettings(measure="uuas"), run())
    assert set(charts) == {"curves", "tree"}
    assert charts["curves"].figure.layout.title.text == "UUAS by layer · a word's vector is the mean of its pieces"
    assert charts["tree"].figure.layout.title.text == "after layer 0: 2 of the 2 gold arcs found"  # distance's best layer
    assert probes_view(ProbeViewSettings(tree_layer=0), run())["tree"].figure.layout.title.text == "embeddings: 1 of the 2 gold arcs found"


def test_settings_the_run_lacks_fall_back_as_the_pickers_do():
    charts = probes_view(ProbeViewSettings(measure="codelength", tree_sentence=5, tree_layer=9), run())
    assert charts["curves"].figure.layout.title.text.startswith("Accuracy by layer")  # the run's first measure
    assert charts["tree"].figure.layout.title.text.startswith("after layer 0:")
    assert set(probes_view(ProbeViewSettings(), run(trees=()))) == {"curves"}
    assert probes_view(ProbeViewSettings(), ProbeRun("{}", RUN | {"tasks": {}}, [], ())) == {}


def test_a_lesson_steps_state_gives_the_pages_charts():
    state = {"probe_measure": "selectivity", "probe_show_controls": False, "probe_tree_layer": 2}
    settings = ProbeViewSettings.from_state(state)
    assert settings == ProbeViewSettings("selectivity", False, True, 0, 2)
    charts = probes_view(settings, run())
    names = [trace.name for trace in charts["curves"].figure.data]
    assert names == ["upos", "upos at the embeddings"]  # no control curve
    assert list(charts["curves"].figure.data[0].y) == [0.6 - 0.5, 0.8 - 0.55, 0.9 - 0.5]
    assert charts["tree"].name == "probe_tree_1_layer_2"
