"""The pre-training loop: AdamW (no decay on biases and LayerNorm), warm-up then linear decay, clipping,
seeded and resumable, with periodic held-out masked-token accuracy and perplexity (seed 003)."""
from __future__ import annotations

import itertools
import json
import logging
import math
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from ..model import Bert
from ..tokenizer import BertTokenizer
from .data import Batch, DataConfig, batches, infinite_batches, word_numbers
from .masking import IGNORE, mask_tokens

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1000  # optimizer updates in the whole run
    learning_rate: float = 1e-4  # peak, reached after warm-up (seed 003)
    warmup_steps: int = 100  # linear warm-up from 0, then linear decay to 0 at `steps`
    weight_decay: float = 0.01  # AdamW decay, not applied to biases and LayerNorm
    clip_norm: float = 1.0  # gradient-norm clipping
    seed: int = 0  # fixes initialisation, data order, masking and dropout
    train: str = "all"  # what learns: "all", "head" (heads only) or "top:N" (heads and the top N layers)
    freeze_token_embedding: bool = False  # keep the (tied) token embedding as it is (always kept unless train="all")
    mask_probability: float = 0.15  # share of non-special tokens chosen for the MLM loss
    whole_word: bool = False  # choose whole words, not word pieces (ALBERT-style)
    mlm: bool = True  # masked-LM loss on
    bf16: bool = False  # CPU/GPU autocast to bfloat16 (2.6x faster on CPUs with AVX512-BF16)
    eval_every: int = 200  # steps between held-out evaluations
    eval_batches: int = 50  # held-out batches per evaluation
    checkpoint_every: int = 200  # steps between checkpoints


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Multiplier of the peak learning rate at `step`: 0 -> 1 over warm-up, then 1 -> 0 at `total`."""
    if step < warmup:
        return step / max(warmup, 1)
    return max(0.0, (total - step) / max(total - warmup, 1))


def select_trainable(model: Bert, what: str, freeze_token_embedding: bool) -> list[torch.nn.Parameter]:
    """Freeze all but what should learn; return the parameters that learn.

    The LM head's output matrix is the token embedding (tied), the encoder's input. It learns only with
    train="all": "head" and "top:N" leave the layers below them exactly as they were.
    """
    heads = [m for m in (model.lm_head, model.pooler, model.nsp_head, model.classifier, model.tagger) if m is not None]
    num_layers = len(model.transformer)
    if what == "all":
        learning = [model]
    elif what == "head":
        learning = heads
    elif what.startswith("top:") and what[4:].isdigit() and int(what[4:]) <= num_layers:
        learning = heads + list(model.transformer[num_layers - int(what[4:]) :])
    else:
        raise ValueError(f"train must be 'all', 'head' or 'top:N' with N from 0 to {num_layers}, not {what!r}")
    model.requires_grad_(False)
    for module in learning:
        module.requires_grad_(True)
    if freeze_token_embedding or what != "all":
        model.embedding.token_embedding.weight.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


def make_optimizer(model: Bert, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW over what `config.train` lets learn (any config with train, freeze_token_embedding, weight_decay
    and learning_rate: fine-tuning's FinetuneConfig too)."""
    trainable = {id(p) for p in select_trainable(model, config.train, config.freeze_token_embedding)}
    decay, no_decay = [], []
    for name, param in model.named_parameters():  # a tied tensor appears once
        if id(param) in trainable:
            (no_decay if name.endswith("bias") or "layer_norm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.learning_rate)


def make_scheduler(optimizer: torch.optim.Optimizer, warmup_steps: int, steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, warmup_steps, steps))


