"""The shared sidebar: the model picker and the model's size at the top, the page list, the download box, the chart
format; for a student who follows a class, one line naming the class's model in their place.

`render(visitor, pages)` runs on every page (Home.py calls it) and returns the model it picked; the sentence box is in the
main area (viz_app/app/sentence_box.py). A student (viz_app/server/access.py) picks among the offered models only: no folder
box, no download box, and no server path in any message.
"""
from __future__ import annotations

import dataclasses

import streamlit as st

from bert.errors import BertError, quoted
from viz_app.server import access, downloads as download
from viz_app import cache
from viz_app.app import models, show, state
from viz_app.server.access import Visitor
from viz_app.app.models import LoadedModel, ModelKey, PickedModel
from viz_app.app.navigation import LINK_PARAMS


PICKER_HELP = ("minilm is built in and works offline. bert-base-uncased appears here, first and chosen, once it is "
               "in your local Hugging Face cache. Any folder with config.json, weights and vocab.txt works too.")
STUDENT_HELP = "The models this server offers; minilm is built in."
# Streamlit cuts a page link's label at the sidebar's edge ("Which connections carry the answ…"): wrap it instead
PAGE_LINKS_WRAP = ("<style>[data-testid=stSidebar] [data-testid=stPageLink-NavLink] span, "
                   "[data-testid=stSidebar] [data-testid=stPageLink-NavLink] p {white-space: normal; overflow: visible}</style>")


def render(visitor: Visitor, pages: dict[str, list], follows: bool = False) -> PickedModel:
    """The sidebar, top to bottom: the model picker with the model's summary (first, so that a teacher on a small
    screen never scrolls to it), the page list (`pages`: heading -> st.Page, Home.py's navigation), the download box
    and the chart format. A student who follows the class (`follows`) has none of these controls, since the
    teacher picks the page and the model: one line says so and names the model (a following student's every page
    sends seven elements fewer at every step of the class: docs/benchmarks.md, "A lecture hall")."""
    with st.sidebar:
        st.markdown("### :material/search: Inside BERT")
        if follows:
            return _followed_model(visitor)
        picker = st.container()  # drawn first; the download box below runs first, so a new model can be chosen
        _page_list(pages)
        st.divider()
        if visitor.role.may_choose_any_model and (downloaded := _download_box()):
            cache.forget_model_choices()  # the new model is in the cache now: list it on the next run
            st.session_state["model_choice"] = downloaded
            choices = access.picker_choices(cache.model_choices(), visitor.settings, visitor.role)
            visitor = dataclasses.replace(visitor, choices=tuple(choices))
        formats = list(LINK_PARAMS["image_format"].choices)
        st.radio(
            "Download charts as",
            formats,
            format_func=str.upper,
            **state.kept("image_format", formats),
            horizontal=True,
            help="Every chart's toolbar (top right, on hover) has a camera button that downloads it; "
            "the CSV button under a chart downloads the numbers behind it.",
        )
        st.caption("The address bar holds this view (page, model, sentence, masks, selections): copy it to share.")
        with picker:
            return _pick_model(visitor)


def _page_list(pages: dict[str, list]) -> None:
    """Every page under its heading (st.navigation's own list would sit above the picker), each title whole."""
    st.html(PAGE_LINKS_WRAP)
    for heading, group in pages.items():
        show.caption("{}", heading)
        for page in group:
            st.page_link(page)


def _download_box() -> str | None:
    """A hub id to download, with a progress bar; the id once it is in the local cache, else None."""
    with st.expander("Download a model", icon=":material/download:"):
        repo_id = st.text_input(
            "Hugging Face model name",
            **state.kept("download_repo_id"),
            help="The name of a BERT on huggingface.co, e.g. bert-base-uncased (about 440 MB, the original BERT), "
            "google-bert/bert-base-cased, FacebookAI/xlm-roberta-base (100 languages) or facebook/esm2_t6_8M_UR50D "
            "(proteins, about 30 MB). It is saved in your Hugging Face cache and works offline afterwards.",
        ).strip()
        if not st.button("Download", key="download_button", disabled=not repo_id):
            return None
        bar = st.progress(0.0, text=f"Downloading {repo_id}…")
        try:
            download.download_with_progress(repo_id, lambda done, text: bar.progress(done, text=f"{repo_id}: {text}"))
        except BertError as error:
            bar.empty()
            show.error("Could not download: {}", error, icon=":material/cloud_off:")
            return None
        bar.empty()
        show.success("{} is downloaded and chosen above.", repo_id)
        return repo_id


