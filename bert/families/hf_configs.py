"""Hugging Face config.json <-> BertConfig, per family. One field table per family, used both ways."""
from __future__ import annotations

from .differences import DEBERTA_DIFFERENCES, MODERNBERT_DIFFERENCES
from ..errors import ConfigError

# HF field -> ours: the sizes, named alike in BERT's config.json and ModernBERT's
_SIZES = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_size",
    "max_position_embeddings": "max_position_embeddings",
}
# HF field -> ours, for the families that use BERT's field names (RoBERTa, ALBERT and ELECTRA add theirs).
_BERT_FIELDS = _SIZES | {
    "type_vocab_size": "type_vocab_size",
    "layer_norm_eps": "layer_norm_eps",
    "hidden_dropout_prob": "hidden_dropout",
    "attention_probs_dropout_prob": "attention_dropout",
    "pad_token_id": "pad_token_id",
    "classifier_dropout": "classifier_dropout",
    "is_decoder": "causal",  # Hugging Face's BertModel attends left-to-right when is_decoder is true
}
_DISTILBERT_FIELDS = {
    "vocab_size": "vocab_size",
    "dim": "hidden_size",
    "n_layers": "num_layers",
    "n_heads": "num_heads",
    "hidden_dim": "intermediate_size",
    "max_position_embeddings": "max_position_embeddings",
    "dropout": "hidden_dropout",
    "attention_dropout": "attention_dropout",
    "pad_token_id": "pad_token_id",
    "seq_classif_dropout": "classifier_dropout",
}
_MODERNBERT_FIELDS = _SIZES | {  # and its config.json's own names (Warner et al. 2024)
    "norm_eps": "layer_norm_eps",
    "embedding_dropout": "hidden_dropout",
    "attention_dropout": "attention_dropout",
    "pad_token_id": "pad_token_id",
    "classifier_dropout": "classifier_dropout",
    "norm_bias": "norm_bias",
    "attention_bias": "attention_bias",
    "mlp_bias": "mlp_bias",
    "local_attention": "local_attention",
    "global_attn_every_n_layers": "global_attn_every_n_layers",
    "classifier_bias": "head_bias",
    "decoder_bias": "decoder_bias",
    "classifier_pooling": "classifier_pooling",
}
# transformers' ModernBertConfig defaults (ModernBERT-base's), by our names, for the fields config.json may leave out
# (its epsilon and dropouts: MODERNBERT_DIFFERENCES)
_MODERNBERT_DEFAULTS = dict(vocab_size=50368, hidden_size=768, num_layers=22, num_heads=12, intermediate_size=1152,
                            max_position_embeddings=8192, pad_token_id=50283)
# DeBERTa-v2/v3 (He et al. 2021, 2023): BERT's names, its classifier dropout as cls_dropout, and the buckets
_DEBERTA_FIELDS = {k: v for k, v in _BERT_FIELDS.items() if k not in ("is_decoder", "classifier_dropout")} | {
    "cls_dropout": "classifier_dropout",
    "position_buckets": "position_buckets",
}
# what our DeBERTa runs, as DeBERTa-v3's config.json says it (transformers' DebertaV2Config defaults are v2's)
_DEBERTA_REQUIRED = {"relative_attention": True, "share_att_key": True, "position_biased_input": False,
                     "norm_rel_ebd": "layer_norm", "pooler_hidden_act": "gelu", "legacy": True}
