"""The URL parameters Streamlit does not bind itself, kept in `st.session_state` and mirrored in the URL.

Most widgets whose value should travel in a shared link are bound by Streamlit: `bind="query-params"` with a `key`
(the parameter's name) and the default in the widget call; Streamlit seeds the widget from the URL on a session's
first run, ignores invalid values, leaves defaults out of the URL and updates the URL as the user changes it.

PARAMS lists the rest, whose URL spelling Streamlit would change or which need more than one widget: the sentence
and its second sentence (left out of the link above MAX_URL_TEXT characters), the clicked masks, yes/no toggles
("1"/"0"; Streamlit writes true/false), lists ("0.1,5.11"; Streamlit repeats the parameter), choices shown by a
label (Streamlit writes the label, e.g. "integrated gradients" for integrated_gradients), the neuron (its default
depends on the input) and the model (a picker of two widgets). The first run of a session reads these from the URL
into session state; every run writes them back, so the address bar always reopens the same view.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

from viz_app import models

DEFAULT_TEXT = "The [MASK] barked at the mailman."
MAX_URL_TEXT = 4000  # longer sentences stay out of the link (browsers and servers cap URL lengths)


def _ints(value: str) -> list[int]:
    return sorted({int(part) for part in value.split(",") if part.strip()})


def _words(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _heads(value: str) -> list[tuple[int, int]]:
    """"3.7,0.1" -> [(0, 1), (3, 7)]: layer.head pairs."""
    pairs = [part.split(".") for part in value.split(",") if part.strip()]
    return sorted({(int(layer), int(head)) for layer, head in pairs})


def _join(values) -> str:
    return ",".join(map(str, values))


def _bool(value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


@dataclass(frozen=True)
class Param:
    parse: Callable[[str], Any]  # URL text -> value; raises ValueError for nonsense, which is then ignored
    dump: Callable[[Any], str]
    default: Any


PARAMS: dict[str, Param] = {
    "text": Param(str, str, DEFAULT_TEXT),
    "pair": Param(str, str, ""),
    "masks": Param(_ints, _join, []),
    "truncate": Param(_bool, lambda v: "1" if v else "0", False),
    "focus": Param(int, str, 1),
    "hide_special": Param(_bool, lambda v: "1" if v else "0", False),
    "mlp_token": Param(int, str, 1),
    "neuron": Param(int, str, None),  # None: the strongest neuron of the chosen token
    "image_format": Param(str, str, "png"),
    # Experiment pages. A None default: the page picks (its first [MASK], the last layer).
    "probe_tasks": Param(_words, _join, ["position", "continuation", "pos"]),
    "lens_mask": Param(int, str, None),
    "ablation_mask": Param(int, str, None),
    "ablation_mode": Param(str, str, "zero"),
    "ablation_heads": Param(_heads, lambda v: _join(f"{layer}.{head}" for layer, head in v), []),
    "ablation_layers": Param(_ints, _join, []),
    "stats_pairs": Param(_bool, lambda v: "1" if v else "0", True),
    "saliency_mask": Param(int, str, None),
    "saliency_method": Param(str, str, "integrated_gradients"),
    # Sentence tasks and model comparison.
    "tasks_method": Param(str, str, "integrated_gradients"),
    "compare_with": Param(str, str, None),  # model B's source; None: the page picks a partner for model A
    # One word, many contexts: the layer of the sentence-by-sentence heatmap
    "contexts_layer": Param(int, str, None),
    # Corpus search. None: the sentence's first token, the last layer.
    "search_position": Param(int, str, None),
    "search_layer": Param(int, str, None),
    "search_by": Param(str, str, "layer"),  # "layer": a layer's output; "head": one head's output
    # Layer probes on a treebank (see viz_app/probe_data.py): lists, toggles, choices shown by a label, None defaults
    "probes_source": Param(str, str, "wordnet"),  # wordnet, ud_ewt, labelled or text
    "probe_treebank_tasks": Param(_words, _join, ["upos", "deprel", "distance", "depth"]),
    "probe_pieces": Param(str, str, "first"),  # first, mean or last
    "probe_mdl": Param(_bool, lambda v: "1" if v else "0", False),
    "probe_measure": Param(str, str, None),  # None: the first measure of the run
    "probe_tree_sentence": Param(int, str, 0),  # index of a scored sentence, shown by its text
    "probe_tree_layer": Param(int, str, None),  # shown by its name; None: the distance probe's best layer
}
# The parameters Streamlit binds itself (bind="query-params"): how a link or a lesson file spells each, and the
# value the widget starts from (a page may start it elsewhere when that depends on the model, e.g. the last layer).
# Not read from or written to the URL here: lesson files are checked against them and set them in session state.
BOUND: dict[str, Param] = {
    "top_k": Param(int, str, 10),
    "layer": Param(int, str, 0),
    "head": Param(int, str, 0),
    "statistic": Param(str, str, "entropy"),
    "mlp_layer": Param(int, str, 0),
    "neurons_shown": Param(int, str, 48),
    "k": Param(int, str, 16),
    "probes_count": Param(int, str, 300),
    "probe_seed": Param(int, str, 0),
    "rollout_layer": Param(int, str, None),
    "stats_count": Param(int, str, 200),
    "stats_statistic": Param(str, str, "sep"),
    "saliency_steps": Param(int, str, 32),
    "tasks_class": Param(str, str, None),  # None: the top class
    "compare_folder": Param(str, str, ""),
    "compare_count": Param(int, str, 100),
    "contexts_word": Param(str, str, "bank"),
    "search_head": Param(int, str, 0),
    "search_k": Param(int, str, 10),
}
LINK_PARAMS = PARAMS | BOUND  # every parameter a link, or a lesson's step, can set
MODEL_PARAM = "model"  # the model's source; kept apart because the picker is two widgets (choice, folder)


def load_from_url() -> None:
    """On a session's first run: query parameters -> session state (bad values are ignored)."""
    if st.session_state.get("_loaded_url"):
        return
    st.session_state["_loaded_url"] = True
    query = st.query_params
    for key, param in PARAMS.items():
        value = copy.copy(param.default)  # a list default is never shared between sessions
        if key in query:
            try:
                value = param.parse(query[key])
            except ValueError:
                pass
        st.session_state.setdefault(key, value)
    st.session_state.setdefault("model_source_requested", query.get(MODEL_PARAM, ""))  # "": the first choice


