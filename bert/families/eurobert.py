"""EuroBERT (Boizard et al. 2025): an encoder built as Llama is. Pre-norm layers with RMSNorm (Zhang and Sennrich
2019) on each sub-layer's input, layer 0's included (the embedding is the token embedding alone, with no norm), and
a final RMSNorm; no biases; a SwiGLU MLP (Shazeer 2020: SiLU of the gate map times the up map, our gated MLP with
SiLU); grouped-query attention (Ainslie et al. 2023: num_key_value_heads heads of keys and values, each shared by a
group of query heads); rotary positions (Su et al. 2021) in every layer, all global; Llama 3's byte-level BPE and
no segments. Its masked-LM head is one linear map to the vocabulary, with a weight of its own. Its sequence
classifier reads the first token ("bos"), the mean of the real tokens ("mean") or every token, its labels' logits
then averaged ("late", the default), through dense and GELU; its token classifier is one linear map."""
from __future__ import annotations

from ..errors import ConfigError
from .family import Family, Heads, Table
from .hf_fields import ROPE_PARAMETERS, SIZES, WRITTEN_ACTIVATION, check_head_dim, plain_rope_theta, read_fields
from .tables import first_token_heads, pairs, params

# What it changes, sizes aside (its released configs' values).
DIFFERENCES = dict(
    type_vocab_size=0, pooler=False, sequence_head="pooled_gelu", classifier_pooling="late", pre_norm=True, rms_norm=True,
    norm_bias=False, embedding_norm=False, attention_bias=False, mlp_bias=False, gated_mlp=True, activation="silu",
    rotary=True, global_rope_theta=250000.0, local_rope_theta=250000.0, lm_transform=False, tied_unembedding=False,
    decoder_bias=False, layer_norm_eps=1e-5, hidden_dropout=0.0, attention_dropout=0.0, classifier_dropout=0.0,
)
# what config.json does not say
FIXED = ("type_vocab_size", "pooler", "sequence_head", "pre_norm", "rms_norm", "norm_bias", "embedding_norm", "gated_mlp",
         "rotary", "lm_transform", "tied_unembedding", "hidden_dropout", "classifier_dropout")
FIELDS = SIZES | {  # and its config.json's own names
    "num_key_value_heads": "key_value_heads",
    "rms_norm_eps": "layer_norm_eps",
    "attention_dropout": "attention_dropout",
    "pad_token_id": "pad_token_id",
    "attention_bias": "attention_bias",
    "mlp_bias": "mlp_bias",
}
POOLING = {"bos": "cls", "mean": "mean", "late": "late"}  # its classifier_pooling -> ours
# transformers' EuroBertConfig defaults, by our names, for the fields config.json may leave out
DEFAULTS = dict(vocab_size=128256, hidden_size=768, num_layers=12, num_heads=12, intermediate_size=3072,
                max_position_embeddings=8192, pad_token_id=128001)


def read_config(hf: dict) -> dict:
    """Its config.json as transformers 5 writes it (rope_parameters) or as the released folders do (rope_theta).
    Refused: rotary scaling, a head size other than hidden_size / num_attention_heads, a tied lm_head."""
    fields = DIFFERENCES | DEFAULTS | read_fields(hf, FIELDS)
    fields |= {key: DIFFERENCES[key] for key in FIXED}
    theta = plain_rope_theta(hf, hf.get(ROPE_PARAMETERS) or {}, "rope_theta", 10000.0)
    fields |= {"global_rope_theta": theta, "local_rope_theta": theta, "decoder_bias": bool(fields["mlp_bias"])}
    check_head_dim(hf, fields)
    if hf.get("tie_word_embeddings"):
        raise ConfigError("tie_word_embeddings is true: a masked-LM output tied to the token embedding is not supported "
                          "in this family (its released checkpoints have an lm_head of their own)")
    pooling = hf.get("classifier_pooling", hf.get("clf_pooling", "late"))
    if pooling not in POOLING:
        raise ConfigError(f"classifier_pooling {pooling!r} is not one of {sorted(POOLING)}")
    return fields | {"classifier_pooling": POOLING[pooling]}


def write_config(config) -> dict:
    if config.decoder_bias != config.mlp_bias:
        raise ConfigError("transformers' EuroBERT gives its lm_head a bias exactly where mlp_bias says: decoder_bias must equal mlp_bias")
    hf = {theirs: getattr(config, ours) for theirs, ours in FIELDS.items()} | {"num_key_value_heads": config.key_value_head_count}
    pooling = {ours: theirs for theirs, ours in POOLING.items()}[config.classifier_pooling]
    return {"hidden_act": WRITTEN_ACTIVATION[config.activation], **hf, "head_dim": config.head_size,
            ROPE_PARAMETERS: {"rope_type": "default", "rope_theta": config.global_rope_theta},
            "classifier_pooling": pooling, "tie_word_embeddings": False}


def table(config, heads: Heads) -> Table:
    """EuroBertModel, EuroBertForMaskedLM, EuroBertFor{Sequence,Token}Classification. Biases only where
    attention_bias and mlp_bias say (the lm_head's too); the MLP's gate_proj is the map the activation reads
    (our mlp1), up_proj the one it multiplies (our gate)."""
    attention_params, mlp_params = params(config.attention_bias), params(config.mlp_bias)
    result = {"embedding.token_embedding.weight": "embed_tokens.weight"}
    for i in range(config.num_layers):
        ours, theirs = f"transformer.{i}", f"layers.{i}"
        result |= pairs(f"{ours}.attention.layer_norm", f"{theirs}.input_layernorm", ("weight",))
        for part, their_part in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj")):
            result |= pairs(f"{ours}.attention.attention.project_{part}", f"{theirs}.self_attn.{their_part}", attention_params)
        result |= pairs(f"{ours}.attention.mlp", f"{theirs}.self_attn.o_proj", attention_params)
        result |= pairs(f"{ours}.residual.layer_norm", f"{theirs}.post_attention_layernorm", ("weight",))
        for part, their_part in (("mlp1", "gate_proj"), ("gate", "up_proj"), ("mlp2", "down_proj")):
            result |= pairs(f"{ours}.residual.{part}", f"{theirs}.mlp.{their_part}", mlp_params)
    result |= pairs("final_norm.layer_norm", "norm", ("weight",))
    if heads.mlm_head:
        result |= pairs("lm_head.unembedding", "lm_head", params(config.decoder_bias))
    return result | first_token_heads(heads, "dense", "classifier")


FAMILY = Family(
    model_type="eurobert",
    paper="Boizard et al. 2025, EuroBERT: Scaling Multilingual Encoders for European Languages",
    differences=DIFFERENCES,
    read_config=read_config, write_config=write_config, table=table,
    prefix="model", class_prefix="EuroBert",
    head_keys={"mlm_head": "lm_head.weight"},
    derived={},
    sequence_key="dense.weight",
    base_parts=("embed_tokens.", "layers.", "norm."),
    # Llama 3's tokens: <|begin_of_text|> opens the input, <|end_of_text|> ends it and pads; a byte-level BPE reads
    # every byte, so it has no unknown token of its own: a word that gives no piece stands as <|end_of_text|>
    special_tokens={"cls": "<|begin_of_text|>", "sep": "<|end_of_text|>", "mask": "<|mask|>", "pad": "<|end_of_text|>",
                    "unk": "<|end_of_text|>"},
    piece_marker="Ġ",
)
