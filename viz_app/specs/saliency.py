"""The page "Saliency" (address `saliency`): which input tokens the prediction at a [MASK] depends on, by one of
four methods (bert/analysis/attribution/saliency.py, through Captum), optionally against a second word, and the
deletion curve that tests the map (bert/analysis/attribution/deletion.py). Its spec (viz_app/specs/base.py):
`Settings`, `computations`, `view`; plus the words that read a map (`METHOD_NAMES`, `method_note`,
`integral_is_rough`), which the sentence tasks page shares. Plain Python."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import Any, Mapping

from bert.analysis.attention.words import merge_scores, word_groups
from bert.analysis.attribution.deletion import deletion_cost, deletion_curve
from bert.analysis.attribution.saliency import METHODS, Saliency, saliency, saliency_cost, swappable
from bert.costs import Cost
from viz_app.charts.base import Chart
from viz_app.charts.saliency import deletion_chart, explained_text, saliency_chart
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, chosen_mask, setting
from viz_app.specs.causal_tracing import patching_batch, saliency_batch

NAME = "saliency"
LESSON_CHARTS = ("attributions", "deletion")
RANDOM_ORDERS = 10  # the deletion curve's random orders
STEPS, SAMPLES = range(8, 129, 8), range(5, 101, 5)  # the page's sliders: integration steps, Shapley orders
METHOD_NAMES = {
    "gradient_x_input": "gradient × input",
    "integrated_gradients": "integrated gradients",
    "occlusion": "occlusion",
    "shapley_value_sampling": "Shapley value sampling",
}


@dataclass(frozen=True)
class Explained:
    """One saliency map: what both parts read."""
    method: str  # a key of METHOD_NAMES
    position: int  # the [MASK] explained
    target_id: int | None = None  # the word explained; None: the model's top guess there
    foil_id: int | None = None  # "rather than" this word; None: log p of the target alone
    steps: int = 32  # integrated gradients' points
    samples: int = 25  # Shapley value sampling's random orders


def attributions(inputs: Inputs, explained: Explained) -> Saliency:
    """The map for the input the model reads (its masks applied); a watcher (bert/stopping.py) may stop it between
    its batched passes."""
    loaded, encoding = inputs.loaded, inputs.prepared.masked
    return saliency(loaded.model, loaded.tokenizer, encoding, explained.method, explained.position, explained.target_id,
                    steps=explained.steps, foil_id=explained.foil_id, samples=explained.samples,
                    batch_size=saliency_batch(explained.method, len(encoding)))


def _swappable(inputs: Inputs) -> int:
    return sum(swappable(inputs.loaded.tokenizer, inputs.prepared.masked))


def _map_cost(inputs: Inputs, explained: Explained) -> Cost:
    """Its passes, and the activations of its batches (`saliency_batch` rows)."""
    tokens = len(inputs.prepared.masked)
    cost = saliency_cost(explained.method, tokens, _swappable(inputs), steps=explained.steps, samples=explained.samples)
    return replace(cost, rows_at_once=saliency_batch(explained.method, tokens))


def _curve(inputs: Inputs, explained: Explained):
    loaded, encoding = inputs.loaded, inputs.prepared.masked
    return deletion_curve(loaded.model, loaded.tokenizer, encoding, attributions(inputs, explained),
                          random_orders=RANDOM_ORDERS, batch_size=patching_batch(len(encoding)))


ATTRIBUTIONS = Computation("saliency.attributions", lambda explained: METHOD_NAMES[explained.method],
                           cost=_map_cost, compute=attributions, work=Explained)
DELETION = Computation(  # its own map first (the same passes as ATTRIBUTIONS), then the orders
    "saliency.deletion", lambda explained: "The deletion curve",
    cost=lambda inputs, explained: _map_cost(inputs, explained) + deletion_only_cost(inputs),
    compute=_curve, work=Explained)


def deletion_only_cost(inputs: Inputs) -> Cost:
    """The deletion curve's own passes, past its map's: the map's order and RANDOM_ORDERS random ones."""
    tokens = len(inputs.prepared.masked)
    return replace(deletion_cost(tokens, _swappable(inputs), RANDOM_ORDERS), rows_at_once=patching_batch(tokens))


