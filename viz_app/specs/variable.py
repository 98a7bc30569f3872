"""The page "Where is the variable?" (address `variable`): interchange interventions and distributed alignment search
(bert/analysis/causal/alignment.py) on a task's pairs or the visitor's own: one method at one layer and position
(held-out IIA, the control task's and the selectivity), the layer x position IIA grid with full-vector patching's
beside it, the learned direction over each token of the visitor's sentence, and the variable swapped live from a
second sentence. Its spec (viz_app/specs/base.py). Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from bert.analysis.causal.alignment import (METHODS, AlignmentResult, AlignmentSettings, SweepResult, align,
                                            alignment_cost, alignment_sweep, planned_pairs)
from bert.analysis.causal.variable_view import LiveSwap, live_swap, projections
from bert.costs import Cost
from bert.data.variable_pairs import VariablePair, pairs_from_text
from bert.data.variable_tasks import TASKS, task_pairs
from bert.hooks import hook_name
from bert.layers import layer_label
from viz_app.charts.alignment import iia_bars, iia_grid, projection_heatmap
from viz_app.charts.base import Chart
from viz_app.app.navigation import PAGES
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting, within

NAME = "variable"
UPLOAD = "upload"  # the task picker's value for the visitor's own pairs
KIND = "layer_out"  # the vector intervened on: each layer's output (bert/hooks.py)
TASK_LABELS = dict(PAGES[NAME].params["variable_task"].choices)  # each built-in task, and UPLOAD, by its label
POSITIONS = dict(PAGES[NAME].params["variable_position"].choices)  # bert/analysis/causal/interchange.py's roles, by label
METHOD_TITLES = {
    "das": "DAS: a learned rotation, k coordinates swapped (Geiger et al. 2024)",
    "boundless": "Boundless DAS: the rotation and k learned (Wu et al. 2023)",
    "mean-diff": "difference of the two values' means (1 direction)",
    "probe": "a logistic probe's weights (1 direction)",
    "lda": "linear discriminant analysis (1 direction)",
    "pca": "the top k principal directions",
    "random": "k random directions (the floor)",
    "full": "the whole vector (activation patching)",
}
MAX_DIMS, MAX_STEPS, MAX_PAIRS = 64, 500, 512
LESSON_CHARTS = ("result", "sweep", "full_sweep", "projection")


@dataclass(frozen=True)
class PairsFrom:
    """Where the pairs come from: a built-in task by name, or an uploaded file's name and text."""

    task: str  # a key of bert.data.variable_tasks.TASKS, or UPLOAD
    name: str = ""  # the uploaded file's name (its ending says .tsv or .jsonl)
    text: str = ""

    def pairs(self) -> tuple[VariablePair, ...]:
        """The pairs; DataFileError naming the file's line for a bad upload."""
        return task_pairs(self.task) if self.task != UPLOAD else tuple(pairs_from_text(self.name, self.text))

    def title(self) -> str:
        return f"your pairs ({self.name})" if self.task == UPLOAD else self.task


@dataclass(frozen=True)
class AlignWork:
    source: PairsFrom
    settings: AlignmentSettings  # frozen: its fields are the key
    layer: int  # a transformer layer from 0; its output is intervened on
    position: str  # a key of POSITIONS

    @property
    def hook(self) -> str:
        return hook_name(KIND, self.layer)


@dataclass(frozen=True)
class SweepWork:
    source: PairsFrom
    settings: AlignmentSettings


@dataclass(frozen=True)
class ProjectionWork:
    sentence: str
    align: AlignWork
    sweep: SweepWork | None  # with a sweep: every layer's direction at the position; else the chosen layer's


@dataclass(frozen=True)
class SwapWork:
    base: str
    source: str
    align: AlignWork


def _planned(inputs: Inputs, source: PairsFrom, settings: AlignmentSettings):
    return planned_pairs(inputs.loaded.tokenizer, source.pairs(), settings, inputs.loaded.model.config.max_position_embeddings)


def align_cost(inputs: Inputs, work: AlignWork) -> Cost:
    counts, tokens = _planned(inputs, work.source, work.settings)
    return alignment_cost(inputs.loaded.model.config, tokens, counts, work.settings)


def sweep_cost(inputs: Inputs, work: SweepWork) -> Cost:
    counts, tokens = _planned(inputs, work.source, work.settings)
    sites = inputs.loaded.model.config.num_layers * len(POSITIONS)
    return alignment_cost(inputs.loaded.model.config, tokens, counts, work.settings, sites=sites)


