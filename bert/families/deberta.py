"""DeBERTa-v3 (He et al. 2021, "DeBERTa: Decoding-enhanced BERT with Disentangled Attention"; He et al. 2023,
"DeBERTaV3"), Hugging Face's model type "deberta-v2": no position table and no segments; disentangled attention,
whose scores add content-to-position and position-to-content terms read from relative-position embeddings shared
by every layer, over 256 log buckets of distance each way (bert/attention.py's relative_index); a SentencePiece
vocabulary. Only v3's architecture is read: what v2 checkpoints add is refused by name."""
from __future__ import annotations

from ..errors import ConfigError
from .family import Family, Heads, Table
from .hf_fields import BERT_FIELDS, read_fields, write_fields
from .tables import BUFFERS, MaskedLM, bert_embeddings, encoder, first_token_heads, pairs

# What it changes, sizes aside (deberta-v3-base's config.json).
DIFFERENCES = dict(
    type_vocab_size=0, pooler=False, sequence_head="dense_gelu", layer_norm_eps=1e-7, absolute_positions=False,
    relative_attention=True, position_buckets=256, position_attention=("p2c", "c2p"), padded_rows_zero=True,
)
FIXED = ("pooler", "sequence_head", "absolute_positions", "relative_attention", "padded_rows_zero")
# BERT's names, its classifier dropout as cls_dropout, and the buckets
FIELDS = {k: v for k, v in BERT_FIELDS.items() if k not in ("is_decoder", "classifier_dropout")} | {
    "cls_dropout": "classifier_dropout",
    "position_buckets": "position_buckets",
}
# what our DeBERTa runs, as DeBERTa-v3's config.json says it (transformers' DebertaV2Config defaults are v2's)
REQUIRED = {"relative_attention": True, "share_att_key": True, "position_biased_input": False,
            "norm_rel_ebd": "layer_norm", "pooler_hidden_act": "gelu", "legacy": True}
LAYER = ("attention.self.query_proj", "attention.self.key_proj", "attention.self.value_proj", "attention.output.dense",
         "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")
MASKED_LM = MaskedLM("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias",
                     decoder="cls.predictions.decoder")  # the default, legacy head: BERT's names


def _check(hf: dict) -> None:
    """DeBERTa-v3's architecture only: what v2 checkpoints add (a convolution beside layer 0, a position table,
    separate position projections, a projected or narrower embedding) is refused by name."""
    if (hf.get("conv_kernel_size") or 0) > 0:
        raise ConfigError(f"conv_kernel_size {hf['conv_kernel_size']}: DeBERTa-v2's convolution layer is not supported (DeBERTa-v3 has none)")
    for key, value in REQUIRED.items():
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


def read_config(hf: dict) -> dict:
    """pos_att_type ("p2c|c2p" or a list) and max_relative_positions (below 1: max_position_embeddings)."""
    _check(hf)
    fields = read_fields(hf, FIELDS) | {key: DIFFERENCES[key] for key in FIXED}
    terms = hf.get("pos_att_type") or []
    if isinstance(terms, str):
        terms = [term.strip() for term in terms.lower().split("|")]
    fields |= {"position_attention": tuple(terms), "position_buckets": max(hf.get("position_buckets") or -1, 0),
               "layer_norm_eps": hf.get("layer_norm_eps", 1e-7), "type_vocab_size": hf.get("type_vocab_size", 0)}
    if (hf.get("max_relative_positions") or -1) >= 1:
        fields["max_relative_positions"] = hf["max_relative_positions"]
    return fields


def write_config(config) -> dict:
    return write_fields(config, FIELDS) | {
        "position_buckets": config.position_buckets or -1, "max_relative_positions": config.max_relative_positions or -1,
        "pos_att_type": list(config.position_attention), **REQUIRED}


def table(config, heads: Heads) -> Table:
    """DebertaV2Model, DebertaV2ForMaskedLM (its default, legacy head: BERT's `cls.predictions`),
    DebertaV2For{Sequence,Token}Classification (the sequence head: ContextPooler's dense, then `classifier`).
    The relative-position embeddings and their LayerNorm are the encoder's (He et al. 2021)."""
    result = bert_embeddings(config, positions=False)
    result |= {"relative_positions.embedding.weight": "encoder.rel_embeddings.weight"}
    result |= pairs("relative_positions.layer_norm", "encoder.LayerNorm")
    result |= encoder(config, "encoder.layer", LAYER) | MASKED_LM.table(heads)
    return result | first_token_heads(heads, dense="pooler.dense", out="classifier")


FAMILY = Family(
    model_type="deberta-v2", prefix="deberta", class_prefix="DebertaV2",
    paper="He et al. 2021, DeBERTa: Decoding-enhanced BERT with Disentangled Attention; He et al. 2023, DeBERTaV3",
    differences=DIFFERENCES, read_config=read_config, write_config=write_config,
    table=table, masked_lm=MASKED_LM, derived=BUFFERS,
    # microsoft/deberta-v3-base's pytorch_model.bin: the original training code's heads (a masked-LM head and the
    # replaced-token detector, He et al. 2023) and a position table that position_biased_input false leaves unused
    unread=("lm_predictions.lm_head.", "mask_predictions.", "embeddings.position_embeddings.weight"),
    sequence_key="pooler.dense.weight", base_parts=("embeddings.", "encoder."),
    special_tokens={"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]", "unk": "[UNK]"}, piece_marker="▁",
)