FIELDS = {
    "bert": _BERT_FIELDS,
    "roberta": _BERT_FIELDS,
    "electra": _BERT_FIELDS | {"embedding_size": "embedding_size"},
    "albert": _BERT_FIELDS | {"embedding_size": "embedding_size", "classifier_dropout_prob": "classifier_dropout",
                              "num_hidden_groups": "layer_groups", "inner_group_num": "layers_per_group"},
    "distilbert": _DISTILBERT_FIELDS,
    "modernbert": _MODERNBERT_FIELDS,
    "deberta-v2": _DEBERTA_FIELDS,
}
# What each family fixes that its config.json does not say (besides `family`).
FAMILY_FIXED = {
    "bert": {},
    "roberta": {"mlm_activation": "gelu", "sequence_head": "dense_tanh"},  # RobertaLMHead and the classifier: fixed GELU, tanh
    "distilbert": {"type_vocab_size": 0, "pooler": False, "sequence_head": "dense_relu", "layer_norm_eps": 1e-12},
    "albert": {"shared_layers": True},
    "electra": {"pooler": False, "sequence_head": "dense_gelu", "mlm_activation": "gelu"},  # the generator's head: fixed GELU
    "modernbert": {key: MODERNBERT_DIFFERENCES[key] for key in ("type_vocab_size", "pooler", "sequence_head", "pre_norm", "gated_mlp", "rotary")},
    "deberta-v2": {key: DEBERTA_DIFFERENCES[key] for key in ("pooler", "sequence_head", "absolute_positions", "relative_attention",
                                                             "padded_rows_zero")},
}
ACTIVATIONS = {"gelu": "gelu", "gelu_python": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
               "relu": "relu", "silu": "silu", "swish": "silu"}
_WRITTEN_ACTIVATION = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu", "silu": "silu"}


def config_from_hf(cls, hf: dict):
    family = hf.get("model_type", "bert")
    if family not in FIELDS:
        raise ConfigError(f"model_type is {family!r}; supported: {', '.join(FIELDS)}")
    position_type = hf.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ConfigError(f"position_embedding_type {position_type!r} is not supported (only 'absolute')")
    if family == "modernbert":
        return cls(**_modernbert_from_hf(hf))
    if family == "deberta-v2":
        _check_deberta(hf)
    hidden_act = hf.get("activation" if family == "distilbert" else "hidden_act", "gelu")
    if hidden_act not in ACTIVATIONS:
        raise ConfigError(f"hidden_act {hidden_act!r} is not supported; expected one of {sorted(ACTIVATIONS)}")
    fields = {ours: hf[theirs] for theirs, ours in FIELDS[family].items() if hf.get(theirs) is not None}
    fields |= {"family": family, "activation": ACTIVATIONS[hidden_act], **FAMILY_FIXED[family]}
    if family == "roberta":  # the position table's first pad_token_id + 1 rows are never used by a token
        fields["position_offset"] = fields.get("pad_token_id", 1) + 1
        fields["max_position_embeddings"] = fields.get("max_position_embeddings", 514) - fields["position_offset"]
    if family == "albert":  # num_hidden_layers counts group applications; our layers, every inner layer's
        fields["num_layers"] = fields.get("num_layers", 12) * fields.get("layers_per_group", 1)
    if family == "deberta-v2":
        fields |= _deberta_positions(hf)
    if family == "electra" and fields.get("embedding_size") == fields.get("hidden_size", 768):
        fields["embedding_size"] = None
    return cls(**fields)


