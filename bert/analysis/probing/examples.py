"""A classification task's examples: for each, its vector at every layer, its label, and the word type its control
label is tied to (Hewitt & Liang 2019). Word tags read words, arcs read pairs of words, text tasks word pieces.

Axes: layer (0 = embeddings), example, features (hidden, or 2 x hidden for an arc).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch

from ...errors import InvalidInputError
from ..attention.attention_stats import is_punctuation
from .task_table import MAX_POSITION, task
from .treebank import MISSING
from .word_features import TokenFeatures, WordFeatures


@dataclass(frozen=True)
class Examples:
    features: torch.Tensor  # [layer, example, features]
    labels: list[str]
    word_types: list[str]  # what the control label is tied to: the word form, or the word piece


def task_examples(name: str, train: WordFeatures, test: WordFeatures) -> tuple[Examples, Examples]:
    """(training examples, test examples) of a classification task: a tag, arcs, or a text task."""
    kind = task(name).kind
    if kind == "tag":
        return tag_examples(train, name), tag_examples(test, name)
    if kind == "arcs":
        return arc_examples(train), arc_examples(test)
    if kind == "text":
        return text_examples(name, train, test)
    raise InvalidInputError(f"{name} is not a classification task")


def tag_examples(features: WordFeatures, column: str) -> Examples:
    """Every word with a label in `column` ("_" is none)."""
    rows, labels, forms = [], [], []
    for index, sentence in enumerate(features.sentences):
        for word, label in enumerate(sentence.labels[column]):
            if label != MISSING:
                rows.append(features.starts[index] + word)
                labels.append(label)
                forms.append(sentence.words[word])
    return Examples(features.vectors[:, rows], labels, forms)


def arc_examples(features: WordFeatures) -> Examples:
    """Every (head, dependent) arc with a deprel: the two words' vectors side by side, [h_head; h_dependent]."""
    heads, dependents, labels, forms = [], [], [], []
    for index, sentence in enumerate(features.sentences):
        start = features.starts[index]
        for word, (head, label) in enumerate(zip(sentence.heads, sentence.labels["deprel"])):
            if head != 0 and label != MISSING:
                heads.append(start + head - 1)
                dependents.append(start + word)
                labels.append(label)
                forms.append(sentence.words[word])
    vectors = torch.cat([features.vectors[:, heads], features.vectors[:, dependents]], dim=-1)
    return Examples(vectors, labels, forms)


# ---- text tasks: word pieces ------------------------------------------------------------------------------------


def text_examples(name: str, train: WordFeatures, test: WordFeatures) -> tuple[Examples, Examples]:
    if name == "segment":
        return _token_examples(_part(train, "pairs"), _segment), _token_examples(_part(test, "pairs"), _segment)
    if name == "masked_identity":
        return _masked(_part(train, "masked"), "training"), _masked(_part(test, "masked"), "test")
    sides = _part(train, "tokens"), _part(test, "tokens")
    if name == "position":
        label = _position
    elif name == "continuation":
        label = _continuation
    elif name == "punctuation":
        label = _unless_special(lambda token: "punctuation" if is_punctuation(token) else "other")
    elif name == "frequency":
        label = _frequency_bands(sides)
    else:
        raise InvalidInputError(f"unknown text task {name!r}")
    return _token_examples(sides[0], label), _token_examples(sides[1], label)


def _continuation(encoding, position: int) -> str | None:
    """A piece that continues its word ("##ing"; in RoBERTa and ALBERT, a later piece of the same word) or starts one."""
    if encoding.special[position]:
        return None
    return "continuation" if encoding.is_continuation(position) else "word start"


def _unless_special(label):
    """A label of the piece itself; [CLS] and [SEP] are no examples."""
    return lambda encoding, position: None if encoding.special[position] else label(encoding.tokens[position])


def _part(features: WordFeatures, part: str) -> TokenFeatures:
    found = getattr(features, part)
    if found is None:
        raise InvalidInputError(f"these word features carry no {part} vectors; extract them with the task asked for")
    return found


def _token_examples(features: TokenFeatures, label) -> Examples:
    """The rows `label(encoding, position)` labels (None: not an example of the task)."""
    rows, labels, types = [], [], []
    for row, (index, position) in enumerate(features.rows):
        encoding = features.encodings[index]
        value = label(encoding, position)
        if value is not None:
            rows.append(row)
            labels.append(value)
            types.append(encoding.tokens[position])
    return Examples(features.vectors[:, rows], labels, types)


def _position(encoding, position: int) -> str | None:
    return str(position) if position <= MAX_POSITION else None


def _segment(encoding, position: int) -> str | None:
    return None if encoding.special[position] else "AB"[encoding.sentences[position]]


def _frequency_bands(sides: tuple[TokenFeatures, TokenFeatures]):
    """Bands by share of uses over both sides' word pieces: the 'top third' types make the first third of all
    uses, the 'bottom third' the last third."""
    ids = [f.encodings[i].input_ids[p] for f in sides for i, p in f.rows if not f.encodings[i].special[p]]
    band, running = {}, 0
    for token_id, count in Counter(ids).most_common():
        band[token_id] = ("top third", "middle third", "bottom third")[min(2, int(3 * running / len(ids)))]
        running += count
    return lambda encoding, position: None if encoding.special[position] else band[encoding.input_ids[position]]


def _masked(features: TokenFeatures, side: str) -> Examples:
    """The [MASK] of each masked input, labelled with the word it replaced. The probed piece is always [MASK], so
    each example is its own type: the control labels are drawn at random from the label distribution."""
    return Examples(features.vectors, list(features.originals), [f"{side} example {row}" for row in range(len(features.rows))])
