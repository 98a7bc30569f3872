"""A short fingerprint of a model's config and weights, to tell whether saved results belong to it."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import weakref

import torch

from ...model import Bert

# The config fields BERT had before the model families: always in the fingerprint. Every field added since (each
# family's differences) is left out at its default (BERT's) value, so a BERT's fingerprint, and the SAEs and corpus
# indexes saved with it, stay what they were before the field existed.
BERT_FIELDS = ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size", "max_position_embeddings",
               "type_vocab_size", "layer_norm_eps", "hidden_dropout", "attention_dropout", "activation", "pad_token_id",
               "classifier_dropout", "causal")

_cache: "weakref.WeakKeyDictionary[Bert, tuple[tuple, str]]" = weakref.WeakKeyDictionary()


def model_fingerprint(model: Bert) -> str:
    """blake2b (16 bytes, hex) of the config and every tensor of the state dict (names, dtypes, shapes, values).
    Remembered per model object until a parameter changes in place (tensor version counters)."""
    state = model.state_dict()
    versions = tuple(t._version for t in state.values())
    cached = _cache.get(model)
    if cached is not None and cached[0] == versions:
        return cached[1]
    digest = hashlib.blake2b(digest_size=16)
    digest.update(json.dumps(_config_fields(model.config), sort_keys=True, default=str).encode())
    for name, tensor in sorted(state.items()):
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    _cache[model] = (versions, digest.hexdigest())
    return digest.hexdigest()


def _config_fields(config) -> dict:
    defaults = {field.name: field.default for field in dataclasses.fields(config)}
    return {name: value for name, value in dataclasses.asdict(config).items()
            if name in BERT_FIELDS or value != defaults[name]}
