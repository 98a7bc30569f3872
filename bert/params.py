"""Parameter counts from the config alone, module by module (BERT-base's 110M, Devlin et al. 2019),
task heads included."""
from .config import BertConfig


def count_parameters(
    config: BertConfig, mlm_head: bool = True, pooler: bool = True, nsp_head: bool = False,
    classifier_labels: int = 0, tagger_labels: int = 0,
) -> dict[str, int]:
    """Counts per part; 'total' counts the tied decoder weight once (as the model stores it). The sequence
    classifier (over the pooler, which it brings) and the token classifier count as many outputs as labels."""
    h, i, v = config.hidden_size, config.intermediate_size, config.vocab_size
    layer_norm = 2 * h
    counts = {
        "embedding": (v + config.max_position_embeddings + config.type_vocab_size) * h + layer_norm,
        "attention_qkv_weights_per_layer": 3 * h * h,  # 1,769,472 for BERT-base
        "attention_per_layer": 3 * (h * h + h) + (h * h + h) + layer_norm,  # Q, K, V, output projection, LayerNorm
        "mlp_weights_per_layer": 2 * h * i,  # 4,718,592 for BERT-base
        "mlp_per_layer": (h * i + i) + (i * h + h) + layer_norm,
    }
    counts["layer"] = counts["attention_per_layer"] + counts["mlp_per_layer"]
    counts["encoder_layers"] = config.num_layers * counts["layer"]
    heads = {
        "pooler": (h * h + h) if pooler or nsp_head or classifier_labels else 0,
        "nsp_head": (2 * h + 2) if nsp_head else 0,
        "lm_head": (h * h + h + layer_norm + v) if mlm_head else 0,  # dense, LayerNorm, output bias; weight tied
        "classifier": classifier_labels * (h + 1),  # one weight row and one bias per label
        "tagger": tagger_labels * (h + 1),
    }
    counts.update(heads)
    counts["total"] = counts["embedding"] + counts["encoder_layers"] + sum(heads.values())
    return counts


def model_heads(model) -> dict:
    """The heads a Bert has, as count_parameters' keyword arguments."""
    labels = len(model.labels or [])
    return dict(mlm_head=model.lm_head is not None, pooler=model.pooler is not None, nsp_head=model.nsp_head is not None,
                classifier_labels=labels if model.classifier is not None else 0, tagger_labels=labels if model.tagger is not None else 0)