def compute_align(inputs: Inputs, work: AlignWork) -> AlignmentResult:
    loaded = inputs.loaded
    return align(loaded.model, loaded.tokenizer, work.source.pairs(), work.hook, work.position, work.settings)


def compute_sweep(inputs: Inputs, work: SweepWork) -> SweepResult:
    loaded = inputs.loaded
    return alignment_sweep(loaded.model, loaded.tokenizer, work.source.pairs(), list(range(loaded.model.config.num_layers)),
                           list(POSITIONS), KIND, work.settings)


def compute_projection(inputs: Inputs, work: ProjectionWork) -> tuple[list[str], list[int], Any]:
    """(tokens, the layers drawn, [layer, token] projections) of the sentence on each layer's first direction."""
    if work.sweep is None:
        bases = {work.align.hook: inputs.result_of(ALIGN, work.align).basis}
        layers = [work.align.layer]
    else:
        sweep: SweepResult = inputs.result_of(SWEEP, work.sweep)
        column = sweep.positions.index(work.align.position)
        bases = {hook_name(KIND, layer): sweep.results[row][column].basis for row, layer in enumerate(sweep.layers)}
        layers = list(sweep.layers)
    if any(basis is None for basis in bases.values()):
        return [], [], None  # full: the whole vector, no direction
    tokens, values = projections(inputs.loaded.model, inputs.loaded.tokenizer, work.sentence, bases)
    return tokens, layers, values


def compute_swap(inputs: Inputs, work: SwapWork) -> LiveSwap:
    basis = inputs.result_of(ALIGN, work.align).basis
    loaded = inputs.loaded
    return live_swap(loaded.model, loaded.tokenizer, work.base, work.source, work.align.hook, work.align.position, basis)


def _sentence_tokens(inputs: Inputs, text: str) -> int:
    return len(inputs.loaded.tokenizer.encode(text, max_length=inputs.loaded.model.config.max_position_embeddings))


ALIGN = Computation("variable.align", lambda work: f"{work.settings.method} at {layer_label(work.layer)}, {POSITIONS[work.position]}",
                    cost=align_cost, compute=compute_align, per_model=True, work=AlignWork)
SWEEP = Computation("variable.sweep", lambda work: f"the {work.settings.method} sweep of every layer and position",
                    cost=sweep_cost, compute=compute_sweep, per_model=True, work=SweepWork)
PROJECTION = Computation("variable.projection", lambda work: "the direction over your sentence",
                         cost=lambda inputs, work: Cost(1, _sentence_tokens(inputs, work.sentence)),
                         compute=compute_projection, per_model=True, work=ProjectionWork)
SWAP = Computation("variable.swap", lambda work: "the live swap",
                   cost=lambda inputs, work: Cost(3, max(_sentence_tokens(inputs, work.base), _sentence_tokens(inputs, work.source))),
                   compute=compute_swap, per_model=True, work=SwapWork)


@dataclass(frozen=True)
class Settings:
    source: PairsFrom
    method: str
    dims: int
    steps: int
    max_pairs: int
    seed: int
    layer: int
    position: str
    sweep: bool  # the layer x position grids asked for
    sentence: str  # the visitor's sentence (the base of the live swap)
    source_sentence: str  # the sentence the variable is swapped in from

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs, upload: PairsFrom | None = None) -> "Settings":
        """The settings a link or a lesson step gives (a built-in task unless `upload`), clamped as the widgets would."""
        task = setting(state, "variable_task")
        source = upload if upload is not None else PairsFrom(task if task in TASKS else next(iter(TASKS)))
        method = setting(state, "variable_method")
        position = setting(state, "variable_position")
        return cls(source, method if method in METHODS else "mean-diff",
                   _clamp(setting(state, "variable_dims"), 1, MAX_DIMS), _clamp(setting(state, "variable_steps"), 1, MAX_STEPS),
                   _clamp(setting(state, "variable_pairs"), 2, MAX_PAIRS), _clamp(setting(state, "variable_seed"), 0, 10**6),
                   within(setting(state, "variable_layer"), inputs.loaded.summary.layers, 0),
                   position if position in POSITIONS else "differs", bool(setting(state, "variable_sweep")),
                   str(setting(state, "variable_sentence") or ""), str(setting(state, "variable_source") or ""))

    def alignment(self, method: str | None = None) -> AlignmentSettings:
        return AlignmentSettings(method=method or self.method, dims=self.dims, steps=self.steps, seed=self.seed,
                                 max_pairs=self.max_pairs)

    @property
    def align_work(self) -> AlignWork:
        return AlignWork(self.source, self.alignment(), self.layer, self.position)


