"""What the Lessons tests share: a class of the test's own (class mode, a fresh presenter key)."""
from __future__ import annotations

import secrets

import pytest


@pytest.fixture
def class_key(monkeypatch) -> str:
    key = secrets.token_urlsafe(12)  # a class of this test's own
    monkeypatch.setenv("BERT_INSIDE_CLASS", "1")
    monkeypatch.setenv("BERT_INSIDE_PRESENTER_KEY", key)
    return key
