"""What a family changes in BertConfig besides its sizes, where more than a line: read by BertConfig.of_family
(bert/config.py) and by the config.json reader (bert/families/hf_configs.py)."""

# What ModernBERT (Warner et al. 2024) changes, sizes aside (its released configs' values).
MODERNBERT_DIFFERENCES = dict(
    type_vocab_size=0, pooler=False, sequence_head="dense_norm", mlm_activation="gelu", pre_norm=True, norm_bias=False,
    attention_bias=False, mlp_bias=False, gated_mlp=True, rotary=True, global_rope_theta=160000.0,
    local_rope_theta=10000.0, local_attention=128, global_attn_every_n_layers=3, head_bias=False, layer_norm_eps=1e-5,
    hidden_dropout=0.0, attention_dropout=0.0, classifier_dropout=0.0,
)

# What DeBERTa-v3 (He et al. 2021, 2023) changes, sizes aside (deberta-v3-base's config.json): no position table
# and no segments; disentangled attention over 256 log buckets of relative position in both directions.
DEBERTA_DIFFERENCES = dict(
    type_vocab_size=0, pooler=False, sequence_head="dense_gelu", layer_norm_eps=1e-7, absolute_positions=False,
    relative_attention=True, position_buckets=256, position_attention=("p2c", "c2p"), padded_rows_zero=True,
)
