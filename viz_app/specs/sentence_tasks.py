"""The sentence-level output heads in the app: next-sentence probability (typed and swapped pair), class probabilities,
token labels, the token-label chips. Plain functions on a loaded model (tested without Streamlit); their cached
calls are in viz_app/cache.py, their chart in viz_app/charts/sentence_tasks.py.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from bert import Bert, BertTokenizer
from bert.devices import as_numpy, model_device
from bert.tokenizer import Encoding

# Which model to pick for a head this model lacks (shown when the page cannot draw a section).
WHICH_MODEL = {
    "nsp": "the built-in minilm (its next-sentence head was trained here) or bert-base-uncased, once cached",
    "classifier": "a fine-tuned classifier, such as a folder written by `python -m bert finetune`",
    "tagger": "a fine-tuned token classifier (a BertForTokenClassification folder, e.g. from `python -m bert finetune --task tokens`)",
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


