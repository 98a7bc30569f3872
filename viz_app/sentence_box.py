"""The sentence box at the top of every page that reads the sentence: the sentence, an optional second sentence,
the token count, and "Cut to N tokens" when the input is too long.

Home.py draws it (not the pages), so it is one widget shared by every page, with the keys `text`, `pair` and
`truncate` in session state and in the URL.
"""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from viz_app import models
from viz_app import forward as fw


@dataclass(frozen=True)
class SentenceInput:
    text: str
    pair: str
    truncate: bool
    prepared: fw.PreparedInput | None  # None when the model is missing or the input has a problem
    problem: fw.InputProblem | None


PAGES_WITHOUT = {"probes", "head_statistics", "word_contexts", "how_bert_was_trained"}  # pages (url_path) that read no shared sentence: no box


def render(url_path: str, loaded: models.LoadedModel | None, source: str | None) -> SentenceInput | None:
    """The box, unless the page `url_path` reads no sentence (then None)."""
    if url_path in PAGES_WITHOUT:
        return None
    sentence, second = st.columns([3, 2])
    text = sentence.text_area(
        "Sentence",
        key="text",
        persist_state="session",
        height=68,
        help="Type [MASK] where a word should be guessed, or click words on the prediction page to mask them.",
    )
    pair = second.text_input(
        "Second sentence (optional)",
        key="pair",
        persist_state="session",
        placeholder="Segment B, e.g. It ran away.",
        help="BERT reads two sentences as [CLS] A [SEP] B [SEP]; B's tokens get segment embedding 1.",
    )
    signature = (source, text, pair)
    if st.session_state.get("_mask_signature") not in (None, signature):
        st.session_state["masks"] = []  # the clicked masks belonged to another sentence
    st.session_state["_mask_signature"] = signature
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
        prepared = fw.prepare_input(loaded.tokenizer, text, pair, masks, truncate, max_positions)
        problem = None
    except fw.InputProblem as error:
        prepared, problem = None, error
    if truncate or (problem and problem.kind == "too_long"):
        truncate = st.checkbox(
            f"Cut to {max_positions} tokens",
            key="truncate",
            persist_state="session",
            help="Drop tokens from the end of the longer sentence until the input fits the model's positions.",
        )
    if problem and problem.kind == "too_long" and truncate:  # ticked in this run
        prepared = fw.prepare_input(loaded.tokenizer, text, pair, masks, True, max_positions)
        problem = None
    if prepared is not None:
        st.session_state["masks"] = list(prepared.masks)
        count = f"{len(prepared.base)} tokens of {max_positions}"
        if prepared.base.truncated:
            count += f" · {prepared.base.truncated} cut from the end"
        st.caption(count)
        if prepared.pair_dropped:
            st.caption("The second sentence has no tokens left after tokenization, so it is left out.")
    return SentenceInput(text, pair, truncate, prepared, problem)
