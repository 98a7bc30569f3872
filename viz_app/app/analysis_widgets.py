"""Widgets the analysis pages share: the sentence-set picker (built-in or an upload), reading an upload within
limits (viz_app/app/uploads.py), the [MASK] picker, the chips that mask a token. Their cached analyses are in viz_app/cache.py, their charts in
viz_app/charts/; the analyses themselves live in the package.
"""
from __future__ import annotations

import streamlit as st

from bert.data import LabelledSentence, builtin_sentences, split_sentences
from viz_app.app import show, state, widgets
from viz_app.app import uploads
from viz_app.app.navigation import SENTENCES_FROM
from viz_app.app.page_context import Context
from viz_app.app.text import chip_labels, escape_markdown
from viz_app.specs.base import chosen_mask

BUILTIN, UPLOAD = SENTENCES_FROM.choices  # the built-in sentences, or a file of the visitor's


# ---- sentence sets --------------------------------------------------------------------------------------------


def sentence_source(key: str, most: int = 1000, choice: str | None = None) -> tuple[list[LabelledSentence], str] | None:
    """The sentence-set picker: built-in (the first N, N kept in the URL as f"{key}_count", starting at its
    default in viz_app/app/navigation.py) or an uploaded text file split into sentences. `choice` (BUILTIN or UPLOAD): a page that
    draws its own picker says which.
    Returns (sentences, a one-line description) or None after showing what is missing."""
    choice = choice or st.radio("Sentences", [BUILTIN, UPLOAD], horizontal=True, **state.kept(f"{key}_source", [BUILTIN, UPLOAD]))
    if choice == BUILTIN:
        high = min(most, len(builtin_sentences()))
        count = st.slider("How many", 20, high, step=10, **state.kept(f"{key}_count", range(20, high + 1, 10)))
        return builtin_sentences(count), f"the first {count} built-in sentences"
    upload = uploads.upload_box("A plain-text file: one sentence per line, or running text", ["txt"], f"{key}_file",
                                uploads.TEXT_BYTES)
    if upload is None:
        st.info("Choose a .txt file to probe your own text.")
        return None
    text = uploads.read_text(upload)
    if text is None:
        return None
    sentences = split_sentences(text, max_sentences=most)
    if len(sentences) < 10:
        show.warning("Found {} sentence(s) in that file; the analyses need at least 10.", len(sentences))
        return None
    return sentences, f"{len(sentences)} sentences from {upload.name}"  # shown as text


def require_mask(context: Context, key: str) -> int:
    """Which [MASK] to analyse; when the input has none or the model cannot predict, say so and stop the page here
    (as widgets.require does)."""
    if not context.loaded.summary.has_mlm_head:
        st.warning("This model has no masked-LM head, so there is no prediction to analyse. Pick minilm or a BERT with its MLM head.")
        st.stop()
    masks = list(context.prepared.all_masks)
    if not masks:
        st.info("Put a [MASK] in the sentence (type it, or click a word on the Masked prediction page) to analyse its prediction.")
        st.stop()
    tokens = context.prepared.base.tokens
    def describe(i: int) -> str:
        return f"position {i} (typed [MASK])" if i in context.prepared.typed_masks else f"position {i} (was '{tokens[i]}')"

    return widgets.select_int("[MASK] to analyse", f"{key}_mask", masks, format_func=describe,
                              default=chosen_mask(None, tuple(masks)))


def mask_chips(context: Context) -> None:
    """A chip per token that can be masked (the prediction page): the chips show every mask, typed or clicked;
    clicking one changes `masks`, the clicked ones, which the sentence box reads (a typed [MASK] stays in the
    sentence, and is said so)."""
    prepared, tokenizer = context.prepared, context.loaded.tokenizer
    labels, typed = chip_labels(prepared.base.tokens, prepared.maskable), set(prepared.typed_masks)

    def masks_changed() -> None:
        st.session_state["masks"] = sorted(set(st.session_state["mask_chips"]) - typed)

    st.session_state["mask_chips"] = list(prepared.all_masks)  # the chips follow the sentence, not their last click
    st.pills(
        f"Click tokens to mask them ({escape_markdown(tokenizer.cls_token)} and {escape_markdown(tokenizer.sep_token)} "
        f"cannot be masked; {escape_markdown(tokenizer.pieces.marker_note)})",
        prepared.maskable, selection_mode="multi", format_func=lambda position: labels[position], key="mask_chips",
        on_change=masks_changed,
    )
    if typed:
        st.caption("A [MASK] typed in the sentence stays masked: edit the sentence to remove it.")
