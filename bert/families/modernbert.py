"""ModernBERT (Warner et al. 2024): pre-norm layers (a LayerNorm on each sub-layer's input; none before layer 0's
attention, the embeddings being normed) and a final LayerNorm, no biases, a GeGLU MLP (Shazeer 2020), rotary
positions (Su et al. 2021) with a window of local attention in every layer but each third, a byte-level BPE and
no segments. Its checkpoints fuse q, k, v (Wqkv) and the MLP's input and gate (Wi); its masked-LM head and its
classifiers share the name `head` (dense, activation, LayerNorm)."""
from __future__ import annotations

from ..errors import ConfigError
from .family import Family, Heads, Table
from .hf_fields import ROPE_PARAMETERS, SIZES, WRITTEN_ACTIVATION, activation, plain_rope_theta, read_fields
from .tables import WORDS, chunks, pairs, params

# What it changes, sizes aside (its released configs' values).
DIFFERENCES = dict(
    type_vocab_size=0, pooler=False, sequence_head="dense_norm", mlm_activation="gelu", pre_norm=True, norm_bias=False,
    attention_bias=False, mlp_bias=False, gated_mlp=True, rotary=True, global_rope_theta=160000.0,
    local_rope_theta=10000.0, local_attention=128, global_attn_every_n_layers=3, head_bias=False, layer_norm_eps=1e-5,
    hidden_dropout=0.0, attention_dropout=0.0, classifier_dropout=0.0,
)
FIXED = ("type_vocab_size", "pooler", "sequence_head", "pre_norm", "gated_mlp", "rotary")  # what config.json does not say
FIELDS = SIZES | {  # and its config.json's own names
    "norm_eps": "layer_norm_eps",
    "embedding_dropout": "hidden_dropout",
    "attention_dropout": "attention_dropout",
    "pad_token_id": "pad_token_id",
    "classifier_dropout": "classifier_dropout",
    "norm_bias": "norm_bias",
    "attention_bias": "attention_bias",
    "mlp_bias": "mlp_bias",
    "local_attention": "local_attention",
    "global_attn_every_n_layers": "global_attn_every_n_layers",
    "classifier_bias": "head_bias",
    "decoder_bias": "decoder_bias",
    "classifier_pooling": "classifier_pooling",
}
# config.json fields (transformers' ModernBertConfig's, and those the released Ettin and mmBERT folders add) that change
# nothing in a forward pass: weight initialisation, the tokenizer's special ids (its own files name them), the
# flash-attention kernel's determinism, a loss over the labelled positions only (sparse_prediction: the logits without
# labels are the same), dropout inside the MLP (training; 0 in every released config), the training code's own switches
# and names (torch.compile, re-padding, "sans_pos": no position table) and its duplicate epsilon (transformers reads
# norm_eps)
NO_EFFECT = ("initializer_range", "initializer_cutoff_factor", "bos_token_id", "eos_token_id", "cls_token_id",
             "sep_token_id", "unk_token_id", "mask_token_id", "deterministic_flash_attn", "sparse_prediction",
             "sparse_pred_ignore_index", "mlp_dropout", "reference_compile", "repad_logits_with_grad", "gradient_checkpointing",
             "position_embedding_type", "layer_norm_eps")
# transformers' ModernBertConfig defaults (ModernBERT-base's), by our names, for the fields config.json may leave out
DEFAULTS = dict(vocab_size=50368, hidden_size=768, num_layers=22, num_heads=12, intermediate_size=1152,
                max_position_embeddings=8192, pad_token_id=50283)


def read_config(hf: dict) -> dict:
    """Its released config.json names the global layers' spacing and both rotary bases
    (global_attn_every_n_layers, global_rope_theta, local_rope_theta); transformers 5 writes them as layer_types
    and rope_parameters too. Either is read. NO_EFFECT's fields are not; an untied decoder (tie_word_embeddings
    false) is refused."""
    if hf.get("tie_word_embeddings", True) is False:
        raise ConfigError("tie_word_embeddings is false: a masked-LM decoder with weights of its own is not supported in "
                          "this family (its released checkpoints tie it to the token embedding)")
    read = {key: value for key, value in hf.items() if key != "position_embedding_type"}  # see NO_EFFECT
    fields = DIFFERENCES | DEFAULTS | read_fields(read, FIELDS, activation_key="hidden_activation")
    fields |= {key: DIFFERENCES[key] for key in FIXED} | {"mlm_activation": activation(hf, "classifier_activation")}
    layers = fields["num_layers"]
    layer_types = hf.get("layer_types")
    if layer_types:
        every = next((n for n in range(1, layers + 1)
                      if layer_types == ["full_attention" if i % n == 0 else "sliding_attention" for i in range(layers)]), None)
        if every is None:
            raise ConfigError(f"layer_types {layer_types} are not global every n-th layer (from layer 0) and local between")
        fields["global_attn_every_n_layers"] = every
    rope = hf.get(ROPE_PARAMETERS) or {}
    for kind, field, default in (("full_attention", "global_rope_theta", 160000.0), ("sliding_attention", "local_rope_theta", 10000.0)):
        fields[field] = plain_rope_theta(hf, rope.get(kind) or {}, field, default)
    return fields