def _activation(hf: dict, key: str) -> str:
    name = hf.get(key, "gelu")
    if name not in ACTIVATIONS:
        raise ConfigError(f"{key} {name!r} is not supported; expected one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def _modernbert_from_hf(hf: dict) -> dict:
    """ModernBERT's fields: its released config.json names the global layers' spacing and both rotary bases
    (global_attn_every_n_layers, global_rope_theta, local_rope_theta); transformers 5 writes them as layer_types
    and rope_parameters too. Either is read."""
    fields = dict(MODERNBERT_DIFFERENCES) | _MODERNBERT_DEFAULTS  # what transformers takes where config.json is silent
    fields |= {ours: hf[theirs] for theirs, ours in _MODERNBERT_FIELDS.items() if hf.get(theirs) is not None}
    fields |= {"family": "modernbert", **FAMILY_FIXED["modernbert"], "activation": _activation(hf, "hidden_activation"),
               "mlm_activation": _activation(hf, "classifier_activation")}
    layers = fields["num_layers"]
    layer_types = hf.get("layer_types")
    if layer_types:
        every = next((n for n in range(1, layers + 1)
                      if layer_types == ["full_attention" if i % n == 0 else "sliding_attention" for i in range(layers)]), None)
        if every is None:
            raise ConfigError(f"layer_types {layer_types} are not global every n-th layer (from layer 0) and local between")
        fields["global_attn_every_n_layers"] = every
    rope = hf.get("rope_parameters") or {}
    for kind, field, default in (("full_attention", "global_rope_theta", 160000.0), ("sliding_attention", "local_rope_theta", 10000.0)):
        parameters = rope.get(kind) or {}
        if parameters.get("rope_type", "default") != "default" or hf.get("rope_scaling"):
            raise ConfigError(f"rotary scaling ({parameters.get('rope_type') or 'rope_scaling'}) is not supported, only plain RoPE")
        fields[field] = float(parameters.get("rope_theta", hf.get(field, default)))
    return fields


def _modernbert_to_hf(config) -> dict:
    hf = {theirs: getattr(config, ours) for theirs, ours in _MODERNBERT_FIELDS.items()}
    if config.local_attention is None:  # every layer global
        hf |= {"local_attention": 128, "global_attn_every_n_layers": 1}
    return {"model_type": "modernbert", "hidden_activation": _WRITTEN_ACTIVATION[config.activation],
            "classifier_activation": _WRITTEN_ACTIVATION[config.lm_activation], **hf,
            "global_rope_theta": config.global_rope_theta, "local_rope_theta": config.local_rope_theta,
            "mlp_dropout": 0.0, "tie_word_embeddings": True}


def _check_deberta(hf: dict) -> None:
    """DeBERTa-v3's architecture only: what v2 checkpoints add (a convolution beside layer 0, a position table,
    separate position projections, a projected or narrower embedding) is refused by name."""
    if (hf.get("conv_kernel_size") or 0) > 0:
        raise ConfigError(f"conv_kernel_size {hf['conv_kernel_size']}: DeBERTa-v2's convolution layer is not supported (DeBERTa-v3 has none)")
    for key, value in _DEBERTA_REQUIRED.items():
        given = hf.get(key, value if key in ("share_att_key", "legacy") else None)
        if key == "norm_rel_ebd" and isinstance(given, str):
            given = given.strip().lower()
        if given != value:
            raise ConfigError(f"{key} {given!r} is not supported: this DeBERTa runs DeBERTa-v3's {key} = {value!r}")
    hidden = hf.get("hidden_size", 1536)
    for key in ("embedding_size", "pooler_hidden_size"):
        if hf.get(key) not in (None, hidden):
            raise ConfigError(f"{key} {hf[key]} differs from hidden_size {hidden}: not supported")
    if hf.get("attention_head_size") not in (None, hidden // hf.get("num_attention_heads", 24)):
        raise ConfigError(f"attention_head_size {hf['attention_head_size']} is not hidden_size / num_attention_heads: not supported")


def _deberta_positions(hf: dict) -> dict:
    """pos_att_type ("p2c|c2p" or a list) and max_relative_positions (below 1: max_position_embeddings)."""
    terms = hf.get("pos_att_type") or []
    if isinstance(terms, str):
        terms = [term.strip() for term in terms.lower().split("|")]
    fields = {"position_attention": tuple(terms), "position_buckets": max(hf.get("position_buckets") or -1, 0),
              "layer_norm_eps": hf.get("layer_norm_eps", 1e-7), "type_vocab_size": hf.get("type_vocab_size", 0)}
    if (hf.get("max_relative_positions") or -1) >= 1:
        fields["max_relative_positions"] = hf["max_relative_positions"]
    return fields


def _deberta_to_hf(config) -> dict:
    return {"position_buckets": config.position_buckets or -1, "max_relative_positions": config.max_relative_positions or -1,
            "pos_att_type": list(config.position_attention), **_DEBERTA_REQUIRED}


def config_to_hf(config) -> dict:
    family = config.family
    if family == "modernbert":
        return _modernbert_to_hf(config)
    hf = {theirs: getattr(config, ours) for theirs, ours in FIELDS[family].items()}
    if family == "roberta":
        hf["max_position_embeddings"] = config.position_rows
    if "embedding_size" in hf:
        hf["embedding_size"] = config.embedding_width
    if family == "albert":
        hf["num_hidden_layers"] = config.group_applications
    activation_key = "activation" if family == "distilbert" else "hidden_act"
    if family == "deberta-v2":
        hf |= _deberta_to_hf(config)
    return {"model_type": family, activation_key: _WRITTEN_ACTIVATION[config.activation], **hf}
