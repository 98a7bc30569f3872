"""ELECTRA (Clark et al. 2020): BERT's tree trained as a discriminator that spots which tokens a small generator
replaced (section 2): a replaced-token head (`discriminator`, output "replaced") in place of the masked-LM head,
which the generator has; small models' embeddings (E < H) are projected to H; no pooler. The generator's head
applies GELU, and the classifier reads the first token through dense + GELU (ElectraClassificationHead)."""
from __future__ import annotations

from .family import Family, Heads, Table
from .hf_fields import BERT_FIELDS, read_fields, write_fields
from .tables import BUFFERS, MaskedLM, bert_embeddings, encoder, first_token_heads, pairs

DIFFERENCES = dict(pooler=False, sequence_head="dense_gelu", mlm_activation="gelu")
FIELDS = BERT_FIELDS | {"embedding_size": "embedding_size"}
MASKED_LM = MaskedLM("generator_predictions.dense", "generator_predictions.LayerNorm", "generator_lm_head.bias",
                     decoder="generator_lm_head")  # the generator's head


def read_config(hf: dict) -> dict:
    fields = read_fields(hf, FIELDS) | DIFFERENCES
    if fields.get("embedding_size") == fields.get("hidden_size", 768):
        fields["embedding_size"] = None  # as wide as H: no projection
    return fields


def write_config(config) -> dict:
    return write_fields(config, FIELDS) | {"embedding_size": config.embedding_width}


def table(config, heads: Heads) -> Table:
    """ElectraModel, ElectraForPreTraining (the discriminator), ElectraForMaskedLM (the generator),
    ElectraFor{Sequence,Token}Classification (the sequence head: ElectraClassificationHead's dense and out_proj)."""
    result = bert_embeddings(config) | encoder(config, "encoder.layer")
    if config.projects_embeddings:
        result |= pairs("embedding.projection", "embeddings_project")
    result |= MASKED_LM.table(heads)
    if heads.discriminator:
        result |= pairs("discriminator.dense", "discriminator_predictions.dense")
        result |= pairs("discriminator.prediction", "discriminator_predictions.dense_prediction")
    return result | first_token_heads(heads, dense="classifier.dense", out="classifier.out_proj")


FAMILY = Family(
    model_type="electra", prefix="electra", class_prefix="Electra",
    paper="Clark et al. 2020, ELECTRA: Pre-training Text Encoders as Discriminators Rather Than Generators",
    differences=DIFFERENCES, read_config=read_config, write_config=write_config,
    table=table, masked_lm=MASKED_LM, derived=BUFFERS, head_keys={"discriminator": "discriminator_predictions.dense.weight"},
    sequence_key="classifier.out_proj.weight", sequence_out="classifier.out_proj.weight",
    base_parts=("embeddings.", "embeddings_project.", "encoder."),
    special_tokens={"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]", "unk": "[UNK]"}, piece_marker="##",
    token_types=2, discriminator=True,
)
