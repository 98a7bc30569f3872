"""What a page reads: the loaded model and the prepared input, handed from Home.py to the page it runs.

Home.py builds the Context and runs the chosen page inside `serve(context)`; the page asks for it with
`widgets.require()`. A context variable carries it (not st.session_state): it holds for one run of one session's
script, since every session runs its script in its own thread, so a page never sees another session's or an
earlier run's context.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

import streamlit as st

from bert.analysis.attention.attention_stats import HeadStatistics
from viz_app import cache, models
from viz_app import forward as fw
from viz_app.sentence_box import SentenceInput
from viz_app.sidebar import PickedModel


@dataclass(frozen=True)
class Context:
    """What the pages need: the loaded model and the prepared input, or why they are missing."""

    source: str | None  # what the URL carries: "minilm", a hub id or a folder path
    folder: str | None  # the folder actually loaded, for a cached hub model or a local folder
    revision: str
    loaded: models.LoadedModel | None
    model_error: str | None
    prepared: fw.PreparedInput | None  # None on a page without the sentence box, or when the input has a problem
    problem: fw.InputProblem | None
    text: str
    pair: str
    truncate: bool

    def forward(self) -> fw.ForwardResult:
        """The one cached forward pass for this (model, text, pair, masks), shared and read-only."""
        return cache.forward(*self._input_key())

    def head_statistics(self) -> HeadStatistics:
        """Per-head attention statistics of this input, computed once and shared."""
        return cache.head_statistics(*self._input_key())

    def sentence_head_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes at the hooks only the sentence-level heads reach, for this input (cached)."""
        return cache.sentence_head_shapes(*self._input_key())

    def _input_key(self) -> tuple:
        return self.source, self.folder, self.revision, self.text, self.pair, self.prepared.masks, self.truncate

    @classmethod
    def of(cls, model: PickedModel, sentence: SentenceInput | None) -> Context:
        """The page's context; `sentence` is None on a page that reads no sentence (no sentence box)."""
        if sentence is None:
            sentence = SentenceInput(st.session_state.get("text", ""), st.session_state.get("pair", ""), False, None, None)
        return cls(model.source, model.folder, model.revision, model.loaded, model.error, sentence.prepared,
                   sentence.problem, sentence.text, sentence.pair, sentence.truncate)


_CURRENT: ContextVar[Context | None] = ContextVar("page_context", default=None)


@contextmanager
def serve(context: Context) -> Iterator[None]:
    """Make `context` the one `current()` returns while the page runs (Home.py: `with serve(context): page.run()`)."""
    token = _CURRENT.set(context)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Context | None:
    """The context Home.py serves to the running page; None when a page is run on its own."""
    return _CURRENT.get()
