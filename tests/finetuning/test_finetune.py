"""Fine-tuning end to end on toy tasks a tiny BERT can learn in seconds, the saved folder in `transformers`,
and word-piece label alignment on a hand-made case."""
from __future__ import annotations

import json
import random

import pytest
import torch

import bert
from bert import Bert, BertConfig
from bert.finetuning.data import IGNORE, Example, encode, label_names, read_examples
from bert.finetuning.train import FinetuneConfig, finetune
from bert_test_support import TINY_VOCAB

FILLER = ["the", "at", "and", "her", "went", "to", "is", "of"]
KEYS = {"dog": "pet", "cat": "pet", "park": "place", "mail": "place"}


def toy_sentence(rng: random.Random, key: str) -> list[str]:
    words = [rng.choice(FILLER) for _ in range(rng.randint(2, 5))]
    words.insert(rng.randint(0, len(words)), key)
    return words


def toy_examples(count: int, seed: int) -> list[Example]:
    """A sentence with one key word; its class is the key word's (pet or place)."""
    rng = random.Random(seed)
    examples = []
    for i in range(count):
        key = rng.choice(list(KEYS))
        examples.append(Example(" ".join(toy_sentence(rng, key)), None, KEYS[key], f"toy:{i}"))
    return examples


def tiny_bert(**heads) -> Bert:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, max_position_embeddings=32)
    return Bert(config, mlm_head=False, **heads)


FAST = dict(epochs=8, batch_size=8, learning_rate=2e-3, warmup_fraction=0.1, max_length=16, patience=0)


@pytest.fixture(scope="module")
def trained_classifier(tmp_path_factory, tokenizer):
    train, dev = toy_examples(96, seed=1), toy_examples(40, seed=2)
    model = tiny_bert(classifier_labels=label_names(train))
    out = tmp_path_factory.mktemp("toy_classifier")
    best = finetune(model, tokenizer, train, dev, out, FinetuneConfig(**FAST))
    return model, best, out


@pytest.mark.slow
def test_tiny_model_from_scratch_learns_a_separable_task_to_full_dev_accuracy(trained_classifier):
    _, best, out = trained_classifier
    assert best["accuracy"] == 1.0 and best["macro_f1"] == 1.0
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert log[0]["step"] == 12 and len(log) == 8  # one dev evaluation per epoch: 96 / 8 = 12 steps
    assert json.loads((out / "model" / "config.json").read_text())["id2label"] == {"0": "pet", "1": "place"}


@pytest.mark.slow
def test_saved_folder_loads_in_transformers_with_equal_logits(trained_classifier, tokenizer):
    from transformers import BertForSequenceClassification

    _, _, out = trained_classifier
    ours, our_tokenizer = bert.load_pretrained(str(out / "model"))
    theirs = BertForSequenceClassification.from_pretrained(out / "model", attn_implementation="eager").eval()
    assert ours.labels == [theirs.config.id2label[i] for i in range(2)] == ["pet", "place"]
    encodings = [our_tokenizer.encode(e.text) for e in toy_examples(6, seed=3)]
    longest = max(len(e) for e in encodings)
    ids = torch.tensor([e.input_ids + [0] * (longest - len(e)) for e in encodings])
    mask = (torch.arange(longest) < torch.tensor([len(e) for e in encodings])[:, None]).long()
    types = torch.zeros_like(ids)
    with torch.no_grad():
        torch.testing.assert_close(ours(ids, types, mask, output="classifier"), theirs(input_ids=ids, token_type_ids=types, attention_mask=mask).logits, atol=1e-5, rtol=1e-5)


