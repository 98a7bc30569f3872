"""NomicBERT (Nussbaum et al. 2024, nomic-embed-text; transformers' `nomic_bert`): BERT's post-LN layers with rotary
positions (Su et al. 2021; base 1,000) in place of the position table, no bias in attention or in the MLP, a SwiGLU
MLP (Shazeer 2020: SiLU of gate_proj times up_proj), BERT's two segments and WordPiece vocabulary, BERT's
masked-LM head (dense, SiLU as the layers', LayerNorm, the tied decoder with its bias) and BERT's pooler for its
sequence classifier."""
from __future__ import annotations

from dataclasses import replace

from .family import Family, Heads, Table
from .hf_fields import BERT_FIELDS, ROPE_PARAMETERS, check_head_dim, plain_rope_theta, read_fields, write_fields
from .tables import MaskedLM, bert_embeddings, chunks, linear_heads, pairs, params

# What it changes, sizes aside (transformers' NomicBertConfig defaults: nomic-embed-text-v1.5's).
DIFFERENCES = dict(rotary=True, global_rope_theta=1000.0, local_rope_theta=1000.0, gated_mlp=True, attention_bias=False,
                   mlp_bias=False, activation="silu", hidden_dropout=0.0, attention_dropout=0.0)
FIXED = ("rotary", "gated_mlp", "attention_bias", "mlp_bias")  # what its config.json does not say
FIELDS = {theirs: ours for theirs, ours in BERT_FIELDS.items() if ours != "causal"}  # it has no is_decoder
MASKED_LM = MaskedLM("cls.predictions.transform.dense", "cls.predictions.transform.layer_norm", "cls.predictions.bias",
                     decoder="cls.predictions.decoder")
# transformers' NomicBertConfig defaults, by our names, for the fields config.json may leave out
DEFAULTS = dict(vocab_size=30528, max_position_embeddings=2048, hidden_dropout=0.0, attention_dropout=0.0)


def read_config(hf: dict) -> dict:
    """Its config.json: BERT's field names (SiLU where hidden_act is silent), the rotary base in rope_parameters
    (1,000 by default). A head_dim other than hidden_size / num_attention_heads is refused."""
    fields = DEFAULTS | read_fields({"hidden_act": "silu"} | hf, FIELDS) | {key: DIFFERENCES[key] for key in FIXED}
    check_head_dim(hf, {"hidden_size": 768, "num_heads": 12} | fields)  # BertConfig's sizes where config.json is silent
    theta = plain_rope_theta(hf, hf.get(ROPE_PARAMETERS) or {}, "rope_theta", 1000.0)
    return fields | {"global_rope_theta": theta, "local_rope_theta": theta}


def write_config(config) -> dict:
    return write_fields(config, FIELDS) | {ROPE_PARAMETERS: {"rope_type": "default", "rope_theta": config.global_rope_theta}}


def table(config, heads: Heads) -> Table:
    """NomicBertModel, NomicBertForMaskedLM, NomicBertFor{Sequence,Token}Classification, in the layout transformers
    saves them (the released folders'): BERT's token and segment embeddings, their LayerNorm `emb_ln`; per layer
    `encoder.layers.N`: q, k and v fused in attn.Wqkv, attn.out_proj, norm1, the MLP's up map mlp.fc11 (our gate),
    its activated map mlp.fc12 (our mlp1), mlp.fc2 and norm2, none with a bias; the masked-LM head's LayerNorm is
    cls.predictions.transform.layer_norm."""
    result = {k: v for k, v in bert_embeddings(config, positions=False).items() if not k.startswith("embedding.layer_norm")}
    result |= pairs("embedding.layer_norm", "emb_ln")
    for i in range(config.num_layers):
        ours, theirs = f"transformer.{i}", f"encoder.layers.{i}"
        projections = tuple(f"{ours}.attention.attention.project_{part}" for part in ("query", "key", "value"))
        result |= chunks(projections, f"{theirs}.attn.Wqkv", config.attention_bias)
        result |= pairs(f"{ours}.attention.mlp", f"{theirs}.attn.out_proj", params(config.attention_bias))
        result |= pairs(f"{ours}.attention.layer_norm", f"{theirs}.norm1")
        result |= pairs(f"{ours}.residual.gate", f"{theirs}.mlp.fc11", params(config.input_maps_bias))
        result |= pairs(f"{ours}.residual.mlp1", f"{theirs}.mlp.fc12", params(config.input_maps_bias))
        result |= pairs(f"{ours}.residual.mlp2", f"{theirs}.mlp.fc2", params(config.mlp_bias))
        result |= pairs(f"{ours}.residual.layer_norm", f"{theirs}.norm2")
    return result | MASKED_LM.table(heads) | linear_heads(replace(heads, nsp_head=False), pooler="pooler.dense", nsp="")  # no NSP head


FAMILY = Family(
    model_type="nomic_bert", prefix="nomic_bert", class_prefix="NomicBert",
    paper="Nussbaum et al. 2024, Nomic Embed: Training a Reproducible Long Context Text Embedder",
    differences=DIFFERENCES, read_config=read_config, write_config=write_config, table=table, masked_lm=MASKED_LM,
    derived={}, head_keys={"pooler": "pooler.dense.weight"}, base_parts=("embeddings.", "emb_ln.", "encoder.", "pooler."),
    special_tokens={"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]", "unk": "[UNK]"}, piece_marker="##",
    token_types=2,
)
