"""Training every layer's transcoder at once on pairs (what the MLP reads, what it writes) streamed from the model.

    transcoders, config = train_transcoders(model, tokenizer, lines, TranscoderSettings(features=4096, k=32),
                                            out="out/transcoders", model_name="minilm", data_name="data/corpus/train.txt")

One forward pass over a batch of sentences gives each token's pair at every layer ([token, layer, 2, hidden]);
the pairs are mixed in a buffer of `buffer_tokens` tokens (sae_train.mixed_batches, the SAE's own) and drawn in
batches. The loss is the sum over layers of the reconstruction error of the MLP's output over its variance in the
batch; the decoder rows are kept at unit norm (the gradient's part along each row removed before the step, the
rows renormalised after it), as the SAE's. A feature of a layer that has not fired for `dead_after_tokens` tokens
is trained by the SAE's auxiliary loss (AuxK, Gao et al. 2024: the layer's error is reconstructed from its top
`aux_k` dead features, weight `aux_coefficient`). The encoder starts as the decoder's transpose, b_dec as the
first batch's mean scaled output; s_in and s_out are sqrt(hidden) over the first batch's mean input and output
norms. The features still dead on held-out text are counted in the model card (transcoder_measures.py).

Checkpoints (`out/checkpoint.pt`, read with weights_only=True) every `checkpoint_every` steps; a run started again
with the same out folder resumes from the last one (the text continues where it was), and refuses one of other
weights, size or k. Under torchrun each rank reads every world-th line and every step uses the mean of the ranks'
gradients; rank 0 writes; when one rank's text runs out every rank stops at that step.
"""
from __future__ import annotations

import itertools
import logging
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import torch

from ...devices import model_device
from ...errors import InvalidInputError
from ...hooks import hook_name
from ...model import Bert
from ...pretraining.distributed import Ranks, any_rank, barrier, sum_over_ranks
from ...tokenizer import BertTokenizer
from ..corpus.batching import pad
from ..corpus.model_fingerprint import model_fingerprint
from ..features.sae_train import counting_lines, decay, from_rank_0, mixed_batches
from .transcoder import TranscoderConfig, TranscoderFileError, Transcoders, mlp_input_kind

log = logging.getLogger(__name__)
CHECKPOINT_FILE = "checkpoint.pt"
INITS = ("random", "neurons")


@dataclass(frozen=True)
class TranscoderSettings:
    features: int = 4096  # F per layer
    k: int = 32  # features kept per token
    steps: int = 2000  # optimizer steps
    batch_tokens: int = 1024  # tokens per step (each with every layer's pair; per rank under torchrun)
    learning_rate: float = 5e-4  # Adam; decays linearly to 0 over the last fifth of the steps
    buffer_tokens: int = 8192  # tokens mixed before they are drawn
    sentences_per_batch: int = 32  # sentences per forward pass of the model
    checkpoint_every: int = 200
    seed: int = 0
    aux_k: int = 256  # dead features the auxiliary loss uses per token (0: no auxiliary loss)
    aux_coefficient: float = 1 / 32
    dead_after_tokens: int = 100_000  # a feature that has not fired for this many tokens counts as dead
    init: str = "random"  # "random", or "neurons": each feature starts as one of the MLP's neurons (neuron_init)

    def check(self) -> None:
        if not 1 <= self.k <= self.features or self.steps < 1 or self.batch_tokens < 1 or self.learning_rate <= 0:
            raise InvalidInputError("features >= k >= 1, steps >= 1, batch tokens >= 1 and a positive learning rate are needed")
        if self.buffer_tokens < 2 * self.batch_tokens:
            raise InvalidInputError(f"buffer_tokens ({self.buffer_tokens}) must hold at least two batches ({2 * self.batch_tokens})")
        if self.sentences_per_batch < 1 or self.checkpoint_every < 1:
            raise InvalidInputError("sentences per batch and checkpoint_every must be at least 1")
        if self.aux_k < 0 or self.aux_coefficient < 0 or self.dead_after_tokens < 1:
            raise InvalidInputError("aux_k and aux_coefficient must not be negative, dead_after_tokens at least 1")
        if self.init not in INITS:
            raise InvalidInputError(f"init must be one of {INITS}, not {self.init!r}")


