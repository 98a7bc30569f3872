"""Interchange interventions at one hook point and one position (Geiger et al. 2021, 2024).

A base and a source sentence differ in one causal variable (bert/data/variable_pairs.py). The base runs again with
its activation at the hook and position replaced by

    base + B diag(w) Bᵀ (source - base)                  B: [hidden, m], orthonormal columns; w: [m] weights (all 1)

that is, its coordinates along B's columns come from the source and every other coordinate stays the base's. With
B the first k columns of an orthogonal matrix R this is DAS's swap of k rotated coordinates (pyvene's
RotatedSpaceIntervention: rotate by R, take coordinates 0..k-1 from the source, rotate back); with w a soft mask,
Boundless DAS's (Wu et al. 2023); with no B, the whole vector comes from the source (activation patching).

Interchange intervention accuracy (IIA) is the share of pairs whose intervened run prefers, of the two answers, the
one the causal model predicts (the source's, when the variable was swapped). The log-odds are CausalGym's (Arora et
al. 2024): log p(source answer) / p(base answer) in the intervened run minus the same in the base run, averaged.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import torch

from ...devices import model_device
from ...errors import DataFileError, InvalidInputError
from ...hooks import is_per_head
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from ...data.variable_pairs import VariablePair, first_differing_word
from ..corpus.batching import pad

POSITION_ROLES = ("mask", "differs", "subject")  # the [MASK]; the first word piece where base and source differ; the
# subject's last word piece (Meng et al. 2022's "last subject token"): the word the task's template names the subject,
# or in pairs without one (a file's) the first word that differs
Position = int | str  # a token index, or one of POSITION_ROLES


@dataclass(frozen=True)
class PreparedPair:
    """A pair in the model's tokens: the same length, one [MASK] at the same place, one-token answers."""

    pair: VariablePair
    base: Encoding
    source: Encoding
    mask: int  # the [MASK]'s token index
    differs: int  # the first token index where base and source differ
    subject: int  # the token index of the subject's last word piece in the base sentence
    base_answer_id: int
    source_answer_id: int

    def position(self, position: Position) -> int:
        """The token index of a position: an index itself, or the role's."""
        return position if isinstance(position, int) else {"mask": self.mask, "differs": self.differs, "subject": self.subject}[position]


def prepare_pairs(tokenizer: BertTokenizer, pairs: Sequence[VariablePair], max_length: int) -> tuple[list[PreparedPair], int]:
    """(the usable pairs, how many were not). A file's pair (line > 0) that cannot be used raises DataFileError
    naming its line; a generated pair whose words this tokenizer splits into different numbers of pieces is
    counted and left out."""
    usable, unusable = [], 0
    for pair in pairs:
        try:
            usable.append(_prepare(tokenizer, pair, max_length))
        except InvalidInputError as error:
            if pair.line:
                raise DataFileError(f"line {pair.line}: {error}") from None
            unusable += 1
    return usable, unusable


def _prepare(tokenizer: BertTokenizer, pair: VariablePair, max_length: int) -> PreparedPair:
    base, source, mask, differs = line_up(tokenizer, pair.base, pair.source, max_length)
    subject = last_piece(base, pair.base, pair.subject if pair.subject >= 0 else first_differing_word(pair.base, pair.source))
    base_id = tokenizer.one_token_id(pair.base_answer, "base_answer")
    source_id = tokenizer.one_token_id(pair.source_answer, "source_answer")
    if base_id == source_id:
        raise InvalidInputError(f"base_answer and source_answer are the same token ({tokenizer.id_to_token(base_id)!r})")
    return PreparedPair(pair, base, source, mask, differs, subject, base_id, source_id)