@dataclass(frozen=True)
class Settings:
    explained: Explained | None  # None: no [MASK] to explain
    deletion: bool = False  # also the deletion curve
    words: bool = False  # the bars per word (a word's pieces summed), not per word piece

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """The settings a link or a lesson step gives, made valid as the widgets would (the target: the top guess)."""
        position = chosen_mask(setting(state, "saliency_mask"), inputs.prepared.all_masks)
        method = setting(state, "saliency_method")
        steps, samples = setting(state, "saliency_steps"), setting(state, "saliency_samples")
        explained = None if position is None or not inputs.loaded.summary.has_mlm_head else Explained(
            method if method in METHODS else METHODS[0], position,
            steps=_in(steps, STEPS, "saliency_steps"),
            samples=_in(samples, SAMPLES, "saliency_samples"))
        return cls(explained, bool(setting(state, "saliency_deletion")), setting(state, "units") == "words")


def _in(value, values: range, key: str) -> int:
    return value if value in values else setting({}, key)


def computations(settings: Settings) -> Planned:
    """"attributions" (the map), and "deletion" (its curve) when asked for; nothing without a [MASK]."""
    if settings.explained is None:
        return {}
    planned: Planned = {"attributions": (ATTRIBUTIONS, settings.explained)}
    if settings.deletion:
        planned["deletion"] = (DELETION, settings.explained)
    return planned


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"attributions" (per word piece, or per word with settings.words: a word's attribution is the sum of its
    pieces'), and "deletion" when computed (always per word piece)."""
    charts = {}
    result = results.get("attributions")
    if result is not None:
        shown = result if not settings.words else _per_word(result, inputs)
        charts["attributions"] = saliency_chart(shown)
    curve = results.get("deletion")
    if curve is not None:
        charts["deletion"] = deletion_chart(curve, list(inputs.prepared.masked.tokens), settings.explained.method)
    return charts


def _per_word(result: Saliency, inputs: HasInputs) -> Saliency:
    words = word_groups(inputs.prepared.masked)
    return dataclasses.replace(result, tokens=list(words.labels), attributions=merge_scores(result.attributions, words, how="sum"))


def method_note(result: Saliency) -> str:
    """How to read this method's bars, with its sample count."""
    explained = explained_text(result)
    if result.method == "gradient_x_input":
        return ("Gradient × input, per part. The embedding LayerNorm ignores the scale of token + position + segment, so "
                "the three parts of each token add up to about zero: read which part pushes which way, not a token's total.")
    if result.method == "occlusion":
        return (f"Occlusion: each word token in turn replaced by [MASK], {result.evaluations} runs of the model. A bar is "
                f"how much {explained} drops without that token.")
    if result.method == "shapley_value_sampling":
        return (f"Shapley value sampling: {result.samples} random orders in which the word tokens go from [MASK] back to "
                f"themselves, {result.evaluations} runs of the model. A bar is a token's average share of {explained}; "
                "the bars add up to the difference between this input and every word masked.")
    difference = result.score - result.baseline_score
    return (f"Integrated gradients from a baseline ([PAD] for word tokens, the mean position embedding everywhere, "
            f"segment A everywhere), {result.samples} steps. Completeness: the attributions add up to {result.total:.3f}; "
            f"{explained} at the input minus at the baseline = {difference:.3f} (gap {result.completeness_gap:+.3f}). "
            "With one sentence, segment attributions are 0: every token is in segment A, as in the baseline.")


def integral_is_rough(result: Saliency) -> bool:
    """Integrated gradients whose completeness gap is over a tenth of the difference: more steps are needed."""
    if result.completeness_gap is None:
        return False
    return abs(result.completeness_gap) > 0.1 * max(abs(result.score - result.baseline_score), 1e-6)
