"""The pre-training loop: AdamW (no decay on biases and LayerNorm), warm-up then linear decay, clipping,
seeded and resumable, with periodic held-out masked-token accuracy and perplexity (Devlin et al. 2019).

The successors' objectives go through the same loop: masks redrawn at every step or drawn once per sequence
(RoBERTa, dynamic_masking.py), n-gram spans (ALBERT, ngram_masking.py), and a generator and discriminator
trained together (ELECTRA, electra.py: pass an `Electra` as the model)."""
from __future__ import annotations

import itertools
import json
import logging
import math
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from ..devices import autocast_dtype, model_device
from ..errors import InvalidInputError
from ..model import Bert
from ..tokenizer import BertTokenizer
from .data import Batch, DataConfig, batches, infinite_batches, word_numbers
from .distributed import Ranks, barrier, seed_dropout, share, sum_over_ranks
from .dynamic_masking import static_masks
from .electra import Electra, electra_losses
from .masking import IGNORE, choose_tokens, corrupt
from .ngram_masking import choose_ngrams

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1000  # optimizer updates in the whole run
    learning_rate: float = 1e-4  # peak, reached after warm-up (Devlin et al. 2019)
    warmup_steps: int = 100  # linear warm-up from 0, then linear decay to 0 at `steps`
    weight_decay: float = 0.01  # AdamW decay, not applied to biases and LayerNorm
    clip_norm: float = 1.0  # gradient-norm clipping
    seed: int = 0  # fixes initialisation, data order, masking and dropout
    train: str = "all"  # what learns: "all", "head" (heads only) or "top:N" (heads and the top N layers)
    freeze_token_embedding: bool = False  # keep the (tied) token embedding as it is (always kept unless train="all")
    mask_probability: float = 0.15  # share of non-special tokens chosen for the MLM loss
    whole_word: bool = False  # choose whole words, not word pieces (ALBERT-style)
    max_ngram: int = 1  # choose spans of up to this many pieces (or words), p(n) ~ 1/n (ALBERT: 3; ngram_masking.py)
    static_masks: bool = False  # mask each sequence once, the same whenever it comes back (BERT's data); False: redrawn every step (RoBERTa)
    mask_share: float = 0.8  # of the chosen tokens, the share shown as [MASK]; the rest half random, half kept (ELECTRA: 1.0)
    mlm: bool = True  # masked-LM loss on
    bf16: bool = False  # autocast to bfloat16 on the model's device, where it is native (CUDA; CPUs with AVX512-BF16 or AMX)
    eval_every: int = 200  # steps between held-out evaluations
    eval_batches: int = 50  # held-out batches per evaluation
    checkpoint_every: int = 200  # steps between checkpoints

    def __post_init__(self):
        if self.max_ngram < 1:
            raise InvalidInputError(f"max_ngram is the longest span masked, 1 or more, not {self.max_ngram}")
        if not 0.0 <= self.mask_share <= 1.0:
            raise InvalidInputError(f"mask_share is a share of the chosen tokens, from 0 to 1, not {self.mask_share}")


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Multiplier of the peak learning rate at `step`: 0 -> 1 over warm-up, then 1 -> 0 at `total`."""
    if step < warmup:
        return step / max(warmup, 1)
    return max(0.0, (total - step) / max(total - warmup, 1))


def select_trainable(model: Bert | Electra, what: str, freeze_token_embedding: bool) -> list[torch.nn.Parameter]:
    """Freeze all but what should learn; return the parameters that learn.

    The LM head's output matrix is the token embedding (tied), the encoder's input. It learns only with
    train="all": "head" and "top:N" leave the layers below them exactly as they were. ELECTRA's pair learns whole.
    """
    if isinstance(model, Electra):
        if what != "all" or freeze_token_embedding:
            raise InvalidInputError("ELECTRA's generator and discriminator pre-train whole: train='all', embeddings learning")
        return list(model.parameters())
    heads = [m for m in (model.lm_head, model.pooler, model.nsp_head, model.classifier, model.tagger) if m is not None]
    num_layers = len(model.transformer)
    if what == "all":
        learning = [model]
    elif what == "head":
        learning = heads
    elif what.startswith("top:") and what[4:].isdigit() and int(what[4:]) <= num_layers:
        learning = heads + list(model.transformer[num_layers - int(what[4:]) :])
    else:
        raise InvalidInputError(f"train must be 'all', 'head' or 'top:N' with N from 0 to {num_layers}, not {what!r}")
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


def mask_batch(batch: Batch, tokenizer: BertTokenizer, config: TrainConfig, generator: torch.Generator):
    """(corrupted, labels): tokens, words or n-grams chosen as `config` says, then shown as [MASK], random or kept."""
    words = word_numbers(batch.input_ids, batch.maskable, tokenizer) if config.whole_word else None
    if config.max_ngram > 1:
        chosen = choose_ngrams(batch.maskable, generator, config.mask_probability, config.max_ngram, words)
    else:
        chosen = choose_tokens(batch.maskable, generator, config.mask_probability, words)
    return corrupt(batch.input_ids, chosen, tokenizer.mask_id, tokenizer.vocab_size, generator, config.mask_share)


def step_masks(batch: Batch, tokenizer: BertTokenizer, config: TrainConfig, step: int):
    """The masks of training step `step`: drawn anew from (seed, step), or, with static_masks, each sequence's own
    draw whatever the step (dynamic_masking.py)."""
    if config.static_masks:
        return static_masks(batch, config.seed, lambda alone, generator: mask_batch(alone, tokenizer, config, generator))
    return mask_batch(batch, tokenizer, config, masking_generator(config.seed, step))


def masking_generator(seed: int, step: int) -> torch.Generator:
    """The CPU generator that masks training step `step` of a run seeded `seed`."""
    return torch.Generator().manual_seed(seed * 1_000_003 + step)


def pretraining_loss(
    model: Bert, batch: Batch, corrupted: torch.Tensor, labels: torch.Tensor, mlm: bool = True, totals: tuple[int, int] | None = None
) -> dict[str, torch.Tensor]:
    """MLM cross-entropy over the chosen positions only, plus NSP cross-entropy when the batch has pairs.

    Each is a mean over the batch's chosen tokens (MLM) and pairs (NSP). With `totals` = (chosen tokens, pairs)
    of a global batch of which this batch is one rank's share, each is this share's sum divided by the global
    count: the ranks' losses add up to the global batch's means (distributed.py).
    """
    chosen = labels != IGNORE
    pairs = batch.nsp_labels != IGNORE if batch.nsp_labels is not None else None
    total_chosen, total_pairs = totals or (int(chosen.sum()), int(pairs.sum()) if pairs is not None else 0)
    hidden = model.encode(corrupted, batch.token_type_ids, batch.attention_mask)
    losses = {}
    if mlm:
        logits = model.mlm_logits(hidden, chosen)  # [chosen, vocab]: the LM head runs only where it is scored
        # Nothing chosen (short lines, small batches: 0.85**tokens) would be a mean over nothing, NaN: count 0.
        summed = F.cross_entropy(logits.float(), labels[chosen], reduction="sum") if chosen.any() else logits.sum() * 0.0
        losses["mlm"] = summed / max(total_chosen, 1)
    if batch.nsp_labels is not None:
        summed = F.cross_entropy(model.nsp_logits(hidden).float(), batch.nsp_labels, reduction="sum", ignore_index=IGNORE)
        losses["nsp"] = summed / max(total_pairs, 1)
    losses["loss"] = sum(losses.values())
    return losses


class PretrainingObjective(nn.Module):
    """The model and its losses as one module: DistributedDataParallel wraps the whole forward pass."""

    def __init__(self, model: Bert, mlm: bool):
        super().__init__()
        self.model, self.mlm = model, mlm

    def forward(self, batch: Batch, corrupted: torch.Tensor, labels: torch.Tensor, totals: tuple[int, int, int]) -> dict[str, torch.Tensor]:
        """totals: (chosen tokens, pairs, non-padding tokens) of the global batch."""
        return pretraining_loss(self.model, batch, corrupted, labels, self.mlm, totals[:2])


def objective_of(model: Bert | Electra, config: TrainConfig) -> nn.Module:
    """The module whose forward gives the losses: ELECTRA's pair is one already."""
    return ElectraObjective(model) if isinstance(model, Electra) else PretrainingObjective(model, config.mlm)


