"""From what the user typed to one recorded forward pass: plain data the pages draw (no Streamlit here).

`prepare_input` turns text, an optional second sentence and the chosen mask positions into a `PreparedInput`
(tokenized once; every later step reads it), or raises `InputProblem` with a message that says what to do.
`record` runs the model once and turns the library's ActivationCache into a `ForwardResult`: read-only numpy
arrays, which viz_app/cache.py shares between sessions without copying. The pass records q and k but no pattern,
so the model takes its fused attention path; the patterns are computed from q and k when a page first reads them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

import numpy as np
import torch

from bert import BertTokenizer, Encoding, InputTooLongError
from bert.attention import attention_pattern
from bert.devices import as_numpy, model_device
from bert.hooks import EMBEDDING_PARTS, every_layer
from bert.pieces import WORDPIECE, PieceStyle
from bert.model import Bert
from bert.predict import MaskPrediction, at_positions, mask_predictions

TOP_K_STORED = 50  # candidates kept per [MASK]; the page shows up to this many
MAX_CHARACTERS = 100_000  # refuse to tokenize more than this (the model reads at most 512 tokens anyway)


class InputProblem(Exception):
    """The input cannot be run as it is. `kind`: "empty", "no_tokens", "too_long" or "too_many_characters"."""

    def __init__(self, kind: str, message: str, num_tokens: int | None = None):
        super().__init__(message)
        self.kind, self.message, self.num_tokens = kind, message, num_tokens


@dataclass(frozen=True)
class PreparedInput:
    """One input, tokenized once: what every page, cache and analysis of it reads."""

    text: str
    pair: str  # "" without a second sentence
    truncate: bool  # cut to the model's positions when too long
    base: Encoding  # the text as typed: typed [MASK]s are masks, clicked masks are not applied
    masked: Encoding  # what the model reads: clicked positions replaced by [MASK]
    masks: tuple[int, ...]  # clicked mask positions (valid, sorted)
    typed_masks: tuple[int, ...]  # positions of [MASK] typed in the text
    pair_dropped: bool = False  # a second sentence was given but had no tokens

    @property
    def key(self) -> tuple[str, str, tuple[int, ...], bool]:
        """What makes this input this input, for the caches (with the model's key)."""
        return self.text, self.pair, self.masks, self.truncate

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
            "empty", "Type a sentence in the Sentence box at the top to begin, for example “The [MASK] barked at the mailman.”"
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
            f"Shorten it, or tick “Cut to {error.max_tokens} tokens” at the top to drop the end.",
            num_tokens=error.num_tokens,
        ) from error
    pair_dropped = False
    if pair is not None and not any(not s and t == 1 for s, t in zip(base.special, base.sentences)):
        base = tokenizer.encode(text, None, max_length=max_positions, truncate=truncate)  # B had nothing left
        pair_dropped = True
    if all(base.special):
        raise InputProblem(
            "no_tokens",
            "Nothing is left of this text after tokenization (control characters and spaces are dropped). "
            "Type some words.",
        )
    typed = tuple(tokenizer.mask_positions(base))
    maskable = {i for i, special in enumerate(base.special) if not special} - set(typed)
    chosen = tuple(sorted({int(m) for m in masks if int(m) in maskable}))
    return PreparedInput(text, pair or "", truncate, base, base.with_masks(chosen, tokenizer.mask_id), chosen, typed,
                         pair_dropped)


@dataclass(frozen=True)
class SentenceInput:
    """What the sentence box read: the text as typed, and its prepared input or what is wrong with it."""

    text: str
    pair: str
    truncate: bool
    prepared: PreparedInput | None  # None when the model is missing or the input has a problem
    problem: InputProblem | None


@dataclass(frozen=True)
class MaskResult:
    position: int  # index of this [MASK] among the input's tokens
    tokens: tuple[str, ...]  # candidates, best first
    probabilities: np.ndarray  # [candidate], read-only
    is_continuation: tuple[bool, ...]  # pieces that only continue a word ("##s"; RoBERTa's "s" without "Ġ")
    original: str | None = None  # the token that was masked; None for a [MASK] typed in the text
    original_probability: float | None = None
    original_rank: int | None = None  # 1 = the model's first guess


