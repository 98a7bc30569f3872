"""A short fingerprint of a model's config and weights, to tell whether saved results belong to it."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import weakref

import torch

from ...model import Bert

# Config fields added with the model families: left out of the fingerprint at their default (BERT's) value, so a
# BERT's fingerprint, and the SAEs and corpus indexes saved with it, stay what they were before the fields existed.
FAMILY_FIELDS = ("family", "position_offset", "embedding_size", "shared_layers", "layer_groups", "layers_per_group",
                 "mlm_activation", "sequence_head", "pooler",
                 # ModernBERT's (Warner et al. 2024)
                 "pre_norm", "norm_bias", "attention_bias", "mlp_bias", "gated_mlp", "rotary", "global_rope_theta",
                 "local_rope_theta", "local_attention", "global_attn_every_n_layers", "head_bias", "decoder_bias",
                 "classifier_pooling",
                 # DeBERTa's (He et al. 2021, 2023)
                 "absolute_positions", "relative_attention", "position_buckets", "max_relative_positions",
                 "position_attention", "padded_rows_zero")

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
            if not (name in FAMILY_FIELDS and value == defaults[name])}
