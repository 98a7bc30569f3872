"""The attention page's DeBERTa section, "Where does this head's score come from?" (He et al. 2021): on a tiny
DebertaV2ForMaskedLM built by transformers' own class, the page draws the chosen head's three score terms side by
side, and the three panels add up, cell by cell, to the scores transformers' own attention hands to its softmax on
the same weights for that head. A BERT's attention page has no such section. The chart builder alone: one colour
range for the three panels, centred on 0, and each title's share of the magnitude, hand-computed."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from app_helpers import array, figures, no_exception, open_page, texts
from bert.analysis.attention.score_terms import ScoreTerms
from families.family_support import build_hf, deberta_pass, write_tiny_tokenizer
from viz_app.charts.score_terms import score_terms_heatmaps

SENTENCE = "the dog barked at the cat and the man went to the park with the [MASK]."
SECTION = "Where does this head's score come from?"
TITLES = ("content → content", "content → position", "position → content")


def _terms_figure(at) -> dict | None:
    found = [figure for figure in figures(at) if figure["layout"]["title"]["text"].endswith("where each score comes from")]
    return found[0] if found else None


def test_the_chart_shares_one_centred_range_and_says_each_terms_share():
    # over the shown positions 1 and 2 the magnitudes are 2, 1 and 1; [CLS]'s row and column (9) are not shown
    c2c = np.array([[9.0, 0, 0], [0, 1, -1], [0, 0, 0]])
    c2p = np.array([[9.0, 0, 0], [0, -1, 0], [0, 0, 0]])
    p2c = np.array([[0.0, 0, 0], [0, 0, 0.5], [0, 0.5, 0]])
    chart = score_terms_heatmaps(ScoreTerms(1, 0, ("[CLS]", "a", "b"), c2c, c2p, p2c), [1, 2])
    figure = chart.figure.to_plotly_json()
    assert [note["text"] for note in figure["layout"]["annotations"]] == [
        "content → content<br>50% of the magnitude", "content → position<br>25% of the magnitude",
        "position → content<br>25% of the magnitude"]
    colours = figure["layout"]["coloraxis"]
    assert (colours["cmin"], colours["cmid"], colours["cmax"]) == (-1, 0, 1)
    assert all(trace["coloraxis"] == "coloraxis" for trace in figure["data"])
    np.testing.assert_array_equal(chart.data["score"], [0, -0.5, 0.5, 0])


@pytest.fixture(scope="module")
def deberta(tmp_path_factory, tiny_vocab_file):
    """(the saved folder, transformers' softmax input [head, query, key] per layer on SENTENCE)."""
    import bert

    folder = tmp_path_factory.mktemp("deberta_section")
    theirs = build_hf("deberta-v2", "DebertaV2ForMaskedLM")
    theirs.save_pretrained(folder)
    write_tiny_tokenizer(folder, tiny_vocab_file)
    _, tokenizer = bert.load_pretrained(str(folder))
    _, scores = deberta_pass(theirs, torch.tensor([tokenizer.encode(SENTENCE).input_ids]))
    return folder, [layer.numpy() for layer in scores]


@pytest.mark.slow  # the app on a model
def test_a_deberta_heads_three_panels_add_up_to_transformers_scores(deberta):
    folder, reference = deberta
    at = open_page("attention", {"model": folder, "text": SENTENCE, "layer": 1, "head": 1})
    assert SECTION in texts(at) and "He et al. 2021" in texts(at)
    figure = _terms_figure(at)
    assert figure is not None and figure["layout"]["title"]["text"].startswith("Layer 1, head 1")
    titles = [note["text"] for note in figure["layout"]["annotations"]]
    assert [title.split("<br>")[0] for title in titles] == list(TITLES)
    panels = [array(trace["z"]).astype(float) for trace in figure["data"]]
    assert len(panels) == 3 and all(np.abs(panel).max() > 1e-3 for panel in panels)
    np.testing.assert_allclose(sum(panels), reference[1][1], atol=1e-5)  # head 1 of layer 1, every token shown
    assert not np.allclose(sum(panels), reference[1][0], atol=1e-3)  # another head's scores differ
    shares = [float(title.split("<br>")[1].split("%")[0]) for title in titles]
    magnitudes = [np.abs(panel).sum() for panel in panels]
    np.testing.assert_allclose(shares, [round(100 * m / sum(magnitudes)) for m in magnitudes], atol=0.5)


@pytest.mark.slow  # the app on a model
def test_the_query_key_section_says_what_deberta_adds(deberta):
    """Above the split, DeBERTa's q·k is its content-to-content term, divided by sqrt(3 x head size), and the
    attention shown is the model's (all three terms): transformers' softmax of its scores at the chosen pair."""
    folder, reference = deberta
    at = open_page("attention", {"model": folder, "text": SENTENCE, "layer": 1, "head": 1})
    focus, key = at.selectbox(key="focus").value, at.selectbox(key="neuron_key").value
    metrics = {metric.label: metric.value for metric in at.metric}
    panels = [array(trace["z"]).astype(float) for trace in _terms_figure(at)["data"]]
    assert float(metrics["Content → content score: q·k / √(3 × 16)"]) == pytest.approx(panels[0][focus, key], abs=1e-3)
    expected = torch.tensor(reference[1][1][focus]).softmax(-1)[key]
    assert float(metrics["Attention after softmax (all three terms)"].rstrip("%")) == pytest.approx(100 * float(expected), abs=0.06)


@pytest.mark.slow  # the app on a model
def test_a_berts_attention_page_has_no_such_section(tiny_mlm_folder):
    at = open_page("attention", {"model": tiny_mlm_folder, "text": SENTENCE})
    no_exception(at)
    assert SECTION not in texts(at) and _terms_figure(at) is None
    assert any(figure["layout"]["title"]["text"].startswith("Layer 0, head 0") for figure in figures(at))  # the page drew


@pytest.mark.slow  # the app on a model
def test_the_section_goes_through_the_budget(deberta, monkeypatch):
    """With no budget the owner (at the server's machine: a student could not open a folder) reads what the section
    costs and what to lower, and it starts once confirmed; the rest of the page is drawn meanwhile."""
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "0")
    folder, _ = deberta
    unseen = "the cat sat by the door and the girl ran to the shop with the [MASK]."  # no pass of it is kept yet
    at = open_page("attention", {"model": folder, "text": unseen})
    assert SECTION not in texts(at) and not figures(at)  # the page's own pass costs as much: it asks first
    at.button(key="heavy_confirm_recorded.pass").click().run()
    shown = texts(at)
    assert SECTION in shown and "This needs 1 forward pass of" in shown and "Lower a shorter text" in shown
    assert _terms_figure(at) is None and figures(at)  # not started; the head's pattern and the rest still drawn
    at.button(key="heavy_confirm_score_terms").click().run()
    no_exception(at)
    assert _terms_figure(at) is not None