def _pick_model(visitor: Visitor) -> PickedModel:
    state.init_model_widgets(visitor)
    by_source = {c.source: c for c in visitor.choices}
    choice = by_source[
        st.selectbox(
            "Model",
            list(by_source),
            format_func=lambda s: by_source[s].name,  # short: the sidebar cuts a long entry; the caption has it all
            **state.kept("model_choice", list(by_source), models.default_source()),
            on_change=state.clear_masks,
            help=PICKER_HELP if visitor.role.may_choose_any_model else STUDENT_HELP,
        )
    ]
    if choice.note:
        show.caption("{}", choice.label)
    _refused_once()
    if choice.source == models.FOLDER:
        path = st.text_input(
            "Folder", **state.kept("model_folder"), on_change=state.typed_folder, args=(visitor,),
            placeholder="/path/to/a/bert/folder"
        ).strip()
        if not path:
            message = "Type the path of a Hugging Face BERT folder (config.json, weights, vocab.txt)."
            return PickedModel(None, None, message)
        source, folder = path, path
    else:
        source, folder = choice.source, choice.folder
    picked = _loaded(ModelKey.of(source, folder), visitor)
    if picked.loaded is not None:
        _describe(picked.loaded, source, visitor)
    return picked


def _followed_model(visitor: Visitor) -> PickedModel:
    """The class's model, which the class's step put into the session as the picker's value
    (viz_app/lessons/following.py), named in one line; no picker."""
    state.init_model_widgets(visitor)
    by_source = {c.source: c for c in visitor.choices}
    state.clamp("model_choice", list(by_source), models.default_source())
    choice = by_source[st.session_state["model_choice"]]
    _refused_once()
    source, folder = choice.source, choice.folder
    if choice.source == models.FOLDER:  # a visitor who may type a folder's path (the owner, following a class)
        source = folder = str(st.session_state.get("model_folder") or "").strip()
        if not folder:
            return PickedModel(None, None, "Type the path of a Hugging Face BERT folder (config.json, weights, "
                               "vocab.txt): press Explore on my own, then pick the folder.")
    picked = _loaded(ModelKey.of(source, folder), visitor)
    if picked.loaded is not None:
        show.caption(":material/group: Your screen follows the class: your teacher picks the page and the model, {} "
                     "({}). Press **Explore on my own** above the page to choose them yourself.",
                     choice.name, picked.loaded.summary.one_line())
    return picked


def _refused_once() -> None:
    """The line that says a requested model is not offered (state.REFUSED), once."""
    if refused := st.session_state.pop(state.REFUSED, None):
        show.info("{}", refused, icon=":material/info:")


def _loaded(key: ModelKey, visitor: Visitor) -> PickedModel:
    """The model `key` names, from the app's cache; where it does not load, an error box saying why (a server
    path only for a visitor who may read them)."""
    try:
        loaded = cache.load_model(key)
    except (BertError, OSError, ValueError, RuntimeError) as error:
        message = f"Could not load {quoted(key.source)} ({access.failure(error, visitor.role)}). Pick another model."
        show.error("{}", message)
        return PickedModel(key, None, message)
    return PickedModel(key, loaded, None)


def _describe(loaded: LoadedModel, source: str, visitor: Visitor) -> None:
    """Under the picker: the model's size, how it differs from BERT's layers, and whether it can fill in [MASK]."""
    summary = loaded.summary
    show.caption("{}", summary.one_line())
    for note in models.family_notes(loaded.model.config):
        show.caption(":material/info: {}", note)
    if summary.has_mlm_head:
        st.caption(":material/check_circle: Masked-LM head: it can fill in [MASK].")
        if source == "minilm" and visitor.role.may_choose_any_model:  # the note points at the download box
            show.caption(":material/info: {}", models.BUILTIN_NOTE)
    elif "replaced" in loaded.model.output_heads:
        st.caption(":material/block: No masked-LM head: ELECTRA's discriminator. The prediction page shows which "
                   "words look replaced.")
    else:
        st.caption(":material/block: No masked-LM head: every page works except prediction.")
