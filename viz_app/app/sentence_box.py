"""The sentence box at the top of every page that reads the sentence: the sentence, an optional second sentence,
the token count, and "Cut to N tokens" when the input is too long.

Home.py draws it (not the pages), so it is one widget shared by every page, with the keys `text`, `pair` and
`truncate` in session state and in the URL. It prepares the input once (`forward.prepare_input`) with the clicked
masks (`masks` in session state); editing the sentence clears them, since they belonged to the old one.
"""
from __future__ import annotations

import streamlit as st

from viz_app.app import models, show, state
from viz_app.app.forward import InputProblem, SentenceInput, prepare_input
from viz_app.app.navigation import NO_SENTENCE_BOX


def render(url_path: str, loaded: models.LoadedModel | None) -> SentenceInput | None:
    """The box, unless the page `url_path` reads no sentence (its registry entry says so; then None)."""
    if url_path in NO_SENTENCE_BOX:
        return None
    sentence, second = st.columns([3, 2])
    text = sentence.text_area(
        "Sentence",
        **state.kept("text"),
        on_change=state.clear_masks,
        height=68,
        help="Type [MASK] where a word should be guessed, or click words on the prediction page to mask them.",
    )
    pair = second.text_input(
        "Second sentence (optional)",
        **state.kept("pair"),
        on_change=state.clear_masks,
        placeholder="Segment B, e.g. It ran away.",
        help="BERT reads two sentences as [CLS] A [SEP] B [SEP]; B's tokens get segment embedding 1.",
    )
    if loaded is None:
        return SentenceInput(text, pair, False, None, None)
    with second:
        return _prepare(loaded, text, pair)


def _prepare(loaded: models.LoadedModel, text: str, pair: str) -> SentenceInput:
    """Tokenize with the clicked masks; the token count and the cut option go under the second box (the page says
    what is wrong with the input, see widgets.require)."""
    max_positions = loaded.summary.max_positions
    truncate = bool(st.session_state.get("truncate", False))
    masks = st.session_state.get("masks", [])
    try:
        prepared = prepare_input(loaded.tokenizer, text, pair, masks, truncate, max_positions)
        problem = None
    except InputProblem as error:
        prepared, problem = None, error
    if truncate or (problem and problem.kind == "too_long"):
        truncate = st.checkbox(
            f"Cut to {max_positions} tokens",
            **state.kept("truncate"),
            help="Drop tokens from the end of the longer sentence until the input fits the model's positions.",
        )
    if problem and problem.kind == "too_long" and truncate:  # ticked in this run
        prepared = prepare_input(loaded.tokenizer, text, pair, masks, True, max_positions)
        problem = None
    if prepared is not None:
        st.session_state["masks"] = list(prepared.masks)
        count = f"{len(prepared.base)} tokens of {max_positions}"
        if prepared.base.truncated:
            count += f" · {prepared.base.truncated} cut from the end"
        show.caption("{}", count)
        if prepared.pair_dropped:
            st.caption("The second sentence has no tokens left after tokenization, so it is left out.")
    return SentenceInput(text, pair, truncate, prepared, problem)
