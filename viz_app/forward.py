"""From what the user typed to one recorded forward pass: plain data the pages draw (no Streamlit here).

`prepare_input` turns text, an optional second sentence and the chosen mask positions into encodings, or
raises `InputProblem` with a message that says what to do. `record` runs the model once and keeps only what
the pages need, as numpy arrays, so the result is small enough to cache per input.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from bert import BertTokenizer, Encoding, InputTooLongError
from bert.analysis.attention_stats import HeadStatistics, KeyRoles, head_statistics
from bert.devices import as_numpy, model_device
from bert.model import Bert

TOP_K_STORED = 50  # candidates kept per [MASK]; the page shows up to this many
MAX_CHARACTERS = 100_000  # refuse to tokenize more than this (the model reads at most 512 tokens anyway)


class InputProblem(Exception):
    """The input cannot be run as it is. `kind`: "empty", "no_tokens", "too_long" or "too_many_characters"."""

    def __init__(self, kind: str, message: str, num_tokens: int | None = None):
        super().__init__(message)
        self.kind, self.message, self.num_tokens = kind, message, num_tokens


@dataclass(frozen=True)
class PreparedInput:
    base: Encoding  # the text as typed: typed [MASK]s are masks, clicked masks are not applied
    masked: Encoding  # what the model reads: clicked positions replaced by [MASK]
    masks: tuple[int, ...]  # clicked mask positions (valid, sorted)
    typed_masks: tuple[int, ...]  # positions of [MASK] typed in the text
    pair_dropped: bool = False  # a second sentence was given but had no tokens

    @property
    def all_masks(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.masks) | set(self.typed_masks)))

    @property
    def maskable(self) -> list[int]:
        """Positions a user may mask: every token but [CLS] and [SEP]."""
        return [i for i, special in enumerate(self.base.special) if not special]


def prepare_input(
    tokenizer: BertTokenizer, text: str, pair: str | None, masks, truncate: bool, max_positions: int
) -> PreparedInput:
    text = text or ""
    pair = pair if pair and pair.strip() else None
    if not text.strip():
        raise InputProblem(
            "empty", "Type a sentence in the sidebar to begin, for example “The [MASK] barked at the mailman.”"
        )
    if len(text) + len(pair or "") > MAX_CHARACTERS:
        raise InputProblem(
            "too_many_characters",
            f"That text is {len(text) + len(pair or ''):,} characters long; the model reads at most {max_positions} "
            f"tokens (a few thousand characters). Paste a shorter passage.",
        )
    try:
        base = tokenizer.encode(text, pair, max_length=max_positions, truncate=truncate)
    except InputTooLongError as error:
        raise InputProblem(
            "too_long",
            f"This input is {error.num_tokens} tokens long, but the model has only {error.max_tokens} positions. "
            f"Shorten it, or tick “Cut to {error.max_tokens} tokens” in the sidebar to drop the end.",
            num_tokens=error.num_tokens,
        ) from error
    pair_dropped = False
    if pair is not None and not any(not s and t == 1 for s, t in zip(base.special, base.token_type_ids)):
        base = tokenizer.encode(text, None, max_length=max_positions, truncate=truncate)  # B had nothing left
        pair_dropped = True
    if all(base.special):
        raise InputProblem(
            "no_tokens",
            "Nothing is left of this text after tokenization (control characters and spaces are dropped). "
            "Type some words.",
        )
    typed = tuple(i for i, token_id in enumerate(base.input_ids) if token_id == tokenizer.mask_id)
    maskable = {i for i, special in enumerate(base.special) if not special} - set(typed)
    chosen = tuple(sorted({int(m) for m in masks if int(m) in maskable}))
    return PreparedInput(base, base.with_masks(chosen, tokenizer.mask_id), chosen, typed, pair_dropped)


@dataclass(frozen=True)
class MaskResult:
    position: int  # index of this [MASK] among the input's tokens
    tokens: list[str]  # candidates, best first
    probabilities: np.ndarray  # [candidate]
    is_continuation: list[bool]  # "##" pieces, which only continue a word
    original: str | None = None  # the token that was masked; None for a [MASK] typed in the text
    original_probability: float | None = None
    original_rank: int | None = None  # 1 = the model's first guess


@dataclass(frozen=True)
class ForwardResult:
    """One input's forward pass: what every page reads. Arrays are float32 numpy."""

    tokens: list[str]  # as the model read them (masked positions say [MASK])
    original_tokens: list[str]  # before clicked masks were applied
    token_type_ids: list[int]
    special: list[bool]
    masks: list[MaskResult]  # one per [MASK]; empty for a model without an MLM head
    attention: np.ndarray  # [layer, head, query, key], every layer's hook_pattern
    neurons: np.ndarray  # [layer, seq, intermediate], every layer's residual.hook_post (after GELU)
    embeddings: dict[str, np.ndarray] = field(default_factory=dict)  # token/position/segment: [seq, hidden]
    hook_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # every hook point, this input
    head_stats: HeadStatistics | None = None  # per-head statistics [layer, head], computed once per input

    @property
    def seq(self) -> int:
        return len(self.tokens)


