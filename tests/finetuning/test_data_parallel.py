"""Data-parallel fine-tuning (bert/finetuning/train.py) on the CPU with gloo: two ranks with a global batch B
follow one process with batch B, for a sentence classifier (which stops early) and a token tagger (whose ranks
hold different numbers of labelled word pieces, and one of them no row at all at the end of an epoch); a run
stopped and resumed with another number of ranks ends where an unbroken run ends; only rank 0 writes.

The reference is the single-process loop (itself tested for learning and exact resumption in test_finetune.py).
Dropout is 0, so the only difference between the runs is the order of floating-point sums: TOLERANCE bounds it.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import bert.finetuning.train as train_module
from bert import Bert, BertConfig, BertTokenizer
from bert.checkpoint import save_hf_folder
from bert.finetuning.data import IGNORE, Example, encode, epoch_batches, label_names
from bert.finetuning.train import FinetuneConfig, finetune
from bert.pretraining.distributed import Ranks, my_rows
from bert_test_support import TINY_VOCAB, free_port, killed_at, spawn_two_gloo_ranks

pytestmark = pytest.mark.slow  # torchrun runs: tens of seconds

REPO = Path(__file__).resolve().parents[2]
TOLERANCE = dict(atol=1e-5, rtol=1e-5)  # float32 summation order over 3 to 6 AdamW steps; measured: within 2e-7
WORDS = ["the", "dog", "cat", "barked", "at", "mailman", "park", "and", "her", "went", "to", "is", "of"]
CONFIGS = {  # tokens: 11 examples, global batches of 5, 5 and 1 (rank 1 then has no row); 2 epochs, 6 steps
    "classify": FinetuneConfig(task="classify", epochs=4, batch_size=4, max_length=16, learning_rate=1e-2, warmup_fraction=0.0,
                               eval_every=1, patience=2, seed=3),
    "tokens": FinetuneConfig(task="tokens", epochs=2, batch_size=5, max_length=16, learning_rate=1e-2, warmup_fraction=0.2,
                             eval_every=1, patience=0, seed=5),
}
# The key bias's gradient is 0 in exact arithmetic (a number added to all of a query's scores changes no softmax):
# what it gets is rounding noise, which AdamW divides by its own size into steps of up to the learning rate.
NOISE_ONLY = {"transformer.0.attention.attention.project_key.bias"}
STOP_AT = 3  # interrupted runs are killed after this many steps


def examples(task: str, count: int, seed: int) -> list[Example]:
    """Sentences of 2 to 6 words; classify: whether "dog" or "cat" is in it; tokens: B-PET on those words."""
    rng = random.Random(seed)
    found = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 6))]
        tags = ["B-PET" if w in ("dog", "cat") else "O" for w in words]
        label = tags if task == "tokens" else ("pet" if "B-PET" in tags else "none")
        found.append(Example(words if task == "tokens" else " ".join(words), None, label, f"toy:{i}"))
    return found


def data(task: str) -> tuple[list[Example], list[Example]]:
    return examples(task, 16 if task == "classify" else 11, seed=1), examples(task, 8, seed=2)


def tiny_model(**heads) -> Bert:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32,
                        max_position_embeddings=32, hidden_dropout=0.0, attention_dropout=0.0)
    return Bert(config, **heads)


def task_model(task: str, labels: list[str]) -> Bert:
    """Heads the task does not use besides its own (the LM head; NSP, or the pooler for tokens): fine-tuning
    must freeze them, else DistributedDataParallel stops with an error (it expects a gradient for each one)."""
    if task == "tokens":
        return tiny_model(mlm_head=True, pooler=True, tagger_labels=labels)
    return tiny_model(mlm_head=True, nsp_head=True, classifier_labels=labels)


def run(folder: Path, name: str, task: str, rank: int = 0, stop_at: int | None = None, private: bool = False) -> None:
    """One fine-tuning run in this process (one rank of however many); `stop_at`: killed after that many steps.
    `private`: rank 1 gets a folder of its own (rank1/name), so that anything it writes is seen."""
    train, dev = data(task)
    out = folder / ("rank1" if private and rank == 1 else "") / name
    with killed_at(train_module, "train_step", stop_at):
        finetune(task_model(task, label_names(train)), BertTokenizer.from_vocab(folder / "vocab.txt"), train, dev, out, CONFIGS[task])


def two_ranks(rank: int, folder: Path, name: str, task: str, stop_at: int | None, private: bool) -> None:
    run(folder, name, task, rank, stop_at, private)


RUNS = [  # (name, task, stop_at, private)
    ("classify_two", "classify", None, True),
    ("tokens_two", "tokens", None, True),
    ("tokens_two_then_one", "tokens", STOP_AT, True),  # rank 1 reads nothing, writes nothing
    ("tokens_one_then_two", "tokens", None, False),  # both ranks resume from the same checkpoint
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("finetune_ddp")
    (folder / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n")
    for task in CONFIGS:
        run(folder, f"{task}_one", task)
    run(folder, "tokens_one_then_two", "tokens", stop_at=STOP_AT)
    spawn_two_gloo_ranks(two_ranks, [(folder, *spec) for spec in RUNS])
    run(folder, "tokens_two_then_one", "tokens")
    return folder


def log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def assert_same_weights(out: Path, reference: Path) -> None:
    theirs, ours = (load_file(str(folder / "checkpoint" / "model.safetensors")) for folder in (reference, out))
    assert ours.keys() == theirs.keys() and not any(key.startswith("module.") for key in ours)  # saved un-wrapped
    for key in theirs.keys() - NOISE_ONLY:
        torch.testing.assert_close(ours[key], theirs[key], **TOLERANCE, msg=lambda m, key=key: f"{key}: {m}")


@pytest.mark.parametrize("task", list(CONFIGS))
def test_two_ranks_with_global_batch_b_follow_one_process_with_batch_b(runs, task):
    one, two = log(runs / f"{task}_one"), log(runs / f"{task}_two")
    assert [row["step"] for row in two] == [row["step"] for row in one]
    torch.testing.assert_close(torch.tensor([row["train_loss"] for row in two]), torch.tensor([row["train_loss"] for row in one]), **TOLERANCE)
    assert one[0]["train_loss"] != one[-1]["train_loss"]  # it trained
    assert {(row["global_batch"], row["ranks"]) for row in two} == {(CONFIGS[task].batch_size, 2)}
    assert_same_weights(runs / f"{task}_two", runs / f"{task}_one")
    assert json.loads((runs / f"{task}_two" / "model" / "dev_scores.json").read_text())["step"] == \
        json.loads((runs / f"{task}_one" / "model" / "dev_scores.json").read_text())["step"]  # the same best model kept


def test_the_classifier_stops_early_on_both_ranks_together(runs):
    """Rank 0 decides (patience 2) and every rank stops: else rank 1 would go on alone, waiting for rank 0 forever."""
    steps_in_full = CONFIGS["classify"].epochs * 4  # 16 examples, batches of 4
    assert len(log(runs / "classify_one")) < steps_in_full
    assert len(log(runs / "classify_two")) == len(log(runs / "classify_one"))


def test_the_token_task_splits_labelled_pieces_unevenly(runs):
    """The case the global count is for: the ranks' shares of a batch hold different numbers of labelled
    pieces (a mean per rank, averaged, would weigh them wrongly), and a last batch of one row leaves rank 1 empty."""
    tokenizer = BertTokenizer.from_vocab(runs / "vocab.txt")
    train, _ = data("tokens")
    config = CONFIGS["tokens"]
    features = encode(train, tokenizer, label_names(train), config.max_length)
    counts = [[int((batch.labels[my_rows(len(batch.labels), Ranks(rank, 2))] != IGNORE).sum()) for rank in (0, 1)]
              for batch in epoch_batches(features, config.batch_size, config.seed, 0, tokenizer.pad_id)]
    assert counts[0][0] != counts[0][1] and counts[-1][1] == 0


@pytest.mark.parametrize("name", ["tokens_two_then_one", "tokens_one_then_two"])
def test_a_run_resumed_with_another_number_of_ranks_ends_where_an_unbroken_run_ends(runs, name):
    unbroken, resumed = log(runs / "tokens_one"), log(runs / name)
    assert [row["step"] for row in resumed] == [row["step"] for row in unbroken] == list(range(1, 7))
    first, then = (2, 1) if name == "tokens_two_then_one" else (1, 2)
    assert [row["ranks"] for row in resumed] == [first] * STOP_AT + [then] * (6 - STOP_AT)  # who ran each step
    torch.testing.assert_close(torch.tensor([r["train_loss"] for r in resumed]), torch.tensor([r["train_loss"] for r in unbroken]), **TOLERANCE)
    assert_same_weights(runs / name, runs / "tokens_one")


def test_only_rank_0_writes(runs):
    """Rank 1 trained in its own folder in three runs: it holds nothing (not even the folder)."""
    assert not (runs / "rank1").exists()
    for name, _, _, _ in RUNS:
        assert (runs / name / "checkpoint" / "model.safetensors").is_file() and (runs / name / "log.jsonl").is_file()


def test_torchrun_runs_the_command_line_on_two_ranks(tmp_path, tiny_vocab_file):
    """The real entry point: torchrun starts two processes that join a gloo group from its environment."""
    base = save_hf_folder(tiny_model(mlm_head=True, nsp_head=True), tmp_path / "base", tiny_vocab_file)
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(f"{e.text},{e.label}\n" for e in examples("classify", 12, seed=3)))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port()),
               "-m", "bert", "finetune", "--train-file", str(train), "--dev-file", str(train), "--init", str(base),
               "--out", str(out), "--epochs", "1", "--batch-size", "6", "--max-length", "16", "--device", "cpu"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count("global batch: 6 examples per step, split over 2 rank(s); 2 steps per epoch") == 1  # rank 0 speaks
    assert json.loads(done.stdout)["best_dev"]["step"] == 2  # one JSON answer: rank 0's
    assert [(row["step"], row["ranks"], row["global_batch"]) for row in log(out)] == [(2, 2, 6)]
