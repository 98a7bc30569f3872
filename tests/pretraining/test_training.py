"""The training loop end to end, on tiny models: it learns, it resumes exactly, and the CLI writes what it says."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import bert.pretraining.trainer as trainer
from bert import Bert, BertTokenizer
from bert.pretraining.data import DataConfig, batches
from bert.pretraining.trainer import TrainConfig, evaluate, train

from .helpers import tiny_config, write_corpus

REPO = Path(__file__).resolve().parents[2]
SENTENCES = [
    "the cat sat on the mat", "the dog barked at the mailman", "i brushed my teeth before going to bed",
    "paris is the capital of france", "the sun rises in the east", "we eat breakfast in the morning",
    "she reads a book every night", "the children play in the park",
]


def small_vocabulary(folder: Path) -> BertTokenizer:
    """A vocab.txt of just the corpus words: a from-scratch model this small trains in a few seconds."""
    words = sorted({word for line in SENTENCES for word in line.split()})
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    return BertTokenizer.from_vocab(folder / "vocab.txt")


@pytest.mark.slow
def test_a_tiny_model_from_scratch_overfits_a_tiny_corpus(tmp_path):
    tokenizer = small_vocabulary(tmp_path)
    corpus = write_corpus(tmp_path / "corpus.txt", [SENTENCES])
    torch.manual_seed(0)
    model = Bert(tiny_config(tokenizer.vocab_size, num_layers=1, hidden_size=32, intermediate_size=64, hidden_dropout=0.0, attention_dropout=0.0))
    data = DataConfig(max_length=32, batch_size=8)  # the whole corpus in every batch
    config = TrainConfig(steps=100, learning_rate=2e-2, warmup_steps=10, weight_decay=0.0, eval_every=25, checkpoint_every=1000)
    probe = list(batches(corpus, tokenizer, data, seed=0, epoch=0)) * 20  # the corpus under 20 different maskings
    before = evaluate(model, tokenizer, probe, config)
    train(model, tokenizer, corpus, None, tmp_path / "run", config, data)
    after = evaluate(model, tokenizer, probe, config)
    assert math.log(before["perplexity"]) > 0.9 * math.log(tokenizer.vocab_size)  # it starts near uniform, ~ln 44
    assert math.log(after["perplexity"]) < 0.55 * math.log(before["perplexity"])
    assert after["top5"] > 0.75 and after["top1"] > 3 * max(before["top1"], 0.05)
    logged = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in logged] == [25, 50, 75, 100]
    assert logged[-1]["train_loss"] < 0.6 * logged[0]["train_loss"] or logged[-1]["train_loss"] < 1.5


# --- resuming ----------------------------------------------------------------------------------------------

class Interrupted(Exception):
    pass


TRAIN_STEP = trainer.train_step  # the real one; record_steps wraps it afresh each time


def record_steps(monkeypatch, stop_at: int | None = None) -> list[tuple[int, float]]:
    """Wrap train_step to log (step, loss); raise Interrupted before running step `stop_at` (a kill)."""
    seen = []

    def wrapped(model, tokenizer, batch, optimizer, scheduler, config, step):
        if step == stop_at:
            raise Interrupted
        losses = TRAIN_STEP(model, tokenizer, batch, optimizer, scheduler, config, step)
        seen.append((step, losses["loss"]))
        return losses

    monkeypatch.setattr(trainer, "train_step", wrapped)
    return seen


RESUME_CASES = {
    "mlm": (DataConfig(max_length=24, batch_size=3), dict(), dict()),
    "nsp+whole-word": (DataConfig(max_length=24, batch_size=3, next_sentence=True), dict(whole_word=True), dict(nsp_head=True)),
}


@pytest.fixture(params=list(RESUME_CASES))
def resume_case(request, tmp_path, tokenizer):
    data, train_fields, heads = RESUME_CASES[request.param]
    documents = [SENTENCES[:3], SENTENCES[3:6], SENTENCES[6:] + ["unbelievably, the kroxldyphivc rescheduled"]]
    corpus = write_corpus(tmp_path / "corpus.txt", documents)
    # 8 steps over an epoch of 2-3 batches: the run crosses epochs, and the warm-up and decay both matter.
    config = TrainConfig(steps=8, learning_rate=1e-2, warmup_steps=2, checkpoint_every=2, eval_every=4, seed=5, **train_fields)

    def new_model(seed):
        torch.manual_seed(seed)
        return Bert(tiny_config(tokenizer.vocab_size), **heads)

    return corpus, data, config, new_model


@pytest.mark.slow
def test_resume_gives_the_same_steps_and_weights_as_one_run(resume_case, tmp_path, monkeypatch, tokenizer):
    corpus, data, config, new_model = resume_case
    straight = record_steps(monkeypatch)
    one_go = new_model(seed=0)
    train(one_go, tokenizer, corpus, None, tmp_path / "one_go", config, data)
    assert [step for step, _ in straight] == list(range(8))

    record_steps(monkeypatch, stop_at=4)  # killed after the step-4 checkpoint was written
    with pytest.raises(Interrupted):
        train(new_model(seed=0), tokenizer, corpus, None, tmp_path / "resumed", config, data)
    resumed_steps = record_steps(monkeypatch)
    resumed = new_model(seed=123)  # a new object, initialised differently: everything must come from the checkpoint
    train(resumed, tokenizer, corpus, None, tmp_path / "resumed", config, data, resume=True)

    assert resumed_steps == straight[4:], "the resumed run's losses differ from the uninterrupted run's"
    for (name, a), (_, b) in zip(one_go.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), f"{name} differs after resuming"
    state = json.loads((tmp_path / "resumed" / "checkpoint" / "state.json").read_text())
    assert state["step"] == 8


@pytest.mark.slow
def test_resume_survives_a_kill_between_removing_and_renaming_the_checkpoint(resume_case, tmp_path, monkeypatch, tokenizer):
    """save_checkpoint writes checkpoint.tmp, then swaps it in: a kill inside the swap must not restart at step 0."""
    corpus, data, config, new_model = resume_case
    straight = record_steps(monkeypatch)
    train(new_model(seed=0), tokenizer, corpus, None, tmp_path / "one_go", config, data)
    record_steps(monkeypatch, stop_at=4)
    with pytest.raises(Interrupted):
        train(new_model(seed=0), tokenizer, corpus, None, tmp_path / "resumed", config, data)
    run = tmp_path / "resumed"
    # The moment of the kill: the new checkpoint complete in checkpoint.tmp, the folder itself gone.
    (run / "checkpoint").rename(run / "checkpoint.tmp")
    resumed_steps = record_steps(monkeypatch)
    train(new_model(seed=1), tokenizer, corpus, None, run, config, data, resume=True)
    assert resumed_steps == straight[4:]


@pytest.mark.slow
def test_resume_false_starts_over(tmp_path, monkeypatch, tokenizer):
    corpus = write_corpus(tmp_path / "corpus.txt", [SENTENCES])
    config = TrainConfig(steps=3, checkpoint_every=1)
    data = DataConfig(max_length=24, batch_size=4)
    torch.manual_seed(0)
    train(Bert(tiny_config(tokenizer.vocab_size)), tokenizer, corpus, None, tmp_path / "run", config, data)
    steps = record_steps(monkeypatch)
    train(Bert(tiny_config(tokenizer.vocab_size)), tokenizer, corpus, None, tmp_path / "run", config, data)
    assert steps == []  # resume=True (the default) and a finished run: nothing left to do
    train(Bert(tiny_config(tokenizer.vocab_size)), tokenizer, corpus, None, tmp_path / "run", config, data, resume=False)
    assert [step for step, _ in steps] == [0, 1, 2]


# --- the command line ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_cli_pretrain_smoke(tmp_path, tokenizer):
    corpus = write_corpus(tmp_path / "corpus.txt", [SENTENCES])
    out = tmp_path / "run"
    command = [sys.executable, "-m", "bert", "pretrain", "--train-file", corpus, "--out", str(out),
               "--steps", "3", "--layers", "1", "--hidden", "32", "--heads", "2", "--batch-size", "4", "--max-length", "32"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    state = json.loads((out / "checkpoint" / "state.json").read_text())
    assert state["step"] == 3 and state["config"]["steps"] == 3
    weights = load_file(str(out / "checkpoint" / "model.safetensors"))
    assert weights["embedding.token_embedding.weight"].shape == (tokenizer.vocab_size, 32)
    assert sum(key.startswith("transformer.0.") for key in weights) > 0 and not any(k.startswith("transformer.1.") for k in weights)
    assert (out / "checkpoint" / "optimizer.pt").is_file()
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 3 and math.isfinite(rows[-1]["train_loss"])


def test_cli_pretrain_with_nsp_whole_words_and_held_out_text(tmp_path, tokenizer):
    from bert.__main__ import main

    corpus = write_corpus(tmp_path / "corpus.txt", [SENTENCES[:4], SENTENCES[4:]])
    out = tmp_path / "run"
    code = main(["pretrain", "--train-file", corpus, "--heldout-file", corpus, "--out", str(out), "--steps", "2",
                 "--layers", "1", "--hidden", "16", "--heads", "2", "--batch-size", "4", "--nsp", "--whole-word", "--eval-every", "1"])
    assert code == 0
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert {"top1", "top5", "perplexity", "train_loss"} <= set(rows[0])
    weights = load_file(str(out / "checkpoint" / "model.safetensors"))
    assert "nsp_head.weight" in weights and "pooler.dense.weight" in weights


def test_cli_refuses_to_train_nothing(tmp_path, capsys):
    from bert.__main__ import main

    corpus = write_corpus(tmp_path / "corpus.txt", [SENTENCES])
    code = main(["pretrain", "--train-file", corpus, "--out", str(tmp_path / "run"), "--no-mlm", "--steps", "1", "--hidden", "16"])
    assert code == 2 and "--nsp" in capsys.readouterr().err


def test_cli_pretrain_with_sentence_order_only(tmp_path, tokenizer):
    from bert.__main__ import main

    corpus = write_corpus(tmp_path / "corpus.txt", [SENTENCES])  # one document is enough for sentence order
    out = tmp_path / "run"
    code = main(["pretrain", "--train-file", corpus, "--out", str(out), "--steps", "2", "--layers", "1", "--hidden", "16",
                 "--heads", "2", "--batch-size", "4", "--sop", "--no-mlm", "--eval-every", "1"])
    assert code == 0
    weights = load_file(str(out / "checkpoint" / "model.safetensors"))
    assert "nsp_head.weight" in weights and not any(key.startswith("lm_head.") for key in weights)
