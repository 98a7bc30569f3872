"""The page "Causal tracing" (address `causal_tracing`), as a spec (viz_app/specs/base.py): activation patching on
two sentences (exact, and attribution patching) or noise on one sentence (Meng et al. 2022). Its `Settings` (as its
widgets, a link or a lesson step give them), the defaults it picks for the loaded model (answer and foil from its
guesses, the word to noise, the layer of the heads-by-position grid), its three `Computation`s and its `view`: the
patching and tracing grids. Plain Python.

A `PatchingRequest` or a `TraceRequest` is everything a run depends on, so it is the computation's work (and its
cache key); a request that leaves the answer, the foil or the words to noise to the page is resolved inside the run
(the guesses are in its price). Display choices (which sweep to compare, whether to run the exact sweep) live beside
them in `Settings`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from bert.analysis.causal.patching import (PatchingResult, Progress, attribution_sweep, patching_cost, patching_sweep,
                                           prepare_contrast)
from bert.analysis.attribution.saliency import GRADIENT_METHODS
from bert.analysis.causal.tracing import TraceResult, causal_trace, trace_cost
from bert.costs import Cost
from bert.errors import BertError, InvalidInputError
from bert.layers import head_short_label, layer_label, layer_labels, residual_labels
from bert.predict import predict_masks
from bert.tokenizer import Encoding
from viz_app.app.navigation import LINK_PARAMS
from viz_app.charts.base import Chart
from viz_app.charts.causal import attribution_scatter, patching_heatmap, probability_heatmap
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned

NAME = "causal_tracing"

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
class Settings:
    mode: str  # a key of MODES
    patching: PatchingRequest
    trace: TraceRequest
    exact: bool = True  # also the exact sweep (attribution patching is always shown)
    compare: str = "residual"  # the sweep whose attribution and exact values are compared

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs | None = None) -> "Settings":
        """The settings a link or a lesson step gives (missing keys: their defaults in viz_app/app/url_params.py).
        The page reads its own sentences, not the sentence box's: `inputs` is not read."""
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


def _guesses_cost(inputs: Inputs, work: "GuessesWork") -> Cost:
    try:
        tokens = len(inputs.loaded.tokenizer.encode(work.text, max_length=inputs.loaded.summary.max_positions))
    except InvalidInputError:
        return Cost(0, 0)
    return Cost(1, tokens)


@dataclass(frozen=True)
class GuessesWork:
    text: str  # a sentence typed or linked, not the sentence box's: guessed at its one [MASK]


GUESSES = Computation(  # one pass of the sentence; the top whole-word guesses at its [MASK], for the answer pickers
    "causal_tracing.guesses", lambda work: "The model's guesses at the [MASK]", cost=_guesses_cost,
    compute=lambda inputs, work: whole_word_guesses(inputs.loaded.model, inputs.loaded.tokenizer, work.text,
                                                    inputs.loaded.summary.max_positions),
    per_model=True, work=GuessesWork)


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
    answer, foil = request.answer, request.foil
    if not (answer and foil):  # the page picks: from the two sentences' guesses (PATCHING_GUESSES passes)
        answer, foil = pick_answer_foil(list(whole_word_guesses(model, tokenizer, request.clean, positions)),
                                        list(whole_word_guesses(model, tokenizer, request.corrupted, positions)),
                                        answer, foil)
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


GRADIENT_TOKENS = 512  # tokens a pass when it keeps its gradient: every layer's activations wait for the backward pass


