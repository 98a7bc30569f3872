"""The saliency page's view: the attributions of the prediction at a [MASK], and their deletion curve."""
from __future__ import annotations

import dataclasses

from bert.analysis.attention.words import WordGroups, merge_scores
from bert.analysis.attribution.deletion import DeletionCurve
from bert.analysis.attribution.saliency import Saliency
from viz_app.charts.base import Chart
from viz_app.charts.saliency import deletion_chart, explained_text, saliency_chart

METHOD_NAMES = {
    "gradient_x_input": "gradient × input",
    "integrated_gradients": "integrated gradients",
    "occlusion": "occlusion",
    "shapley_value_sampling": "Shapley value sampling",
}


def saliency_view(result: Saliency, curve: DeletionCurve | None = None, words: WordGroups | None = None) -> dict[str, Chart]:
    """"attributions" (per word piece, or per word when `words` is given: a word's attribution is the sum of its
    pieces'), and "deletion" when the deletion curve is given (always per word piece)."""
    shown = result if words is None else dataclasses.replace(
        result, tokens=list(words.labels), attributions=merge_scores(result.attributions, words, how="sum"))
    charts = {"attributions": saliency_chart(shown)}
    if curve is not None:
        charts["deletion"] = deletion_chart(curve, result.tokens, result.method)
    return charts


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
