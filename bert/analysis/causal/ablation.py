"""Head ablation: remove attention heads and see what happens to the masked-word predictions.

A head is removed at its output `hook_z` ([batch, head, query, head_dim]), before the output projection mixes the
heads: *zero* ablation replaces its output by zeros, *mean* ablation by its average output over a corpus
(`mean_head_outputs`), which keeps the typical offset a head adds and removes only what depends on the input.
Ablating a layer means ablating all of its heads (the output projection's bias stays).

`rank_heads` measures every head's effect on one prediction at once: it repeats the input along the batch, one
row per head, and each row ablates its own head (a per-row intervention), so all 72 heads of MiniLM cost a few
batched forward passes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import torch

from ...config import BertConfig
from ...costs import Cost
from ...data import LabelledSentence
from ...devices import model_device
from ...errors import InvalidInputError
from ...hooks import every_layer, hook_name
from ...interventions import mean_heads, zero_heads
from ...model import Bert
from ...predict import Candidate, MaskPrediction, make_candidate, predict_masks
from ...tokenizer import BertTokenizer, Encoding
from ..corpus.batching import batches, batches_cost, pad, record_encoder

Head = tuple[int, int]  # (layer, head), both counted from 0
MODES = ("zero", "mean")


MEAN_MAX_TOKENS = 128  # each sentence averaged over is cut to this many tokens


def _mean_inputs(tokenizer: BertTokenizer, sentences: Sequence[LabelledSentence], max_positions: int) -> list[Encoding]:
    longest = min(MEAN_MAX_TOKENS, max_positions)
    return [tokenizer.encode(s.text, max_length=longest, truncate=True) for s in sentences]


def mean_head_outputs_cost(tokenizer: BertTokenizer, sentences: Sequence[LabelledSentence], max_positions: int,
                           batch_size: int = 32) -> Cost:
    """The passes `mean_head_outputs` makes over these sentences (max_positions: the model's longest input): one
    each, padded to its batch's longest."""
    inputs = _mean_inputs(tokenizer, sentences, max_positions)
    return batches_cost([len(e) for e in inputs], batch_size, ("the ablation (zero)",))


@torch.no_grad()
def mean_head_outputs(
    model: Bert, tokenizer: BertTokenizer, sentences: Sequence[LabelledSentence], batch_size: int = 32
) -> torch.Tensor:
    """Every head's output averaged over all real tokens of the sentences: [layer, head, head_dim], float32 on
    the model's device."""
    if not sentences:
        raise InvalidInputError("mean ablation needs at least one sentence to average over")
    config = model.config
    encodings = _mean_inputs(tokenizer, sentences, config.max_position_embeddings)
    hooks = every_layer("z", config.num_layers)
    device = model_device(model)
    total = torch.zeros(config.num_layers, config.num_heads, config.head_size, device=device)  # float32 sums
    count = 0
    for batch in batches(encodings, batch_size):
        input_ids, token_type_ids, attention_mask = pad([encodings[i] for i in batch], tokenizer.pad_id, device)
        cache = record_encoder(model, input_ids, token_type_ids, attention_mask, hooks)
        real = attention_mask.bool()  # [batch, query]
        for layer, hook in enumerate(hooks):
            z = cache[hook].transpose(1, 2)[real]  # [token, head, head_dim]
            total[layer] += z.float().sum(0)
        count += int(real.sum())
    return total / count


def ablation_interventions(heads: Iterable[Head], mode: str = "zero", mean_z: torch.Tensor | None = None):
    """(hook name, intervention) pairs that ablate `heads` in every row of the batch."""
    _check_mode(mode, mean_z)
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)
    if mode == "zero":
        return [(hook_name("z", layer), zero_heads(*hs)) for layer, hs in sorted(by_layer.items())]
    return [(hook_name("z", layer), mean_heads(mean_z[layer], *hs)) for layer, hs in sorted(by_layer.items())]


def layer_heads(model: Bert, layers: Iterable[int]) -> list[Head]:
    """Every head of the given layers: ablating a whole layer's attention."""
    return [(layer, head) for layer in layers for head in range(model.config.num_heads)]


@torch.no_grad()
def predict_ablated(
    model: Bert, tokenizer: BertTokenizer, encoding: Encoding, heads: Iterable[Head] = (), mode: str = "zero",
    mean_z: torch.Tensor | None = None, top_k: int = 5,
) -> list[MaskPrediction]:
    """Top-k predictions at every [MASK] with `heads` ablated (none: the intact model)."""
    _check_model(model)
    heads = list(heads)
    _check_heads(model, heads)
    interventions = ablation_interventions(heads, mode, mean_z) if heads else None
    return predict_masks(model, tokenizer, encoding, top_k, interventions)


