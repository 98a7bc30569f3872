"""The page "Compare two models" (address `compare_models`): which models to offer as B, predictions side by side,
and what changed inside over many sentences (CKA by layer, each head's attention moved). Its spec
(viz_app/specs/base.py): `Settings`, `computations` (the comparison, counted at the larger model's size), `view`.
Model B is loaded through `Inputs.load`. Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from bert.analysis.representations.compare import comparison_cost, compare_models, same_vocabulary
from bert.costs import Cost, relative_size
from bert.data import builtin_sentences
from bert.predict import predict_masks
from viz_app.app import models
from viz_app.app.forward import PreparedInput
from viz_app.app.models import LoadedModel, ModelKey
from viz_app.charts import compare as charts
from viz_app.charts.base import Chart
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting
from viz_app.specs.sentence_tasks import class_probabilities, next_sentence

NAME = "compare_models"
LESSON_CHARTS = ("cka_by_layer", "cka_matrix", "attention_change")

# A model's usual partners, best first: its base, or the models trained from it.
PARTNERS = {"minilm": ["minilm-encoder"], "minilm-trec": ["minilm-encoder"], "minilm-encoder": ["minilm-trec", "minilm"]}


def partner(source_a: str, sources: list[str]) -> str:
    """Model B's default for model A: its first known partner on offer, else the first other model."""
    for wanted in PARTNERS.get(source_a, []):
        if wanted in sources:
            return wanted
    others = [s for s in sources if s != source_a and s != models.FOLDER]
    return others[0] if others else models.FOLDER


def side_by_side(a: LoadedModel, b: LoadedModel, prepared: PreparedInput, shared: bool | None = None) -> pd.DataFrame:
    """What both models say about the sidebar's input, row by row: each [MASK]'s top 5, the class, B-follows-A.

    shared: whether the two read the same token ids (`same_vocabulary`; worked out when None). Then B reads A's
    input, clicked masks included. Else B reads the text in its own tokens, and the typed [MASK]s (the only ones
    both inputs have) are paired in order."""
    shared = same_vocabulary(a.tokenizer, b.tokenizer) if shared is None else shared
    own = (prepared.base if shared else  # B's own tokens of the text (and pair)
           b.tokenizer.encode(prepared.text, prepared.pair or None, b.summary.max_positions, truncate=True))
    rows = []
    inputs = (prepared.masked, prepared.masked) if shared else (prepared.base, own)
    guesses = [predict_masks(m.model, m.tokenizer, e, top_k=5) if m.model.has_mlm_head else None
               for m, e in zip((a, b), inputs)]
    if any(g is not None for g in guesses):  # a model without the head says so in its column
        guessed = [g for g in guesses if g is not None]
        for number, found in enumerate(zip(*guessed), start=1):
            positions = [guess.position for guess in found]
            if shared:
                what = f"[MASK] at position {positions[0]}"
            elif len(found) == 2:
                what = f"[MASK] number {number} (position {positions[0]} in A, {positions[1]} in B)"
            else:
                what = f"[MASK] number {number} (position {positions[0]} in {'A' if guesses[0] is not None else 'B'})"
            cells = iter(found)
            rows.append([what] + [", ".join(f"{c.token} {c.probability:.0%}" for c in next(cells).candidates)
                                  if g is not None else NO_GUESS for g in guesses])
    if a.model.has_classifier and b.model.has_classifier:
        tops = [class_probabilities(m.model, e).sort_values("probability").iloc[-1] for m, e in ((a, prepared.base), (b, own))]
        rows.append(["class"] + [f"{top['label']} {top['probability']:.0%}" for top in tops])
    if prepared.pair.strip() and a.model.has_nsp_head and b.model.has_nsp_head:
        follows = [next_sentence(m.model, m.tokenizer, prepared.text, prepared.pair, m.summary.max_positions,
                                 prepared.truncate).follows for m in (a, b)]
        rows.append(["P(B follows A)"] + [f"{p:.1%}" for p in follows])
    return pd.DataFrame(rows, columns=["what", "model A", "model B"])


NO_GUESS = "no guess: no masked-LM head"  # the cell of a model without one, beside the other's guesses
NOTHING_SHARED = ("Nothing both models can predict for this input: put a [MASK] in the sentence (both need a masked-LM "
                  "head), or compare two classifiers, or two models with a next-sentence head and a second sentence.")


def one_sided(table: pd.DataFrame) -> str | None:
    """Which model's column says it guesses nothing (`NO_GUESS`), in a line under the table; None if neither."""
    missing = [name for name, column in (("A", "model A"), ("B", "model B")) if (table[column] == NO_GUESS).any()]
    if not missing:
        return None
    return (f"Model {missing[0]} has no masked-LM head, so it makes no guess; the comparison inside (below) still "
            f"holds. To compare guesses too, pick a model with one as model {missing[0]} (minilm, or a cached "
            "bert-base-uncased).")


