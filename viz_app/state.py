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

import streamlit as st

from viz_app.access import Resolution, Visitor
from viz_app.navigation import PARAMS
from viz_app.params import MAX_URL_TEXT, MODEL_PARAM

REFUSED = "_model_refused"  # the line that says a requested model is not offered, shown once by the sidebar


def clear_masks() -> None:
    """Widget callback (the sentence, the second sentence, the model): the clicked masks, kept in `masks` (and so
    in the URL), belonged to another sentence or another model's tokens."""
    st.session_state["masks"] = []


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


def init_model_widgets(visitor: Visitor) -> None:
    """Point the picker at the requested model once its choices are known (a folder path goes to the folder box,
    for a visitor who may type one). A model this visitor may not open: the default model, and REFUSED says so."""
    requested = st.session_state.pop("model_source_requested", None)
    if requested is None or "model_choice" in st.session_state:
        return
    choose(visitor.resolve(requested))


def choose(resolution: Resolution) -> None:
    """Put a resolved model into the picker (before the picker is drawn)."""
    st.session_state["model_choice"] = resolution.choice.source
    if resolution.folder:
        st.session_state["model_folder"] = resolution.folder
    if resolution.refused:
        st.session_state[REFUSED] = resolution.refused


def _default(key: str, default):
    """An explicit default, else the key's default in PARAMS (one place for each default)."""
    return PARAMS[key].default if default is None and key in PARAMS else default


def clamp(key: str, options: list, default=None) -> None:
    """Keep a selection valid when its options change (another model, a shorter sentence)."""
    default = _default(key, default)
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else options[0]


def clamp_subset(key: str, options: list, default: list | None = None) -> None:
    """Keep a multi-selection to the options there are (a link may name layers this model lacks); `default` where
    it holds none (nothing chosen yet, or "the page picks")."""
    default = _default(key, default)
    chosen = st.session_state.get(key)
    chosen = default if chosen is None else chosen
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