def write_config(config) -> dict:
    hf = {theirs: getattr(config, ours) for theirs, ours in FIELDS.items()}
    if config.local_attention is None:  # every layer global
        hf |= {"local_attention": 128, "global_attn_every_n_layers": 1}
    return {"hidden_activation": WRITTEN_ACTIVATION[config.activation],
            "classifier_activation": WRITTEN_ACTIVATION[config.lm_activation], **hf,
            "global_rope_theta": config.global_rope_theta, "local_rope_theta": config.local_rope_theta,
            "mlp_dropout": 0.0, "tie_word_embeddings": True}


def table(config, heads: Heads) -> Table:
    """ModernBertModel, ModernBertForMaskedLM, ModernBertFor{Sequence,Token}Classification. Biases only where the
    config's norm_bias, attention_bias, mlp_bias, head_bias and decoder_bias say; layer 0 has no attention
    LayerNorm (attn_norm); the classifiers' dense and LayerNorm are the `head` that the masked-LM model also has,
    so a model with a task head saves that head and not the masked-LM's."""
    norm = params(config.norm_bias)
    result = {"embedding.token_embedding.weight": "embeddings.tok_embeddings.weight"}
    result |= pairs("embedding.layer_norm", "embeddings.norm", norm)
    for i in range(config.num_layers):
        ours, theirs = f"transformer.{i}", f"layers.{i}"
        projections = tuple(f"{ours}.attention.attention.project_{part}" for part in ("query", "key", "value"))
        result |= chunks(projections, f"{theirs}.attn.Wqkv", config.attention_bias)
        result |= pairs(f"{ours}.attention.mlp", f"{theirs}.attn.Wo", params(config.attention_bias))
        if i > 0:
            result |= pairs(f"{ours}.attention.layer_norm", f"{theirs}.attn_norm", norm)
        result |= chunks((f"{ours}.residual.mlp1", f"{ours}.residual.gate"), f"{theirs}.mlp.Wi", config.mlp_bias)
        result |= pairs(f"{ours}.residual.mlp2", f"{theirs}.mlp.Wo", params(config.mlp_bias))
        result |= pairs(f"{ours}.residual.layer_norm", f"{theirs}.mlp_norm", norm)
    result |= pairs("final_norm.layer_norm", "final_norm", norm)

    def head(dense: str, layer_norm: str) -> Table:  # ModernBertPredictionHead: dense, activation, LayerNorm
        return pairs(dense, "head.dense", params(config.head_bias)) | pairs(layer_norm, "head.norm", norm)

    if heads.mlm_head and not (heads.classifier or heads.tagger):  # one `head` per checkpoint: a task model's has none
        result |= head("lm_head.mlp", "lm_head.layer_norm")
        if config.decoder_bias:
            result["lm_head.unembedding.bias"] = "decoder.bias"
    for name, present in (("classifier", heads.classifier), ("tagger", heads.tagger)):
        if present:
            result |= head(f"{name}.dense", f"{name}.layer_norm") | pairs(f"{name}.out_proj", "classifier")
    return result


FAMILY = Family(
    model_type="modernbert",
    paper="Warner et al. 2024, Smarter, Better, Faster, Longer: A Modern Bidirectional Encoder for Fast, Memory "
          "Efficient, and Long Context Finetuning and Inference",
    differences=DIFFERENCES,
    read_config=read_config, write_config=write_config, table=table,
    prefix="model", class_prefix="ModernBert",
    head_keys={"mlm_head": "head.dense.weight"},
    derived={"decoder.weight": WORDS},
    head_shared=True, base_parts=("embeddings.", "layers.", "final_norm."),
    special_tokens={"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]", "unk": "[UNK]"},
    piece_marker="Ġ",
)