def _clamp(value, low: int, high: int) -> int:
    return min(high, max(low, value)) if isinstance(value, int) else low


def computations(settings: Settings) -> Planned:
    """"align" always; "sweep" and "full_sweep" (full patching's grid, unless the method is full) with the sweep;
    "projection" and "swap" when the sentences are given."""
    planned: Planned = {"align": (ALIGN, settings.align_work)}
    sweep = None
    if settings.sweep:
        sweep = SweepWork(settings.source, settings.alignment())
        planned["sweep"] = (SWEEP, sweep)
        if settings.method != "full":
            planned["full_sweep"] = (SWEEP, SweepWork(settings.source, settings.alignment("full")))
    if settings.sentence.strip():
        planned["projection"] = (PROJECTION, ProjectionWork(settings.sentence, settings.align_work, sweep))
        if settings.source_sentence.strip():
            planned["swap"] = (SWAP, SwapWork(settings.sentence, settings.source_sentence, settings.align_work))
    return planned


def result_text(result: AlignmentResult) -> str:
    """The single site's numbers in one paragraph (plain text)."""
    pairs = result.pairs
    return (f"Held-out IIA {result.iia['test']:.3f} (training {result.iia['train']:.3f}); control task's IIA "
            f"{result.control_iia['test']:.3f}; selectivity {result.selectivity:+.3f}; log-odds {result.log_odds:.2f}. "
            f"{result.dims} dimension{'s' if result.dims != 1 else ''} swapped. Pairs: {pairs['train']} for training, "
            f"{pairs['test']} held out, {pairs['dropped']} left out because the model gets both sentences wrong"
            + (f", {pairs['unusable']} the tokenizer could not line up" if pairs.get("unusable") else "") + ".")


def swap_text(swap: LiveSwap) -> str:
    """The live swap's guesses in plain text (the visitor's words are in it: shown with st.text)."""
    def words(top):
        return ", ".join(f"{word} {p:.2f}" for word, p in top)

    return (f"Swapped at token {swap.position} ({swap.tokens[swap.position]}).\n"
            f"Your sentence:             {words(swap.before)}\n"
            f"With the variable swapped: {words(swap.after)}\n"
            f"The second sentence:       {words(swap.source)}")


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"result" (the site's IIA beside the control's), "sweep" and "full_sweep" (the IIA grids), "projection" (the
    direction over the sentence's tokens)."""
    charts: dict[str, Chart] = {}
    result: AlignmentResult | None = results.get("align")
    if result is not None:
        charts["result"] = iia_bars(
            {"held-out IIA": result.iia["test"], "training IIA": result.iia["train"],
             "control task's IIA": result.control_iia["test"]},
            f"{settings.method} at {layer_label(settings.layer)}, {POSITIONS[settings.position]}: selectivity "
            f"{result.selectivity:+.2f}", f"variable_result_{settings.method}",
            "Selectivity is the held-out IIA less the control task's: what the directions carry beyond the words seen.")
    positions = [POSITIONS[p] for p in POSITIONS]
    for name, label in (("sweep", settings.method), ("full_sweep", "full")):
        sweep: SweepResult | None = results.get(name)
        if sweep is not None:
            rows = [layer_label(layer) for layer in sweep.layers]
            charts[name] = iia_grid(sweep.grid("iia"), rows, positions, f"Held-out IIA by {label}, {settings.source.title()}",
                                    f"variable_iia_{label}", "1: after the swap, every held-out pair's guess is the one the other value calls for.")
    tokens, layers, values = results.get("projection") or ([], [], None)
    if values is not None:
        charts["projection"] = projection_heatmap(
            values, [layer_label(layer) for layer in layers], tokens,
            f"Your sentence along the {settings.method} direction ({POSITIONS[settings.position]})",
            f"variable_projection_{settings.method}",
            "Each token's vector dotted with the first learned direction of that layer; its sign is arbitrary, its "
            "change from token to token is not.")
    return charts
