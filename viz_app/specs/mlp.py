"""The page "MLP activations" (address `mlp`): which neurons fire on which tokens, from the recorded pass
(viz_app/specs/recorded.py): the strongest neurons of a layer on every token, one token's top neurons, one neuron
on every token; in word pieces or in words (a word's activation the mean of its pieces'). Its spec
(viz_app/specs/base.py). Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from bert.analysis.attention.words import merge_scores, word_groups
from viz_app.app.forward import ForwardResult
from viz_app.charts.base import Chart
from viz_app.charts.neurons import activation_heatmap, neuron_by_token, strongest_neurons, top_neurons_for_token
from viz_app.specs import recorded
from viz_app.specs.base import HasInputs, Planned, setting, within

NAME = "mlp"
LESSON_CHARTS = ("heatmap", "top_neurons", "neuron")
FEWEST_SHOWN, MOST_SHOWN = 8, 256  # the heatmap's slider


def shown_range(intermediate: int) -> range:
    """The heatmap's neuron counts on offer for a layer of `intermediate` neurons."""
    return range(FEWEST_SHOWN, min(MOST_SHOWN, intermediate) + 1)


@dataclass(frozen=True)
class Settings:
    layer: int = 0
    shown: int = 48  # neurons in the heatmap (those that fire hardest on this input)
    token: int = 1  # the token whose top neurons are shown, and which is marked on the neuron's bars
    neuron: int | None = None  # None: the token's strongest neuron
    words: bool = False  # a word's activation as the mean of its pieces' (Clark et al. 2019's merge)

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """The settings a link or a lesson step gives, made valid for this model and input as the widgets would."""
        summary, tokens = inputs.loaded.summary, len(inputs.prepared.masked)
        offered = shown_range(summary.intermediate)
        shown = setting(state, "neurons_shown")
        shown = shown if shown in offered else min(max(shown if isinstance(shown, int) else 48, offered[0]), offered[-1])
        neuron = setting(state, "neuron")
        return cls(within(setting(state, "mlp_layer"), summary.layers, 0), shown,
                   within(setting(state, "mlp_token"), tokens, min(1, tokens - 1)),
                   neuron if isinstance(neuron, int) and 0 <= neuron < summary.intermediate else None,
                   setting(state, "units") == "words")


def computations(settings: Settings) -> Planned:
    """"recorded": the pass with the MLP activations."""
    return {"recorded": recorded.FULL}


def strongest_neuron(result: ForwardResult, layer: int, token: int) -> int:
    """The neuron that fires hardest on `token` in `layer` (the neuron the page starts with)."""
    return int(strongest_neurons(result.neurons[layer, token][None, :], 1)[0])


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"heatmap", "top_neurons", "neuron". In words, a word's activation is the mean over its pieces."""
    result: ForwardResult = results["recorded"]
    layer, tokens, token = settings.layer, list(result.tokens), settings.token
    activations = result.neurons[layer]  # [seq, intermediate]
    intermediate = activations.shape[1]
    neuron = strongest_neuron(result, layer, settings.token) if settings.neuron is None else settings.neuron
    if settings.words:
        words = word_groups(inputs.prepared.masked)
        activations = merge_scores(activations.T, words, how="mean").T  # [word, intermediate]
        tokens, token = list(words.labels), words.word_of(settings.token)
    return {
        "heatmap": activation_heatmap(activations, tokens, strongest_neurons(activations, settings.shown), layer,
                                      intermediate),
        "top_neurons": top_neurons_for_token(activations, tokens, token, layer),
        "neuron": neuron_by_token(activations, tokens, neuron, layer, highlight=token),
    }
