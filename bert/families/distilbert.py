"""DistilBERT (Sanh et al. 2019): six layers distilled from BERT-base, no segments and no pooler, its own
config.json names (dim, n_layers, ...) and layer names (q_lin, ffn.lin1, ...); its sequence classifier reads the
first token through pre_classifier and ReLU."""
from __future__ import annotations

from .family import Family, Heads, Table
from .hf_fields import read_fields, write_fields
from .tables import BUFFERS, MaskedLM, bert_embeddings, first_token_heads, layer

DIFFERENCES = dict(type_vocab_size=0, pooler=False, sequence_head="dense_relu")
FIELDS = {  # its config.json's names -> ours
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
LAYER = ("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin", "sa_layer_norm",
         "ffn.lin1", "ffn.lin2", "output_layer_norm")
MASKED_LM = MaskedLM("vocab_transform", "vocab_layer_norm", "vocab_projector.bias", decoder="vocab_projector")


def read_config(hf: dict) -> dict:
    return read_fields(hf, FIELDS, activation_key="activation") | DIFFERENCES | {"layer_norm_eps": 1e-12}


def write_config(config) -> dict:
    return write_fields(config, FIELDS, activation_key="activation")


def table(config, heads: Heads) -> Table:
    """DistilBertModel, DistilBertForMaskedLM, DistilBertFor{Sequence,Token}Classification (the sequence head:
    pre_classifier, then classifier)."""
    result = bert_embeddings(config)
    for i in range(config.num_layers):
        result |= layer(f"transformer.{i}", f"transformer.layer.{i}", LAYER)
    return result | MASKED_LM.table(heads) | first_token_heads(heads, dense="pre_classifier", out="classifier")


FAMILY = Family(
    model_type="distilbert", prefix="distilbert", class_prefix="DistilBert",
    paper="Sanh et al. 2019, DistilBERT, a distilled version of BERT: smaller, faster, cheaper and lighter",
    differences=DIFFERENCES, read_config=read_config, write_config=write_config,
    table=table, masked_lm=MASKED_LM, derived=BUFFERS,
    sequence_key="pre_classifier.weight", base_parts=("embeddings.", "transformer."),
    special_tokens={"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]", "unk": "[UNK]"}, piece_marker="##",
)
