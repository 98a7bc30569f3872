"""The page "Sentence tasks" (address `sentence_tasks`): the sentence-level output heads, next-sentence probability
(typed and swapped pair), class probabilities, token labels and their chips, and which input tokens drove each
(attributions). Its spec (viz_app/specs/base.py): `Settings`, `computations` (the classes a lesson step draws),
`EXPLAIN` (the attributions, run by the page once it knows the answer to explain), `view`. Plain functions on a
loaded model (tested without Streamlit); the one-pass heads' cached calls are in viz_app/cache.py, the charts in
viz_app/charts/sentence_tasks.py and viz_app/charts/saliency.py.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np
import pandas as pd
import torch

from bert import Bert, BertTokenizer
from bert.analysis.attribution.saliency import METHODS, saliency, saliency_cost, swappable
from bert.costs import Cost
from bert.devices import as_numpy, model_device
from bert.tokenizer import Encoding
from viz_app.app.text import Markdown
from viz_app.charts.base import Chart
from viz_app.charts.saliency import saliency_chart
from viz_app.charts.sentence_tasks import probability_chart
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting
from viz_app.specs.causal_tracing import saliency_batch

NAME = "sentence_tasks"
LESSON_CHARTS = ("classes",)
STEPS, SAMPLES = 32, 25  # the attributions' integration steps and noise samples (the saliency page's defaults)

# Which model to pick for a head this model lacks (shown when the page cannot draw a section).
WHICH_MODEL = {
    "nsp": Markdown("the built-in minilm (its next-sentence head was trained here) or bert-base-uncased, once cached"),
    "classifier": Markdown("a fine-tuned classifier, such as a folder written by `python -m bert finetune`"),
    "tagger": Markdown("a fine-tuned token classifier (a BertForTokenClassification folder, e.g. from "
                       "`python -m bert finetune --task tokens`)"),
}
LABEL_COLOURS = ["#3b6fb6", "#e08a2e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


@dataclass(frozen=True)
class NextSentence:
    follows: float  # P(B follows A) for the typed order
    swapped: float  # P(A follows B): the same two sentences the other way round


@torch.no_grad()
def next_sentence(model: Bert, tokenizer: BertTokenizer, text: str, pair: str, max_length: int, truncate: bool) -> NextSentence:
    """P(index 0, "B follows A") for (text, pair) and for (pair, text)."""
    probabilities = []
    for first, second in ((text, pair), (pair, text)):
        ids, types = tokenizer.encode(first, second, max_length=max_length, truncate=truncate).tensors(model_device(model))
        probabilities.append(float(model(ids, types, output="nsp").float().softmax(-1)[0, 0]))
    return NextSentence(*probabilities)


@torch.no_grad()
def class_probabilities(model: Bert, encoding: Encoding) -> pd.DataFrame:
    """One row per label: label, probability (softmax of the classifier's logits), in the head's order."""
    ids, types = encoding.tensors(model_device(model))
    probabilities = as_numpy(model(ids, types, output="classifier").float().softmax(-1)[0])
    return pd.DataFrame({"label": model.labels, "probability": probabilities})


@torch.no_grad()
def token_labels(model: Bert, encoding: Encoding) -> pd.DataFrame:
    """One row per token: position, token, its most likely label and that label's probability."""
    ids, types = encoding.tensors(model_device(model))
    probabilities = model(ids, types, output="tagger").float().softmax(-1)[0]  # [seq, labels]
    best = probabilities.max(-1)
    return pd.DataFrame({
        "position": np.arange(len(encoding)), "token": encoding.tokens,
        "label": [model.labels[i] for i in best.indices.tolist()], "probability": as_numpy(best.values),
        "special": encoding.special,
    })


def label_chips(table: pd.DataFrame) -> str:
    """HTML: each token with its label as a coloured chip (user text escaped). Special tokens are left out."""
    labels = sorted(set(table["label"]))
    colour = {label: LABEL_COLOURS[i % len(LABEL_COLOURS)] for i, label in enumerate(labels)}
    chips = []
    for row in table.itertuples():
        if row.special:
            continue
        chips.append(
            f'<span style="display:inline-block;margin:3px;padding:2px 8px;border-radius:10px;'
            f'border:2px solid {colour[row.label]};background:{colour[row.label]}22">'
            f"{html.escape(row.token)} <b style=\"color:{colour[row.label]}\">{html.escape(row.label)}</b> "
            f"<small>{row.probability:.0%}</small></span>"
        )
    return "".join(chips)


def chosen_class(table: pd.DataFrame, requested: str | None) -> str:
    """The class to explain: the requested one if the model has it, else the most probable."""
    labels = list(table["label"])
    return requested if requested in labels else str(labels[int(np.argmax(table["probability"]))])


@dataclass(frozen=True)
class ClassesWork:
    """Nothing but the model and the input as typed."""


@dataclass(frozen=True)
class ExplainWork:
    output: str  # the head explained: "nsp", "classifier" or "tagger"
    method: str  # a key of bert.analysis.attribution.saliency.METHODS
    target: int  # the class (the label, for "tagger") whose log-probability is attributed
    position: int = 0  # the token whose label is explained ("tagger"); [CLS] otherwise


def _attributions(inputs: Inputs, work: ExplainWork):
    base = inputs.prepared.base  # the sentence-level heads read the input as typed
    return saliency(inputs.loaded.model, inputs.loaded.tokenizer, base, work.method, work.position, work.target,
                    steps=STEPS, output=work.output, samples=SAMPLES, batch_size=saliency_batch(work.method, len(base)))


CLASSES = Computation(
    "sentence_tasks.classes", lambda work: "Class probabilities",
    cost=lambda inputs, work: Cost(1, len(inputs.prepared.base)),
    compute=lambda inputs, work: class_probabilities(inputs.loaded.model, inputs.prepared.base), work=ClassesWork)
EXPLAIN = Computation(
    "sentence_tasks.explain", lambda work: "Attributions",
    cost=lambda inputs, work: replace(saliency_cost(work.method, len(inputs.prepared.base),
                                                    sum(swappable(inputs.loaded.tokenizer, inputs.prepared.base)),
                                                    steps=STEPS, samples=SAMPLES),
                                      rows_at_once=saliency_batch(work.method, len(inputs.prepared.base))),
    compute=_attributions, work=ExplainWork)


@dataclass(frozen=True)
class PairWork:
    """The model and the two sentences typed (the input), read as typed and swapped; `stand_in`: sentence B where
    none is typed ("": the input's own)."""

    stand_in: str = ""


# Sentence B on a first screen with none typed: a plausible next sentence for the app's default sentence
STAND_IN_PAIR = "It ran back into the house."


def pair_of(prepared, work: PairWork) -> str:
    """Sentence B: the one typed, else the stand-in."""
    return prepared.pair if prepared.pair.strip() else work.stand_in


def _pair_tokens(inputs: Inputs, work: PairWork) -> int:
    """The pair's tokens: the input's, and the stand-in's pieces and [SEP] where it is sentence B."""
    extra = 0 if inputs.prepared.pair.strip() or not work.stand_in else len(inputs.loaded.tokenizer.encode(work.stand_in)) - 1
    return len(inputs.prepared.base) + extra


@dataclass(frozen=True)
class TokenLabelsWork:
    """Nothing but the model and the input as typed."""


def _next_sentence(inputs: Inputs, work: PairWork) -> NextSentence:
    loaded, prepared = inputs.loaded, inputs.prepared
    return next_sentence(loaded.model, loaded.tokenizer, prepared.text, pair_of(prepared, work),
                         loaded.summary.max_positions, prepared.truncate)


NEXT_SENTENCE = Computation(  # two passes: the pair as typed, and swapped
    "sentence_tasks.next_sentence", lambda work: "P(B follows A)", cost=lambda inputs, work: Cost(2, _pair_tokens(inputs, work)),
    compute=_next_sentence, work=PairWork)
TOKEN_LABELS = Computation(
    "sentence_tasks.token_labels", lambda work: "Token labels", cost=lambda inputs, work: Cost(1, len(inputs.prepared.base)),
    compute=lambda inputs, work: token_labels(inputs.loaded.model, inputs.prepared.base), work=TokenLabelsWork)


@dataclass(frozen=True)
class Settings:
    method: str  # the attribution method, a key of METHODS
    requested_class: str | None  # the class to explain; None (or one the model lacks): the most probable
    classifier: bool  # the model has a sentence classifier head

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        method = setting(state, "tasks_method")
        return cls(method if method in METHODS else "gradient_x_input", setting(state, "tasks_class"),
                   "classifier" in inputs.loaded.model.output_heads)


def computations(settings: Settings) -> Planned:
    """"classes" on a model with a classifier head (the attributions wait for the answer: `EXPLAIN`)."""
    return {"classes": (CLASSES, ClassesWork())} if settings.classifier else {}


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"classes" (every class's probability, the explained one marked) and "explain_<output>" for each head's
    attributions computed."""
    charts = {}
    if results.get("classes") is not None:
        table = results["classes"]
        charts["classes"] = probability_chart(table, chosen_class(table, settings.requested_class))
    for name, result in results.items():
        if name.startswith("explain_") and result is not None:
            charts[name] = saliency_chart(result)
    return charts
