"""The fine-tuning loop: the pre-training loop's AdamW, warm-up and decay, clipping and checkpoints
(bert/pretraining/trainer.py), with a task loss, dev evaluation and early stopping; on one device, or
data-parallel under `torchrun --nproc_per_node N -m bert finetune ...` (bert/pretraining/distributed.py).

out_dir/checkpoint  the latest state (a rerun resumes from it, with any number of ranks)
out_dir/model       the best model on dev so far, a Hugging Face folder (config with id2label, weights, vocab)
out_dir/log.jsonl   one line per dev evaluation

`batch_size` is the global batch: with N ranks, every rank reads the same batches and trains on its own
contiguous block of about batch_size / N rows, its loss being its rows' share of the batch's mean, so N ranks
follow one process (up to the order of floating-point sums; dropout draws differ, see distributed.seed_dropout).
Rank 0 evaluates, decides early stopping for all, and writes every file.
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from ..checkpoint import save_hf_folder
from ..model import Bert
from ..tokenizer import BertTokenizer
from ..pretraining.distributed import Ranks, barrier, my_rows, rank_0_decides, seed_dropout, sum_over_ranks
from ..pretraining.trainer import apply_gradients, autocast, freeze_heads, load_checkpoint, make_optimizer, make_scheduler, save_checkpoint
from .data import IGNORE, Batch, Example, encode, epoch_batches, in_order_batches
from .metrics import classification_scores, main_metric, regression_scores, token_scores

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FinetuneConfig:
    task: str = "classify"  # "classify" (a sentence or a pair), "regression" (one number) or "tokens"
    epochs: int = 3  # passes over the training examples (fewer if early stopping ends the run)
    batch_size: int = 32  # examples per step in all: with N ranks (torchrun), each trains on about batch_size / N
    max_length: int = 128  # longer examples are cut (and counted in the log)
    learning_rate: float = 5e-5  # peak, after warm-up
    warmup_fraction: float = 0.1  # share of all steps spent warming up, then linear decay to 0
    weight_decay: float = 0.01  # AdamW, not on biases and LayerNorms
    clip_norm: float = 1.0
    seed: int = 0  # fixes the head's initialisation (by the caller), data order and dropout
    train: str = "all"  # what learns: "all", "head" (task head and pooler) or "top:N" (heads and the top N layers)
    freeze_token_embedding: bool = False
    bf16: bool = False  # autocast to bfloat16 where the device computes it natively (else float32)
    eval_every: int = 0  # steps between dev evaluations; 0: at the end of every epoch
    patience: int = 2  # dev evaluations without improvement before stopping; 0: never stop early
    device: str = "cpu"


def finetune(
    model: Bert,
    tokenizer: BertTokenizer,
    train_examples: list[Example],
    dev_examples: list[Example],
    out_dir: str | Path,
    config: FinetuneConfig,
    resume: bool = True,
) -> dict:
    """Train `model` (which has its task head, with `model.labels` naming the classes) and return the best
    dev scores (on rank 0; {} on the others). With resume=True and a checkpoint in out_dir, continue exactly
    where it stopped. In an initialised process group (torchrun), train data-parallel (see the module's doc)."""
    ranks, out_dir, device = Ranks.current(), Path(out_dir), torch.device(config.device)
    labels = None if config.task == "regression" else model.labels
    train_features = encode(train_examples, tokenizer, labels, config.max_length)
    dev_features = encode(dev_examples, tokenizer, labels, config.max_length) if ranks.main else []
    dev_batches = in_order_batches(dev_features, config.batch_size, tokenizer.pad_id)
    steps_per_epoch = math.ceil(len(train_features) / config.batch_size)
    total = config.epochs * steps_per_epoch
    eval_every = config.eval_every or steps_per_epoch
    model.to(device)
    optimizer = make_optimizer(model, config)
    freeze_heads(model, UNUSED_HEADS[config.task])  # no gradient to wait for under DDP
    scheduler = make_scheduler(optimizer, round(config.warmup_fraction * total), total)
    step = load_checkpoint(out_dir / "checkpoint", model, optimizer, scheduler, config.batch_size) if resume else 0
    if ranks.main:
        out_dir.mkdir(parents=True, exist_ok=True)
        if step == 0:
            (out_dir / "log.jsonl").unlink(missing_ok=True)  # a fresh run's log starts empty
        log.info("global batch: %d examples per step, split over %d rank(s); %d steps per epoch", config.batch_size, ranks.world, steps_per_epoch)
    history = _history(out_dir / "log.jsonl", step)
    best = max(history, key=lambda record: record["score"], default=None)
    objective = FinetuningObjective(model, config.task)
    if ranks.world > 1:
        objective = DistributedDataParallel(objective, device_ids=[device.index] if device.type == "cuda" else None)
    progress = tqdm(total=total, initial=step, desc=f"finetune {config.task}", unit="step", dynamic_ncols=True, disable=not ranks.main)
    model.train()
    stop = _should_stop(history, config.patience)  # every rank reads the same log
    while step < total and not stop:
        epoch, offset = divmod(step, steps_per_epoch)
        for batch in epoch_batches(train_features, config.batch_size, config.seed, epoch, tokenizer.pad_id)[offset:]:
            loss = train_step(objective, batch, optimizer, scheduler, config, step)
            step += 1
            progress.update(1)
            progress.set_postfix(loss=f"{loss:.3f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
            if step % eval_every == 0 or step == total:
                if ranks.main:
                    best = _evaluate_and_save(model, tokenizer, dev_batches, out_dir, config, optimizer, scheduler,
                                              history, best, {"step": step, "epoch": step / steps_per_epoch, "train_loss": loss})
                stop = rank_0_decides(_should_stop(history, config.patience), ranks, device)
                if stop:
                    log.info("no dev improvement in %d evaluations: stopping early at step %d", config.patience, step)
                    break
    progress.close()
    barrier(ranks)  # every rank returns once rank 0 has written the last files
    model.eval()
    return best or {}


UNUSED_HEADS = {  # heads a task's loss does not read: frozen
    "classify": ["lm_head", "nsp_head"],
    "regression": ["lm_head", "nsp_head"],
    "tokens": ["lm_head", "nsp_head", "pooler"],
}


class FinetuningObjective(nn.Module):
    """The model and its task loss as one module: DistributedDataParallel wraps the whole forward pass."""

    def __init__(self, model: Bert, task: str):
        super().__init__()
        self.model, self.task = model, task

    def forward(self, batch: Batch, total: int) -> torch.Tensor:
        return task_loss(self.model, batch, self.task, total)


def train_step(objective: nn.Module, batch: Batch, optimizer, scheduler, config: FinetuneConfig, step: int) -> float:
    """One update on one global batch (this rank's rows of it); returns the global batch's loss.

    Dropout draws from (seed, step, rank). A rank left without rows (a last batch smaller than the world) runs
    row 0 with its loss times 0: it adds nothing, yet joins the gradient exchange as DDP requires.
    """
    ranks, device = Ranks.current(), torch.device(config.device)
    seed_dropout(config.seed, step, ranks)
    rows = my_rows(len(batch.input_ids), ranks)
    mine = batch.rows(rows if len(rows) else torch.tensor([0]))
    with autocast(device, config.bf16):
        loss = objective(mine.to(device), labelled_count(batch, config.task)) * (1.0 if len(rows) else 0.0)
    apply_gradients(objective, loss, optimizer, scheduler, config.clip_norm, ranks)
    return float(sum_over_ranks(loss.detach().float(), ranks))


def labelled_count(batch: Batch, task: str) -> int:
    """What a batch's loss is a mean over: its labelled word pieces (token tasks), else its rows."""
    return int((batch.labels != IGNORE).sum()) if task == "tokens" else len(batch.labels)


def task_loss(model: Bert, batch: Batch, task: str, total: int | None = None) -> torch.Tensor:
    """Cross-entropy over the classes (token tasks: over labelled word pieces only), or squared error for
    regression: a mean over the batch (labelled_count). With `total`, the count of a global batch of which this
    batch is one rank's share, this share's sum divided by it: the ranks' losses add up to the global mean."""
    if task == "tokens":
        logits = model(batch.input_ids, batch.token_type_ids, batch.attention_mask, output="tagger")
        summed = F.cross_entropy(logits.flatten(0, 1).float(), batch.labels.flatten(), ignore_index=IGNORE, reduction="sum")
    else:
        logits = model(batch.input_ids, batch.token_type_ids, batch.attention_mask, output="classifier").float()
        if task == "regression":
            summed = F.mse_loss(logits.squeeze(-1), batch.labels, reduction="sum")
        else:
            summed = F.cross_entropy(logits, batch.labels, reduction="sum")
    return summed / max(labelled_count(batch, task) if total is None else total, 1)


def _evaluate_and_save(model, tokenizer, dev_batches, out_dir: Path, config: FinetuneConfig, optimizer, scheduler,
                       history: list[dict], best: dict | None, record: dict) -> dict:
    """Rank 0: score dev, keep the model if best so far, append to the log and history, write the checkpoint."""
    scores = evaluate(model, dev_batches, config, model.labels if config.task != "regression" else None)
    record = {**record, **scores, "score": main_metric(config.task, scores), "global_batch": config.batch_size, "ranks": Ranks.current().world}
    if best is None or record["score"] > best["score"]:
        best = record
        _save_model(model, tokenizer, out_dir / "model", record, config)
    history.append(record)
    with open(out_dir / "log.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")
    log.info("step %d: %s", record["step"], scores)
    save_checkpoint(out_dir / "checkpoint", model, optimizer, scheduler, record["step"], config, config.batch_size)
    return best


@torch.no_grad()
def evaluate(model: Bert, batches: list[Batch], config: FinetuneConfig, labels: list[str] | None) -> dict[str, float]:
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    predicted, gold = [], []
    for batch in batches:
        inputs = (batch.input_ids.to(device), batch.token_type_ids.to(device), batch.attention_mask.to(device))
        with autocast(device, config.bf16):
            logits = model(*inputs, output="tagger" if config.task == "tokens" else "classifier").float().cpu()
        if config.task == "tokens":
            for row_logits, row_labels in zip(logits, batch.labels):
                labelled = row_labels != IGNORE  # each word's first piece
                predicted.append([labels[i] for i in row_logits[labelled].argmax(-1).tolist()])
                gold.append([labels[i] for i in row_labels[labelled].tolist()])
        elif config.task == "regression":
            predicted += logits[:, 0].tolist()
            gold += batch.labels.tolist()
        else:
            predicted += logits.argmax(-1).tolist()
            gold += batch.labels.tolist()
    model.train(was_training)
    if config.task == "tokens":
        return token_scores(predicted, gold)
    if config.task == "regression":
        return regression_scores(predicted, gold)
    return classification_scores(predicted, gold, len(labels))


def _save_model(model: Bert, tokenizer: BertTokenizer, folder: Path, record: dict, config: FinetuneConfig) -> None:
    save_hf_folder(model, folder)
    tokenizer.save(folder)
    (folder / "dev_scores.json").write_text(json.dumps({**record, "config": asdict(config)}, indent=2))


def _history(log_file: Path, step: int) -> list[dict]:
    """The dev evaluations up to `step` (a resumed run's early-stopping state), the last one of each step."""
    if not log_file.is_file() or step == 0:
        return []
    records = {}
    for line in log_file.read_text().splitlines():
        record = json.loads(line)
        if record["step"] <= step:
            records[record["step"]] = record
    return [records[s] for s in sorted(records)]


def _should_stop(history: list[dict], patience: int) -> bool:
    """True when the last `patience` evaluations all fell short of the best before them."""
    if patience <= 0 or len(history) <= patience:
        return False
    best_before = max(record["score"] for record in history[:-patience])
    return all(record["score"] <= best_before for record in history[-patience:])
