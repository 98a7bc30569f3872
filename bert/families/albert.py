"""ALBERT (Lan et al. 2020): narrow embeddings (E = 128) projected to H, one layer's weights shared by every
depth (section 3.1; several shared layers in groups: num_hidden_groups, inner_group_num; bert/shared_layers.py),
a SentencePiece vocabulary, and sentence-order prediction in place of next sentence (section 4.1)."""
from __future__ import annotations

from ..shared_layers import shared_layer_path
from .family import Family, Heads, Table
from .hf_fields import BERT_FIELDS, read_fields, write_fields
from .tables import BUFFERS, MaskedLM, bert_embeddings, layer, linear_heads, pairs

DIFFERENCES = dict(shared_layers=True, embedding_projection=True, activation="gelu_tanh")
FIELDS = BERT_FIELDS | {"embedding_size": "embedding_size", "classifier_dropout_prob": "classifier_dropout",
                        "num_hidden_groups": "layer_groups", "inner_group_num": "layers_per_group"}
LAYER = ("attention.query", "attention.key", "attention.value", "attention.dense", "attention.LayerNorm", "ffn",
         "ffn_output", "full_layer_layer_norm")
MASKED_LM = MaskedLM("predictions.dense", "predictions.LayerNorm", "predictions.bias", decoder="predictions.decoder")


def sized_differences(fields: dict) -> dict:
    """E = min(128, H) unless embedding_size is given."""
    return {"embedding_size": min(128, fields.get("hidden_size", 768))}


def read_config(hf: dict) -> dict:
    fields = read_fields(hf, FIELDS) | {"shared_layers": True, "embedding_projection": True}
    # num_hidden_layers counts group applications; our layers, every inner layer's
    fields["num_layers"] = fields.get("num_layers", 12) * fields.get("layers_per_group", 1)
    return fields


def write_config(config) -> dict:
    return write_fields(config, FIELDS) | {"embedding_size": config.embedding_width, "num_hidden_layers": config.group_applications}


def table(config, heads: Heads) -> Table:
    """AlbertModel, AlbertForPreTraining (masked LM + sentence order), AlbertForMaskedLM,
    AlbertFor{Sequence,Token}Classification. Each group's inner layers (released checkpoints: one layer, group 0
    layer 0, for every depth)."""
    result = bert_embeddings(config) | pairs("embedding.projection", "encoder.embedding_hidden_mapping_in")
    for group in range(config.layer_groups):
        for inner in range(config.layers_per_group):
            theirs = f"encoder.albert_layer_groups.{group}.albert_layers.{inner}"
            result |= layer(shared_layer_path(config, group, inner), theirs, LAYER)
    return result | MASKED_LM.table(heads) | linear_heads(heads, pooler="pooler", nsp="sop_classifier.classifier")


FAMILY = Family(
    model_type="albert", prefix="albert", class_prefix="Albert",
    paper="Lan et al. 2020, ALBERT: A Lite BERT for Self-supervised Learning of Language Representations",
    differences=DIFFERENCES, sized_differences=sized_differences, read_config=read_config, write_config=write_config,
    table=table, masked_lm=MASKED_LM, derived=BUFFERS,
    head_keys={"nsp_head": "sop_classifier.classifier.weight", "pooler": "pooler.weight"},
    special_tokens={"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "<pad>", "unk": "<unk>"}, piece_marker="▁",
    token_types=2,
    sentence_order=True,  # section 4.1: [in order, swapped]
    sentence_head_alone="Model",  # AlbertForPreTraining holds the sentence-order head with the masked-LM head only
)
