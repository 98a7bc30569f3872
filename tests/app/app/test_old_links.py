"""Links keep working: every parameter a widget once kept in the URL through Streamlit's own binding
(`bind="query-params"`, which wrote str(value) for ints and words, and a picker's label where it showed labels) is
read by viz_app/app/state.py into the same view, and a changed widget writes the same spelling back. A nonsense or
out-of-range value in any registry parameter leaves every page standing (Streamlit's binding ignored such values;
state.py falls back to the default or the nearest value the widget offers)."""
from __future__ import annotations

import pytest
from streamlit.elements.lib import policies
from streamlit.testing.v1.element_tree import Widget

from app_helpers import no_exception, open_page
from bert.analysis.representations.self_similarity import EXAMPLES
from viz_app.specs import features
from viz_app.app import models
from viz_app.app.navigation import DEFAULT_PAGE, LINK_PARAMS, REGISTRY
from viz_app.app.url_params import SHARED

UPLOAD_LABEL = features.CORPUS_LABELS[features.UPLOAD]  # what Streamlit wrote for the corpus pickers' "upload"
PLAY = "\n".join(EXAMPLES["play"])

# the parameters Streamlit's binding kept, each with a value other than its default as Streamlit spelt it
FORMERLY_BOUND = {
    "top_k": (12, "12"), "layer": (3, "3"), "head": (5, "5"), "statistic": ("sep", "sep"),
    "units": ("words", "words"), "k": (8, "8"), "mlp_layer": (2, "2"), "neurons_shown": (64, "64"),
    "probes_count": (100, "100"), "probes_ud_count": (50, "50"), "probe_seed": (7, "7"),
    "patch_clean": ("The king said that [MASK] was tired.",) * 2,
    "patch_corrupted": ("The queen said that [MASK] was tired.",) * 2,
    "trace_text": ("The king said that [MASK] was tired.",) * 2, "trace_samples": (5, "5"),
    "rollout_layer": (4, "4"), "stats_count": (30, "30"), "stats_statistic": ("cls", "cls"),
    "saliency_steps": (64, "64"), "saliency_samples": (50, "50"), "search_head": (2, "2"), "search_k": (20, "20"),
    "contexts_word": ("play", "play"), "contexts_sentences": (PLAY, PLAY),
    "features_look_at": ("MLP neurons", "MLP neurons"), "features_shown": (32, "32"),
    "features_corpus": ("upload", UPLOAD_LABEL), "neurons_layer": (2, "2"), "neurons_corpus": ("upload", UPLOAD_LABEL),
    "tasks_class": ("calm", "calm"), "compare_folder": ("/no/such/folder", "/no/such/folder"),
    "compare_count": (60, "60"),
}


def test_old_spellings_read_as_the_same_values_and_are_written_the_same_way():
    for name, (value, old) in FORMERLY_BOUND.items():
        param = LINK_PARAMS[name]
        assert value != param.default, name
        assert param.from_link(old) == value, name
        if old != UPLOAD_LABEL:  # a label is read; the link now names the corpus ("upload")
            assert param.dump(value) == old, name
    assert LINK_PARAMS["features_corpus"].dump("upload") == "upload"


def widget(at, key: str):
    """The widget drawn with this key, whatever its kind."""
    def nodes(node):
        yield node
        for child in (getattr(node, "children", None) or {}).values():
            yield from nodes(child)

    found = [node for node in nodes(at._tree) if isinstance(node, Widget) and node.key == key]
    assert found, f"no widget with key {key!r}"
    return found[0]


