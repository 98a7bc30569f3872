"""The causal tracing page's view: activation patching grids (exact and attribution) and noise tracing grids; the
page's settings as a link or a lesson step gives them, and the defaults it picks (answer, foil, tokens to noise)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from bert.analysis.causal.patching import PatchingResult
from bert.analysis.causal.tracing import TraceResult
from viz_app.charts.base import Chart
from viz_app.charts.causal import attribution_scatter, patching_heatmap, probability_heatmap
from viz_app.views import setting

MODES = {"two": "Two sentences (activation patching)", "one": "One sentence with noise (causal tracing)"}
DIRECTIONS = {"denoise": "clean into corrupted", "noise": "corrupted into clean"}
COMPARE = ("residual", "attention", "mlp", "heads")
FUNCTION_WORDS = {"the", "a", "an", "this", "that", "these", "those", "my", "his", "her", "our", "their", "its", "your"}


@dataclass(frozen=True)
class CausalSettings:
    """What the page's widgets read; `from_state` reads them from a link's or a lesson step's state instead."""

    mode: str = "two"  # a key of MODES
    clean: str = ""
    corrupted: str = ""
    answer: str | None = None  # None: the clean sentence's top guess
    foil: str | None = None  # None: the corrupted sentence's top guess that is not the answer
    direction: str = "denoise"
    exact: bool = True  # also the exact sweep (attribution patching is always computed)
    head_layer: int | None = None  # the layer of the head x position grid; None: the last layer
    compare: str = "residual"  # the sweep whose attribution and exact values are compared
    trace_text: str = ""
    trace_corrupt: tuple[int, ...] | None = None  # None: the first content word's pieces (default_corrupt)
    trace_answer: str | None = None  # None: the top guess
    trace_samples: int = 10
    trace_blocks: bool = False  # also restore the attention and MLP outputs

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> "CausalSettings":
        corrupt = setting(state, "trace_corrupt")
        return cls(
            mode=_choice(setting(state, "causal_mode"), MODES), clean=setting(state, "patch_clean"),
            corrupted=setting(state, "patch_corrupted"), answer=setting(state, "patch_answer"), foil=setting(state, "patch_foil"),
            direction=_choice(setting(state, "patch_direction"), DIRECTIONS), exact=bool(setting(state, "patch_exact")),
            head_layer=setting(state, "patch_head_layer"), compare=_choice(setting(state, "patch_compare"), COMPARE),
            trace_text=setting(state, "trace_text"), trace_corrupt=None if corrupt is None else tuple(corrupt),
            trace_answer=setting(state, "trace_answer"), trace_samples=max(1, int(setting(state, "trace_samples"))),
            trace_blocks=bool(setting(state, "trace_blocks")),
        )


def _choice(value, options):
    return value if value in options else next(iter(options))


def pick_answer_foil(clean_guesses: list[str], corrupted_guesses: list[str], answer: str | None, foil: str | None) -> tuple[str, str]:
    """The answer (default: the clean sentence's top guess) and the foil (default: the corrupted sentence's top
    guess, or its next one when that is the answer): the contrast the two sentences make."""
    answer = answer or (clean_guesses[0] if clean_guesses else "")
    if not foil:
        foil = next((guess for guess in corrupted_guesses + clean_guesses if guess != answer), "")
    return answer, foil


def default_corrupt(tokens: list[str], special: list[bool]) -> list[int]:
    """The tokens causal tracing noises unless told: the pieces of the first word that is not a function word
    ("man" in "The man said ..."), as Meng et al. noise the subject."""
    for start, token in enumerate(tokens):
        if special[start] or token.startswith("##") or token == "[MASK]" or token in FUNCTION_WORDS:
            continue
        end = start + 1
        while end < len(tokens) and tokens[end].startswith("##"):
            end += 1
        return list(range(start, end))
    return []

SWEEP_TITLES = {
    "residual": "Residual stream: patch one layer's state at one position",
    "attention": "Attention blocks: patch what one layer's attention adds at one position",
    "mlp": "MLP blocks: patch what one layer's MLP adds at one position",
    "heads": "Attention heads: patch one head's output at every position",
}
SWEEP_CAPTIONS = {
    "residual": "Rows: 0 is the embeddings' output, row i the output of layer i. 1 (red): patching this state alone "
                "restores the clean sentence's preference; 0 (white): no effect.",
    "attention": "Rows: layers counted from 0. What the attention block adds to the residual stream at that position.",
    "mlp": "Rows: layers counted from 0. What the MLP block adds to the residual stream at that position.",
    "heads": "Each head's output patched at every position at once (before the layer's output projection mixes the heads).",
}


def _rows(site: str, count: int) -> list[str]:
    return ["embeddings"] + [f"after layer {i}" for i in range(1, count)] if site == "residual" else [f"layer {i}" for i in range(count)]


def patching_view(result: PatchingResult, attribution: PatchingResult | None = None, compare: str = "residual") -> dict[str, Chart]:
    """"residual", "attention", "mlp", "heads", "head_positions" (when the result has it) from `result` (exact, or
    attribution alone); with both, "comparison": attribution against exact, cell by cell, for the sweep `compare`."""
    method = "attribution patching" if result.method == "attribution" else "activation patching"
    charts = {}
    for site, title in SWEEP_TITLES.items():
        grid = getattr(result, site)
        if grid is None:
            continue
        columns = [f"head {h}" for h in range(grid.shape[1])] if site == "heads" else result.tokens
        charts[site] = patching_heatmap(grid.numpy(), _rows(site, grid.shape[0]), columns, f"{title} ({method})",
                                        f"patching_{site}", SWEEP_CAPTIONS[site], "head" if site == "heads" else "token")
    if result.head_positions is not None:
        grid = result.head_positions
        charts["head_positions"] = patching_heatmap(
            grid.numpy(), [f"head {h}" for h in range(grid.shape[0])], result.tokens,
            f"Layer {result.head_layer}'s heads, one position at a time ({method})", "patching_head_positions",
            "Which head, reading at which position, carries the difference.")
    if attribution is not None and getattr(result, compare) is not None and getattr(attribution, compare) is not None:
        exact, approximate = getattr(result, compare), getattr(attribution, compare)
        columns = [f"head {h}" for h in range(exact.shape[1])] if compare == "heads" else result.tokens
        cells = [f"{row}, {column}" for row in _rows(compare, exact.shape[0]) for column in columns]
        charts["comparison"] = attribution_scatter(exact.numpy(), approximate.numpy(), cells, f"attribution_{compare}")
    return charts


def tracing_view(trace: TraceResult) -> dict[str, Chart]:
    """One p(answer) heatmap per traced site."""
    captions = {
        "residual": "Rows: 0 is the embeddings' output, row i the output of layer i. Dark: restoring this one state "
                    "brings the answer back; white: no better than the noisy run.",
        "attention": "What one layer's attention adds at one position, restored (layers counted from 0).",
        "mlp": "What one layer's MLP adds at one position, restored (layers counted from 0).",
    }
    names = {"residual": "states", "attention": "attention outputs", "mlp": "MLP outputs"}
    return {
        site: probability_heatmap(grid.numpy(), _rows(site, grid.shape[0]), trace.tokens,
                                  f"p('{trace.answer}') with one of the clean run's {names[site]} restored", f"tracing_{site}",
                                  captions[site], low=trace.corrupted_probability)
        for site, grid in trace.restored.items()
    }
