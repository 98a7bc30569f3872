"""The MLP page's view: the strongest neurons on every token, one token's top neurons, one neuron on every token."""
from __future__ import annotations

from dataclasses import dataclass

from bert.analysis.attention.words import WordGroups, merge_scores
from viz_app.charts.base import Chart
from viz_app.charts.neurons import activation_heatmap, neuron_by_token, strongest_neurons, top_neurons_for_token
from viz_app.app.forward import ForwardResult


@dataclass(frozen=True)
class MlpSettings:
    layer: int = 0
    shown: int = 48  # neurons in the heatmap (those that fire hardest on this input)
    token: int = 1  # the token whose top neurons are shown, and which is marked on the neuron's bars
    neuron: int | None = None  # None: the token's strongest neuron


def strongest_neuron(result: ForwardResult, layer: int, token: int) -> int:
    """The neuron that fires hardest on `token` in `layer` (the neuron the page starts with)."""
    return int(strongest_neurons(result.neurons[layer, token][None, :], 1)[0])


def mlp_view(settings: MlpSettings, result: ForwardResult, words: WordGroups | None = None) -> dict[str, Chart]:
    """"heatmap", "top_neurons", "neuron". With `words`, a word's activation is the mean over its pieces."""
    layer, tokens, token = settings.layer, list(result.tokens), settings.token
    activations = result.neurons[layer]  # [seq, intermediate]
    intermediate = activations.shape[1]
    neuron = strongest_neuron(result, layer, settings.token) if settings.neuron is None else settings.neuron
    if words is not None:
        activations = merge_scores(activations.T, words, how="mean").T  # [word, intermediate]
        tokens, token = list(words.labels), words.word_of(settings.token)
    return {
        "heatmap": activation_heatmap(activations, tokens, strongest_neurons(activations, settings.shown), layer,
                                      intermediate),
        "top_neurons": top_neurons_for_token(activations, tokens, token, layer),
        "neuron": neuron_by_token(activations, tokens, neuron, layer, highlight=token),
    }
