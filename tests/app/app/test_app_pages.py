"""Every page with the default sentence, a sentence pair and a mask edit: what the pages show, not only "no error"."""
from __future__ import annotations

import numpy as np
import pytest

from bert.pretrained import MINILM_HEAD_FILE
from app_helpers import array, figures, go, no_exception, texts

needs_head = pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason=f"{MINILM_HEAD_FILE} (MiniLM's MLM head) is not there yet")
DEFAULT_TOKENS = ["[CLS]", "the", "[MASK]", "barked", "at", "the", "mail", "##man", ".", "[SEP]"]


def heatmaps(at) -> list[dict]:
    return [trace for figure in figures(at) for trace in figure["data"] if trace["type"] == "heatmap"]


@needs_head
def test_prediction_page_default(open_app):
    at = open_app("prediction")
    no_exception(at)
    assert at.title[0].value == "Masked prediction"
    chips = at.pills(key="mask_chips")
    assert chips.options == ["the", "\\[MASK\\]", "barked", "at", "the\u200b", "mail", "\\#\\#man", "\\."]  # unique, literal
    assert chips.value == [2]  # the typed [MASK]
    [figure] = figures(at)
    bars = [trace for trace in figure["data"] if trace["type"] == "bar"]
    probabilities = np.concatenate([array(trace["x"]) for trace in bars])
    labels = [label for trace in bars for label in trace["y"]]
    order = np.argsort([int(label.split(".")[0]) for label in labels])
    assert len(order) == 10  # the default top_k
    assert np.all(np.diff(probabilities[order]) <= 1e-9), "candidates must be best first"
    assert 0 < probabilities.max() <= 1
    assert "best guesses, filled in" in texts(at)
    assert "You typed this [MASK]" in texts(at)


@needs_head
def test_mask_edit_shows_rank_of_the_original_and_goes_to_the_url(open_app):
    at = open_app("prediction")
    at.pills(key="mask_chips").select(3).run()  # mask "barked"
    no_exception(at)
    assert at.session_state["masks"] == [3]
    assert at.query_params["masks"] == "3"
    assert len(figures(at)) == 2
    shown = texts(at)
    assert "The masked token **barked** is the model's **#" in shown
    assert "position 3, was “barked”" in " ".join(f["layout"]["title"]["text"] for f in figures(at))
    at.pills(key="mask_chips").unselect(3).run()
    assert at.session_state["masks"] == [] and "masks" not in at.query_params
    assert len(figures(at)) == 1


@needs_head
def test_top_k_slider_changes_the_number_of_candidates(open_app):
    at = open_app("prediction")
    at.slider(key="top_k").set_value(3).run()
    [figure] = figures(at)
    assert sum(len(trace["y"]) for trace in figure["data"]) == 3
    assert at.query_params["top_k"] == "3"  # the address bar reopens it (viz_app/app/state.py)
    [figure] = figures(open_app("prediction", top_k=3))  # and that address reopens it
    assert sum(len(trace["y"]) for trace in figure["data"]) == 3


@pytest.mark.slow
def test_attention_page_default(open_app):
    at = open_app("attention")
    no_exception(at)
    assert at.title[0].value == "Attention"
    pattern, query_key, overview, statistic = heatmaps(at)
    seq = len(DEFAULT_TOKENS)
    z = array(pattern["z"])
    assert z.shape == (seq, seq)
    np.testing.assert_allclose(z.sum(axis=1), 1, atol=1e-5)  # rows of a pattern sum to 1
    assert [label.replace("\u200b", "") for label in pattern["x"]] == DEFAULT_TOKENS
    assert array(overview["z"]).shape == (6 * (seq + 1), 12 * (seq + 1))  # 6 layers x 12 heads of 10x10 tiles with gaps
    assert array(statistic["z"]).shape == (6, 12)
    assert array(query_key["z"]).shape == (3, 32)  # the neuron view: q, k and q×k over a head's 32 dimensions
    bars = [t for f in figures(at) for t in f["data"] if t["type"] == "bar"]
    assert len(bars) == 2 and len(bars[0]["y"]) == seq == len(bars[1]["x"])  # the focus token's attention and scores
    [table] = at.dataframe
    assert len(table.value) == 72 and {"entropy", "cls", "sep", "punctuation", "previous", "next"} <= set(table.value.columns)