def test_a_killed_run_resumes_from_its_checkpoint_and_ends_as_an_unbroken_run(tmp_path, tokenizer, monkeypatch):
    import bert.finetuning.train as train_module

    train, dev = toy_examples(32, seed=4), toy_examples(8, seed=5)
    config = FinetuneConfig(**{**FAST, "epochs": 3})  # 4 steps an epoch; a checkpoint after each epoch
    unbroken = tiny_bert(classifier_labels=["pet", "place"])
    finetune(unbroken, tokenizer, train, dev, tmp_path / "unbroken", config)

    real_step, calls = train_module.apply_gradients, []

    def dies_at_step_7(*args):
        calls.append(1)
        if len(calls) == 7:
            raise KeyboardInterrupt  # killed in epoch 2, after the checkpoint at step 4
        real_step(*args)

    monkeypatch.setattr(train_module, "apply_gradients", dies_at_step_7)
    with pytest.raises(KeyboardInterrupt):
        finetune(tiny_bert(classifier_labels=["pet", "place"]), tokenizer, train, dev, tmp_path / "killed", config)
    monkeypatch.setattr(train_module, "apply_gradients", real_step)
    resumed = tiny_bert(classifier_labels=["pet", "place"])  # the fresh model a rerun builds
    finetune(resumed, tokenizer, train, dev, tmp_path / "killed", config)
    for name, tensor in unbroken.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[name], tensor, rtol=0, atol=0, msg=name)
    steps = [json.loads(line)["step"] for line in (tmp_path / "killed" / "log.jsonl").read_text().splitlines()]
    assert steps == [4, 8, 12]


@pytest.mark.slow
def test_token_task_learns_bio_tags(tmp_path, tokenizer):
    rng = random.Random(6)
    examples = []
    for i in range(120):
        key = rng.choice(list(KEYS))
        words = toy_sentence(rng, key)
        examples.append(Example(words, None, ["B-PET" if w in ("dog", "cat") else "O" for w in words], f"toy:{i}"))
    model = tiny_bert(tagger_labels=label_names(examples))
    best = finetune(model, tokenizer, examples[:96], examples[96:], tmp_path, FinetuneConfig(task="tokens", **FAST))
    assert best["entity_f1"] == 1.0 and best["accuracy"] == 1.0
    assert json.loads((tmp_path / "model" / "config.json").read_text())["architectures"] == ["BertForTokenClassification"]


def test_word_pieces_first_piece_carries_the_label(tokenizer):
    """'mailman' is two pieces (mail ##man), 'barked' one, 'kit' three (k ##i ##t): only first pieces are labelled."""
    example = Example(["the", "mailman", "barked", "kit"], None, ["O", "B-PER", "O", "B-ANIMAL"], "hand:1")
    labels = ["B-ANIMAL", "B-PER", "O"]
    (features,) = encode([example], tokenizer, labels, max_length=16)
    tokens = [tokenizer.id_to_token(i) for i in features.input_ids]
    assert tokens == ["[CLS]", "the", "mail", "##man", "barked", "k", "##i", "##t", "[SEP]"]
    assert features.label == [IGNORE, 2, 1, IGNORE, 2, 0, IGNORE, IGNORE, IGNORE]


def test_pair_examples_get_both_segments(tokenizer):
    (features,) = encode([Example("the dog", "her cat", "pet", "x:1")], tokenizer, ["pet"], max_length=16)
    assert features.token_type_ids == [0, 0, 0, 0, 1, 1, 1] and features.label == 0


def test_reads_csv_tsv_and_jsonl(tmp_path):
    (tmp_path / "a.csv").write_text('text,text_pair,label\n"the dog, at home",her cat,pet\n')
    (tmp_path / "a.tsv").write_text("text\tlabel\nthe dog\t0.5\n")
    (tmp_path / "a.jsonl").write_text(json.dumps({"tokens": ["the", "dog"], "labels": ["O", "B-PET"]}) + "\n")
    assert read_examples(tmp_path / "a.csv", "classify") == [Example("the dog, at home", "her cat", "pet", f"{tmp_path / 'a.csv'}:2")]
    assert read_examples(tmp_path / "a.tsv", "regression")[0].label == 0.5
    assert read_examples(tmp_path / "a.jsonl", "tokens")[0].label == ["O", "B-PET"]


# ---- bad input: typed errors that name the file and the line ----------------------------------------------------