@torch.no_grad()
def mlp_pairs(model: Bert, tokenizer: BertTokenizer, texts: Sequence[str]) -> torch.Tensor:
    """[token, layer, 2, hidden] float32: for every real token of `texts` ([CLS] and [SEP] included, padding left
    out), what each layer's MLP reads (index 0) and what it writes (index 1), from one forward pass."""
    device, layers = model_device(model), model.config.num_layers
    encodings = [tokenizer.encode(text, max_length=model.config.max_position_embeddings, truncate=True) for text in texts]
    input_ids, token_type_ids, attention_mask = pad(encodings, tokenizer.pad_id, device)
    kind = mlp_input_kind(model)
    names = [hook_name(kind, layer) for layer in range(layers)] + [hook_name("mlp_result", layer) for layer in range(layers)]
    keep = attention_mask.bool()
    nowhere = torch.zeros_like(keep)  # no output head is needed: the masked-LM head (if any) runs on no position
    _, cache = model.run_with_cache(input_ids, token_type_ids, attention_mask, names=names, logit_mask=nowhere)
    pairs = [torch.stack([cache[kind, layer][keep], cache["mlp_result", layer][keep]]) for layer in range(layers)]
    return torch.stack(pairs).permute(2, 0, 1, 3).float().contiguous()  # [layer, 2, token, hidden] -> [token, layer, 2, hidden]


def pair_stream(model: Bert, tokenizer: BertTokenizer, texts: Iterable[str], sentences_per_batch: int) -> Iterator[torch.Tensor]:
    texts = iter(texts)
    while batch := list(itertools.islice(texts, sentences_per_batch)):
        yield mlp_pairs(model, tokenizer, batch)