@dataclass(frozen=True)
class ForwardResult:
    """One input's forward pass: what the pages read. Shared by every session that asks for the same input
    (see viz_app/cache.py), so nothing in it can be changed: tuples, and float32 numpy arrays marked read-only.
    The MLP activations and the embeddings are None in a pass recorded without them (`record(..., activations=False)`).
    `attention` is computed from `queries` and `keys` when first read, once (then kept, read-only)."""

    tokens: tuple[str, ...]  # as the model read them (masked positions say [MASK])
    original_tokens: tuple[str, ...]  # before clicked masks were applied
    token_type_ids: tuple[int, ...]
    special: tuple[bool, ...]
    masks: tuple[MaskResult, ...]  # one per [MASK]; empty for a model without an MLM head
    neurons: np.ndarray | None = None  # [layer, seq, intermediate], every layer's MLP activations (after GELU)
    embeddings: Mapping[str, np.ndarray] | None = None  # token/position/segment (none without segments): [seq, hidden]
    queries: np.ndarray | None = None  # [layer, head, query, head_dim] every head's query vectors (hook_q)
    keys: np.ndarray | None = None  # [layer, head, key, head_dim] every head's key vectors (hook_k)
    pieces: PieceStyle = WORDPIECE  # how the tokenizer writes its pieces and its mask token (bert/pieces.py)
    causal: bool = False  # the model's: no query sees the keys to its right (the patterns' mask)
    windows: tuple[int | None, ...] = ()  # per layer, a local layer's half-width (config.window); empty: all global
    score_scale: int = 1  # config.score_scale: DeBERTa's q·k is one of its 3 score terms, each over sqrt(3 head_dim)
    # [layer, head, query, key] the patterns as recorded, where q and k alone do not give them (DeBERTa's scores add
    # relative-position terms); None: `attention` computes them from `queries` and `keys`
    recorded_patterns: np.ndarray | None = None

    @property
    def seq(self) -> int:
        return len(self.tokens)

    @cached_property
    def attention(self) -> np.ndarray | None:
        """[layer, head, query, key], every layer's attention pattern (what hook_pattern records), computed from
        `queries` and `keys` on first use (or as recorded, `recorded_patterns`); None without them."""
        if self.recorded_patterns is not None:
            return self.recorded_patterns
        if self.queries is None or self.keys is None:
            return None
        return patterns_of(self.queries, self.keys, self.causal, self.windows)


def patterns_of(queries: np.ndarray, keys: np.ndarray, causal: bool = False,
                windows: tuple[int | None, ...] = ()) -> np.ndarray:
    """[layer, head, query, key] patterns from [layer, head, seq, head_dim] queries and keys, layer by layer into
    one read-only array (bert.attention.attention_pattern: the model's own step-by-step computation). windows: per
    layer, a local layer's half-width (ModernBERT); empty: every layer global."""
    layers, heads, seq, _ = queries.shape
    windows = windows or (None,) * layers
    patterns = torch.empty((layers, heads, seq, keys.shape[2]), dtype=torch.float32)
    with torch.inference_mode():
        for layer in range(layers):  # torch.tensor copies: the shared arrays are read-only
            patterns[layer] = attention_pattern(torch.tensor(queries[layer]), torch.tensor(keys[layer]), causal=causal,
                                                window=windows[layer])
    return read_only(patterns)


RECORDED_KINDS = ("q", "k", "mlp_post")  # per layer, as `record` keeps them with its activations


def recorded_names(num_layers: int, activations: bool = True) -> list[str]:
    """The hooks `record` keeps: q and k at every layer; with `activations` the three embeddings and the MLP
    activations too (RECORDED_KINDS). None of them is the scores or the pattern, so the pass stays fused."""
    kinds = RECORDED_KINDS if activations else ("q", "k")
    parts = list(EMBEDDING_PARTS.values()) if activations else []
    return parts + [name for kind in kinds for name in every_layer(kind, num_layers)]