def record(model: Bert, tokenizer: BertTokenizer, prepared: PreparedInput, top_k: int = TOP_K_STORED) -> ForwardResult:
    """Run the model once on `prepared.masked`; keep attention, neuron activations, the embedding parts,
    every hook's shape (by an identity intervention that only looks), the predictions at each [MASK] and the
    per-head attention statistics."""
    config = model.config
    input_ids, token_type_ids = prepared.masked.tensors(model_device(model))
    at_masks = input_ids == tokenizer.mask_id  # [1, seq]
    patterns = [f"transformer.{i}.attention.attention.hook_pattern" for i in range(config.num_layers)]
    posts = [f"transformer.{i}.residual.hook_post" for i in range(config.num_layers)]
    embedding_hooks = {
        "token": "embedding.hook_token",
        "position": "embedding.hook_position",
        "segment": "embedding.hook_token_type",
    }
    shapes: dict[str, tuple[int, ...]] = {}

    def note_shape(activation: torch.Tensor, name: str) -> torch.Tensor:
        shapes[name] = tuple(activation.shape)
        return activation

    with torch.inference_mode():
        logits, cache = model.run_with_cache(
            input_ids,
            token_type_ids,
            names=patterns + posts + list(embedding_hooks.values()),
            interventions=[(name, note_shape) for name in model.hook_names()],
            logit_mask=at_masks,  # the LM head runs only at the masks (none: it runs on nothing)
        )
        masks = _mask_results(logits, at_masks, prepared, tokenizer, top_k) if logits is not None else []
    attention = np.stack([as_numpy(cache[name][0]) for name in patterns])
    return ForwardResult(
        tokens=list(prepared.masked.tokens),
        original_tokens=list(prepared.base.tokens),
        token_type_ids=list(prepared.masked.token_type_ids),
        special=list(prepared.masked.special),
        masks=masks,
        attention=attention,
        neurons=np.stack([as_numpy(cache[name][0]) for name in posts]),
        embeddings={part: as_numpy(cache[name][0]) for part, name in embedding_hooks.items()},
        hook_shapes=shapes,
        head_stats=head_statistics(attention, KeyRoles.from_tokens(prepared.masked.tokens)),
    )


def _mask_results(logits, at_masks, prepared: PreparedInput, tokenizer: BertTokenizer, top_k: int) -> list[MaskResult]:
    if logits.shape[0] == 0:
        return []
    probabilities = logits.float().softmax(dim=-1).cpu()  # [masks, vocab]
    best = probabilities.topk(min(top_k, probabilities.shape[-1]), dim=-1)
    results = []
    for row, position in enumerate(at_masks[0].nonzero().flatten().tolist()):
        ids = best.indices[row].tolist()
        tokens = [tokenizer.id_to_token(i) for i in ids]
        original = original_probability = original_rank = None
        if position in prepared.masks:  # a clicked mask: we know which token was there
            original_id = prepared.base.input_ids[position]
            original = prepared.base.tokens[position]
            original_probability = float(probabilities[row, original_id])
            original_rank = int((probabilities[row] > probabilities[row, original_id]).sum()) + 1
        results.append(
            MaskResult(
                position=position,
                tokens=tokens,
                probabilities=best.values[row].numpy().astype(np.float32),
                is_continuation=[t.startswith("##") for t in tokens],
                original=original,
                original_probability=original_probability,
                original_rank=original_rank,
            )
        )
    return results
