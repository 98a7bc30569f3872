"""MLP neurons across a corpus (as NeuroX, Dalvi et al. 2019): what makes neuron N of layer L fire?

    corpus = load_corpus("ud-ewt", tokenizer)
    scan = scan_neurons(model, corpus, layer=3, k=20)      # ONE pass: every neuron of layer 3 at once
    top_examples(scan, corpus, neuron=812)                 # [NeuronExample(sentence, position, token, activation)]
    tag_mix(scan, corpus, 812, "upos")                     # {tag: (share of its top examples, share of the corpus)}

A neuron is one entry of the MLP's GELU output, `hook_name("mlp_post", layer)` ([batch, seq, intermediate]),
layers counted from 0. Every token counts, [CLS] and [SEP] included; positions count word pieces from [CLS] = 0.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch

from ...errors import InvalidInputError
from ...hooks import hook_name
from ...model import Bert
from ..corpus.batching import ProgressCallback, hook_batches
from .corpora import Corpus
from .top_activations import TopTracker, UnitScan

NEURON_BINS = np.linspace(-0.2, 6.0, 63)  # GELU's output is >= -0.17; the last bin holds everything from 6 up


@dataclass(frozen=True)
class NeuronExample:
    sentence: str
    position: int  # word piece in its encoding, [CLS] = 0
    token: str
    activation: float
    sentence_index: int

    def as_json(self) -> dict:
        return {"sentence": self.sentence, "position": self.position, "token": self.token, "activation": self.activation}


def check_layer(model: Bert, layer) -> int:
    last = model.config.num_layers - 1
    if not isinstance(layer, (int, np.integer)) or isinstance(layer, bool) or not 0 <= layer <= last:
        raise InvalidInputError(f"layer must be a whole number from 0 to {last} (layers count from 0), not {layer!r}")
    return int(layer)


def check_neuron(model: Bert, neuron) -> int:
    last = model.config.intermediate_size - 1
    if not isinstance(neuron, (int, np.integer)) or isinstance(neuron, bool) or not 0 <= neuron <= last:
        raise InvalidInputError(f"neuron must be a whole number from 0 to {last}, not {neuron!r}")
    return int(neuron)


def hook_rows(
    model: Bert, corpus: Corpus, hook: str, pad_id: int, batch_size: int = 32, progress: ProgressCallback | None = None
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """One pass over the corpus: (flat rows [n], the hook's activations at them [n, width]), padding left out."""
    offsets = torch.as_tensor(corpus.offsets)
    for batch, cache in hook_batches(model, corpus.encodings, pad_id, [hook], batch_size, progress):
        lengths = torch.tensor([len(corpus.encodings[i]) for i in batch])
        valid = torch.arange(int(lengths.max()))[None, :] < lengths[:, None]  # [batch, seq]
        rows = (offsets[batch][:, None] + torch.arange(valid.shape[1])[None, :])[valid]
        yield rows, cache[hook][valid.to(cache[hook].device)]


def scan_neurons(
    model: Bert, corpus: Corpus, layer: int, pad_id: int = 0, k: int = 20, batch_size: int = 32,
    progress: ProgressCallback | None = None, bin_edges=NEURON_BINS,
) -> UnitScan:
    """Top-k tokens and histogram of every neuron of `layer`, from one pass of the model over `corpus`."""
    layer = check_layer(model, layer)
    tracker = TopTracker(model.config.intermediate_size, k, bin_edges)
    for rows, activations in hook_rows(model, corpus, hook_name("mlp_post", layer), pad_id, batch_size, progress):
        tracker.add(rows, activations)
    return tracker.result()


def top_examples(scan: UnitScan, corpus: Corpus, unit: int, k: int | None = None) -> list[NeuronExample]:
    """A unit's top examples, strongest first (fewer when the corpus is smaller than k)."""
    if not 0 <= unit < scan.num_units:
        raise InvalidInputError(f"unit {unit} is outside 0 .. {scan.num_units - 1}")
    keep = scan.top_rows[unit] >= 0
    rows, values = scan.top_rows[unit][keep][:k], scan.top_values[unit][keep][:k]
    sentences, positions = corpus.locate(rows)
    return [NeuronExample(corpus.sentences[s], int(p), corpus.encodings[s].tokens[p], float(v), int(s))
            for s, p, v in zip(sentences, positions, values)]


def tag_mix(scan: UnitScan, corpus: Corpus, unit: int, column: str) -> dict[str, tuple[float, float]]:
    """{tag: (share among the unit's top examples, share among all the corpus's tokens)}, by the tag of the word
    each token belongs to ("[special]" for [CLS] and [SEP]); most frequent in the top examples first."""
    if column not in corpus.tags:
        raise InvalidInputError(f"{corpus.name} has no {column!r} tags; it has {sorted(corpus.tags) or 'none'}")
    tags = corpus.tag_rows(column)
    tags = np.where(tags == "", "[special]", tags)
    rows = scan.top_rows[unit][scan.top_rows[unit] >= 0]
    top, everywhere = Counter(tags[rows]), Counter(tags)
    return {tag: (top[tag] / len(rows), everywhere[tag] / len(tags))
            for tag in sorted(everywhere, key=lambda t: (-top[t], -everywhere[t], t))}
