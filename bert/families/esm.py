"""ESM-2 (Lin et al. 2023, Evolutionary-scale prediction of atomic-level protein structure with a language model): a
masked-LM encoder of protein sequences, one amino acid per token (a vocabulary of 33: the 20 residues, rare and
ambiguous ones, gap characters and its special tokens <cls>, <eos>, <pad>, <unk>, <mask>). Its layers are pre-norm
(a LayerNorm on each sub-layer's input, layer 0's attention included: the embeddings are not normed) with a final
LayerNorm (emb_layer_norm_after), rotary positions (Su et al. 2021) on q and k, no segments, exact GELU, and its
masked-LM head is RoBERTa's (dense, GELU, LayerNorm, the tied embedding). Its token dropout (bert/token_dropout.py)
zeroes the mask token's embedding and scales the others, as in its training. (transformers also zeroes a padded
position's embedding; here it is kept: no real token reads it, and every real position is the same.)

Refused in one line each: ESM-1b's and ESM-1v's absolute positions and normed embeddings, ESMFold, a rotary base
other than 10,000. Its checkpoints' contact head (a logistic regression over every attention pattern, for contact
maps) and the rotary frequencies transformers stores are skipped by name: nothing here reads them, and a folder
saved here has neither (transformers then starts a contact head at random and computes the frequencies)."""
from __future__ import annotations

from ..errors import ConfigError
from .family import Family, Heads, Table
from .hf_fields import SIZES, read_fields, write_fields
from .tables import WORDS, MaskedLM, encoder, first_token_heads, pairs

DIFFERENCES = dict(type_vocab_size=0, pre_norm=True, rotary=True, embedding_norm=False, mlm_activation="gelu",
                   sequence_head="dense_tanh", activation="gelu", layer_norm_eps=1e-5)
FIXED = ("type_vocab_size", "pre_norm", "rotary", "embedding_norm", "mlm_activation", "sequence_head", "activation")
FIELDS = SIZES | {  # config.json's names -> ours
    "layer_norm_eps": "layer_norm_eps",
    "hidden_dropout_prob": "hidden_dropout",
    "attention_probs_dropout_prob": "attention_dropout",
    "pad_token_id": "pad_token_id",
    "mask_token_id": "mask_token_id",
    "token_dropout": "token_dropout",
    "is_decoder": "causal",
}
# config.json's max_position_embeddings (1,026) counts ESM-1b's table, numbered after the padding index: 1,024 tokens
FIRST_POSITION = 2
ROPE_THETA = 10000.0  # ESM-2's rotary base (transformers' EsmConfig rope_theta)
LAYER = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
         "attention.LayerNorm", "intermediate.dense", "output.dense", "LayerNorm")  # LAYER_PARTS' order
MASKED_LM = MaskedLM("lm_head.dense", "lm_head.layer_norm", "lm_head.bias", decoder="lm_head.decoder")


def read_config(hf: dict) -> dict:
    if hf.get("position_embedding_type", "absolute") != "rotary":
        raise ConfigError(f"position_embedding_type {hf.get('position_embedding_type', 'absolute')!r} (ESM-1b, ESM-1v) is "
                          f"not supported: only ESM-2's rotary positions")
    if hf.get("emb_layer_norm_before"):
        raise ConfigError("emb_layer_norm_before (ESM-1b's LayerNorm on the embeddings) is not supported: only ESM-2's")
    if hf.get("is_folding_model"):
        raise ConfigError("ESMFold (is_folding_model) is not supported: its folding trunk is no encoder; load an ESM-2 checkpoint")
    if float(hf.get("rope_theta", ROPE_THETA)) != ROPE_THETA or hf.get("rope_scaling"):
        raise ConfigError(f"a rotary base other than ESM-2's {ROPE_THETA:g} (rope_theta {hf.get('rope_theta')}) or rotary "
                          f"scaling is not supported")
    plain = {key: value for key, value in hf.items() if key not in ("position_embedding_type", "hidden_act")}
    fields = DIFFERENCES | read_fields(plain, FIELDS) | {key: DIFFERENCES[key] for key in FIXED}
    fields["max_position_embeddings"] = int(hf.get("max_position_embeddings", 1026)) - FIRST_POSITION
    return fields | {"global_rope_theta": ROPE_THETA, "local_rope_theta": ROPE_THETA}


def write_config(config) -> dict:
    return write_fields(config, FIELDS) | {"max_position_embeddings": config.max_position_embeddings + FIRST_POSITION,
                                           "position_embedding_type": "rotary", "emb_layer_norm_before": False}


def table(config, heads: Heads) -> Table:
    """EsmModel, EsmForMaskedLM, EsmFor{Sequence,Token}Classification (the sequence head: EsmClassificationHead's
    dense and out_proj, over the first token)."""
    result = {"embedding.token_embedding.weight": WORDS} | encoder(config, "encoder.layer", LAYER)
    result |= pairs("final_norm.layer_norm", "encoder.emb_layer_norm_after") | MASKED_LM.table(heads)
    if heads.pooler:
        result |= pairs("pooler.dense", "pooler.dense")
    return result | first_token_heads(heads, dense="classifier.dense", out="classifier.out_proj")


FAMILY = Family(
    model_type="esm", prefix="esm", class_prefix="Esm",
    paper="Lin et al. 2023, Evolutionary-scale prediction of atomic-level protein structure with a language model",
    differences=DIFFERENCES, read_config=read_config, write_config=write_config, table=table, masked_lm=MASKED_LM,
    derived={"embeddings.position_ids": None}, head_keys={"pooler": "pooler.dense.weight"},
    sequence_key="classifier.out_proj.weight", sequence_out="classifier.out_proj.weight",
    base_parts=("embeddings.", "encoder.", "pooler.", "contact_head.", "rotary_embeddings."),
    unread=("contact_head.", "rotary_embeddings.inv_freq"),
    special_tokens={"cls": "<cls>", "sep": "<eos>", "mask": "<mask>", "pad": "<pad>", "unk": "<unk>"}, piece_marker="",
    characters=True, first_position=lambda hf: FIRST_POSITION,
)
