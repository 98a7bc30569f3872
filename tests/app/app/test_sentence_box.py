"""The sentence box: at the top of the main area of every page that reads the sentence, one box shared by all of
them, none in the sidebar and none on the pages that read no sentence (the browser check of the first screen at
1366x768 is tests/browser/test_browser.py, its walk over every page). The pages are opened on a tiny random BERT's
folder: where the box is does not depend on the model, and the pages' own computations on it take milliseconds."""
from __future__ import annotations

import pytest

from app_helpers import no_exception
from viz_app.app.navigation import NO_SENTENCE_BOX

pytestmark = pytest.mark.slow  # every test here takes seconds

READS = {"attention": "../pages/attention.py", "logit_lens": "../pages/logit_lens.py",
         "corpus_search": "../pages/corpus_search.py"}
WITHOUT = {"probes": "../pages/probes.py", "head_statistics": "../pages/head_statistics.py",
           "word_contexts": "../pages/word_contexts.py", "how_bert_was_trained": "../pages/how_bert_was_trained.py",
           "causal_tracing": "../pages/causal_tracing.py", "circuits": "../pages/circuits.py",
           "variable": "../pages/variable.py"}


def test_the_box_is_on_pages_that_read_the_sentence_and_keeps_it_across_them(open_app, tiny_mlm_folder):
    assert set(WITHOUT) == NO_SENTENCE_BOX
    at = open_app(text="Dogs chase [MASK] cats.", pair="They run.", model=tiny_mlm_folder)
    # the sidebar's boxes: the open folder's and the download's, no sentence
    assert not at.sidebar.text_area and [box.key for box in at.sidebar.text_input] == ["model_folder", "download_repo_id"]
    at.main.text_area(key="text").input("Birds sing at [MASK].").run()
    for page in (*READS.values(), *WITHOUT.values(), "../pages/prediction.py"):
        at.switch_page(page).run()
        no_exception(at)
        boxes = [box.value for box in at.main.text_area if box.key == "text"]
        if page in WITHOUT.values():
            assert boxes == [], page
        else:
            assert boxes == ["Birds sing at [MASK]."], page
            assert at.main.text_input(key="pair").value == "They run.", page
