"""Parameter counts from the config alone, module by module (seed 004's arithmetic)."""
from .config import BertConfig


def count_parameters(config: BertConfig, mlm_head: bool = True, pooler: bool = True, nsp_head: bool = False) -> dict[str, int]:
    """Counts per part; 'total' counts the tied decoder weight once (as the model stores it)."""
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
    counts["pooler"] = (h * h + h) if pooler or nsp_head else 0
    counts["nsp_head"] = (2 * h + 2) if nsp_head else 0
    counts["lm_head"] = (h * h + h + layer_norm + v) if mlm_head else 0  # dense, LayerNorm, output bias; weight tied
    counts["total"] = counts["embedding"] + counts["encoder_layers"] + counts["pooler"] + counts["nsp_head"] + counts["lm_head"]
    return counts