@dataclass(frozen=True)
class HeadRanking:
    position: int  # the [MASK] whose prediction is measured
    target: Candidate  # the token whose probability is measured, with its probability in the intact model
    effect: torch.Tensor  # [layer, head] log p(target) intact - log p(target) with the head ablated; > 0: it helped
    ablated_probability: torch.Tensor  # [layer, head] p(target) with the head ablated
    mode: str

    def ranked(self) -> list[tuple[int, int, float]]:
        """(layer, head, effect), largest |effect| first."""
        order = self.effect.flatten().abs().argsort(descending=True, stable=True)
        heads = self.effect.shape[1]
        return [(int(i) // heads, int(i) % heads, float(self.effect.flatten()[i])) for i in order]


def rank_heads_cost(config: BertConfig, tokens: int) -> Cost:
    """The passes `rank_heads` makes: the intact model, then one row per head ablated (the mean over the built-in
    sentences that "mean" ablation needs is computed once per model: `mean_head_outputs`)."""
    return Cost(1 + config.num_layers * config.num_heads, tokens, ("a shorter text",))


@torch.no_grad()
def rank_heads(
    model: Bert, tokenizer: BertTokenizer, encoding: Encoding, position: int | None = None, target_id: int | None = None,
    mode: str = "zero", mean_z: torch.Tensor | None = None, batch_size: int = 36,
) -> HeadRanking:
    """Ablate each head alone and measure the change in log p(target) at `position`.

    position: a [MASK] position (default: the first [MASK]); target_id: the token to measure (default: the intact
    model's top prediction there). Rows of the batch are copies of the input; row r ablates head r.
    """
    _check_model(model)
    _check_mode(mode, mean_z)
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    masks = tokenizer.mask_positions(encoding)
    if position is None:
        if not masks:
            raise InvalidInputError("the text has no [MASK]: add one to rank heads by their effect on its prediction")
        position = masks[0]
    if not 0 <= position < input_ids.shape[1]:
        raise InvalidInputError(f"position {position} is outside this {input_ids.shape[1]}-token input")
    at_position = torch.zeros_like(input_ids, dtype=torch.bool)
    at_position[0, position] = True
    clean = model(input_ids, token_type_ids, logit_mask=at_position).float().log_softmax(-1)[0].cpu()  # [vocab]
    if target_id is None:
        target_id = int(clean.argmax())
    layers, heads = model.config.num_layers, model.config.num_heads
    all_heads = [(layer, head) for layer in range(layers) for head in range(heads)]
    ablated = torch.empty(len(all_heads), device="cpu")
    for start in range(0, len(all_heads), batch_size):
        chunk = all_heads[start : start + batch_size]
        rows = len(chunk)
        interventions = _one_head_per_row(chunk, mode, mean_z, input_ids.device)
        logits, _ = model.run_with_cache(
            input_ids.expand(rows, -1), token_type_ids.expand(rows, -1), names=[],
            interventions=interventions, logit_mask=at_position.expand(rows, -1),
        )
        ablated[start : start + rows] = logits.float().log_softmax(-1)[:, target_id].cpu()
    ablated = ablated.view(layers, heads)
    target = make_candidate(tokenizer, target_id, float(clean[target_id].exp()))
    return HeadRanking(position, target, clean[target_id] - ablated, ablated.exp(), mode)


def _one_head_per_row(chunk: list[Head], mode: str, mean_z: torch.Tensor | None, device: torch.device):
    """Interventions for a batch whose row r ablates head chunk[r] (and nothing else)."""
    interventions = []
    for layer in sorted({layer for layer, _ in chunk}):
        rows = torch.tensor([r for r, (l, _) in enumerate(chunk) if l == layer], device=device)
        heads = torch.tensor([h for l, h in chunk if l == layer], device=device)

        def ablate(z: torch.Tensor, name: str, rows=rows, heads=heads, layer=layer) -> torch.Tensor:
            z = z.clone()  # [batch, head, query, head_dim]
            if mode == "zero":
                z[rows, heads] = 0
            else:
                z[rows, heads] = mean_z.to(z.device)[layer, heads][:, None, :].to(z.dtype)  # [row, 1, head_dim] over queries
            return z

        interventions.append((hook_name("z", layer), ablate))
    return interventions


def _check_model(model: Bert) -> None:
    if not model.has_mlm_head:
        raise InvalidInputError("ablating heads to see predictions change needs a model with a masked-LM head")


def _check_mode(mode: str, mean_z: torch.Tensor | None) -> None:
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {MODES}, not {mode!r}")
    if mode == "mean" and mean_z is None:
        raise InvalidInputError("mean ablation needs mean_z: compute it with mean_head_outputs(model, tokenizer, sentences)")


def _check_heads(model: Bert, heads: list[Head]) -> None:
    for layer, head in heads:
        if not (0 <= layer < model.config.num_layers and 0 <= head < model.config.num_heads):
            raise InvalidInputError(
                f"no head ({layer}, {head}): layers are 0..{model.config.num_layers - 1}, heads 0..{model.config.num_heads - 1}"
            )