def apply_gradients(model: Bert, loss: torch.Tensor, optimizer, scheduler, clip_norm: float) -> None:
    """Backward, clip the gradient norm, one optimizer and one schedule step."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], clip_norm)
    optimizer.step()
    scheduler.step()


def mask_batch(batch: Batch, tokenizer: BertTokenizer, config: TrainConfig, generator: torch.Generator):
    words = word_numbers(batch.input_ids, batch.maskable, tokenizer) if config.whole_word else None
    return mask_tokens(batch.input_ids, batch.maskable, tokenizer.mask_id, tokenizer.vocab_size, generator, config.mask_probability, words)


def pretraining_loss(model: Bert, batch: Batch, corrupted: torch.Tensor, labels: torch.Tensor, mlm: bool = True) -> dict[str, torch.Tensor]:
    """MLM cross-entropy over the chosen positions only, plus NSP cross-entropy when the batch has pairs."""
    hidden = model.encode(corrupted, batch.token_type_ids, batch.attention_mask)
    losses = {}
    if mlm:
        chosen = labels != IGNORE
        logits = model.mlm_logits(hidden, chosen)  # [chosen, vocab]: the LM head runs only where it is scored
        # Nothing chosen (short lines, small batches: 0.85**tokens) would be a mean over nothing, NaN: count 0.
        losses["mlm"] = F.cross_entropy(logits.float(), labels[chosen]) if chosen.any() else logits.sum() * 0.0
    if batch.nsp_labels is not None:
        losses["nsp"] = F.cross_entropy(model.nsp_logits(hidden).float(), batch.nsp_labels)
    losses["loss"] = sum(losses.values())
    return losses


@torch.no_grad()
def evaluate(model: Bert, tokenizer: BertTokenizer, heldout: list[Batch], config: TrainConfig) -> dict[str, float]:
    """Masked-token top-1 / top-5 accuracy and perplexity on held-out text, masked the same way every time."""
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(config.seed + 1)
    nll = top1 = top5 = count = 0.0
    for batch in heldout:
        corrupted, labels = mask_batch(batch, tokenizer, config, generator)
        chosen = labels != IGNORE
        if not chosen.any():
            continue
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
            logits = model(corrupted, batch.token_type_ids, batch.attention_mask, logit_mask=chosen).float()
        targets = labels[chosen]
        nll += float(F.cross_entropy(logits, targets, reduction="sum"))
        best = logits.topk(5, dim=-1).indices
        top1 += float((best[:, 0] == targets).sum())
        top5 += float((best == targets[:, None]).any(-1).sum())
        count += len(targets)
    model.train(was_training)
    count = max(count, 1)
    return {"top1": top1 / count, "top5": top5 / count, "perplexity": math.exp(nll / count), "masked_tokens": int(count)}


def train(
    model: Bert,
    tokenizer: BertTokenizer,
    train_file: str | Path,
    heldout_file: str | Path | None,
    out_dir: str | Path,
    config: TrainConfig,
    data: DataConfig = DataConfig(),
    resume: bool = True,
) -> dict:
    """Train, writing `out_dir/checkpoint` every `checkpoint_every` steps and `out_dir/log.jsonl` evaluations.
    With resume=True and a checkpoint present, continue exactly where it stopped."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    optimizer = make_optimizer(model, config)
    scheduler = make_scheduler(optimizer, config.warmup_steps, config.steps)
    step = load_checkpoint(out_dir / "checkpoint", model, optimizer, scheduler) if resume else 0
    heldout = list(itertools.islice(batches(heldout_file, tokenizer, data, config.seed, 0), config.eval_batches)) if heldout_file else []
    stream = infinite_batches(train_file, tokenizer, data, config.seed, skip=step)
    model.train()
    metrics: dict = {}
    progress = tqdm(total=config.steps, initial=step, desc="pretrain", unit="step", dynamic_ncols=True)
    tokens, started = 0, time.perf_counter()
    while step < config.steps:
        batch = next(stream)
        loss = train_step(model, tokenizer, batch, optimizer, scheduler, config, step)["loss"]
        step += 1
        tokens += batch.num_tokens
        progress.update(1)
        progress.set_postfix(loss=f"{loss:.3f}", tok_s=f"{tokens / (time.perf_counter() - started):.0f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
        if step % config.eval_every == 0 or step == config.steps:  # without held-out text, the training loss only
            metrics = {"step": step, "train_loss": loss, **(evaluate(model, tokenizer, heldout, config) if heldout else {})}
            log.info("step %d: %s", step, metrics)
            with open(out_dir / "log.jsonl", "a") as f:
                f.write(json.dumps(metrics) + "\n")
        if step % config.checkpoint_every == 0 or step == config.steps:
            save_checkpoint(out_dir / "checkpoint", model, optimizer, scheduler, step, config)
    progress.close()
    model.eval()
    return metrics


def train_step(model, tokenizer, batch: Batch, optimizer, scheduler, config: TrainConfig, step: int) -> dict[str, float]:
    """One update. Masking and dropout draw from generators seeded by (seed, step): a resumed run repeats it."""
    generator = torch.Generator().manual_seed(config.seed * 1_000_003 + step)
    torch.manual_seed(config.seed * 1_000_003 + step)
    corrupted, labels = mask_batch(batch, tokenizer, config, generator)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.bf16):
        losses = pretraining_loss(model, batch, corrupted, labels, config.mlm)
    apply_gradients(model, losses["loss"], optimizer, scheduler, config.clip_norm)
    return {name: float(value.detach()) for name, value in losses.items()}


def save_checkpoint(folder: Path, model, optimizer, scheduler, step: int, config: TrainConfig) -> None:
    """Written to `checkpoint.tmp` (state.json last), then swapped in by renames: a run killed at any moment
    leaves a complete checkpoint in `checkpoint` or, inside the swap, in `checkpoint.tmp` (load_checkpoint looks there)."""
    tmp, old = folder.with_name(folder.name + ".tmp"), folder.with_name(folder.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    tmp.mkdir(parents=True)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.unembedding.weight"}
    save_file(state, str(tmp / "model.safetensors"))
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps({"step": step, "config": asdict(config)}, indent=2))
    if folder.exists():
        folder.rename(old)
    tmp.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(folder: Path, model, optimizer, scheduler) -> int:
    """Restore model, optimizer and scheduler; return the step to go on from (0 without a checkpoint)."""
    found = complete_checkpoint(folder)
    if found is None:
        return 0
    step = load_checkpoint_weights(found, model)
    saved = torch.load(found / "optimizer.pt", weights_only=True)
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    log.info("resumed from %s at step %d", found, step)
    return step


def complete_checkpoint(folder: Path) -> Path | None:
    """`folder`, or `folder.tmp` if a run was killed between save_checkpoint's two renames; None if neither."""
    for candidate in (folder, folder.with_name(folder.name + ".tmp")):
        if (candidate / "state.json").is_file():
            return candidate
    return None


def load_checkpoint_weights(folder: Path, model) -> int:
    """Fill `model` (strictly) from a complete checkpoint folder; return its step."""
    state = load_file(str(folder / "model.safetensors"))
    if model.lm_head is not None:
        state["lm_head.unembedding.weight"] = state["embedding.token_embedding.weight"]  # tied, saved once
    model.load_state_dict(state, strict=True)
    return json.loads((folder / "state.json").read_text())["step"]