class ElectraObjective(nn.Module):
    """ELECTRA's pair under the trainer's call: its discriminator's loss is a mean over the global batch's
    non-padding tokens (totals[2]), its generator's over the masked ones (totals[0])."""

    def __init__(self, electra: Electra):
        super().__init__()
        self.electra = electra

    def forward(self, batch: Batch, corrupted: torch.Tensor, labels: torch.Tensor, totals: tuple[int, int, int]) -> dict[str, torch.Tensor]:
        return self.electra(batch, corrupted, labels, (totals[0], totals[2]))


def autocast(device: torch.device, bf16: bool):
    """bfloat16 autocast on `device` when asked for and native there (devices.autocast_dtype); else float32."""
    dtype = autocast_dtype(device) if bf16 else None
    return torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None)


def freeze_unused_heads(model: Bert, config: TrainConfig, data: DataConfig) -> None:
    """Heads no loss reads get no gradient; frozen, DistributedDataParallel does not wait for one. (A single
    process is unchanged: AdamW skips parameters without a gradient.)"""
    freeze_heads(model, ([] if data.pair_task else ["pooler", "nsp_head"]) + ([] if config.mlm else ["lm_head"]))


def freeze_heads(model: Bert, names: list[str]) -> None:
    """Stop the named heads (attributes of `model`: "lm_head", "pooler", "nsp_head", "classifier", "tagger")
    from learning, those the model has. The LM head's output matrix is the token embedding: it keeps learning."""
    if isinstance(model, Electra):
        return  # the pair has the two heads its losses read
    for name in names:
        output_head = getattr(model, name)
        if name == "lm_head" and output_head is not None:  # all but the unembedding weight: the embedding's tensor
            for part in (output_head.mlp, output_head.layer_norm, output_head.unembedding.bias):
                part.requires_grad_(False)
        elif output_head is not None:
            output_head.requires_grad_(False)