def init_model_widgets(choices: list[models.ModelChoice]) -> None:
    """Point the picker at the requested model once its choices are known (a folder path goes to the folder box)."""
    requested = st.session_state.pop("model_source_requested", None)
    if requested is None:
        return
    sources = [c.source for c in choices]
    if not requested:
        st.session_state.setdefault("model_choice", models.first_choice(choices))
    elif requested in sources and requested != models.FOLDER:
        st.session_state.setdefault("model_choice", requested)
    elif requested in ("minilm", "minilm-encoder"):  # e.g. minilm asked for before its head file exists
        st.session_state.setdefault("model_choice", models.default_source())
    else:
        st.session_state.setdefault("model_choice", models.FOLDER)
        st.session_state.setdefault("model_folder", requested)


def _default(key: str, default):
    """An explicit default, else the key's default in PARAMS (one place for each default)."""
    return PARAMS[key].default if default is None and key in PARAMS else default


def clamp(key: str, options: list, default=None) -> None:
    """Keep a selection valid when its options change (another model, a shorter sentence)."""
    default = _default(key, default)
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else options[0]


def clamp_subset(key: str, options: list) -> None:
    """Keep a multi-selection to the options there are (a link may name layers this model lacks)."""
    default = _default(key, None)
    chosen = st.session_state.get(key, default)
    st.session_state[key] = [value for value in chosen if value in options] if isinstance(chosen, list) else copy.copy(default)


def write_url(model_source: str | None) -> None:
    """Session state -> query parameters: the model always (a new session's first choice depends on the local
    cache), other values only where they differ from the defaults, to keep links short."""
    wanted = {}
    if model_source:
        wanted[MODEL_PARAM] = model_source
    for key, param in PARAMS.items():
        value = st.session_state.get(key, param.default)
        if value is None or value == param.default:
            continue
        if key in ("text", "pair") and len(value) > MAX_URL_TEXT:
            continue
        wanted[key] = param.dump(value)
    # only our own keys: the parameters Streamlit binds are not ours to set or delete
    changed = {key: value for key, value in wanted.items() if st.query_params.get(key) != value}
    if changed:
        st.query_params.update(changed)
    for key in (MODEL_PARAM, *PARAMS):
        if key not in wanted and key in st.query_params:
            del st.query_params[key]
