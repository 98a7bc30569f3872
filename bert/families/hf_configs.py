"""Hugging Face config.json <-> BertConfig, per family. One field table per family, used both ways."""
from __future__ import annotations

from ..errors import ConfigError

# HF field -> ours, for the families that use BERT's field names (RoBERTa, ALBERT and ELECTRA add theirs).
_BERT_FIELDS = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_size",
    "max_position_embeddings": "max_position_embeddings",
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
FIELDS = {
    "bert": _BERT_FIELDS,
    "roberta": _BERT_FIELDS,
    "electra": _BERT_FIELDS | {"embedding_size": "embedding_size"},
    "albert": _BERT_FIELDS | {"embedding_size": "embedding_size", "classifier_dropout_prob": "classifier_dropout",
                              "num_hidden_groups": "layer_groups", "inner_group_num": "layers_per_group"},
    "distilbert": _DISTILBERT_FIELDS,
}
# What each family fixes that its config.json does not say (besides `family`).
FAMILY_FIXED = {
    "bert": {},
    "roberta": {"mlm_activation": "gelu", "sequence_head": "dense_tanh"},  # RobertaLMHead and the classifier: fixed GELU, tanh
    "distilbert": {"type_vocab_size": 0, "pooler": False, "sequence_head": "dense_relu", "layer_norm_eps": 1e-12},
    "albert": {"shared_layers": True},
    "electra": {"pooler": False, "sequence_head": "dense_gelu", "mlm_activation": "gelu"},  # the generator's head: fixed GELU
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
    if family == "electra" and fields.get("embedding_size") == fields.get("hidden_size", 768):
        fields["embedding_size"] = None
    return cls(**fields)


def config_to_hf(config) -> dict:
    family = config.family
    hf = {theirs: getattr(config, ours) for theirs, ours in FIELDS[family].items()}
    if family == "roberta":
        hf["max_position_embeddings"] = config.position_rows
    if "embedding_size" in hf:
        hf["embedding_size"] = config.embedding_width
    if family == "albert":
        hf["num_hidden_layers"] = config.group_applications
    activation_key = "activation" if family == "distilbert" else "hidden_act"
    return {"model_type": family, activation_key: _WRITTEN_ACTIVATION[config.activation], **hf}
