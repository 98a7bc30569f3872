"""A label for every transcoder feature: the word pieces it fires on most in a corpus (the top examples the features
page shows an SAE's features by; bert/analysis/features/top_activations.py), kept beside the transcoders as
`feature_labels.json` and written into a graph's JSON as each feature's "clerp" (circuit-tracer's name for it).

    labels = top_token_labels(model, tokenizer, transcoders, sentences)   # {(layer, feature): "door, gate, window"}
    write_feature_labels("out/transcoders", labels, transcoders.config)
    read_feature_labels("out/transcoders", transcoders.config)           # {} when the folder has none

A feature's label: the distinct word pieces of its `EXAMPLES` largest activations over the corpus (the transcoder's
own top-k choice), largest first, `WORDS` of them at most; a feature that never fires there has none. The file is
one JSON object, "{layer}_{feature}" -> label; each label is plain text (features.feature_labels.check_labels'
rules), shown as text.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ...model import Bert
from ...tokenizer import BertTokenizer
from ..features.feature_labels import FeatureLabelsError, check_labels, parse_labels
from ..features.top_activations import TopTracker
from .transcoder import TranscoderConfig, Transcoders
from .transcoder_train import mlp_pairs

LABELS_FILE = "feature_labels.json"
EXAMPLES = 20  # the largest activations a label is read from
WORDS = 3  # distinct word pieces a label names at most


@torch.no_grad()
def top_token_labels(model: Bert, tokenizer: BertTokenizer, transcoders: Transcoders, sentences: Sequence[str],
                     batch_size: int = 32, examples: int = EXAMPLES, words: int = WORDS) -> dict[tuple[int, int], str]:
    """{(layer, feature): its label} over `sentences` (one forward pass per batch; every token, [CLS] and [SEP]
    included, as the transcoders were trained)."""
    config = transcoders.config
    trackers = [TopTracker(config.features, examples, [0.0, 1.0], active_only=True) for _ in range(config.layers)]
    tokens: list[str] = []
    for start in range(0, len(sentences), batch_size):
        batch = sentences[start : start + batch_size]
        for text in batch:  # the pieces of each row, encoded as mlp_pairs encodes them
            tokens += tokenizer.encode(text, max_length=model.config.max_position_embeddings, truncate=True).tokens
        pairs = mlp_pairs(model, tokenizer, batch)  # [token, layer, 2, hidden]
        rows = torch.arange(len(tokens) - len(pairs), len(tokens))
        for layer, tracker in enumerate(trackers):
            tracker.add(rows, transcoders.encode(pairs[:, layer, 0], layer))
    labels = {}
    for layer, tracker in enumerate(trackers):
        scan = tracker.result()
        for feature in range(config.features):
            fired = scan.top_rows[feature][np.isfinite(scan.top_values[feature]) & (scan.top_values[feature] > 0)]
            pieces = list(dict.fromkeys(tokens[row] for row in fired.tolist()))[:words]
            if pieces:
                labels[(layer, feature)] = ", ".join(pieces)
    return labels


def write_feature_labels(folder: str | Path, labels: dict[tuple[int, int], str], config: TranscoderConfig) -> Path:
    """`folder`/feature_labels.json: the labels, checked (layers and features inside the transcoders, plain text)."""
    checked = {layer: check_labels({f: text for (l, f), text in labels.items() if l == layer}, config.features)
               for layer in range(config.layers)}
    _check_layers(labels, config)
    text = {f"{layer}_{feature}": label for layer in range(config.layers) for feature, label in checked[layer].items()}
    path = Path(folder) / LABELS_FILE
    path.write_text(json.dumps(text, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_feature_labels(folder: str | Path, config: TranscoderConfig) -> dict[tuple[int, int], str]:
    """The labels kept beside the transcoders in `folder` ({} when there are none); FeatureLabelsError for a file
    that is not one."""
    path = Path(folder) / LABELS_FILE
    if not path.is_file():
        return {}
    name = f"{LABELS_FILE} of {Path(folder).name}"
    try:
        raw = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FeatureLabelsError(f"{name} is not JSON (UTF-8): {error}") from error
    if not isinstance(raw, dict):
        raise FeatureLabelsError(f'{name} must be one JSON object of "layer_feature" to label')
    labels = {}
    for layer in range(config.layers):
        mine = {key.split("_", 1)[1]: value for key, value in raw.items() if isinstance(key, str) and key.startswith(f"{layer}_")}
        labels |= {(layer, feature): text for feature, text in parse_labels(json.dumps(mine), config.features, name).items()}
    if len(labels) != sum(bool(str(value).strip()) for value in raw.values()):
        raise FeatureLabelsError(f'{name}: every key must be "layer_feature" with a layer in 0 .. {config.layers - 1}')
    return labels


def _check_layers(labels: dict[tuple[int, int], str], config: TranscoderConfig) -> None:
    outside = [layer for layer, _ in labels if not 0 <= layer < config.layers]
    if outside:
        raise FeatureLabelsError(f"layer {outside[0]} is outside these transcoders' 0 .. {config.layers - 1}")
