"""Building a model whose every weight is about to be loaded, without drawing random weights first.

`with skip_init(): model = Bert(config)` leaves the parameters uninitialised (nn.Linear's own initialisation
and BERT's normal(0, 0.02) both skipped): the checkpoint loader (bert/checkpoint.py) fills every one of them
next, and checks that it did. Drawing them cost 1.1 to 1.5 s of a BERT-base load and moved the caller's random
number generator. Per thread (a context variable): other threads building models are not affected.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Iterator

_SKIPPING = contextvars.ContextVar("bert_skip_init", default=False)


def skipping_init() -> bool:
    return _SKIPPING.get()


@contextmanager
def skip_init() -> Iterator[None]:
    token = _SKIPPING.set(True)
    try:
        yield
    finally:
        _SKIPPING.reset(token)
