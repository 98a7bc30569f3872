"""Data-parallel pre-training (distributed.py), on the CPU with gloo: two ranks with batch B follow one process
with batch 2B, and a run stopped and resumed with another number of ranks ends where an unbroken run ends.

The reference is the single-process trainer (itself tested against hand-computed losses in test_loss.py and for
exact resumption in test_training.py). Dropout is 0, so the only difference between the runs is the order of
floating-point sums (two ranks' gradient shares added by gloo instead of one sum): TOLERANCE bounds it.
The two-process runs all happen in one spawn (bert_test_support.spawn_two_gloo_ranks), to keep the start-up cost to one.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import bert.pretraining.trainer as trainer
from bert import Bert, BertTokenizer
from bert.pretraining.data import DataConfig
from bert.pretraining.trainer import TrainConfig, train
from bert_test_support import free_port, killed_at, spawn_two_gloo_ranks

from .helpers import tiny_config, write_corpus

pytestmark = pytest.mark.slow  # torchrun runs: tens of seconds

REPO = Path(__file__).resolve().parents[2]
TOLERANCE = dict(atol=5e-6, rtol=1e-5)  # float32 summation order over 6 AdamW steps; measured: losses equal, weights within 3e-7
PER_RANK = 2  # examples per rank and step; the one-process runs take 2 x PER_RANK
CONFIG = TrainConfig(steps=6, learning_rate=1e-2, warmup_steps=1, eval_every=1, checkpoint_every=3, seed=7, whole_word=True)
DOCUMENTS = [  # with NSP, 9 pairs an epoch: global batches of 4, 4 and 1 (one rank then has no row)
    ["the cat sat on the mat", "the dog barked at the mailman", "i brushed my teeth before going to bed", "the cat slept"],
    ["paris is the capital of france", "the sun rises in the east", "we eat breakfast in the morning", "it rained"],
    ["she reads a book every night", "the children play in the park", "unbelievably, the kroxldyphivc rescheduled", "we left"],
]


def run(folder: Path, out: Path, world: int, stop_at: int | None = None) -> None:
    """One training run in this process (one rank of `world`); `stop_at`: killed just before that step."""
    tokenizer = BertTokenizer.from_vocab(folder / "vocab.txt")
    torch.manual_seed(0)
    model = Bert(tiny_config(tokenizer.vocab_size, hidden_dropout=0.0, attention_dropout=0.0), nsp_head=True)
    data = DataConfig(max_length=24, batch_size=PER_RANK * 2 // world, next_sentence=True)
    with killed_at(trainer, "train_step", stop_at):
        train(model, tokenizer, folder / "corpus.txt", None, out, CONFIG, data)


def two_ranks(rank: int, folder: Path, name: str, stop_at: int | None) -> None:
    run(folder, folder / name, world=2, stop_at=stop_at)


def write_vocabulary(folder: Path) -> None:
    """Just the corpus's words: a model this small trains a step in milliseconds."""
    words = sorted({word for document in DOCUMENTS for line in document for word in line.replace(",", " ,").split()})
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Every run, in one folder: one/ (1 process, unbroken), two/ (2 ranks, unbroken), two_then_one/ (2 ranks
    stopped before step 3, resumed alone), one_then_two/ (the other way round)."""
    folder = tmp_path_factory.mktemp("distributed")
    write_vocabulary(folder)
    write_corpus(folder / "corpus.txt", DOCUMENTS)
    run(folder, folder / "one", world=1)
    run(folder, folder / "one_then_two", world=1, stop_at=3)
    spawn_two_gloo_ranks(two_ranks, [(folder, "two", None), (folder, "two_then_one", 3), (folder, "one_then_two", None)])
    run(folder, folder / "two_then_one", world=1)
    return folder


def losses(out: Path) -> list[float]:
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == list(range(1, CONFIG.steps + 1))
    return [row["train_loss"] for row in rows]


def weights(out: Path) -> dict[str, torch.Tensor]:
    return load_file(str(out / "checkpoint" / "model.safetensors"))


def test_two_ranks_with_batch_b_follow_one_process_with_batch_2b(runs):
    one, two = losses(runs / "one"), losses(runs / "two")
    torch.testing.assert_close(torch.tensor(two), torch.tensor(one), **TOLERANCE)
    assert one[0] != one[-1]  # it trained: the curve moves
    rows = [json.loads(line) for line in (runs / "two" / "log.jsonl").read_text().splitlines()]
    assert {(row["global_batch"], row["ranks"]) for row in rows} == {(2 * PER_RANK, 2)}  # the effective batch, stated
    a, b = weights(runs / "one"), weights(runs / "two")
    assert a.keys() == b.keys() and not any(key.startswith("module.") for key in b)  # saved un-wrapped
    for key in a:
        torch.testing.assert_close(b[key], a[key], **TOLERANCE, msg=lambda m, key=key: f"{key}: {m}")


@pytest.mark.parametrize("name", ["two_then_one", "one_then_two"])
def test_a_run_resumed_with_another_number_of_ranks_ends_where_an_unbroken_run_ends(runs, name):
    torch.testing.assert_close(torch.tensor(losses(runs / name)), torch.tensor(losses(runs / "one")), **TOLERANCE)
    unbroken, resumed = weights(runs / "one"), weights(runs / name)
    for key in unbroken:
        torch.testing.assert_close(resumed[key], unbroken[key], **TOLERANCE, msg=lambda m, key=key: f"{key}: {m}")
    assert json.loads((runs / name / "checkpoint" / "state.json").read_text())["step"] == CONFIG.steps


def test_torchrun_runs_the_command_line_on_two_ranks(tmp_path):
    """The real entry point: torchrun starts two processes that join a gloo group from its environment."""
    write_vocabulary(tmp_path)
    corpus = write_corpus(tmp_path / "corpus.txt", DOCUMENTS)
    out = tmp_path / "run"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port()),
               "-m", "bert", "pretrain", "--train-file", corpus, "--out", str(out), "--vocab", str(tmp_path / "vocab.txt"),
               "--steps", "2", "--layers", "1", "--hidden", "16", "--heads", "2", "--batch-size", "2", "--max-length", "24",
               "--device", "cpu"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "effective batch: 4 sequences per step (2 per rank x 2 rank(s))" in done.stderr
    assert done.stderr.count("device: cpu") == 1  # rank 0 speaks for both
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [(row["step"], row["ranks"], row["global_batch"]) for row in rows] == [(2, 2, 4)]
    assert not any(key.startswith("module.") for key in weights(out))