def test_missing_label_column_names_the_file_and_line(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("text,category\nthe dog,pet\n")
    with pytest.raises(bert.DataFileError, match=r"train.csv:2: no `label` \(the file's fields are \['category', 'text'\]\)"):
        read_examples(path, "classify")


def test_unknown_label_in_dev_names_the_dev_file_and_line(tmp_path, tokenizer):
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps({"text": "the dog", "label": "pet"}) + "\n\n" + json.dumps({"text": "the park", "label": "plaice"}) + "\n")
    dev = read_examples(path, "classify")
    with pytest.raises(bert.DataFileError, match=r"dev.jsonl:3: label 'plaice' is not among the training labels \['pet', 'place'\]"):
        encode(dev, tokenizer, ["pet", "place"], max_length=16)


@pytest.mark.parametrize("content, suffix, message", [
    ("", ".csv", "has no examples"),
    ("\n\n", ".jsonl", "has no examples"),
    ("text,label\n", ".csv", "has no examples"),
    ('{"text": "the dog", "label": \n', ".jsonl", r":1: not valid JSON"),
    ('["the dog", "pet"]\n', ".jsonl", r":1: each line must be a JSON object"),
    ("text\tlabel\nthe dog\tfour\n", ".tsv", r":2: label 'four' is not a number"),
    ('{"tokens": ["the", "dog"], "labels": ["O"]}\n', ".jsonl", r":1: `tokens` and `labels` must be non-empty lists of the same length"),
    ("the dog\tpet\n", ".txt", "expected a .csv, .tsv or .jsonl file"),
])
def test_bad_files_give_typed_errors(tmp_path, content, suffix, message):
    path = tmp_path / f"data{suffix}"
    path.write_text(content)
    task = "regression" if suffix == ".tsv" else "tokens" if "tokens" in content else "classify"
    with pytest.raises(bert.DataFileError, match=message) as error:
        read_examples(path, task)
    assert str(path) in str(error.value)


def test_cli_fine_tunes_a_folder_and_reports_bad_input(tmp_path, tiny_vocab_file, capsys):
    from bert.__main__ import main
    from bert.checkpoint import save_hf_folder

    base = save_hf_folder(tiny_bert(pooler=True), tmp_path / "base", tiny_vocab_file)
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(f"{e.text},{e.label}\n" for e in toy_examples(40, seed=7)))
    args = ["finetune", "--train-file", str(train), "--init", str(base), "--out", str(tmp_path / "out"),
            "--epochs", "1", "--batch-size", "8", "--max-length", "16", "--device", "cpu"]
    assert main(args) == 0
    printed = json.loads(capsys.readouterr().out)
    model, _ = bert.load_pretrained(printed["model"])
    assert model.labels == ["pet", "place"] and model.has_classifier and printed["best_dev"]["step"] == 5  # 36 train / 8
    train.write_text("text\nthe dog\n")
    assert main([*args, "--out", str(tmp_path / "out2")]) == 2  # the last --out wins
    assert "train.csv:2: no `label`" in capsys.readouterr().err


@pytest.mark.slow
def test_regression_learns_a_number_per_sentence(tmp_path, tokenizer):
    def numbered(examples):  # pet sentences score +1, place sentences -1
        return [Example(e.text, None, 1.0 if e.label == "pet" else -1.0, e.where) for e in examples]

    model = tiny_bert(classifier_labels=1, problem_type="regression")
    config = FinetuneConfig(task="regression", **FAST)
    best = finetune(model, tokenizer, numbered(toy_examples(96, seed=8)), numbered(toy_examples(24, seed=9)), tmp_path, config)
    assert best["pearson"] > 0.95 and best["mse"] < 0.1
    assert json.loads((tmp_path / "model" / "config.json").read_text())["problem_type"] == "regression"


@pytest.mark.parametrize("scores, patience, stop", [
    ([0.5, 0.6, 0.6, 0.55], 2, True),   # the last two fell short of 0.6
    ([0.5, 0.6, 0.6, 0.65], 2, False),  # the last one beat it
    ([0.5, 0.4], 2, False),             # not enough evaluations yet
    ([0.5, 0.4, 0.3], 0, False),        # patience 0: never stop
])
def test_early_stopping_after_patience_evaluations_without_improvement(scores, patience, stop):
    from bert.finetuning.train import _should_stop

    assert _should_stop([{"score": s} for s in scores], patience) == stop
