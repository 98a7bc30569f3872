"""Parameter counts from the config alone, module by module (BERT-base's 110M, Devlin et al. 2019),
task heads included."""
from .config import BertConfig


def count_parameters(
    config: BertConfig, mlm_head: bool = True, pooler: bool = True, nsp_head: bool = False,
    classifier_labels: int = 0, tagger_labels: int = 0, discriminator: bool = False,
) -> dict[str, int]:
    """Counts per part; 'total' counts the tied decoder weight once (as the model stores it). The sequence
    classifier (over the pooler, which it brings; in the families without one, over its own dense layer) and the
    token classifier count as many outputs as labels. The family's differences count too: E-wide embeddings and
    their projection (ALBERT, small ELECTRAs), ALBERT's shared layers (one, or layer_groups * layers_per_group), no
    segments or pooler (DistilBERT); ModernBERT's missing biases, gate, rotary positions (no table), final LayerNorm
    and normed classifiers; EuroBERT's RMSNorms (a weight only), grouped keys and values (key_value_heads * head_size
    wide), no embedding norm (as ESM-2) and an untied masked-LM output without a transform."""
    h, i, v, e = config.hidden_size, config.intermediate_size, config.vocab_size, config.embedding_width
    norms = 2 if config.norm_bias else 1  # a LayerNorm's weight (and bias), per dimension
    layer_norm = norms * h
    attention_bias, mlp_bias, head_bias = int(config.attention_bias), int(config.mlp_bias), int(config.head_bias)
    projection = (e * h + h) if config.projects_embeddings else 0
    positions = 0 if config.rotary else config.position_rows
    key_value = config.key_value_head_count * config.head_size  # the key and the value maps' width: h, or less (grouped)
    counts = {
        "embedding": (v + positions + config.type_vocab_size) * e + norms * e * config.embedding_norm + projection,
        "attention_qkv_weights_per_layer": h * h + 2 * h * key_value,  # 1,769,472 for BERT-base
        # Q, K, V, output projection, LayerNorm
        "attention_per_layer": 2 * (h * h + attention_bias * h) + 2 * (h * key_value + attention_bias * key_value) + layer_norm,
        "mlp_weights_per_layer": (3 if config.gated_mlp else 2) * h * i,  # 4,718,592 for BERT-base
        "mlp_per_layer": (2 if config.gated_mlp else 1) * (h * i + int(config.input_maps_bias) * i) + (i * h + mlp_bias * h) + layer_norm,
    }
    counts["layer"] = counts["attention_per_layer"] + counts["mlp_per_layer"]
    counts["encoder_layers"] = config.distinct_layers * counts["layer"]  # ALBERT: one shared (or one per group's inner layer)
    if config.pre_norm and config.embedding_norm:  # layer 0's attention reads the normed embeddings: no LayerNorm of its own
        counts["encoder_layers"] -= layer_norm
    counts["final_norm"] = layer_norm if config.pre_norm else 0  # pre-norm: one LayerNorm after the last layer
    pooled_classifier = classifier_labels and config.sequence_head == "pooler"
    normed_head = (h * h + head_bias * h + layer_norm) if config.sequence_head == "dense_norm" else 0  # ModernBERT's
    first_token_dense = (h * h + h) if config.sequence_head not in ("pooler", "dense_norm") else normed_head  # and EuroBERT's
    heads = {
        "pooler": (h * h + h) if config.pooler and (pooler or nsp_head or pooled_classifier) else 0,
        "nsp_head": (2 * h + 2) if nsp_head else 0,
        # dense, LayerNorm (EuroBERT: neither), output bias; the output weight tied (EuroBERT: its own)
        "lm_head": ((h * e + head_bias * e + norms * e) * config.lm_transform + int(config.decoder_bias) * v
                    + (0 if config.tied_unembedding else e * v)) if mlm_head else 0,
        # one weight row and one bias per label (and the dense layer of the families that read the first token)
        "classifier": classifier_labels * (h + 1) + (first_token_dense if classifier_labels else 0),
        "tagger": tagger_labels * (h + 1) + (normed_head if tagger_labels else 0),
        "discriminator": (h * h + h + h + 1) if discriminator else 0,
    }
    counts.update(heads)
    counts["total"] = counts["embedding"] + counts["encoder_layers"] + counts["final_norm"] + sum(heads.values())
    return counts


def model_heads(model) -> dict:
    """The heads a Bert has, as count_parameters' keyword arguments."""
    labels = len(model.labels or [])
    return dict(mlm_head=model.lm_head is not None, pooler=model.pooler is not None, nsp_head=model.nsp_head is not None,
                classifier_labels=labels if model.classifier is not None else 0, tagger_labels=labels if model.tagger is not None else 0,
                discriminator=model.discriminator is not None)
