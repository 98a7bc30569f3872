"""Links keep working: every parameter a widget once kept in the URL through Streamlit's own binding
(`bind="query-params"`, which wrote str(value) for ints and words, and a picker's label where it showed labels) is
read by viz_app/app/state.py into the same view, and a changed widget writes the same spelling back. A nonsense value in
any registry parameter reads as its default (Streamlit's binding ignored such values); the every-page sweep
(tests/app/app/test_every_page.py) opens every page with all of them at once, nonsense and out of range, and with the
old spellings, where state.py falls back to the default or the nearest value the widget offers."""
from __future__ import annotations

import pytest

from app_helpers import FORMERLY_BOUND, PLAY, UPLOAD_LABEL, no_exception, open_page
from page_checks import widgets
from viz_app.app import models
from viz_app.app.navigation import LINK_PARAMS


def test_old_spellings_read_as_the_same_values_and_are_written_the_same_way():
    for name, (value, old) in FORMERLY_BOUND.items():
        param = LINK_PARAMS[name]
        assert value != param.default, name
        assert param.from_link(old) == value, name
        if old != UPLOAD_LABEL:  # a label is read; the link now names the corpus ("upload")
            assert param.dump(value) == old, name
    assert LINK_PARAMS["features_corpus"].dump("upload") == "upload"


# page, an old link's parameters (with what else the view needs), and a widget to change: (key, value, its spelling)
OLD_LINKS = {
    "prediction": ({"top_k": "12"}, ("top_k", 3, "3")),
    "attention": ({"layer": "3", "head": "5", "statistic": "sep", "units": "words"}, ("statistic", "cls", "cls")),
    "embeddings": ({"k": "8"}, ("k", 4, "4")),
    "mlp": ({"mlp_layer": "2", "neurons_shown": "64", "units": "words"}, ("units", "word pieces", None)),
    "probes": ({"probes_count": "20", "probe_seed": "7"}, ("probe_seed", 9, "9")),
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
            assert widgets(at)[key].value == FORMERLY_BOUND[key][0], key
            assert at.query_params[key] == FORMERLY_BOUND[key][1].replace(UPLOAD_LABEL, "upload"), key
    if change:
        key, value, spelling = change
        widgets(at)[key].set_value(value).run()
        no_exception(at)
        assert widgets(at)[key].value == value
        if spelling is None:  # back to the default: out of the link
            assert key not in at.query_params
        else:
            assert at.query_params[key] == spelling


BAD = {"nonsense": "nonsense!", "out of range": "999999"}


# how each kind of parameter reads the two bad values (None: its default), written out by hand
READS = {
    "int": {"nonsense": None, "out of range": 999_999},
    "_ints": {"nonsense": None, "out of range": [999_999]},
    "_heads": {"nonsense": None, "out of range": None},  # not layer.head
    "_bool": {"nonsense": None, "out of range": None},
    "str": {"nonsense": "nonsense!", "out of range": "999999"},
    "_words": {"nonsense": ["nonsense!"], "out of range": ["999999"]},
}


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("name", list(LINK_PARAMS))
def test_a_bad_value_in_any_link_parameter_reads_as_its_default_or_as_written(name, bad):
    """Nonsense a parameter cannot parse, or a choice it does not offer, reads as its default; anything else as
    written (a number out of the model's range is the widget's to bring back: the every-page sweep's "out of range"
    input, tests/app/app/test_every_page.py, opens every page with all of them at once)."""
    param = LINK_PARAMS[name]
    value = param.from_link(BAD[bad])
    if param.choices:  # no choice is called "nonsense!" or "999999"
        assert value == ([] if isinstance(param.default, list) else param.default), (name, value)
        return
    expected = READS[getattr(param.parse, "__name__", "")][bad]
    assert value == (param.default if expected is None else expected), (name, value)
