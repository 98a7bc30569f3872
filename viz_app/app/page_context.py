"""What a page reads: the picked model (a handle that describes it and cannot run it) and the sentence box's input,
handed from Home.py to the page it runs.

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

from viz_app.server.access import Visitor
from viz_app.app.forward import PreparedInput, SentenceInput
from viz_app.app.models import ModelHandle, ModelKey, PickedModel


@dataclass(frozen=True)
class Context:
    """The picked model and the input, or why they are missing; who is visiting (viz_app/server/access.py), and
    whether they follow a class (viz_app/lessons/following.py)."""

    model: PickedModel
    sentence: SentenceInput | None  # None on a page that reads no sentence (no sentence box)
    visitor: Visitor
    follows: bool = False  # a student following the class: the teacher's view, without the charts' downloads

    @property
    def key(self) -> ModelKey:
        """The model's key, for the caches (a page runs only once the model is loaded)."""
        return self.model.key

    @property
    def loaded(self) -> ModelHandle | None:
        """The model as a page reads it (names, sizes, config, tokenizer): it cannot run it. A page's forward pass
        is a spec's computation, run by viz_app/heavy.py's `run`, which alone hands the model to `compute`."""
        return None if self.model.loaded is None else ModelHandle.of(self.model.loaded)

    @property
    def prepared(self) -> PreparedInput | None:
        """None on a page without the sentence box, or when the input has a problem."""
        return self.sentence.prepared if self.sentence else None


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
