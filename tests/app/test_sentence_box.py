"""The sentence box: at the top of the main area of every page that reads the sentence, one box shared by all of
them, none in the sidebar and none on the pages that read no sentence (the browser check of the first screen at
1366x768 is tests/browser/test_first_screen.py)."""
from __future__ import annotations

import pytest

from app_helpers import no_exception
from viz_app.navigation import NO_SENTENCE_BOX

pytestmark = pytest.mark.slow  # every test here takes seconds

READS = {"attention": "../pages/2_attention.py", "logit_lens": "../pages/7_logit_lens.py",
         "corpus_search": "../pages/14_corpus_search.py"}
WITHOUT = {"probes": "../pages/6_probes.py", "head_statistics": "../pages/10_head_statistics.py",
           "word_contexts": "../pages/15_word_contexts.py", "how_bert_was_trained": "../pages/16_how_bert_was_trained.py",
           "causal_tracing": "../pages/18_causal_tracing.py"}


def test_the_box_is_on_pages_that_read_the_sentence_and_keeps_it_across_them(open_app):
    assert set(WITHOUT) == NO_SENTENCE_BOX
    at = open_app(text="Dogs chase [MASK] cats.", pair="They run.")
    assert not at.sidebar.text_area and [box.key for box in at.sidebar.text_input] == ["download_repo_id"]
    at.main.text_area(key="text").input("Birds sing at [MASK].").run()
    for page in (*READS.values(), *WITHOUT.values(), "../pages/1_prediction.py"):
        at.switch_page(page).run()
        no_exception(at)
        boxes = [box.value for box in at.main.text_area if box.key == "text"]
        if page in WITHOUT.values():
            assert boxes == [], page
        else:
            assert boxes == ["Birds sing at [MASK]."], page
            assert at.main.text_input(key="pair").value == "They run.", page
