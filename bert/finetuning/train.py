"""The fine-tuning loop: the pre-training loop's AdamW, warm-up and decay, clipping and checkpoints
(bert/pretraining/trainer.py), with a task loss, dev evaluation and early stopping.

out_dir/checkpoint  the latest state (a rerun resumes from it)
out_dir/model       the best model on dev so far, a Hugging Face folder (config with id2label, weights, vocab)
out_dir/log.jsonl   one line per dev evaluation
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from ..checkpoint import save_hf_folder
from ..model import Bert
from ..tokenizer import BertTokenizer
from ..pretraining.trainer import autocast, load_checkpoint, make_optimizer, make_scheduler, save_checkpoint
from .data import IGNORE, Batch, Example, encode, epoch_batches, in_order_batches
from .metrics import classification_scores, main_metric, regression_scores, token_scores

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FinetuneConfig:
    task: str = "classify"  # "classify" (a sentence or a pair), "regression" (one number) or "tokens"
    epochs: int = 3  # passes over the training examples (fewer if early stopping ends the run)
    batch_size: int = 32
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
    dev scores. With resume=True and a checkpoint in out_dir, continue exactly where it stopped."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = torch.device(config.device)
    labels = None if config.task == "regression" else model.labels
    train_features = encode(train_examples, tokenizer, labels, config.max_length)
    dev_batches = in_order_batches(encode(dev_examples, tokenizer, labels, config.max_length), config.batch_size, tokenizer.pad_id)
    steps_per_epoch = math.ceil(len(train_features) / config.batch_size)
    total = config.epochs * steps_per_epoch
    eval_every = config.eval_every or steps_per_epoch
    model.to(device)
    optimizer = make_optimizer(model, config)
    scheduler = make_scheduler(optimizer, round(config.warmup_fraction * total), total)
    step = load_checkpoint(out_dir / "checkpoint", model, optimizer, scheduler) if resume else 0
    if step == 0:
        (out_dir / "log.jsonl").unlink(missing_ok=True)  # a fresh run's log starts empty
    history = _history(out_dir / "log.jsonl", step)
    best = max(history, key=lambda record: record["score"], default=None)
    progress = tqdm(total=total, initial=step, desc=f"finetune {config.task}", unit="step", dynamic_ncols=True)
    model.train()
    while step < total and not _should_stop(history, config.patience):
        epoch, offset = divmod(step, steps_per_epoch)
        for batch in epoch_batches(train_features, config.batch_size, config.seed, epoch, tokenizer.pad_id)[offset:]:
            torch.manual_seed(config.seed * 1_000_003 + step)  # dropout: a resumed run repeats it
            with autocast(device, config.bf16):
                loss = task_loss(model, batch.to(device), config.task)
            apply_gradients(model, loss, optimizer, scheduler, config.clip_norm)
            step += 1
            progress.update(1)
            progress.set_postfix(loss=f"{float(loss.detach()):.3f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
            if step % eval_every == 0 or step == total:
                scores = evaluate(model, dev_batches, config, labels)
                record = {"step": step, "epoch": step / steps_per_epoch, "train_loss": float(loss.detach()), **scores,
                          "score": main_metric(config.task, scores)}
                if best is None or record["score"] > best["score"]:
                    best = record
                    _save_model(model, tokenizer, out_dir / "model", record, config)
                history.append(record)
                with open(out_dir / "log.jsonl", "a") as f:
                    f.write(json.dumps(record) + "\n")
                log.info("step %d: %s", step, scores)
                save_checkpoint(out_dir / "checkpoint", model, optimizer, scheduler, step, config)
                if _should_stop(history, config.patience):
                    log.info("no dev improvement in %d evaluations: stopping early at step %d", config.patience, step)
                    break
    progress.close()
    model.eval()
    return best or {}


def apply_gradients(model: Bert, loss: torch.Tensor, optimizer, scheduler, clip_norm: float) -> None:
    """Backward, clip the gradient norm, one optimizer and one schedule step (one process, one device)."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], clip_norm)
    optimizer.step()
    scheduler.step()


def task_loss(model: Bert, batch: Batch, task: str) -> torch.Tensor:
    """Cross-entropy over the classes (token tasks: over labelled word pieces only), or squared error for regression."""
    if task == "tokens":
        logits = model.tag(batch.input_ids, batch.token_type_ids, batch.attention_mask)
        return F.cross_entropy(logits.flatten(0, 1).float(), batch.labels.flatten(), ignore_index=IGNORE)
    logits = model.classify(batch.input_ids, batch.token_type_ids, batch.attention_mask).float()
    if task == "regression":
        return F.mse_loss(logits.squeeze(-1), batch.labels)
    return F.cross_entropy(logits, batch.labels)


@torch.no_grad()
def evaluate(model: Bert, batches: list[Batch], config: FinetuneConfig, labels: list[str] | None) -> dict[str, float]:
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    predicted, gold = [], []
    for batch in batches:
        inputs = (batch.input_ids.to(device), batch.token_type_ids.to(device), batch.attention_mask.to(device))
        with autocast(device, config.bf16):
            logits = (model.tag if config.task == "tokens" else model.classify)(*inputs).float().cpu()
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