def transcoder_losses(transcoders: Transcoders, pairs: torch.Tensor, dead: torch.Tensor | None = None, aux_k: int = 256
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(the summed loss, each layer's normalised error [layer], fired [layer, feature] bool, the summed auxiliary
    loss) for pairs [batch, layer, 2, hidden]; dead [layer, feature] bool: the features the auxiliary loss trains."""
    losses, aux = [], torch.zeros((), device=pairs.device)
    fired = torch.zeros(transcoders.config.layers, transcoders.config.features, dtype=torch.bool, device=pairs.device)
    for layer in range(transcoders.config.layers):
        x, y = pairs[:, layer, 0], pairs[:, layer, 1] * transcoders.output_scale[layer]
        pre = transcoders.pre_activations(x, layer)
        values, indices = pre.topk(transcoders.config.k, dim=-1)
        values = values.relu()
        guess = transcoders.decode_sparse(values, indices, layer) * transcoders.output_scale[layer]
        variance = (y - y.mean(0)).pow(2).sum().clamp_min(1e-8)
        losses.append((guess - y).pow(2).sum() / variance)
        fired[layer, indices[values > 0]] = True
        if dead is not None and aux_k > 0 and bool(dead[layer].any()):
            error = (y - guess).detach()
            aux_values, aux_indices = pre.masked_fill(~dead[layer], -torch.inf).topk(min(aux_k, int(dead[layer].sum())), dim=-1)
            aux_guess = transcoders.decode_sparse(aux_values.relu(), aux_indices, layer) * transcoders.output_scale[layer]
            aux = aux + (aux_guess - transcoders.b_dec[layer] - error).pow(2).sum() / variance
    per_layer = torch.stack(losses)
    return per_layer.sum(), per_layer.detach(), fired, aux


def train_transcoders(
    model: Bert, tokenizer: BertTokenizer, lines: Sequence[str], settings: TranscoderSettings, out: str | Path,
    model_name: str, data_name: str, ranks: Ranks = Ranks(),
) -> tuple[Transcoders, TranscoderConfig]:
    """Train (or resume) one transcoder per layer on `lines`; writes checkpoints into `out` (rank 0)."""
    settings.check()
    out, device = Path(out), model_device(model)
    generator = torch.Generator().manual_seed(settings.seed)
    order = torch.randperm(len(lines), generator=generator).tolist()  # the same on every rank
    mine = order[ranks.rank :: ranks.world]
    config = TranscoderConfig(model=model_name, fingerprint=model_fingerprint(model), layers=model.config.num_layers,
                              hidden=model.config.hidden_size, features=settings.features, k=settings.k,
                              input_kind=mlp_input_kind(model), data=data_name,
                              settings={key: value for key, value in asdict(settings).items() if key not in ("features", "k")})
    state = _load_checkpoint(out / CHECKPOINT_FILE, config)
    read = {"lines": state["lines_done"] if state else 0}  # lines of this rank's share read so far, for resuming
    stream = counting_lines(pair_stream(model, tokenizer, (lines[i] for i in mine[read["lines"]:]), settings.sentences_per_batch),
                       read, settings.sentences_per_batch)
    batches = mixed_batches(stream, settings.batch_tokens, settings.buffer_tokens, generator)
    first = next(batches, None)
    if any_rank(first is None, ranks, device):
        first = None
    if first is None:
        raise InvalidInputError(f"{data_name} gives fewer than {settings.batch_tokens} training tokens"
                                + (" after the checkpoint's lines" if state else "") + ": give more text")
    transcoders = Transcoders(config).to(device)
    if state is None:
        _initialise(transcoders, first.to(device), settings.seed, ranks)
        if settings.init == "neurons":
            neuron_init(transcoders, model)
    else:
        transcoders.load_state_dict(state["transcoders"])
        transcoders.set_scales(state["input_scales"].tolist(), state["output_scales"].tolist())
    saver = lambda *parts: _save_checkpoint(out / CHECKPOINT_FILE, *parts, read["lines"])  # noqa: E731
    step, tokens = _fit(transcoders, itertools.chain([first], batches), settings, ranks, state, saver)
    if step < settings.steps:
        log.warning("the text ran out after %d of %d steps: give more text or fewer steps", step, settings.steps)
    return transcoders.eval(), replace(transcoders.config, steps=step, tokens=tokens)


def _fit(transcoders: Transcoders, batches: Iterator[torch.Tensor], settings: TranscoderSettings, ranks: Ranks,
         state: dict | None, save: Callable) -> tuple[int, int]:
    device = transcoders.W_dec.device
    for parameter in transcoders.parameters():
        from_rank_0(parameter.data, ranks)
    optimizer = torch.optim.Adam(transcoders.parameters(), lr=settings.learning_rate, eps=6.25e-10)
    layers, features = transcoders.config.layers, transcoders.config.features
    since_fired = torch.zeros(layers, features, dtype=torch.long, device=device)
    step, tokens = 0, 0
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        step, tokens = int(state["step"]), int(state["tokens"])
        if "since_fired" in state:
            since_fired = state["since_fired"].to(device)
    started, first_tokens = time.monotonic(), tokens
    totals, count = torch.zeros(transcoders.config.layers, device=device), 0
    while step < settings.steps:
        pairs = next(batches, None)
        if any_rank(pairs is None, ranks, device):  # one rank's text has run out: all stop at this step
            break
        for group in optimizer.param_groups:
            group["lr"] = settings.learning_rate * decay(settings.steps, step)
        dead = since_fired > settings.dead_after_tokens
        loss, per_layer, fired, aux = transcoder_losses(transcoders, pairs.to(device), dead, settings.aux_k)
        optimizer.zero_grad(set_to_none=True)
        (loss + settings.aux_coefficient * aux).backward()
        for parameter in transcoders.parameters():
            if ranks.world > 1:
                torch.distributed.all_reduce(parameter.grad)
                parameter.grad /= ranks.world
        rows = transcoders.W_dec.detach()  # keep the decoder rows on the unit sphere
        transcoders.W_dec.grad -= (transcoders.W_dec.grad * rows).sum(-1, keepdim=True) * rows
        torch.nn.utils.clip_grad_norm_(transcoders.parameters(), 1.0)
        optimizer.step()
        transcoders.normalize_decoder()
        fired = sum_over_ranks(fired.float(), ranks) > 0
        since_fired = torch.where(fired, 0, since_fired + len(pairs) * ranks.world)
        step, tokens, totals, count = step + 1, tokens + len(pairs) * ranks.world, totals + per_layer, count + 1
        if step % settings.checkpoint_every == 0 or step == settings.steps:
            errors = ", ".join(f"{value:.3f}" for value in (totals / count).tolist())
            dead_shares = ", ".join(f"{100 * value:.0f}%" for value in dead.float().mean(1).tolist())
            log.info("step %d/%d: 1 - variance explained per layer %s; dead %s; %d tokens, %.0f tokens/s", step,
                     settings.steps, errors, dead_shares, tokens, (tokens - first_tokens) / max(time.monotonic() - started, 1e-9))
            totals, count = torch.zeros_like(totals), 0
            if ranks.main:
                save(transcoders, optimizer, step, tokens, since_fired)
            barrier(ranks)
    return step, tokens


def _initialise(transcoders: Transcoders, first: torch.Tensor, seed: int, ranks: Ranks) -> None:
    """Scales from the first batch (rank 0's), random unit decoder rows, W_enc their transpose, b_dec the mean output."""
    hidden = transcoders.config.hidden
    norms = first.norm(dim=-1).mean(0)  # [layer, 2]
    scales = from_rank_0((math.sqrt(hidden) / norms.clamp_min(1e-8)).double(), ranks).float()
    transcoders.set_scales(scales[:, 0].tolist(), scales[:, 1].tolist())
    generator = torch.Generator().manual_seed(seed)
    config = transcoders.config
    with torch.no_grad():
        directions = torch.randn(config.layers, config.features, hidden, generator=generator)
        transcoders.W_dec.copy_(directions / directions.norm(dim=-1, keepdim=True))
        transcoders.W_enc.copy_(transcoders.W_dec.transpose(1, 2) / math.sqrt(hidden))  # small at first: y^ starts near b_dec
        transcoders.b_dec.copy_(first[:, :, 1].mean(0) * transcoders.output_scale[:, None].to(first.device))
        transcoders.b_enc.zero_()


@torch.no_grad()
def neuron_init(transcoders: Transcoders, model: Bert) -> None:
    """Each feature one of its layer's MLP neurons (features = the intermediate size; an ungated MLP): the encoder
    reads the neuron's input weights and bias, the decoder row is its output weights (made unit, the norm moved into
    the encoder), b_dec the output bias. With k = features and ReLU for the MLP's activation, y^ is then the MLP
    itself: y^ = W2 ReLU(W1 x + b1) + b2 (the scales s_in and s_out already set)."""
    from ..circuits.encoder_parts import EncoderParts

    config = transcoders.config
    parts = EncoderParts.of(model)
    for layer in range(config.layers):
        block = parts.layers[layer].module.residual
        if block.gate is not None or block.mlp1.weight.shape[0] != config.features:
            raise InvalidInputError(f"--init neurons needs an ungated MLP and --features {block.mlp1.weight.shape[0]} "
                                    "(its neurons)")
        w1, w2 = block.mlp1.weight.float(), block.mlp2.weight.float()  # [I, H], [H, I]
        b1 = block.mlp1.bias.float() if block.mlp1.bias is not None else torch.zeros(w1.shape[0], device=w1.device)
        b2 = block.mlp2.bias.float() if block.mlp2.bias is not None else torch.zeros(w2.shape[0], device=w2.device)
        norms = w2.norm(dim=0).clamp_min(1e-8)  # [I]
        s_in, s_out = transcoders.input_scale[layer], transcoders.output_scale[layer]
        transcoders.W_enc[layer].copy_(w1.T * norms * s_out / s_in)
        transcoders.b_enc[layer].copy_(b1 * norms * s_out)
        transcoders.W_dec[layer].copy_(w2.T / norms[:, None])
        transcoders.b_dec[layer].copy_(b2 * s_out)


def _save_checkpoint(path: Path, transcoders: Transcoders, optimizer, step: int, tokens: int, since_fired: torch.Tensor,
                     lines_done: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    torch.save({"transcoders": transcoders.state_dict(), "optimizer": optimizer.state_dict(), "step": torch.tensor(step),
                "tokens": torch.tensor(tokens), "lines_done": torch.tensor(lines_done), "since_fired": since_fired.cpu(),
                "input_scales": transcoders.input_scale.double().cpu(), "output_scales": transcoders.output_scale.double().cpu(),
                "trained_for": _trained_for(transcoders.config)}, temporary)
    temporary.replace(path)  # a crash mid-write leaves the previous checkpoint whole


def _load_checkpoint(path: Path, config: TranscoderConfig) -> dict | None:
    if not path.is_file():
        return None
    state = torch.load(path, map_location="cpu", weights_only=True)
    saved = state.get("trained_for")
    wanted = _trained_for(config)
    names = {"fingerprint": "model weights (fingerprint)", "layers": "layers", "hidden": "hidden size",
             "features": "--features", "k": "--k"}
    if not isinstance(saved, dict):
        raise TranscoderFileError(f"{path} does not say what it was trained for: give another --out folder")
    differ = [f"{names[key]} {saved.get(key)!r} there, {value!r} here" for key, value in wanted.items() if saved.get(key) != value]
    if differ:
        raise TranscoderFileError(f"{path} is a checkpoint of another run ({'; '.join(differ)}): resume with the same "
                                  "--model, --features and --k, or give another --out folder to start afresh")
    log.info("resuming from %s at step %d", path, int(state["step"]))
    state["lines_done"] = int(state["lines_done"])
    return state


def _trained_for(config: TranscoderConfig) -> dict:
    return {"fingerprint": config.fingerprint, "layers": config.layers, "hidden": config.hidden,
            "features": config.features, "k": config.k}
