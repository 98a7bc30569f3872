"""RoBERTa (Liu et al. 2019): BERT's tree trained longer on more text with a byte-level BPE vocabulary, one
segment, no next-sentence head, and positions counted after the padding index (a padded token takes position
pad_token_id, a real one pad_token_id + 1 on). Its masked-LM head applies GELU whatever the MLP's activation, and
its sequence classifier reads the first token through dense + tanh (RobertaClassificationHead)."""
from __future__ import annotations

from .family import Family, Heads, Table
from .hf_fields import BERT_FIELDS, read_fields, write_fields
from .tables import BUFFERS, MaskedLM, bert_embeddings, encoder, first_token_heads, pairs

DIFFERENCES = dict(type_vocab_size=1, mlm_activation="gelu", sequence_head="dense_tanh")
FIXED = ("mlm_activation", "sequence_head")  # what its config.json does not say
MASKED_LM = MaskedLM("lm_head.dense", "lm_head.layer_norm", "lm_head.bias", decoder="lm_head.decoder")


def sized_differences(fields: dict) -> dict:
    """Positions start after the padding index."""
    return {"position_offset": fields.get("pad_token_id", 0) + 1}


def read_config(hf: dict) -> dict:
    fields = read_fields(hf, BERT_FIELDS) | {key: DIFFERENCES[key] for key in FIXED}
    fields["position_offset"] = fields.get("pad_token_id", 1) + 1  # the table's first pad_token_id + 1 rows: no token's
    fields["max_position_embeddings"] = fields.get("max_position_embeddings", 514) - fields["position_offset"]
    return fields


def write_config(config) -> dict:
    return write_fields(config, BERT_FIELDS) | {"max_position_embeddings": config.position_rows}


def table(config, heads: Heads) -> Table:
    """RobertaModel, RobertaForMaskedLM, RobertaFor{Sequence,Token}Classification (the sequence head:
    RobertaClassificationHead's dense and out_proj)."""
    result = bert_embeddings(config) | encoder(config, "encoder.layer") | MASKED_LM.table(heads)
    if heads.pooler:
        result |= pairs("pooler.dense", "pooler.dense")
    return result | first_token_heads(heads, dense="classifier.dense", out="classifier.out_proj")


def first_position(hf: dict) -> int:
    return int(hf.get("pad_token_id", 1)) + 1


FAMILY = Family(
    model_type="roberta", prefix="roberta", class_prefix="Roberta",
    paper="Liu et al. 2019, RoBERTa: A Robustly Optimized BERT Pretraining Approach",
    differences=DIFFERENCES, sized_differences=sized_differences, read_config=read_config, write_config=write_config,
    table=table, masked_lm=MASKED_LM, derived=BUFFERS, head_keys={"pooler": "pooler.dense.weight"},
    sequence_key="classifier.out_proj.weight", sequence_out="classifier.out_proj.weight",
    special_tokens={"cls": "<s>", "sep": "</s>", "mask": "<mask>", "pad": "<pad>", "unk": "<unk>"}, piece_marker="Ġ",
    first_position=first_position,
)