def nothing_shared(a: LoadedModel, b: LoadedModel, prepared: PreparedInput, shared: bool) -> str:
    """Why `side_by_side` has no row: where the input has a [MASK] both models would read, the model without a
    masked-LM head named; else what would give a row."""
    masks = prepared.all_masks if shared else prepared.typed_masks  # B reads its own tokens: only typed [MASK]s
    missing = [name for name, m in (("A", a), ("B", b)) if not m.model.has_mlm_head]
    if masks and missing:
        which = " and ".join(f"model {name}" for name in missing)
        return (f"The sentence has a [MASK], but {which} {'has' if len(missing) == 1 else 'have'} no masked-LM head, "
                "so it makes no guess there. Pick a model with one (e.g. minilm or bert-base-uncased), or compare two "
                "classifiers, or two models with a next-sentence head and a second sentence.")
    return NOTHING_SHARED

@dataclass(frozen=True)
class SideBySideWork:
    key_b: ModelKey  # model B (model A is the page's)
    shared: bool  # whether the two read the same token ids (`same_vocabulary`)


def _side_by_side_cost(inputs: Inputs, work: SideBySideWork) -> Cost:
    """`side_by_side`'s passes: a guess, a class each where both models have the head; two each for B-follows-A."""
    a, b = inputs.loaded.model, inputs.load(work.key_b).model
    passes = int(a.has_mlm_head) + int(b.has_mlm_head) + 2 * (a.has_classifier and b.has_classifier)
    passes += 4 * bool(inputs.prepared.pair.strip() and a.has_nsp_head and b.has_nsp_head)
    return Cost(passes, len(inputs.prepared.masked))


SIDE_BY_SIDE = Computation(  # a few light passes of the sidebar's input through each model
    "compare_models.side_by_side", lambda work: "Both models on your sentence", cost=_side_by_side_cost,
    compute=lambda inputs, work: side_by_side(inputs.loaded, inputs.load(work.key_b), inputs.prepared, work.shared),
    counted_at=lambda inputs, work: max((inputs.loaded.model.config, inputs.load(work.key_b).model.config),
                                        key=relative_size), work=SideBySideWork)


@dataclass(frozen=True)
class ComparisonWork:
    key_b: ModelKey  # model B (model A is the page's)
    sentences: tuple[str, ...]


def _models(inputs: Inputs, work: ComparisonWork) -> tuple[LoadedModel, LoadedModel]:
    return inputs.loaded, inputs.load(work.key_b)


def _cost(inputs: Inputs, work: ComparisonWork):
    a, b = _models(inputs, work)
    return comparison_cost(a.model, b.model, a.tokenizer, list(work.sentences), tokenizer_b=b.tokenizer)


def _compare(inputs: Inputs, work: ComparisonWork):
    """Token by token for one vocabulary, else word by word. Raises bert.errors.InvalidInputError when the two
    tokenizers split every sentence differently."""
    a, b = _models(inputs, work)
    return compare_models(a.model, b.model, a.tokenizer, list(work.sentences), tokenizer_b=b.tokenizer)


COMPARISON = Computation(
    "compare_models.comparison", lambda work: "Both models over the sentences", cost=_cost, compute=_compare,
    counted_at=lambda inputs, work: max((m.model.config for m in _models(inputs, work)), key=relative_size), work=ComparisonWork)


@dataclass(frozen=True)
class Settings:
    key_b: ModelKey | None  # None: no model B chosen (a lesson step that names none draws nothing)
    sentences: tuple[str, ...]  # the sentences both models read
    name_a: str = "A"  # how the charts name the two
    name_b: str = "B"

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """Model B as the link or the step names it (compare_with, compare_folder for a folder), over the first
        compare_count built-in sentences; no model B when it names none or model A itself."""
        source, folder = setting(state, "compare_with"), setting(state, "compare_folder") or None
        source = folder if source == models.FOLDER else source
        key_b = ModelKey.of(source, folder) if source else None
        sentences = tuple(s.text for s in builtin_sentences(int(setting(state, "compare_count"))))
        return cls(None if key_b == inputs.loaded.key else key_b, sentences, inputs.loaded.key.source, source or "B")


def computations(settings: Settings) -> Planned:
    """"comparison" when there is a model B."""
    if settings.key_b is None:
        return {}
    return {"comparison": (COMPARISON, ComparisonWork(settings.key_b, settings.sentences))}


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"cka_by_layer" (two models of the same depth), "cka_matrix", "attention_change" (heads that pair up)."""
    result = results.get("comparison")
    if result is None:
        return {}
    found = {"cka_matrix": charts.cka_matrix(result, settings.name_a, settings.name_b)}
    if result.same_depth:
        found = {"cka_by_layer": charts.cka_by_layer(result, settings.name_a, settings.name_b)} | found
    if result.attention_js is not None:
        found["attention_change"] = charts.attention_change(result)
    return found