def saliency_batch(method: str, tokens: int) -> int:
    """Rows per pass of a saliency method: `patching_batch`'s for the perturbations; for the gradient methods,
    GRADIENT_TOKENS tokens a pass (one row at 512 tokens holds about 840 MB with BERT-base: bert/costs.py's
    pass_bytes with gradients, measured: integrated gradients at 128 tokens, 32 rows a pass, held 2.95 GB of BERT-base activations, priced 3.78 GB)."""
    if method in GRADIENT_METHODS:
        return max(1, min(64, GRADIENT_TOKENS // max(tokens, 1)))
    return patching_batch(tokens)


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


# ---- the computations: priced before they start (the library's cost functions), run through heavy.run ---------------

PATCHING_GUESSES, TRACE_GUESSES = 2, 1  # passes that find the answer (and the foil) where a request leaves them to the page


def _length(inputs: Inputs, text: str) -> int:
    """`text`'s tokens as the model reads it; 0 when it cannot be read (the run then says why, and costs nothing)."""
    try:
        return len(inputs.loaded.tokenizer.encode(text, max_length=inputs.loaded.summary.max_positions))
    except BertError:
        return 0


def _patching_cost(inputs: Inputs, request: PatchingRequest, exact: bool) -> Cost:
    tokens = max(_length(inputs, request.clean), _length(inputs, request.corrupted))
    if not tokens:
        return Cost(0, 0)
    config = inputs.loaded.model.config
    guesses = Cost(0 if request.answer and request.foil else PATCHING_GUESSES, tokens)
    head_layer = config.num_layers - 1 if request.head_layer is None else request.head_layer  # as resolve_patching
    cost = guesses + patching_cost(config, tokens, head_layer=head_layer if exact else None, exact=exact)
    return replace(cost, rows_at_once=patching_batch(tokens)) if exact else cost  # its batches of patched runs


def _trace_cost(inputs: Inputs, request: TraceRequest) -> Cost:
    tokens = _length(inputs, request.text)
    if not tokens:
        return Cost(0, 0)
    samples = request.samples if isinstance(request.samples, int) and request.samples > 0 else 1
    cost = (Cost(0 if request.answer else TRACE_GUESSES, tokens)
            + trace_cost(inputs.loaded.model.config, tokens, samples, SITES_FOR_BLOCKS[bool(request.blocks)]))
    return replace(cost, rows_at_once=patching_batch(tokens))  # its batches of restored runs


ATTRIBUTION = Computation(  # one forward and one backward pass: fast even for long inputs
    "causal_tracing.attribution", lambda request: "Attribution patching",
    cost=lambda inputs, request: _patching_cost(inputs, request, exact=False),
    compute=lambda inputs, request: run_patching(inputs.loaded, resolve_patching(inputs.loaded, request), exact=False),
    per_model=True, work=PatchingRequest)
EXACT = Computation(  # one patched run per cell, many per forward pass
    "causal_tracing.exact", lambda request: "Activation patching",
    cost=lambda inputs, request: _patching_cost(inputs, request, exact=True),
    compute=lambda inputs, request: run_patching(inputs.loaded, resolve_patching(inputs.loaded, request), exact=True),
    per_model=True, work=PatchingRequest)
TRACE = Computation(  # per noise sample: the noisy run and one run per restored state
    "causal_tracing.trace", lambda request: "Causal tracing",
    cost=_trace_cost,
    compute=lambda inputs, request: run_trace(inputs.loaded, resolve_trace(inputs.loaded, request)),
    per_model=True, work=TraceRequest)


def computations(settings: Settings) -> Planned:
    """One sentence: "trace". Two: "attribution" and, when the exact sweep is asked for, "exact"."""
    if settings.mode == "one":
        return {"trace": (TRACE, settings.trace)}
    planned: Planned = {"attribution": (ATTRIBUTION, settings.patching)}
    if settings.exact:
        planned["exact"] = (EXACT, settings.patching)
    return planned


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """The noise trace's grids (tracing_view), or the patching grids (patching_view) of the exact sweep compared
    with attribution patching, or of attribution patching alone."""
    if results.get("trace") is not None:
        return tracing_view(results["trace"])
    exact, approximate = results.get("exact"), results.get("attribution")
    if exact is None and approximate is None:
        return {}
    return patching_view(exact or approximate, approximate if exact is not None else None, settings.compare)


# ---- the view: activation patching grids (exact and attribution) and noise tracing grids -------------------------

SWEEP_TITLES = {
    "residual": "Residual stream: patch one layer's state at one position",
    "attention": "Attention blocks: patch what one layer's attention adds at one position",
    "mlp": "MLP blocks: patch what one layer's MLP adds at one position",
    "heads": "Attention heads: patch one head's output at every position",
}
SWEEP_CAPTIONS = {
    "residual": "Rows: the embeddings' output, then each layer's output. 1 (red): patching this state alone restores "
                "the clean sentence's preference; 0 (white): no effect; below 0 (blue): it pushes the other way.",
    "attention": "What the layer's attention block adds to the residual stream at that position.",
    "mlp": "What the layer's MLP block adds to the residual stream at that position.",
    "heads": "Each head's output patched at every position at once (before the layer's output projection mixes the heads).",
}


def _rows(site: str, count: int) -> list[str]:
    """Row labels (bert/layers.py): the residual stream's row i is hidden_states[i] ("embeddings", "after layer
    i-1"), the other sweeps' row i is layer i."""
    return residual_labels(count - 1) if site == "residual" else layer_labels(count)


def patching_view(result: PatchingResult, attribution: PatchingResult | None = None, compare: str = "residual") -> dict[str, Chart]:
    """"residual", "attention", "mlp", "heads", "head_positions" (when the result has it) from `result` (exact, or
    attribution alone); with both, "comparison": attribution against exact, cell by cell, for the sweep `compare`."""
    method = "attribution patching" if result.method == "attribution" else "activation patching"
    charts = {}
    for site, title in SWEEP_TITLES.items():
        grid = getattr(result, site)
        if grid is None:
            continue
        columns = [head_short_label(h) for h in range(grid.shape[1])] if site == "heads" else result.tokens
        charts[site] = patching_heatmap(grid.numpy(), _rows(site, grid.shape[0]), columns, f"{title} ({method})",
                                        f"patching_{site}", SWEEP_CAPTIONS[site], "head" if site == "heads" else "token")
    if result.head_positions is not None:
        grid = result.head_positions
        charts["head_positions"] = patching_heatmap(
            grid.numpy(), [head_short_label(h) for h in range(grid.shape[0])], result.tokens,
            f"The heads of {layer_label(result.head_layer)}, one position at a time ({method})", "patching_head_positions",
            "Which head, reading at which position, carries the difference.")
    if attribution is not None and getattr(result, compare) is not None and getattr(attribution, compare) is not None:
        exact, approximate = getattr(result, compare), getattr(attribution, compare)
        columns = [head_short_label(h) for h in range(exact.shape[1])] if compare == "heads" else result.tokens
        cells = [f"{row}, {column}" for row in _rows(compare, exact.shape[0]) for column in columns]
        charts["comparison"] = attribution_scatter(exact.numpy(), approximate.numpy(), cells, f"attribution_{compare}")
    return charts


def tracing_view(trace: TraceResult) -> dict[str, Chart]:
    """One p(answer) heatmap per traced site."""
    captions = {
        "residual": "Rows: the embeddings' output, then each layer's output. Dark: restoring this one state brings the "
                    "answer back; white: no better than the noisy run.",
        "attention": "What one layer's attention adds at one position, restored.",
        "mlp": "What one layer's MLP adds at one position, restored.",
    }
    names = {"residual": "states", "attention": "attention outputs", "mlp": "MLP outputs"}
    return {
        site: probability_heatmap(grid.numpy(), _rows(site, grid.shape[0]), trace.tokens,
                                  f"p('{trace.answer}') with one of the clean run's {names[site]} restored", f"tracing_{site}",
                                  captions[site], low=trace.corrupted_probability)
        for site, grid in trace.restored.items()
    }


LESSON_CHARTS = (*SWEEP_TITLES, "head_positions", "comparison")  # every grid the view draws (tracing: its sites)
