"""BERT (Devlin et al. 2019): the tree every other family is read against, so it changes nothing of BertConfig.
Its checkpoints' names are transformers' BertModel, BertForPreTraining, BertForMaskedLM,
BertForNextSentencePrediction, BertFor{Sequence,Token}Classification."""
from __future__ import annotations

from .family import Family, Heads, Table
from .hf_fields import BERT_FIELDS, read_fields, write_fields
from .tables import BUFFERS, MaskedLM, bert_embeddings, encoder, linear_heads

MASKED_LM = MaskedLM("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias",
                     decoder="cls.predictions.decoder")


def read_config(hf: dict) -> dict:
    return read_fields(hf, BERT_FIELDS)


def write_config(config) -> dict:
    return write_fields(config, BERT_FIELDS) | {"position_embedding_type": "absolute"}  # as the hub's BERT folders say


def table(config, heads: Heads) -> Table:
    result = bert_embeddings(config) | encoder(config, "encoder.layer") | MASKED_LM.table(heads)
    return result | linear_heads(heads, pooler="pooler.dense", nsp="cls.seq_relationship")


FAMILY = Family(
    model_type="bert", prefix="bert", class_prefix="Bert",
    paper="Devlin et al. 2019, BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
    differences={}, read_config=read_config, write_config=write_config,
    table=table, masked_lm=MASKED_LM, derived=BUFFERS,
    head_keys={"nsp_head": "cls.seq_relationship.weight", "pooler": "pooler.dense.weight"},
    special_tokens={"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]", "unk": "[UNK]"}, piece_marker="##",
    token_types=2,
)
