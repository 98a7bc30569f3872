"""The Features page's views: the sentence's features, one feature's page, one neuron across a corpus."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bert.analysis.features.feature_pages import GuessChange
from bert.analysis.features.top_activations import UnitScan
from viz_app.charts.base import Chart
from viz_app.charts.features import (activation_histogram, guess_change_chart, promoted_tokens_chart, strongest_features,
                                     tag_mix_chart, token_feature_heatmap)


MAX_TAGS = 20  # bars in a tag-mix chart (UPOS has 18 with [special]; a treebank has some 50 deprels)


@dataclass(frozen=True)
class FeatureSettings:
    shown: int = 24  # features in the heatmap (those that fire hardest on this sentence)
    feature: int | None = None  # the feature whose page is shown; None: the sentence's strongest
    factor: float = 0.0  # the switch: 0 off, 1 as it is, more: turned up


def strongest_feature(z: np.ndarray) -> int:
    """The feature with the highest activation anywhere on the sentence (0 if none fires)."""
    best = strongest_features(z, 1)
    return int(best[0]) if len(best) else 0


def sentence_view(settings: FeatureSettings, z: np.ndarray, tokens: list[str], layer: int,
                  labels: dict[int, str]) -> dict[str, Chart]:
    """"heatmap": the strongest features on each token of the sentence."""
    return {"heatmap": token_feature_heatmap(z, tokens, strongest_features(z, settings.shown), layer, labels)}


def feature_view(feature: int, scan: UnitScan, promoted: list[tuple[str, float]],
                 guess: GuessChange | None, factor: float) -> dict[str, Chart]:
    """"histogram", "promoted" and, when the sentence has a [MASK], "guess"."""
    charts = {
        "histogram": activation_histogram(scan.bin_edges, scan.counts[feature], f"feature {feature}", scan.active_only),
        "promoted": promoted_tokens_chart([t for t, _ in promoted], np.array([v for _, v in promoted]), feature),
    }
    if guess is not None:
        change = f"feature {feature} off" if factor == 0 else f"feature {feature} x {factor:g}"
        charts["guess"] = guess_change_chart(guess.tokens, np.array(guess.before), np.array(guess.after), change)
    return charts


def neuron_view(neuron: int, layer: int, scan: UnitScan, mixes: dict[str, dict[str, tuple[float, float]]]) -> dict[str, Chart]:
    """"histogram" and, for each tag column of the corpus (a treebank: "upos" and "deprel"), "tag_mix:COLUMN".
    mixes: {column: bert.analysis.features.neurons.tag_mix(...)}; a chart shows the MAX_TAGS tags most frequent
    among the top examples (then in the corpus)."""
    unit = f"neuron {neuron} of layer {layer}"
    charts = {"histogram": activation_histogram(scan.bin_edges, scan.counts[neuron], unit, scan.active_only)}
    for column, mix in mixes.items():
        charts[f"tag_mix:{column}"] = tag_mix_chart(dict(list(mix.items())[:MAX_TAGS]), unit, column)
    return charts