@torch.no_grad()
def evaluate(model: Bert | Electra, tokenizer: BertTokenizer, heldout: list[Batch], config: TrainConfig) -> dict[str, float]:
    """Masked-token top-1 / top-5 accuracy and perplexity on held-out text, masked the same way every time. For
    ELECTRA: the generator's, and the discriminator's loss per token (`replaced_loss`, its samples drawn the same
    way every time)."""
    was_training = model.training
    model.eval()
    device = model_device(model)
    generator = torch.Generator().manual_seed(config.seed + 1)  # masking on the CPU: the same on every device
    sampler = torch.Generator().manual_seed(config.seed + 2)  # ELECTRA's samples, likewise
    nll = top1 = top5 = count = replaced = tokens = 0.0
    for batch in heldout:
        corrupted, labels = mask_batch(batch, tokenizer, config, generator)
        batch, corrupted, labels = batch.to(device), corrupted.to(device), labels.to(device)
        chosen = labels != IGNORE
        if not chosen.any():
            continue
        masked_lm = model.generator if isinstance(model, Electra) else model
        with autocast(device, config.bf16):
            logits = masked_lm(corrupted, batch.token_type_ids, batch.attention_mask, logit_mask=chosen).float()
            if isinstance(model, Electra):
                replaced += float(electra_losses(model, batch, corrupted, labels, sampler=sampler)[0]["replaced"]) * batch.num_tokens
                tokens += batch.num_tokens
        targets = labels[chosen]
        nll += float(F.cross_entropy(logits, targets, reduction="sum"))
        best = logits.topk(5, dim=-1).indices
        top1 += float((best[:, 0] == targets).sum())
        top5 += float((best == targets[:, None]).any(-1).sum())
        count += len(targets)
    model.train(was_training)
    count = max(count, 1)
    metrics = {"top1": top1 / count, "top5": top5 / count, "perplexity": math.exp(nll / count), "masked_tokens": int(count)}
    return metrics | ({"replaced_loss": replaced / max(tokens, 1)} if isinstance(model, Electra) else {})


