"""Training a TopK sparse autoencoder on activations streamed from the model (Gao et al. 2024).

    sae = train_sae(model, tokenizer, lines, layer=3, settings=SaeSettings(features=4096, k=32, steps=3000),
                    out="out/sae", model_name="minilm", data_name="data/corpus/train.txt")

Activations are computed batch by batch (the layers above the SAE's are not run) and mixed in a buffer of
`buffer_tokens` vectors, never all at once in memory. The loss is the reconstruction error over the batch's
variance; the decoder's rows are kept at unit norm (the gradient's part along each row is removed before the
step, the rows renormalised after it); features that have not fired for `dead_after_tokens` tokens are trained
by the auxiliary loss (AuxK: the error is reconstructed from the top `aux_k` dead features, weight
`aux_coefficient`). The encoder starts as the decoder's transpose, b_dec as the mean of the first batch, and
the input scale is sqrt(hidden) over that batch's mean norm.

Checkpoints (`out/checkpoint.pt`: tensors, and the weights' fingerprint, layer, size and k they belong to; read
with weights_only=True) every `checkpoint_every` steps; a run started again with the same out folder resumes from
the last one (the text continues where it was; the vectors in the mixing buffer at the time are not replayed), and
refuses one written for other weights, another layer, size or k. Under torchrun each rank reads every world-th line
and every step uses the mean of the ranks' gradients (all-reduce), from rank 0's start; rank 0 writes. The
ranks' shares of the text give different numbers of batches: when one rank's runs out, every rank stops at that
step (a flag all-reduced each step).
"""
from __future__ import annotations

import itertools
import logging
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

import torch

from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer
from ...pretraining.distributed import Ranks, any_rank, barrier, sum_over_ranks
from ..corpus.model_fingerprint import model_fingerprint
from .residuals import residual_stream
from .sae import SaeConfig, SaeFileError, TopKSae

log = logging.getLogger(__name__)
CHECKPOINT_FILE = "checkpoint.pt"


@dataclass(frozen=True)
class SaeSettings:
    features: int = 4096  # F
    k: int = 32  # features kept per token
    steps: int = 2000  # optimizer steps
    batch_tokens: int = 2048  # vectors per step (per rank under torchrun)
    learning_rate: float = 5e-4  # Adam; decays linearly to 0 over the last fifth of the steps
    aux_k: int = 256  # dead features the auxiliary loss uses per token
    aux_coefficient: float = 1 / 32
    dead_after_tokens: int = 500_000  # a feature that has not fired for this many tokens counts as dead
    buffer_tokens: int = 65_536  # vectors mixed before they are drawn
    repeats: int = 1  # times each vector is drawn (more steps per forward pass of the model, on less distinct text)
    special_tokens: bool = True  # train on [CLS] and [SEP] too
    sentences_per_batch: int = 64  # sentences per forward pass of the model
    checkpoint_every: int = 200
    seed: int = 0

    def check(self) -> None:
        if not 1 <= self.k <= self.features or self.steps < 1 or self.batch_tokens < 1 or self.learning_rate <= 0:
            raise InvalidInputError("features >= k >= 1, steps >= 1, batch tokens >= 1 and a positive learning rate are needed")
        if self.repeats < 1:
            raise InvalidInputError(f"repeats must be 1 or more, not {self.repeats}")
        if self.buffer_tokens < 2 * self.batch_tokens:
            raise InvalidInputError(f"buffer_tokens ({self.buffer_tokens}) must hold at least two batches ({2 * self.batch_tokens})")


Progress = Callable[[int, int, dict], None]  # (step, steps, {"loss": ..., "dead": ...}) e.g. for a progress bar