def line_up(tokenizer: BertTokenizer, base_text: str, source_text: str, max_length: int
            ) -> tuple[Encoding, Encoding, int, int]:
    """(base, source, the [MASK]'s index, the first index where they differ) of two sentences of the same number
    of word pieces with one [MASK] at the same place; InvalidInputError saying what to change otherwise."""
    base, source = tokenizer.encode(base_text, max_length=max_length), tokenizer.encode(source_text, max_length=max_length)
    if len(base) != len(source):
        raise InvalidInputError(f"base and source must have the same number of word pieces: base has {len(base)} "
                                f"{base.tokens}, source {len(source)} {source.tokens}")
    masks = [tokenizer.mask_positions(e) for e in (base, source)]
    if [len(m) for m in masks] != [1, 1] or masks[0] != masks[1]:
        raise InvalidInputError(f"base and source need exactly one [MASK] each, at the same place (found {masks[0]} and {masks[1]})")
    differs = [i for i, (a, b) in enumerate(zip(base.input_ids, source.input_ids)) if a != b]
    if not differs:
        raise InvalidInputError("base and source are the same word pieces: the variable must change a word")
    return base, source, masks[0][0], differs[0]


def last_piece(encoding: Encoding, text: str, word: int) -> int:
    """The token index of the last word piece of `text`'s whitespace-separated word number `word` (from 0), by the
    tokens' character offsets; InvalidInputError when the sentence has no such word or it was cut off."""
    spans = [match.span() for match in re.finditer(r"\S+", text)]
    if not 0 <= word < len(spans):
        raise InvalidInputError(f"the sentence has no word {word + 1} (it has {len(spans)}): {text!r}")
    start, end = spans[word]
    inside = [i for i, ((a, b), special) in enumerate(zip(encoding.offsets, encoding.special))
              if not special and a < end and b > start]
    if not inside:
        raise InvalidInputError(f"word {word + 1} of {text!r} has no word piece (cut off by the length limit?)")
    return inside[-1]


def check_site(model: Bert, hook: str, position: Position, pairs: Sequence[PreparedPair]) -> None:
    """InvalidInputError unless the hook holds one vector per token and the position is in every pair."""
    if not model.has_mlm_head:
        raise InvalidInputError("interchange interventions read the masked-word logits: load a model with a masked-LM head")
    if hook not in model.hook_names():
        raise InvalidInputError(f"the model has no hook {hook!r} (bert/hooks.py lists them)")
    if is_per_head(hook) or not (hook.startswith("transformer.") or hook.startswith("embedding.")):
        raise InvalidInputError(f"{hook} does not hold one vector per token: choose a [batch, seq, hidden] hook "
                                f"(layer_out, attention_result, mlp_result, ...)")
    if isinstance(position, str) and position not in POSITION_ROLES:
        raise InvalidInputError(f"position must be a token index or one of {', '.join(POSITION_ROLES)}, not {position!r}")
    if isinstance(position, int):
        shortest = min(len(p.base) for p in pairs)
        if not 0 <= position < shortest:
            raise InvalidInputError(f"position {position} is outside the shortest pair ({shortest} word pieces: 0..{shortest - 1})")


def interchange(positions: torch.Tensor, source: torch.Tensor, basis: torch.Tensor | None,
                weights: torch.Tensor | None = None):
    """The intervention for `run_with_cache(interventions={hook: ...})` on a [batch, seq, hidden] hook: in row r,
    the vector at token positions[r] becomes base + B diag(w) Bᵀ (source[r] - base); basis None: source[r] itself.
    Differentiable in `basis` and `weights` (training)."""

    def swap(activation: torch.Tensor, name: str) -> torch.Tensor:
        rows = torch.arange(activation.shape[0], device=activation.device)
        base = activation[rows, positions]  # [batch, hidden]
        wanted = source.to(activation.dtype)
        if basis is None:
            new = wanted
        else:
            coordinates = (wanted - base) @ basis.to(activation.dtype)  # [batch, m]
            if weights is not None:
                coordinates = coordinates * weights.to(activation.dtype)
            new = base + coordinates @ basis.to(activation.dtype).T
        return activation.index_put((rows, positions), new)

    return swap


def _batch_inputs(model: Bert, tokenizer_pad_id: int, encodings: Sequence[Encoding]):
    return pad(encodings, tokenizer_pad_id, model_device(model))


def _answer_logits(logits: torch.Tensor, pairs: Sequence[PreparedPair]) -> torch.Tensor:
    """[row, 2]: the logits of (base answer, source answer) at each row's [MASK]."""
    ids = torch.tensor([[p.base_answer_id, p.source_answer_id] for p in pairs], device=logits.device)
    return logits.gather(1, ids).float()


