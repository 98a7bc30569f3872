"""The logic behind the fine-tuning pages, without Streamlit: next-sentence probabilities for both orders, class
probabilities with label names, token-label chips (escaped), the default model B, predictions side by side."""
from __future__ import annotations

import pytest
import torch

from bert import Bert, BertTokenizer
from bert_test_support import TINY_VOCAB, small_bert
from viz_app.specs import compare_models as model_comparison, sentence_tasks
from viz_app.app.forward import prepare_input
from viz_app.app.models import LoadedModel, ModelKey, summarize


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n")
    return BertTokenizer.from_vocab(path)


def tiny(tokenizer, seed=0, **heads) -> Bert:
    return small_bert(tokenizer.vocab_size, seed, **heads)


def test_next_sentence_reads_both_orders(tokenizer):
    model = tiny(tokenizer, mlm_head=False, nsp_head=True)
    result = sentence_tasks.next_sentence(model, tokenizer, "the dog went to the park", "her cat sat", 64, False)
    for first, second, shown in (("the dog went to the park", "her cat sat", result.follows),
                                 ("her cat sat", "the dog went to the park", result.swapped)):
        ids, types = tokenizer.encode(first, second).tensors()
        with torch.no_grad():
            assert shown == pytest.approx(float(model(ids, types, output="nsp").softmax(-1)[0, 0]))
    assert result.follows != pytest.approx(result.swapped)  # segments and positions differ: so do the answers


def test_class_probabilities_carry_the_label_names(tokenizer):
    model = tiny(tokenizer, mlm_head=False, classifier_labels=["sad", "calm", "happy"])
    table = sentence_tasks.class_probabilities(model, tokenizer.encode("the dog"))
    assert list(table["label"]) == ["sad", "calm", "happy"] and table["probability"].sum() == pytest.approx(1.0)
    assert model.output_heads == ["classifier"]


def test_token_label_chips_escape_what_the_user_typed(tokenizer):
    model = tiny(tokenizer, mlm_head=False, tagger_labels=["O", "<b>B-PER</b>"])
    table = sentence_tasks.token_labels(model, tokenizer.encode("the <script> dog"))
    assert len(table) == len(tokenizer.encode("the <script> dog")) and table["probability"].between(0.5, 1).all()
    chips = sentence_tasks.label_chips(table)
    assert "<script>" not in chips and "&lt;" in chips and "<b>B-PER</b>" not in chips
    assert "[CLS]" not in chips  # special tokens are left out


def test_model_b_defaults_to_a_partner(tokenizer):
    assert model_comparison.partner("minilm", ["minilm", "minilm-encoder", "folder"]) == "minilm-encoder"
    assert model_comparison.partner("minilm-encoder", ["minilm", "minilm-trec", "minilm-encoder"]) == "minilm-trec"
    assert model_comparison.partner("/some/folder", ["bert-base-uncased", "minilm"]) == "bert-base-uncased"
    assert model_comparison.partner("minilm", ["minilm", "folder"]) == "folder"


def test_predictions_side_by_side(tokenizer):
    a, b = (tiny(tokenizer, seed, nsp_head=True) for seed in (0, 1))
    a, b = (LoadedModel(ModelKey(name), model, tokenizer, summarize(model)) for name, model in (("a", a), ("b", b)))
    prepared = prepare_input(tokenizer, "the [MASK] went to the park", "her cat sat", [], False, 64)
    table = model_comparison.side_by_side(a, b, prepared)
    assert list(table["what"]) == ["[MASK] at position 2", "P(B follows A)"]
    assert table.iloc[0, 1] != table.iloc[0, 2]  # two different random models
    alone = prepare_input(tokenizer, "the [MASK] went to the park", "", [], False, 64)
    assert model_comparison.side_by_side(a, b, alone)["what"].tolist() == ["[MASK] at position 2"]


def test_a_model_without_a_masked_lm_head_says_so_beside_the_others_guesses(tokenizer):
    """The guesses of the model with the head, each equal to predict_masks' own, and the other's cell says why it
    has none (the page's first screen, minilm against minilm-encoder, is such a pair)."""
    from bert.predict import predict_masks

    with_head, without = tiny(tokenizer, 0), tiny(tokenizer, 1, mlm_head=False)
    a, b = (LoadedModel(ModelKey(name), model, tokenizer, summarize(model)) for name, model in (("a", with_head), ("b", without)))
    prepared = prepare_input(tokenizer, "the [MASK] went to the [MASK]", "", [], False, 64)
    for first, second, guessing in ((a, b, "model A"), (b, a, "model B")):
        table = model_comparison.side_by_side(first, second, prepared)
        expected = [", ".join(f"{c.token} {c.probability:.0%}" for c in guess.candidates)
                    for guess in predict_masks(with_head, tokenizer, prepared.masked, top_k=5)]
        assert table["what"].tolist() == ["[MASK] at position 2", "[MASK] at position 6"]
        assert table[guessing].tolist() == expected
        silent = "model B" if guessing == "model A" else "model A"
        assert table[silent].tolist() == [model_comparison.NO_GUESS] * 2
        assert f"Model {silent[-1]} has no masked-LM head" in model_comparison.one_sided(table)


def test_built_in_fine_tuned_models_are_offered_once_their_file_exists(tmp_path, monkeypatch):
    from viz_app.app import models

    shipped = tmp_path / "minilm_task.safetensors"
    monkeypatch.setattr(models, "FINETUNED_FILES", {"minilm-task": shipped})
    assert "minilm-task" not in [c.source for c in models.model_choices(tmp_path)]
    shipped.write_bytes(b"x")
    sources = [c.source for c in models.model_choices(tmp_path)]
    assert "minilm-task" in sources and sources[-1] == models.FOLDER
    assert "minilm_task.safetensors" in models.revision("minilm-task")


def test_label_legend_explains_known_codes_once_and_ignores_others():
    from viz_app.app.label_names import label_legend

    assert label_legend(["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]).startswith("ABBR: an abbreviation · DESC:")
    legend = label_legend(["O", "B-PER", "I-PER", "B-ORG", "I-ORG"])
    assert legend == ("O: not part of a name · PER: a person · ORG: an organisation"
                      " · B- marks the first word of a name, I- the words after it")
    assert label_legend(["sad", "happy"]) is None and label_legend([]) is None