def train(
    model: Bert | Electra,
    tokenizer: BertTokenizer,
    train_file: str | Path,
    heldout_file: str | Path | None,
    out_dir: str | Path,
    config: TrainConfig,
    data: DataConfig = DataConfig(),
    resume: bool = True,
    on_step: Callable[[int, dict[str, float], dict | None], bool | None] | None = None,
) -> dict:
    """Train on the model's device, writing `out_dir/checkpoint` every `checkpoint_every` steps and
    `out_dir/log.jsonl` evaluations. With resume=True and a checkpoint present, continue exactly where it stopped.

    on_step(step, losses, evaluation), in a single process only, is called after every update (`evaluation`: that
    step's held-out metrics, None between evaluations); a true return stops the run there, with a checkpoint.

    In an initialised process group (torchrun), train data-parallel: `data.batch_size` examples per rank, a global
    batch of batch_size x world (distributed.py); rank 0 evaluates, logs and writes the checkpoint, every rank
    reads it to resume (on several machines, `out_dir` must be a shared folder).
    """
    ranks, device, out_dir = Ranks.current(), model_device(model), Path(out_dir)
    if on_step is not None and ranks.world > 1:
        raise InvalidInputError("on_step is for single-process runs: a stop on one rank would leave the others waiting")
    global_data = replace(data, batch_size=data.batch_size * ranks.world)
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    optimizer = make_optimizer(model, config)
    freeze_unused_heads(model, config, data)
    scheduler = make_scheduler(optimizer, config.warmup_steps, config.steps)
    step = load_checkpoint(out_dir / "checkpoint", model, optimizer, scheduler, global_data.batch_size) if resume else 0
    if config.bf16 and autocast_dtype(device) is None:
        log.warning("bf16 asked for, but %s has no native bfloat16: training in float32", device)
    if ranks.main:
        log.info("effective batch: %d sequences per step (%d per rank x %d rank(s)); device %s, %s precision", global_data.batch_size,
                 data.batch_size, ranks.world, device, "bfloat16" if config.bf16 and autocast_dtype(device) else "float32")
    evaluating = heldout_file and ranks.main  # rank 0 evaluates
    heldout = list(itertools.islice(batches(heldout_file, tokenizer, global_data, config.seed, 0), config.eval_batches)) if evaluating else []
    stream = infinite_batches(train_file, tokenizer, global_data, config.seed, skip=step)
    objective = objective_of(model, config)
    if ranks.world > 1:
        objective = DistributedDataParallel(objective, device_ids=[device.index] if device.type == "cuda" else None)
    model.train()
    metrics: dict = {}
    progress = tqdm(total=config.steps, initial=step, desc="pretrain", unit="step", dynamic_ncols=True, disable=not ranks.main)
    tokens, started = 0, time.perf_counter()
    stop = False
    while step < config.steps and not stop:
        batch = next(stream)
        losses = train_step(objective, tokenizer, batch, optimizer, scheduler, config, step)
        loss = losses["loss"]
        step += 1
        tokens += batch.num_tokens
        progress.update(1)
        progress.set_postfix(loss=f"{loss:.3f}", tok_s=f"{tokens / (time.perf_counter() - started):.0f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
        evaluated = ranks.main and (step % config.eval_every == 0 or step == config.steps)
        if evaluated:  # without held-out text, the training loss only
            metrics = {"step": step, "train_loss": loss, **(evaluate(model, tokenizer, heldout, config) if heldout else {}),
                       "global_batch": global_data.batch_size, "ranks": ranks.world, "tokens_per_s": round(tokens / (time.perf_counter() - started))}
            log.info("step %d: %s", step, metrics)
            with open(out_dir / "log.jsonl", "a") as f:
                f.write(json.dumps(metrics) + "\n")
        stop = bool(on_step and on_step(step, losses, metrics if evaluated else None))
        if ranks.main and (step % config.checkpoint_every == 0 or step == config.steps or stop):
            save_checkpoint(out_dir / "checkpoint", model, optimizer, scheduler, step, config, global_data.batch_size)
    progress.close()
    barrier(ranks)  # every rank returns once the last checkpoint is written
    model.eval()
    return metrics


def train_step(objective, tokenizer, batch: Batch, optimizer, scheduler, config: TrainConfig, step: int) -> dict[str, float]:
    """One update on one global batch; `objective` is a PretrainingObjective, wrapped in DDP with several ranks.

    Masking draws from a generator seeded by (seed, step) (or each sequence's own, step_masks), on the CPU, over
    the whole global batch, on every rank: a resumed run and any number of ranks mask alike. Dropout draws from (seed, step, rank).
    Returns the global batch's losses.
    """
    ranks, device = Ranks.current(), model_device(objective)
    seed_dropout(config.seed, step, ranks)  # and ELECTRA's samples
    corrupted, labels = step_masks(batch, tokenizer, config, step)
    totals = (int((labels != IGNORE).sum()), len(batch.input_ids) if batch.nsp_labels is not None else 0, batch.num_tokens)
    mine, corrupted, labels = share(batch, corrupted, labels, ranks)
    with autocast(device, config.bf16):
        losses = objective(mine.to(device), corrupted.to(device), labels.to(device), totals)
    apply_gradients(objective, losses["loss"], optimizer, scheduler, config.clip_norm, ranks)
    summed = sum_over_ranks(torch.stack([value.detach().float() for value in losses.values()]), ranks)
    return dict(zip(losses, summed.tolist()))


def apply_gradients(objective: nn.Module, loss: torch.Tensor, optimizer, scheduler, clip_norm: float, ranks: Ranks = Ranks()) -> None:
    """Backward, clip the gradient norm, one optimizer and one schedule step. `loss` is this rank's share of the
    global batch's loss; under DistributedDataParallel (which averages the ranks' gradients) scaled by the
    number of ranks, so that the gradient every rank applies is the global batch's."""
    optimizer.zero_grad(set_to_none=True)
    (loss * ranks.world).backward()
    torch.nn.utils.clip_grad_norm_([p for p in objective.parameters() if p.requires_grad], clip_norm)
    optimizer.step()
    scheduler.step()


def save_checkpoint(folder: Path, model, optimizer, scheduler, step: int, config: TrainConfig, global_batch: int | None = None) -> None:
    """Written to `checkpoint.tmp` (state.json last), then swapped in by renames: a run killed at any moment
    leaves a complete checkpoint in `checkpoint` or, inside the swap, in `checkpoint.tmp` (load_checkpoint looks there)."""
    tmp, old = folder.with_name(folder.name + ".tmp"), folder.with_name(folder.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    tmp.mkdir(parents=True)
    twins = tied_names(model)
    state = {k: v.cpu().contiguous() for k, v in model.state_dict().items() if k not in twins}  # a tied tensor once
    save_file(state, str(tmp / "model.safetensors"))
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps({"step": step, "global_batch": global_batch, "config": asdict(config)}, indent=2))
    if folder.exists():
        folder.rename(old)
    tmp.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(folder: Path, model, optimizer, scheduler, global_batch: int | None = None) -> int:
    """Restore model, optimizer and scheduler; return the step to go on from (0 without a checkpoint).
    The run goes on exactly when the global batch (batch size x ranks) is the one it was saved with."""
    found = complete_checkpoint(folder)
    if found is None:
        return 0
    step = load_checkpoint_weights(found, model)
    saved_batch = json.loads((found / "state.json").read_text()).get("global_batch")
    if global_batch and saved_batch and saved_batch != global_batch:
        log.warning("resuming with a global batch of %d, saved with %d: the data order differs from the first run's", global_batch, saved_batch)
    saved = torch.load(found / "optimizer.pt", weights_only=True, map_location=model_device(model))
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
    for name, first in tied_names(model).items():  # tied, saved once
        state[name] = state[first]
    model.load_state_dict(state, strict=True)
    return json.loads((folder / "state.json").read_text())["step"]


def tied_names(model: nn.Module) -> dict[str, str]:
    """{name: the first name of the same tensor} for every state_dict entry that repeats an earlier one (the LM
    head's unembedding is the token embedding; ELECTRA's generator reads the discriminator's embeddings)."""
    first, twins = {}, {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        twins.update({name: first[id(tensor)]} if id(tensor) in first else {})
        first.setdefault(id(tensor), name)
    return twins