@pytest.mark.slow
def test_attention_selection_hides_specials_and_persists_across_pages(open_app):
    at = open_app("attention")
    at.selectbox(key="layer").select(3)
    at.selectbox(key="head").select(7)
    at.toggle(key="hide_special").set_value(True).run()
    no_exception(at)
    pattern = heatmaps(at)[0]
    assert array(pattern["z"]).shape == (8, 8)  # [CLS] and [SEP] hidden
    assert "Layer 3, head 7" in figures(at)[0]["layout"]["title"]["text"]
    assert (at.query_params["layer"], at.query_params["head"], at.query_params["hide_special"]) == ("3", "7", "1")
    go(at, "mlp")
    go(at, "attention")
    assert at.selectbox(key="layer").value == 3 and at.selectbox(key="head").value == 7
    assert (at.query_params["layer"], at.query_params["head"]) == ("3", "7")  # in the link on the other page too
    assert array(heatmaps(at)[0]["z"]).shape == (8, 8)


@pytest.mark.slow
def test_embeddings_page_default(open_app):
    at = open_app("embeddings")
    no_exception(at)
    assert at.title[0].value == "Embeddings"
    charts = figures(at)
    assert len(charts) == 8
    norms = charts[0]
    assert [trace["name"] for trace in norms["data"]] == ["|token|", "|position|", "|segment|", "|sum|"]
    assert all(len(array(trace["y"])) == len(DEFAULT_TOKENS) for trace in norms["data"])
    cosines = [t for t in heatmaps(at) if "cosine" in str(t.get("colorbar", {}).get("title", ""))]
    assert array(cosines[0]["z"]).shape == (512, 512)
    surviving = heatmaps(at)[-1]
    assert array(surviving["z"]).shape == (3, 3)
    np.testing.assert_allclose(np.diag(array(surviving["z"]))[2], 1.0, atol=1e-6)  # 2 segment rows, k >= 2
    assert "Reading it" in texts(at)


def test_mlp_page_default(open_app):
    at = open_app("mlp")
    no_exception(at)
    heatmap, top, neuron = figures(at)
    assert array(heatmap["data"][0]["z"]).shape == (len(DEFAULT_TOKENS), 48)
    assert len(top["data"][0]["y"]) == 20
    values = array(top["data"][0]["x"])
    assert np.all(np.diff(values) <= 0), "strongest neurons first"
    assert len(array(neuron["data"][0]["y"])) == len(DEFAULT_TOKENS)
    assert at.number_input(key="neuron").value == int(top["data"][0]["y"][0][1:])  # starts on the strongest


def test_architecture_page_default(open_app):
    at = open_app("architecture")
    no_exception(at)
    tree = at.code[0].value
    assert "token_embedding: Embedding(30522, 384)" in tree
    assert "hook_pattern: HookPoint" in tree and "→ [1, 12, 10, 10]" in tree
    assert "mlp1: Linear(384 → 1536)" in tree and "→ [1, 10, 1536]" in tree
    assert "5 more BertLayer" in tree
    table = at.dataframe[0].value
    assert 1_769_472 in table.iloc[:, 3].tolist() and 4_718_592 in table.iloc[:, 3].tolist()  # BERT-base: q, k, v weights 3 x 768², feed-forward 2 x 768 x 3072
    [treemap] = figures(at)
    assert treemap["data"][0]["type"] == "treemap"


@pytest.mark.slow
def test_sentence_pair_on_every_page(open_app):
    at = open_app("attention", pair="It ran away.")
    no_exception(at)
    tokens = [label.replace("\u200b", "") for label in heatmaps(at)[0]["x"]]
    assert tokens == DEFAULT_TOKENS + ["it", "ran", "away", ".", "[SEP]"]
    go(at, "embeddings")
    no_exception(at)
    segment = array(figures(at)[0]["data"][2]["y"])  # |segment| per token: A's 10 tokens share one, B's 5 another
    assert np.allclose(segment[:10], segment[0]) and np.allclose(segment[10:], segment[10]) and segment[0] != segment[10]
    for page in ("mlp", "architecture", "prediction"):
        go(at, page)
        no_exception(at)
    assert "15 tokens of 512" in "\n".join(c.value for c in at.main.caption)
    assert "runs on the CPU" in "\n".join(c.value for c in at.sidebar.caption)  # where the model runs (no GPU here)
