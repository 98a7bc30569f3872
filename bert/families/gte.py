"""GTE (Zhang et al. 2024, mGTE; transformers' `gte`): BERT's post-LN layers with rotary positions (Su et al. 2021)
in place of the position table, and a gated MLP (GLU, Shazeer 2020: the activation of gate_proj times up_proj) whose
two input maps have no bias while its output map has one. One segment (the English v1.5 model: none), BERT's
pooler for its sequence classifier, RoBERTa's masked-LM head (dense, GELU, LayerNorm, the tied decoder with its
bias), and XLM-RoBERTa's SentencePiece vocabulary in the multilingual model. The hub's own `new` folders (remote
code) are refused in bert/families/registry.py."""
from __future__ import annotations

from dataclasses import replace

from .family import Family, Heads, Table
from .hf_fields import BERT_FIELDS, ROPE_PARAMETERS, plain_rope_theta, read_fields, write_fields
from .tables import MaskedLM, bert_embeddings, chunks, linear_heads, pairs, params

# What it changes, sizes aside (its released configs' values).
DIFFERENCES = dict(type_vocab_size=1, pad_token_id=1, rotary=True, global_rope_theta=160000.0, local_rope_theta=160000.0,
                   gated_mlp=True, mlp_input_bias=False, mlm_activation="gelu", attention_dropout=0.0)
FIXED = ("rotary", "gated_mlp", "mlp_input_bias", "mlm_activation")  # what its config.json does not say
FIELDS = {theirs: ours for theirs, ours in BERT_FIELDS.items() if ours != "causal"}  # it has no is_decoder
MASKED_LM = MaskedLM("lm_head.dense", "lm_head.norm", "lm_head.decoder.bias", decoder="lm_head.decoder")
# transformers' GteConfig defaults, by our names, for the fields config.json may leave out
DEFAULTS = dict(vocab_size=250048, max_position_embeddings=8192, type_vocab_size=1, pad_token_id=1, attention_dropout=0.0)


def read_config(hf: dict) -> dict:
    """Its config.json: BERT's field names, and the rotary base in rope_parameters (else rope_theta; 160,000)."""
    fields = DEFAULTS | read_fields(hf, FIELDS) | {key: DIFFERENCES[key] for key in FIXED}
    theta = plain_rope_theta(hf, hf.get(ROPE_PARAMETERS) or {}, "rope_theta", 160000.0)
    return fields | {"global_rope_theta": theta, "local_rope_theta": theta}


def write_config(config) -> dict:
    return write_fields(config, FIELDS) | {ROPE_PARAMETERS: {"rope_type": "default", "rope_theta": config.global_rope_theta},
                                           "tie_word_embeddings": True}


def table(config, heads: Heads) -> Table:
    """GteModel, GteForMaskedLM, GteFor{Sequence,Token}Classification, in the layout transformers saves them (its
    released folders'): BERT's embedding names without the position table; per layer `encoder.layer.N`: q, k and v
    fused in attention.qkv_proj, attention.o_proj, attn_ln, the MLP's up and gate maps fused in mlp.up_gate_proj (up
    first: our gate, then the activated one: our mlp1), mlp.down_proj and mlp_ln; the masked-LM head's LayerNorm is
    lm_head.norm."""
    result = bert_embeddings(config, positions=False)
    for i in range(config.num_layers):
        ours, theirs = f"transformer.{i}", f"encoder.layer.{i}"
        projections = tuple(f"{ours}.attention.attention.project_{part}" for part in ("query", "key", "value"))
        result |= chunks(projections, f"{theirs}.attention.qkv_proj", config.attention_bias)
        result |= pairs(f"{ours}.attention.mlp", f"{theirs}.attention.o_proj", params(config.attention_bias))
        result |= pairs(f"{ours}.attention.layer_norm", f"{theirs}.attn_ln")
        result |= chunks((f"{ours}.residual.gate", f"{ours}.residual.mlp1"), f"{theirs}.mlp.up_gate_proj", config.input_maps_bias)
        result |= pairs(f"{ours}.residual.mlp2", f"{theirs}.mlp.down_proj", params(config.mlp_bias))
        result |= pairs(f"{ours}.residual.layer_norm", f"{theirs}.mlp_ln")
    return result | MASKED_LM.table(heads) | linear_heads(replace(heads, nsp_head=False), pooler="pooler.dense", nsp="")  # no NSP head


FAMILY = Family(
    model_type="gte", prefix="gte", class_prefix="Gte",
    paper="Zhang et al. 2024, mGTE: Generalized Long-Context Text Representation and Reranking Models for Multilingual "
          "Text Retrieval",
    differences=DIFFERENCES, read_config=read_config, write_config=write_config, table=table, masked_lm=MASKED_LM,
    derived={}, head_keys={"pooler": "pooler.dense.weight"}, base_parts=("embeddings.", "encoder.", "pooler."),
    special_tokens={"cls": "<s>", "sep": "</s>", "mask": "<mask>", "pad": "<pad>", "unk": "<unk>"}, piece_marker="▁",
)
