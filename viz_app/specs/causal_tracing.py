"""What the causal tracing page computes beside the library: its settings (as its widgets, a link or a lesson step
give them), the defaults it picks for the loaded model (answer and foil from its guesses, the word to noise, the
layer of the heads-by-position grid) and the runs. Plain Python: the page runs them through viz_app/cache.py, the
lessons directly.

A `PatchingRequest` or a `TraceRequest` is everything a run depends on, so it is also the cache's key: display
choices (which sweep to compare, whether to run the exact sweep) live beside them in `CausalSettings`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from bert.analysis.causal.patching import PatchingResult, Progress, attribution_sweep, patching_sweep, prepare_contrast
from bert.analysis.causal.tracing import TraceResult, causal_trace
from bert.errors import InvalidInputError
from bert.predict import predict_masks
from bert.tokenizer import Encoding
from viz_app.app.navigation import LINK_PARAMS

MODES = LINK_PARAMS["causal_mode"].choices  # {name: label}, as the page's registry entry gives them
DIRECTION_LABELS = LINK_PARAMS["patch_direction"].choices  # patching.DIRECTIONS, in words
COMPARE = LINK_PARAMS["patch_compare"].choices
FUNCTION_WORDS = {"the", "a", "an", "this", "that", "these", "those", "my", "his", "her", "our", "their", "its", "your"}
SITES_FOR_BLOCKS = {False: ("residual",), True: ("residual", "attention", "mlp")}  # "also the blocks" -> tracing.TRACE_SITES


@dataclass(frozen=True)
class PatchingRequest:
    clean: str
    corrupted: str
    answer: str | None = None  # None: the clean sentence's top guess
    foil: str | None = None  # None: the corrupted sentence's top guess that is not the answer
    direction: str = "denoise"  # a key of DIRECTION_LABELS
    head_layer: int | None = None  # the layer of the heads-by-position grid; None: the last layer


@dataclass(frozen=True)
class TraceRequest:
    text: str
    corrupt: tuple[int, ...] | None = None  # token positions to noise; None: the first content word's pieces
    answer: str | None = None  # None: the top guess
    samples: int = 10
    blocks: bool = False  # also restore the attention and MLP outputs


@dataclass(frozen=True)
class CausalSettings:
    mode: str  # a key of MODES
    patching: PatchingRequest
    trace: TraceRequest
    exact: bool = True  # also the exact sweep (attribution patching is always shown)
    compare: str = "residual"  # the sweep whose attribution and exact values are compared

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "CausalSettings":
        """The settings a link or a lesson step gives (missing keys: their defaults in viz_app/app/url_params.py)."""
        def value(key: str):
            return state.get(key, LINK_PARAMS[key].default)

        corrupt = value("trace_corrupt")
        return cls(
            _choice(value("causal_mode"), MODES),
            PatchingRequest(value("patch_clean"), value("patch_corrupted"), value("patch_answer"), value("patch_foil"),
                            _choice(value("patch_direction"), DIRECTION_LABELS), value("patch_head_layer")),
            TraceRequest(value("trace_text"), None if corrupt is None else tuple(corrupt), value("trace_answer"),
                         max(1, int(value("trace_samples"))), bool(value("trace_blocks"))),
            bool(value("patch_exact")), _choice(value("patch_compare"), COMPARE),
        )


def _choice(value, options):
    return value if value in options else next(iter(options))


def whole_word_guesses(model, tokenizer, text: str, max_positions: int, count: int = 10) -> tuple[str, ...]:
    """The model's top guesses at the one [MASK] of `text` that are whole words (no ## piece); () without exactly
    one [MASK] or for a text too long for the model."""
    try:
        encoding = tokenizer.encode(text, max_length=max_positions)
    except InvalidInputError:
        return ()
    predictions = predict_masks(model, tokenizer, encoding, top_k=4 * count)
    if len(predictions) != 1:
        return ()
    return tuple(c.token for c in predictions[0].candidates if not c.is_continuation)[:count]


def pick_answer_foil(clean_guesses: list[str], corrupted_guesses: list[str], answer: str | None, foil: str | None) -> tuple[str, str]:
    """The answer (default: the clean sentence's top guess) and the foil (default: the corrupted sentence's top
    guess, or its next one when that is the answer): the contrast the two sentences make."""
    answer = answer or (clean_guesses[0] if clean_guesses else "")
    if not foil:
        foil = next((guess for guess in corrupted_guesses + clean_guesses if guess != answer), "")
    return answer, foil


def default_corrupt(tokens: list[str], special: list[bool], continues: list[bool] | None = None,
                    mask_token: str = "[MASK]") -> list[int]:
    """The tokens causal tracing noises unless told: the pieces of the first word that is not a function word
    ("man" in "The man said ..."), as Meng et al. noise the subject. `tokens` are the pieces' texts; `continues`
    says which pieces continue a word (WordPiece's "##" pieces when None)."""
    continues = [token.startswith("##") for token in tokens] if continues is None else continues
    for start, token in enumerate(tokens):
        if special[start] or continues[start] or token == mask_token or token.lower() in FUNCTION_WORDS:
            continue
        end = start + 1
        while end < len(tokens) and continues[end]:
            end += 1
        return list(range(start, end))
    return []


def default_corrupt_of(encoding: Encoding) -> list[int]:
    """`default_corrupt` for an encoded input of any family: pieces without their word-start marker ("Ġman" is
    "man"), continuations by word id (bert/pieces.py)."""
    return default_corrupt([encoding.pieces.text(t) if not s else t for t, s in zip(encoding.tokens, encoding.special)],
                           encoding.special, [encoding.is_continuation(i) for i in range(len(encoding))],
                           encoding.pieces.mask_token)


def resolve_patching(loaded, request: PatchingRequest) -> PatchingRequest:
    """The request with "the page picks" (None) filled in for this model: answer, foil, the heads' layer."""
    model, tokenizer, positions = loaded.model, loaded.tokenizer, loaded.summary.max_positions
    answer, foil = pick_answer_foil(list(whole_word_guesses(model, tokenizer, request.clean, positions)),
                                    list(whole_word_guesses(model, tokenizer, request.corrupted, positions)),
                                    request.answer, request.foil)
    layers = loaded.summary.layers
    head_layer = request.head_layer if isinstance(request.head_layer, int) and 0 <= request.head_layer < layers else layers - 1
    return replace(request, answer=answer, foil=foil, head_layer=head_layer)


def resolve_trace(loaded, request: TraceRequest) -> TraceRequest:
    """The request with its answer (the top guess) and tokens to noise (the first content word) filled in."""
    tokenizer, positions = loaded.tokenizer, loaded.summary.max_positions
    answer = request.answer or next(iter(whole_word_guesses(loaded.model, tokenizer, request.text, positions)), None)
    corrupt = request.corrupt
    if corrupt is None:
        try:
            encoding = tokenizer.encode(request.text, max_length=positions)
        except InvalidInputError:
            encoding = None
        corrupt = tuple(default_corrupt_of(encoding)) if encoding else ()
    return replace(request, answer=answer, corrupt=corrupt)


def patching_batch(tokens: int) -> int:
    """Rows per forward pass (patched runs, saliency's perturbations): fewer for long inputs, so that one pass stays
    within a few hundred MB, and a computation reaches its next stop check within a second or two."""
    return max(1, min(64, 4096 // max(tokens, 1)))


def run_patching(loaded, request: PatchingRequest, exact: bool, progress: Progress | None = None) -> PatchingResult:
    """The exact sweeps (exact=True) or attribution patching, for a resolved request. InvalidInputError says what
    is wrong with the sentences or the words."""
    contrast = prepare_contrast(loaded.tokenizer, request.clean, request.corrupted, request.answer or "", request.foil or "",
                                loaded.summary.max_positions)
    if not exact:
        return attribution_sweep(loaded.model, contrast, direction=request.direction, head_layer=request.head_layer)
    return patching_sweep(loaded.model, contrast, direction=request.direction, head_layer=request.head_layer,
                          batch_size=patching_batch(len(contrast.clean)), progress=progress)


def run_trace(loaded, request: TraceRequest, progress: Progress | None = None) -> TraceResult:
    """Causal tracing for a resolved request."""
    tokenizer = loaded.tokenizer
    encoding = tokenizer.encode(request.text, max_length=loaded.summary.max_positions)
    return causal_trace(loaded.model, tokenizer, encoding, list(request.corrupt or ()), request.answer or None, SITES_FOR_BLOCKS[request.blocks],
                        samples=request.samples, batch_size=patching_batch(len(encoding)), progress=progress)
