"""What the lecture hall's store reads back as the presenter's step: a lesson and plain values, never other objects.

Reference: pickle's own format (a payload that would call a function when loaded by `pickle.loads`)."""
from __future__ import annotations

import os
import pickle

import pytest

from viz_app.lessons.format import builtin_lessons
from viz_app.server.class_store import read_step


def test_every_builtin_lesson_comes_back_whole():
    for lesson in builtin_lessons().values():
        data = pickle.dumps((lesson, 1, "minilm"), protocol=pickle.HIGHEST_PROTOCOL)
        assert read_step(data) == (lesson, 1, "minilm") == pickle.loads(data)


class Payload:
    def __reduce__(self):
        return os.getcwd, ()  # any callable: pickle.loads would call it


def test_a_value_that_would_run_code_is_refused():
    data = pickle.dumps((Payload(), 0, None))
    assert isinstance(pickle.loads(data)[0], str)  # the plain unpickler runs it
    with pytest.raises(pickle.UnpicklingError, match="holds a lesson, not "):
        read_step(data)