def _mask_rows(pairs: Sequence[PreparedPair], shape, device) -> torch.Tensor:
    at_mask = torch.zeros(shape, dtype=torch.bool, device=device)
    at_mask[torch.arange(len(pairs)), torch.tensor([p.mask for p in pairs])] = True
    return at_mask


@torch.no_grad()
def record_pairs(model: Bert, pad_id: int, pairs: Sequence[PreparedPair], sites: Sequence[tuple[str, Position]],
                 batch_size: int = 64) -> tuple[dict, dict, torch.Tensor, torch.Tensor]:
    """Both sentences of every pair, one pass each: ({(hook, position): [pair, hidden]} of the base sentences, the
    same of the source sentences, the base runs' answer logits [pair, 2], the source runs' [pair, 2])."""
    hooks = sorted({hook for hook, _ in sites})
    found = {"base": {site: [] for site in sites}, "source": {site: [] for site in sites}}
    logits_of = {"base": [], "source": []}
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        for side in ("base", "source"):
            input_ids, token_type_ids, attention_mask = _batch_inputs(model, pad_id, [getattr(p, side) for p in chunk])
            logits, cache = model.run_with_cache(input_ids, token_type_ids, attention_mask, names=hooks,
                                                 logit_mask=_mask_rows(chunk, input_ids.shape, input_ids.device))
            logits_of[side].append(_answer_logits(logits, chunk).cpu())
            rows = torch.arange(len(chunk))
            for hook, position in sites:
                at = torch.tensor([p.position(position) for p in chunk])
                found[side][(hook, position)].append(cache[hook][rows, at].float().cpu())
    stacked = {side: {site: torch.cat(parts) for site, parts in found[side].items()} for side in found}
    return stacked["base"], stacked["source"], torch.cat(logits_of["base"]), torch.cat(logits_of["source"])


def intervened_logits(model: Bert, pad_id: int, pairs: Sequence[PreparedPair], hook: str, position: Position,
                      source: torch.Tensor, basis: torch.Tensor | None, weights: torch.Tensor | None = None) -> torch.Tensor:
    """One forward pass over the base sentences of `pairs` (one batch), each with its source's vector swapped in
    at the hook and position: the answer logits [pair, 2] (base answer, source answer). Gradients flow to
    `basis` and `weights` when enabled."""
    input_ids, token_type_ids, attention_mask = _batch_inputs(model, pad_id, [p.base for p in pairs])
    positions = torch.tensor([p.position(position) for p in pairs], device=input_ids.device)
    swap = interchange(positions, source.to(input_ids.device), basis, weights)
    logits, _ = model.run_with_cache(input_ids, token_type_ids, attention_mask, names=[], interventions={hook: swap},
                                     logit_mask=_mask_rows(pairs, input_ids.shape, input_ids.device))
    return _answer_logits(logits, pairs)


@torch.no_grad()
def evaluate(model: Bert, pad_id: int, pairs: Sequence[PreparedPair], hook: str, position: Position, source: torch.Tensor,
             basis: torch.Tensor | None, weights: torch.Tensor | None = None, batch_size: int = 64) -> torch.Tensor:
    """`intervened_logits` for many pairs, `batch_size` a pass: [pair, 2] on the CPU."""
    parts = [intervened_logits(model, pad_id, pairs[start : start + batch_size], hook, position,
                               source[start : start + batch_size], basis, weights).cpu()
             for start in range(0, len(pairs), batch_size)]
    return torch.cat(parts) if parts else torch.empty(0, 2)


def interchange_accuracy(answer_logits: torch.Tensor, expects_source: torch.Tensor) -> float:
    """IIA: the share of rows where the answer preferred of the two is the one expected (the source's where
    expects_source, else the base's). NaN for no rows."""
    if len(answer_logits) == 0:
        return float("nan")
    says_source = answer_logits[:, 1] > answer_logits[:, 0]
    return float((says_source == expects_source).float().mean())


def log_odds(intervened: torch.Tensor, base_run: torch.Tensor) -> float:
    """CausalGym's log-odds ratio: mean of [logit(source answer) - logit(base answer)] intervened minus the same in
    the base run (the softmax's normaliser cancels in each difference)."""
    if len(intervened) == 0:
        return float("nan")
    return float(((intervened[:, 1] - intervened[:, 0]) - (base_run[:, 1] - base_run[:, 0])).mean())