def recorded_hooks(model: Bert, activations: bool = True) -> list[str]:
    """The hook names `record` asks `model` for: `recorded_names` where the model has them (DistilBERT has no
    segment embedding) and, with relative attention (DeBERTa), the pattern of every layer, since its q and k miss
    the position terms."""
    known = set(model.hook_names())
    names = [name for name in recorded_names(model.config.num_layers, activations) if name in known]
    if model.config.relative_attention:
        names += every_layer("pattern", model.config.num_layers)
    return names


def record(model: Bert, tokenizer: BertTokenizer, prepared: PreparedInput, activations: bool = True,
           top_k: int = TOP_K_STORED) -> ForwardResult:
    """Run the model once on `prepared.masked`: the predictions at each [MASK] (the LM head runs only there), the
    query and key vectors of every head (the attention patterns follow from them on first use) and, with
    `activations`, the MLP activations (after GELU) and the three embeddings. Nothing recorded is the scores or
    the pattern, so every layer takes the fused attention path (recording q and k costs about nothing more:
    docs/benchmarks.md#the-app)."""
    device = model_device(model)
    input_ids, token_type_ids = prepared.masked.tensors(device)
    positions = tokenizer.mask_positions(prepared.masked)
    known = set(model.hook_names())
    parts = {part: name for part, name in EMBEDDING_PARTS.items() if name in known}  # DistilBERT has no segment part
    names = recorded_hooks(model, activations)
    relative = model.config.relative_attention
    with torch.inference_mode():
        logits, cache = model.run_with_cache(input_ids, token_type_ids, names=names,
                                             logit_mask=at_positions(positions, len(prepared.masked), device))
        originals = {position: prepared.base.input_ids[position] for position in prepared.masks}
        predictions = [] if logits is None else mask_predictions(logits, positions, tokenizer, top_k, originals)
    recorded = dict(queries=read_only(cache.stack("q")[:, 0]), keys=read_only(cache.stack("k")[:, 0]))
    if relative:
        recorded["recorded_patterns"] = read_only(cache.stack("pattern")[:, 0])
    if activations:
        recorded.update(
            neurons=read_only(cache.stack("mlp_post")[:, 0]),
            embeddings=MappingProxyType({part: read_only(cache[name][0]) for part, name in parts.items()}),
        )
    return ForwardResult(
        tokens=tuple(prepared.masked.tokens),
        original_tokens=tuple(prepared.base.tokens),
        token_type_ids=tuple(prepared.masked.token_type_ids),
        special=tuple(prepared.masked.special),
        masks=tuple(_mask_result(p, prepared) for p in predictions),
        pieces=prepared.masked.pieces,
        causal=model.config.causal,
        windows=tuple(model.config.window(layer) for layer in range(model.config.num_layers)),
        score_scale=model.config.score_scale,
        **recorded,
    )


def read_only(values: torch.Tensor | np.ndarray) -> np.ndarray:
    """A float32 numpy array that nobody can write to (a CPU float32 tensor's memory is shared, not copied)."""
    array = as_numpy(values.float()) if isinstance(values, torch.Tensor) else np.asarray(values, dtype=np.float32)
    array.flags.writeable = False
    return array


def _mask_result(prediction: MaskPrediction, prepared: PreparedInput) -> MaskResult:
    candidates = prediction.candidates
    return MaskResult(
        position=prediction.position,
        tokens=tuple(c.token for c in candidates),
        probabilities=read_only(np.array([c.probability for c in candidates], dtype=np.float32)),
        is_continuation=tuple(c.is_continuation for c in candidates),
        original=None if prediction.original_id is None else prepared.base.tokens[prediction.position],
        original_probability=prediction.original_probability,
        original_rank=prediction.original_rank,
    )
