"""BERT (Devlin et al. 2019): the tree every other family is read against, so it changes nothing of BertConfig.
Its checkpoints' names are transformers' BertModel, BertForPreTraining, BertForMaskedLM,
BertForNextSentencePrediction, BertFor{Sequence,Token}Classification."""
from __future__ import annotations

from .family import Family, Heads, Table
from .hf_fields import BERT_FIELDS, read_fields, write_fields
from .tables import BUFFERS, WORDS, bert_embeddings, encoder, linear_heads, mlm


def read_config(hf: dict) -> dict:
    return read_fields(hf, BERT_FIELDS)


def write_config(config) -> dict:
    return write_fields(config, BERT_FIELDS)


def table(config, heads: Heads) -> Table:
    result = bert_embeddings(config) | encoder(config, "encoder.layer")
    if heads.mlm_head:
        result |= mlm("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias")
    return result | linear_heads(heads, pooler="pooler.dense", nsp="cls.seq_relationship")


FAMILY = Family(
    model_type="bert",
    paper="Devlin et al. 2019, BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
    differences={},
    read_config=read_config, write_config=write_config, table=table,
    prefix="bert", class_prefix="Bert",
    head_keys={"mlm_head": "cls.predictions.transform.dense.weight", "nsp_head": "cls.seq_relationship.weight",
               "pooler": "pooler.dense.weight"},
    derived=BUFFERS | {"cls.predictions.decoder.weight": WORDS, "cls.predictions.decoder.bias": "cls.predictions.bias"},
    special_tokens={"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]", "unk": "[UNK]"},
    piece_marker="##",
    token_types=2,
)
