"""config.json helpers that several families share: BERT's field names, the activations' names, and reading and
writing a config.json through a table of fields (Hugging Face's name -> ours), used both ways."""
from __future__ import annotations

from ..errors import ConfigError

# HF field -> ours: the sizes, named alike in BERT's config.json and ModernBERT's
SIZES = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "intermediate_size": "intermediate_size",
    "max_position_embeddings": "max_position_embeddings",
}
# HF field -> ours, for the families that use BERT's field names
BERT_FIELDS = SIZES | {
    "type_vocab_size": "type_vocab_size",
    "layer_norm_eps": "layer_norm_eps",
    "hidden_dropout_prob": "hidden_dropout",
    "attention_probs_dropout_prob": "attention_dropout",
    "pad_token_id": "pad_token_id",
    "classifier_dropout": "classifier_dropout",
    "is_decoder": "causal",  # Hugging Face's BertModel attends left-to-right when is_decoder is true
}
# config.json's activation names -> ours (bert/config.py's ACTIVATIONS), and ours as transformers writes them
ACTIVATIONS = {"gelu": "gelu", "gelu_python": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
               "relu": "relu", "silu": "silu", "swish": "silu"}
WRITTEN_ACTIVATION = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu", "silu": "silu"}


ROPE_PARAMETERS = "rope_parameters"  # transformers 5's rotary settings, one name in every rotary family's config.json


def plain_rope_theta(hf: dict, parameters: dict, theta_key: str, default: float) -> float:
    """The rotary base in `parameters` (a part of config.json's rope_parameters), else in config.json's own field
    `theta_key` (the name before rope_parameters), else `default`. ConfigError for a scaled RoPE."""
    if parameters.get("rope_type", "default") != "default" or hf.get("rope_scaling"):
        raise ConfigError(f"rotary scaling ({parameters.get('rope_type') or 'rope_scaling'}) is not supported, only plain RoPE")
    return float(parameters.get("rope_theta", hf.get(theta_key, default)))


def check_head_dim(hf: dict, fields: dict) -> None:
    """ConfigError where config.json's head_dim (Llama-style configs) is not hidden_size / num_attention_heads:
    every head here is an even split of the hidden size. `fields`: BertConfig's fields read from it."""
    head_dim = hf.get("head_dim")
    if head_dim is not None and head_dim * fields["num_heads"] != fields["hidden_size"]:
        raise ConfigError(f"head_dim {head_dim} is not hidden_size / num_attention_heads "
                          f"({fields['hidden_size']} / {fields['num_heads']}): not supported")


def activation(hf: dict, key: str = "hidden_act") -> str:
    """Our name of the activation config.json gives under `key` (GELU where it is silent)."""
    name = hf.get(key, "gelu")
    if name not in ACTIVATIONS:
        raise ConfigError(f"{key} {name!r} is not supported; expected one of {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def read_fields(hf: dict, fields: dict[str, str], activation_key: str = "hidden_act") -> dict:
    """The fields config.json gives (those it leaves out keep BertConfig's defaults) and the MLP's activation."""
    position_type = hf.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ConfigError(f"position_embedding_type {position_type!r} is not supported (only 'absolute')")
    given = {ours: hf[theirs] for theirs, ours in fields.items() if hf.get(theirs) is not None}
    return given | {"activation": activation(hf, activation_key)}


def write_fields(config, fields: dict[str, str], activation_key: str = "hidden_act") -> dict:
    """config.json's fields from a BertConfig, and the MLP's activation."""
    return {activation_key: WRITTEN_ACTIVATION[config.activation]} | {theirs: getattr(config, ours) for theirs, ours in fields.items()}