# page, an old link's parameters (with what else the view needs), and a widget to change: (key, value, its spelling)
OLD_LINKS = {
    "prediction": ({"top_k": "12"}, ("top_k", 3, "3")),
    "attention": ({"layer": "3", "head": "5", "statistic": "sep", "units": "words"}, ("statistic", "cls", "cls")),
    "embeddings": ({"k": "8"}, ("k", 4, "4")),
    "mlp": ({"mlp_layer": "2", "neurons_shown": "64", "units": "words"}, ("units", "word pieces", None)),
    "probes": ({"probes_count": "100", "probe_seed": "7"}, ("probe_seed", 9, "9")),
    "probes, UD": ({"probes_source": "ud_ewt", "probes_ud_count": "50"}, ("probes_ud_count", 60, "60")),
    "causal_tracing": ({"patch_clean": FORMERLY_BOUND["patch_clean"][1], "patch_exact": "0",
                        "patch_corrupted": FORMERLY_BOUND["patch_corrupted"][1]}, None),
    "causal_tracing, one": ({"causal_mode": "one", "trace_text": FORMERLY_BOUND["trace_text"][1], "trace_samples": "5"},
                            ("trace_samples", 3, "3")),
    "mixing": ({"rollout_layer": "4"}, ("rollout_layer", 2, "2")),
    "head_statistics": ({"stats_count": "30", "stats_statistic": "cls"}, ("stats_statistic", "sep", None)),
    "saliency": ({"saliency_steps": "64", "saliency_samples": "50", "saliency_method": "integrated_gradients"},
                 ("saliency_steps", 16, "16")),
    "corpus_search": ({"search_by": "head", "search_head": "2", "search_k": "20"}, ("search_k", 7, "7")),
    "word_contexts": ({"contexts_word": "play", "contexts_sentences": PLAY}, None),
    "features": ({"features_shown": "32", "features_corpus": UPLOAD_LABEL}, ("features_shown", 16, "16")),
    "features, neurons": ({"features_look_at": "MLP neurons", "neurons_layer": "2", "neurons_corpus": UPLOAD_LABEL},
                          ("neurons_layer", 1, "1")),
    "compare_models": ({"compare_with": models.FOLDER, "compare_folder": "/no/such/folder"}, None),
}


@pytest.mark.slow
@pytest.mark.parametrize("view", list(OLD_LINKS))
def test_an_old_link_opens_the_same_view_and_a_change_is_written_the_same_way(view):
    query, change = OLD_LINKS[view]
    at = open_page(view.split(",")[0], query)
    for key, text in query.items():
        if key in FORMERLY_BOUND:
            assert widget(at, key).value == FORMERLY_BOUND[key][0], key
            assert at.query_params[key] == FORMERLY_BOUND[key][1].replace(UPLOAD_LABEL, "upload"), key
    if change:
        key, value, spelling = change
        widget(at, key).set_value(value).run()
        no_exception(at)
        assert widget(at, key).value == value
        if spelling is None:  # back to the default: out of the link
            assert key not in at.query_params
        else:
            assert at.query_params[key] == spelling


def _page_of(name: str) -> str:
    """A page that reads the parameter (a shared one: the default page)."""
    if name in SHARED:
        return DEFAULT_PAGE
    return next(page.url_path for page in REGISTRY if name in page.params)


BAD = {"nonsense": "nonsense!", "out of range": "999999"}


@pytest.mark.slow
@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("name", list(LINK_PARAMS))
def test_a_bad_value_in_any_link_parameter_leaves_its_page_standing(name, bad):
    query = {name: BAD[bad]}
    if name.startswith(("trace_",)):
        query["causal_mode"] = "one"  # the page draws those widgets only then
    if name == "search_head":
        query["search_by"] = "head"
    if name == "probes_ud_count":
        query["probes_source"] = "ud_ewt"
    if name.startswith("neurons_"):
        query["features_look_at"] = "MLP neurons"
    at = open_page(_page_of(name), query)  # no exception
    value = at.session_state[name]
    options = LINK_PARAMS[name].choices
    if options and not isinstance(value, list):
        assert value in options, (name, value)


@pytest.mark.slow
def test_no_widget_gets_a_default_of_its_own_beside_the_session_state(monkeypatch):
    """Streamlit warns "created with a default value but also had its value set via the Session State API" when a
    widget passes value=/index=/default= while its key was just set in session state (as state.py does on a
    session's first run): the registry's default is the one default."""
    from streamlit.runtime.state import get_session_state

    both = []

    def watch(default_value, key, writes_allowed=True):
        if key in LINK_PARAMS and default_value is not None and get_session_state().is_new_state_value(key):
            both.append(key)

    monkeypatch.setattr(policies, "check_session_state_rules", watch)
    old_link = {name: spelling for name, (_, spelling) in FORMERLY_BOUND.items()}
    for page, query in (("prediction", old_link), ("attention", old_link), ("mlp", old_link), ("embeddings", old_link),
                        ("saliency", old_link), ("mixing", {}), ("probes", {}), ("head_statistics", {}),
                        ("corpus_search", {"search_by": "head"}), ("features", {}), ("word_contexts", {}),
                        ("features", {"features_look_at": "MLP neurons", "neurons_corpus": "upload"}),
                        ("causal_tracing", {"patch_exact": "0"}), ("causal_tracing", {"causal_mode": "one"}),
                        ("how_bert_was_trained", {}), ("lessons", {}), ("sentence_tasks", {"tasks_explain_nsp": "1"})):
        open_page(page, query)
    assert not both, sorted(set(both))
