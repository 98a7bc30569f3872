"""Every URL parameter of the app, kept in `st.session_state` and mirrored in the URL: one mechanism for all.

The registry (viz_app/app/navigation.py `LINK_PARAMS`) gives each parameter its spelling and its default. The first run
of a session reads the link into session state (`load_from_url`: nonsense and names outside a parameter's choices
fall back to the default); every run writes the values that differ from the defaults back (`write_url`), so the
address bar always reopens the same view, and a default stays out of the link. A widget keeps its value by its key
alone: `st.slider("Candidates per [MASK]", 1, 30, **state.kept("top_k", range(1, 31)))` gives it the key (the
parameter's name) and Streamlit's `persist_state`, seeds it from the registry's default, and, given the values the
widget offers, puts a value outside them (a link's `top_k=999`, a layer another model lacks) back to the default.
So the widget takes no `value=`/`index=`/`default=` of its own: one place for each default. A widget that keeps its
value on one page only, outside the link, is kept the same way, its key and default listed in the registry with its
page (`Page.own_widgets`, `OWN_WIDGETS`); pages write no session state of their own (tests/app/app/test_widget_state.py).

A link is spelt as the widgets' values are: ints and words as they are (`top_k=12`, `units=words`), yes/no as
"1"/"0", lists comma-separated ("0,5,11"), a choice by its name (a label is read too). The sentence and its second
sentence stay out of the link above MAX_URL_TEXT characters; the model is kept apart (MODEL_PARAM: its picker is
two widgets).
"""
from __future__ import annotations

import copy

import streamlit as st

from viz_app.server.access import Resolution, Visitor
from viz_app.app.navigation import LINK_PARAMS, OWN_WIDGETS, default_of
from viz_app.app.url_params import MAX_URL_TEXT, MODEL_PARAM

REFUSED = "_model_refused"  # the line that says a requested model is not offered, shown once by the sidebar


def clear_masks() -> None:
    """Widget callback (the sentence, the second sentence, the model): the clicked masks, kept in `masks` (and so
    in the URL), belonged to another sentence or another model's tokens."""
    st.session_state["masks"] = []


def reset(*keys: str) -> None:
    """Widget callback: `keys` go back to their registry defaults (None: "the page picks"), as when another
    sentence makes their values meaningless (its guesses, its tokens)."""
    for key in keys:
        st.session_state[key] = copy.copy(_default(key, None))


def load_from_url() -> None:
    """On a session's first run: query parameters -> session state (bad values are ignored)."""
    if st.session_state.get("_loaded_url"):
        return
    st.session_state["_loaded_url"] = True
    query = st.query_params
    for key, param in LINK_PARAMS.items():
        value = param.from_link(query[key]) if key in query else copy.copy(param.default)  # a list: never shared
        st.session_state.setdefault(key, value)
    st.session_state.setdefault("model_source_requested", query.get(MODEL_PARAM, ""))  # "": the first choice


def init_model_widgets(visitor: Visitor) -> None:
    """Point the picker at the requested model once its choices are known (a folder path goes to the folder box,
    for a visitor who may type one). A model this visitor may not open: the default model, and REFUSED says so."""
    requested = st.session_state.pop("model_source_requested", None)
    if requested is None or "model_choice" in st.session_state:
        return
    choose(visitor.resolve(requested))


def typed_folder(visitor: Visitor) -> None:
    """Widget callback (the folder box): a folder this server offers (a teacher's, or a cached hub model's
    snapshot), typed by its path, is picked as its entry, so the link and the class's step name it as students
    see it; a student's link may name no path (viz_app/server/access.py)."""
    clear_masks()
    typed = str(st.session_state.get("model_folder") or "").strip()
    resolution = visitor.resolve(typed) if typed else None
    if resolution is not None and resolution.choice.folder is not None and not resolution.refused:
        choose(resolution)


def choose(resolution: Resolution) -> None:
    """Put a resolved model into the picker (before the picker is drawn)."""
    st.session_state["model_choice"] = resolution.choice.source
    if resolution.folder:
        st.session_state["model_folder"] = resolution.folder
    if resolution.refused:
        st.session_state[REFUSED] = resolution.refused


def kept(key: str, options=None, default=None) -> dict:
    """The keyword arguments of a widget whose value survives reruns and page switches and, for a URL parameter,
    travels in the link: its key and Streamlit's `persist_state`. It is seeded from the registry's default where the
    session holds none (a page's own widget: unless None, "the page picks"). `options`: the values the widget offers
    (a range for a slider or a number box), so that a value outside them goes back to `default` (else the
    registry's, else the nearest end of the range, else the first option) before the widget is drawn."""
    if key not in st.session_state and (key in LINK_PARAMS or OWN_WIDGETS.get(key) is not None):
        st.session_state[key] = copy.copy(default_of(key))
    if options is not None:
        clamp(key, options, default)
    return {"key": key, "persist_state": "session"}


def filling(key: str, fill, event: str = "on_change") -> dict:
    """The keyword arguments of a widget that fills others (a picked example fills the word and its sentences, a
    button draws the next seed): when its value changes (`event="on_click"`: when pressed), `fill(value)` gives
    their new values, {key: value}. Its own value is not kept."""
    return {"key": key, event: lambda: st.session_state.update(fill(st.session_state.get(key)))}


def _default(key: str, default):
    """An explicit default, else the key's default in the registry (one place for each default)."""
    return default_of(key) if default is None and (key in LINK_PARAMS or key in OWN_WIDGETS) else default


def clamp(key: str, options, default=None) -> None:
    """Keep a selection valid when its options change (another model, a shorter sentence) or a link names a value
    outside them. `options`: a list, or a range (a slider's values), where a default outside the range becomes its
    nearest end (a model with fewer than the default's 16 directions offers all it has)."""
    default = _default(key, default)
    value = st.session_state.get(key)
    if value not in options:
        if default in options:
            st.session_state[key] = default
        elif isinstance(options, range) and isinstance(default, int):
            st.session_state[key] = min(max(default, options[0]), options[-1])
        else:
            st.session_state[key] = options[0]


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
    for key, param in LINK_PARAMS.items():
        value = st.session_state.get(key, param.default)
        if value is None or value == param.default:
            continue
        if key in ("text", "pair") and len(value) > MAX_URL_TEXT:
            continue
        wanted[key] = param.dump(value)
    present = st.query_params.to_dict()  # read once: each lookup through st.query_params costs as much as this
    changed = {key: value for key, value in wanted.items() if present.get(key) != value}
    if changed:
        st.query_params.update(changed)
    for key in (MODEL_PARAM, *LINK_PARAMS):
        if key not in wanted and key in present:
            del st.query_params[key]