def mixed_batches(vectors: Iterator[torch.Tensor], batch: int, capacity: int, generator: torch.Generator,
                  repeats: int = 1) -> Iterator[torch.Tensor]:
    """[batch, hidden] draws from a buffer of up to `capacity` vectors: when full, it is shuffled and its first half
    handed out, `repeats` times in fresh orders; at the end of the stream what remains goes out in whole batches."""
    buffer: list[torch.Tensor] = []
    held = 0
    for chunk in vectors:
        buffer.append(chunk)
        held += len(chunk)
        if held >= capacity:
            pool = torch.cat(buffer)
            pool = pool[torch.randperm(len(pool), generator=generator)]
            out = (len(pool) // 2) // batch * batch
            for _ in range(repeats):
                yield from pool[:out][torch.randperm(out, generator=generator)].split(batch)
            buffer, held = [pool[out:]], len(pool) - out
    pool = torch.cat(buffer) if buffer else torch.empty(0)
    pool = pool[torch.randperm(len(pool), generator=generator)]
    yield from (part for part in pool.split(batch) if len(part) == batch)


def sae_losses(sae: TopKSae, x: torch.Tensor, dead: torch.Tensor, settings: SaeSettings) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(normalised reconstruction loss, auxiliary loss, fired [feature] bool) for a batch x [batch, hidden]."""
    scale = sae.config.input_scale
    scaled = x * scale
    variance = (scaled - scaled.mean(0)).pow(2).sum().clamp_min(1e-8)
    pre = sae.pre_activations(x)  # [batch, feature]
    values, indices = pre.topk(sae.config.k, dim=-1)
    values = values.relu()
    reconstruction = sae.decode_sparse(values, indices) * scale
    loss = (reconstruction - scaled).pow(2).sum() / variance
    fired = torch.zeros(sae.config.features, dtype=torch.bool, device=x.device)
    fired[indices[values > 0]] = True
    aux = torch.zeros((), device=x.device)
    if bool(dead.any()):
        error = (scaled - reconstruction).detach()
        aux_values, aux_indices = pre.masked_fill(~dead, -torch.inf).topk(min(settings.aux_k, int(dead.sum())), dim=-1)
        aux_values = aux_values.relu()  # -inf (not dead) -> 0
        guess = sae.decode_sparse(aux_values, aux_indices) * scale - sae.b_dec
        aux = (guess - error).pow(2).sum() / variance
    return loss, aux, fired


def train_sae(
    model: Bert, tokenizer: BertTokenizer, lines: Sequence[str], layer: int, settings: SaeSettings, out: str | Path,
    model_name: str, data_name: str, ranks: Ranks = Ranks(), progress: Progress | None = None,
) -> tuple[TopKSae, SaeConfig]:
    """Train (or resume) an SAE on hidden_states[layer] of `lines`; writes checkpoints into `out` (rank 0)."""
    settings.check()
    out = Path(out)
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(settings.seed)
    order = torch.randperm(len(lines), generator=generator).tolist()  # the same on every rank
    mine = order[ranks.rank :: ranks.world]
    config = SaeConfig(model=model_name, fingerprint=model_fingerprint(model), layer=layer, hidden=model.config.hidden_size,
                       features=settings.features, k=settings.k, special_tokens=settings.special_tokens, data=data_name,
                       settings={key: value for key, value in asdict(settings).items() if key not in ("features", "k")})
    state = _load_checkpoint(out / CHECKPOINT_FILE, config, settings)
    start_line = state["lines_done"] if state else 0
    stream = residual_stream(model, tokenizer, (lines[i] for i in mine[start_line:]), layer, settings.special_tokens,
                             settings.sentences_per_batch)
    read = {"lines": start_line}  # lines of this rank's share read so far, for resuming
    batches = mixed_batches(counting_lines(stream, read, settings.sentences_per_batch), settings.batch_tokens,
                            settings.buffer_tokens, generator, settings.repeats)
    first = next(batches, None)
    if any_rank(first is None, ranks, device):  # every rank raises, none waits for the others
        first = None
    if first is None and state is not None:
        raise InvalidInputError(f"the checkpoint in {out.name} has read {start_line} lines of {data_name}; what is left "
                                "makes less than one batch: give more text, or another output folder to start afresh")
    if first is None:
        raise InvalidInputError(f"{data_name} gives fewer than {settings.batch_tokens} training vectors: give more text")
    scale = state["input_scale"] if state else torch.tensor(math.sqrt(config.hidden) / float(first.norm(dim=-1).mean()))
    config = replace(config, input_scale=float(from_rank_0(scale.double().to(device), ranks)))
    sae = TopKSae(config).to(device)
    if state is None:
        _initialise(sae, first.to(device), settings.seed)
    else:
        sae.load_state_dict(state["sae"])
    saver = lambda *parts: _save_checkpoint(out / CHECKPOINT_FILE, *parts, read["lines"])  # noqa: E731
    step, tokens = fit_sae(sae, itertools.chain([first], batches), settings, ranks, state, progress, saver)
    if step < settings.steps:
        log.warning("the text ran out after %d of %d steps: give more text or fewer steps", step, settings.steps)
    return sae.eval(), replace(sae.config, steps=step, tokens=tokens)


def fit_sae(sae: TopKSae, batches: Iterator[torch.Tensor], settings: SaeSettings, ranks: Ranks = Ranks(),
            state: dict | None = None, progress: Progress | None = None, save: Callable | None = None) -> tuple[int, int]:
    """The optimisation loop on batches of vectors [batch, hidden] (any source): (steps done, tokens seen).
    state: a checkpoint to go on from; save(sae, optimizer, since_fired, step, tokens) every checkpoint_every steps."""
    device = sae.W_dec.device
    for parameter in sae.parameters():
        from_rank_0(parameter.data, ranks)
    optimizer = torch.optim.Adam(sae.parameters(), lr=settings.learning_rate, eps=6.25e-10)
    since_fired = torch.zeros(settings.features, dtype=torch.long, device=device)
    step, tokens = 0, 0
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        since_fired, step, tokens = state["since_fired"].to(device), int(state["step"]), int(state["tokens"])
    started, first_tokens, totals = time.monotonic(), tokens, {"loss": 0.0, "aux": 0.0, "n": 0}
    batches = iter(batches)
    while step < settings.steps:
        x = next(batches, None)
        if any_rank(x is None, ranks, device):  # one rank's text has run out: all stop at this step
            break
        x = x.to(device)
        _set_learning_rate(optimizer, settings, step)
        dead = since_fired > settings.dead_after_tokens
        loss, aux, fired = sae_losses(sae, x, dead, settings)
        optimizer.zero_grad(set_to_none=True)
        (loss + settings.aux_coefficient * aux).backward()
        _average_gradients(sae, ranks)
        _remove_parallel_gradient(sae)
        torch.nn.utils.clip_grad_norm_(sae.parameters(), 1.0)
        optimizer.step()
        sae.normalize_decoder()
        fired = sum_over_ranks(fired.float(), ranks) > 0
        global_tokens = len(x) * ranks.world
        since_fired = torch.where(fired, 0, since_fired + global_tokens)
        step, tokens = step + 1, tokens + global_tokens
        loss, aux = float(loss.detach()), float(aux.detach())
        totals = {"loss": totals["loss"] + loss, "aux": totals["aux"] + aux, "n": totals["n"] + 1}
        if progress is not None:
            progress(step, settings.steps, {"loss": loss, "dead": float(dead.float().mean())})
        if step % settings.checkpoint_every == 0 or step == settings.steps:
            log.info("step %d/%d: loss %.4f (1 - variance explained), aux %.4f, dead %.1f%%, %d tokens, %.0f tokens/s",
                     step, settings.steps, totals["loss"] / totals["n"], totals["aux"] / totals["n"],
                     100 * float(dead.float().mean()), tokens, (tokens - first_tokens) / max(time.monotonic() - started, 1e-9))
            totals = {"loss": 0.0, "aux": 0.0, "n": 0}
            if ranks.main and save is not None:
                save(sae, optimizer, since_fired, step, tokens)
            barrier(ranks)
    return step, tokens


def counting_lines(stream: Iterator[torch.Tensor], read: dict, sentences: int) -> Iterator[torch.Tensor]:
    """The stream's chunks, each counted in `read["lines"]` as `sentences` lines read (a resumed run skips them)."""
    for chunk in stream:
        read["lines"] += sentences  # (a last, shorter batch over-counts: the text has ended anyway)
        yield chunk


def from_rank_0(tensor: torch.Tensor, ranks: Ranks) -> torch.Tensor:
    """Rank 0's values on every rank, in place."""
    if ranks.world > 1:
        torch.distributed.broadcast(tensor, 0)
    return tensor


def _average_gradients(sae: TopKSae, ranks: Ranks) -> None:
    """Data-parallel: every rank steps with the mean of the ranks' gradients."""
    if ranks.world > 1:
        for parameter in sae.parameters():
            torch.distributed.all_reduce(parameter.grad)
            parameter.grad /= ranks.world


def _initialise(sae: TopKSae, first: torch.Tensor, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        directions = torch.randn(sae.config.features, sae.config.hidden, generator=generator)
        sae.W_dec.copy_(directions / directions.norm(dim=1, keepdim=True))
        sae.W_enc.copy_(sae.W_dec.T)
        sae.b_dec.copy_((first * sae.config.input_scale).mean(0))
        sae.b_enc.zero_()


def _remove_parallel_gradient(sae: TopKSae) -> None:
    """Keep the decoder rows on the unit sphere: drop each row's gradient component along the row."""
    if sae.W_dec.grad is not None:
        rows = sae.W_dec.detach()
        sae.W_dec.grad -= (sae.W_dec.grad * rows).sum(1, keepdim=True) * rows


def _set_learning_rate(optimizer, settings: SaeSettings, step: int) -> None:
    for group in optimizer.param_groups:
        group["lr"] = settings.learning_rate * decay(settings.steps, step)


def decay(steps: int, step: int) -> float:
    """The learning rate's factor at `step` of `steps`: 1, then down to 0 over the last fifth."""
    decay_from = int(0.8 * steps)
    return 1.0 if step < decay_from else (steps - step) / max(steps - decay_from, 1)


def _save_checkpoint(path: Path, sae, optimizer, since_fired, step: int, tokens: int, lines_done: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    torch.save({"sae": sae.state_dict(), "optimizer": optimizer.state_dict(), "since_fired": since_fired.cpu(),
                "step": torch.tensor(step), "tokens": torch.tensor(tokens), "lines_done": torch.tensor(lines_done),
                "input_scale": torch.tensor(sae.config.input_scale, dtype=torch.float64),
                "trained_for": _trained_for(sae.config)}, temporary)
    temporary.replace(path)  # a crash mid-write leaves the previous checkpoint whole


def _load_checkpoint(path: Path, config: SaeConfig, settings: SaeSettings) -> dict | None:
    if not path.is_file():
        return None
    state = torch.load(path, map_location="cpu", weights_only=True)
    check_checkpoint(path, state, config)
    log.info("resuming from %s at step %d", path, int(state["step"]))
    state["lines_done"] = int(state["lines_done"])
    state["input_scale"] = state["input_scale"].double()
    return state


def _trained_for(config: SaeConfig) -> dict:
    """What a checkpoint can only be resumed with: the model's weights, the layer, the SAE's size and k."""
    return {"fingerprint": config.fingerprint, "layer": config.layer, "hidden": config.hidden,
            "features": config.features, "k": config.k}


def check_checkpoint(path: Path, state: dict, config: SaeConfig) -> None:
    """SaeFileError unless the checkpoint at `path` was written by a run on the same weights, layer, size and k."""
    saved = state.get("trained_for")
    if not isinstance(saved, dict):
        raise SaeFileError(f"{path} does not say which model, layer and k it was trained for, so it cannot be resumed: "
                           "give another --out folder, or delete the checkpoint to start afresh")
    wanted = _trained_for(config)
    names = {"fingerprint": "model weights (fingerprint)", "layer": "--hidden-states-index", "hidden": "hidden size",
             "features": "--features", "k": "--k"}
    differ = [f"{names[key]} {saved.get(key)!r} there, {value!r} here" for key, value in wanted.items() if saved.get(key) != value]
    if differ:
        raise SaeFileError(f"{path} is a checkpoint of another run ({'; '.join(differ)}): resume with the same --model, "
                           "--hidden-states-index, --features and --k, or give another --out folder to start afresh")
