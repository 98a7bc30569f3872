"""One strict key table per family: our parameter name <- the Hugging Face checkpoint's, one line per tensor.

Hugging Face names are written without the base model's prefix (`bert.`, `roberta.`, `distilbert.`, `albert.`,
`electra.`, ModernBERT's `model.`), which task models put before the encoder's tensors and bare encoders do not (bert/checkpoint.py
removes it on reading and adds it on writing). Each table takes the heads the model has (`Heads`); a family
built later (another encoder of the same shape) adds a function here and a `Family` in FAMILIES.

Where a checkpoint fuses tensors that our modules keep apart (ModernBERT's Wqkv holds q, k and v; its Wi the
MLP's input and gate), the table names one block of rows of it: `chunk("layers.0.attn.Wqkv.weight", 1, 3)`, the
key's second third (`split_key` reads it back); loading cuts the tensor, saving joins the blocks in order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..config import BertConfig
from ..model import shared_layer_path

Table = dict[str, str]


@dataclass(frozen=True)
class Heads:
    """Which heads a model has, as the key tables and Bert's constructor name them."""

    mlm_head: bool = False
    pooler: bool = False
    nsp_head: bool = False
    classifier: bool = False
    tagger: bool = False
    discriminator: bool = False


def _pairs(ours: str, theirs: str, params: tuple[str, ...] = ("weight", "bias")) -> Table:
    return {f"{ours}.{param}": f"{theirs}.{param}" for param in params}


def chunk(key: str, index: int, count: int) -> str:
    """Block `index` of `count` equal blocks of rows of the checkpoint's tensor `key`: "key[index/count]"."""
    return f"{key}[{index}/{count}]"


def split_key(theirs: str) -> tuple[str, int, int]:
    """(checkpoint key, block index, block count) of a table entry; (key, 0, 1) for a whole tensor."""
    if not theirs.endswith("]") or "[" not in theirs:
        return theirs, 0, 1
    key, block = theirs[:-1].rsplit("[", 1)
    index, count = block.split("/")
    return key, int(index), int(count)


def _embeddings(config: BertConfig) -> Table:
    """BERT's embedding names, shared by RoBERTa, ALBERT and ELECTRA (DistilBERT: without token types)."""
    table = {
        "embedding.token_embedding.weight": "embeddings.word_embeddings.weight",
        "embedding.position_embedding.weight": "embeddings.position_embeddings.weight",
    }
    if config.type_vocab_size:
        table["embedding.token_type_embedding.weight"] = "embeddings.token_type_embeddings.weight"
    return table | _pairs("embedding.layer_norm", "embeddings.LayerNorm")


LAYER_PARTS = ("attention.attention.project_query", "attention.attention.project_key", "attention.attention.project_value",
               "attention.mlp", "attention.layer_norm", "residual.mlp1", "residual.mlp2", "residual.layer_norm")
BERT_LAYER = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
              "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")  # RoBERTa's, ELECTRA's
DISTILBERT_LAYER = ("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin", "sa_layer_norm",
                    "ffn.lin1", "ffn.lin2", "output_layer_norm")
ALBERT_LAYER = ("attention.query", "attention.key", "attention.value", "attention.dense", "attention.LayerNorm", "ffn",
                "ffn_output", "full_layer_layer_norm")


def _layer(ours: str, theirs: str, their_parts: tuple[str, ...]) -> Table:
    """One encoder layer: our LAYER_PARTS under `ours`, the family's parts (in the same order) under `theirs`."""
    table = {}
    for mine, their_part in zip(LAYER_PARTS, their_parts, strict=True):
        table |= _pairs(f"{ours}.{mine}", f"{theirs}.{their_part}")
    return table


def _bert_encoder(config: BertConfig) -> Table:
    return {k: v for i in range(config.num_layers) for k, v in _layer(f"transformer.{i}", f"encoder.layer.{i}", BERT_LAYER).items()}


def _mlm(dense: str, layer_norm: str, bias: str) -> Table:
    """The masked-LM head: its dense, its LayerNorm and the output bias (the output weight is the token embedding)."""
    return _pairs("lm_head.mlp", dense) | _pairs("lm_head.layer_norm", layer_norm) | {"lm_head.unembedding.bias": bias}


def _linear_heads(heads: Heads, pooler: str, nsp: str) -> Table:
    """The pooler, the two-way sentence head over it, and the classifier and tagger as single linear maps."""
    table = {}
    if heads.pooler:
        table |= _pairs("pooler.dense", pooler)
    if heads.nsp_head:
        table |= _pairs("nsp_head", nsp)
    if heads.classifier:
        table |= _pairs("classifier", "classifier")
    if heads.tagger:
        table |= _pairs("tagger", "classifier")
    return table


def _first_token_heads(heads: Heads, dense: str, out: str) -> Table:
    """The classifier over the first token (FirstTokenClassifier) and the tagger."""
    table = {}
    if heads.classifier:
        table |= _pairs("classifier.dense", dense) | _pairs("classifier.out_proj", out)
    if heads.tagger:
        table |= _pairs("tagger", "classifier")
    return table


def bert_table(config: BertConfig, heads: Heads) -> Table:
    """BertModel, BertForPreTraining, BertForMaskedLM, BertForNextSentencePrediction, BertFor{Sequence,Token}Classification."""
    table = _embeddings(config) | _bert_encoder(config)
    if heads.mlm_head:
        table |= _mlm("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias")
    return table | _linear_heads(heads, pooler="pooler.dense", nsp="cls.seq_relationship")


def roberta_table(config: BertConfig, heads: Heads) -> Table:
    """RobertaModel, RobertaForMaskedLM, RobertaFor{Sequence,Token}Classification (the sequence head:
    RobertaClassificationHead's dense and out_proj)."""
    table = _embeddings(config) | _bert_encoder(config)
    if heads.mlm_head:
        table |= _mlm("lm_head.dense", "lm_head.layer_norm", "lm_head.bias")
    if heads.pooler:
        table |= _pairs("pooler.dense", "pooler.dense")
    return table | _first_token_heads(heads, dense="classifier.dense", out="classifier.out_proj")


def distilbert_table(config: BertConfig, heads: Heads) -> Table:
    """DistilBertModel, DistilBertForMaskedLM, DistilBertFor{Sequence,Token}Classification (the sequence head:
    pre_classifier, then classifier)."""
    table = _embeddings(config)
    for i in range(config.num_layers):
        table |= _layer(f"transformer.{i}", f"transformer.layer.{i}", DISTILBERT_LAYER)
    if heads.mlm_head:
        table |= _mlm("vocab_transform", "vocab_layer_norm", "vocab_projector.bias")
    return table | _first_token_heads(heads, dense="pre_classifier", out="classifier")


def albert_table(config: BertConfig, heads: Heads) -> Table:
    """AlbertModel, AlbertForPreTraining (masked LM + sentence order), AlbertForMaskedLM,
    AlbertFor{Sequence,Token}Classification. Each group's inner layers (released checkpoints: one layer, group 0
    layer 0, for every depth)."""
    table = _embeddings(config) | _pairs("embedding.projection", "encoder.embedding_hidden_mapping_in")
    for group in range(config.layer_groups):
        for inner in range(config.layers_per_group):
            theirs = f"encoder.albert_layer_groups.{group}.albert_layers.{inner}"
            table |= _layer(shared_layer_path(config, group, inner), theirs, ALBERT_LAYER)
    if heads.mlm_head:
        table |= _mlm("predictions.dense", "predictions.LayerNorm", "predictions.bias")
    return table | _linear_heads(heads, pooler="pooler", nsp="sop_classifier.classifier")


def electra_table(config: BertConfig, heads: Heads) -> Table:
    """ElectraModel, ElectraForPreTraining (the discriminator), ElectraForMaskedLM (the generator),
    ElectraFor{Sequence,Token}Classification (the sequence head: ElectraClassificationHead's dense and out_proj)."""
    table = _embeddings(config) | _bert_encoder(config)
    if config.projects_embeddings:
        table |= _pairs("embedding.projection", "embeddings_project")
    if heads.mlm_head:
        table |= _mlm("generator_predictions.dense", "generator_predictions.LayerNorm", "generator_lm_head.bias")
    if heads.discriminator:
        table |= _pairs("discriminator.dense", "discriminator_predictions.dense")
        table |= _pairs("discriminator.prediction", "discriminator_predictions.dense_prediction")
    return table | _first_token_heads(heads, dense="classifier.dense", out="classifier.out_proj")


def _params(bias: bool) -> tuple[str, ...]:
    return ("weight", "bias") if bias else ("weight",)


def _chunks(ours: tuple[str, ...], theirs: str, bias: bool) -> Table:
    """Our modules `ours`, in order, as equal blocks of rows of the fused Linear `theirs`."""
    return {f"{mine}.{param}": chunk(f"{theirs}.{param}", index, len(ours))
            for index, mine in enumerate(ours) for param in _params(bias)}


def modernbert_table(config: BertConfig, heads: Heads) -> Table:
    """ModernBertModel, ModernBertForMaskedLM, ModernBertFor{Sequence,Token}Classification (Warner et al. 2024).
    Biases only where the config's norm_bias, attention_bias, mlp_bias, head_bias and decoder_bias say; layer 0
    has no attention LayerNorm (attn_norm is the identity there); the classifiers' dense and LayerNorm are the
    `head` that the masked-LM model also has, so a model with a task head saves that head and not the masked-LM's."""
    norm = _params(config.norm_bias)
    table = {"embedding.token_embedding.weight": "embeddings.tok_embeddings.weight"}
    table |= _pairs("embedding.layer_norm", "embeddings.norm", norm)
    for i in range(config.num_layers):
        ours, theirs = f"transformer.{i}", f"layers.{i}"
        projections = tuple(f"{ours}.attention.attention.project_{part}" for part in ("query", "key", "value"))
        table |= _chunks(projections, f"{theirs}.attn.Wqkv", config.attention_bias)
        table |= _pairs(f"{ours}.attention.mlp", f"{theirs}.attn.Wo", _params(config.attention_bias))
        if i > 0:
            table |= _pairs(f"{ours}.attention.layer_norm", f"{theirs}.attn_norm", norm)
        table |= _chunks((f"{ours}.residual.mlp1", f"{ours}.residual.gate"), f"{theirs}.mlp.Wi", config.mlp_bias)
        table |= _pairs(f"{ours}.residual.mlp2", f"{theirs}.mlp.Wo", _params(config.mlp_bias))
        table |= _pairs(f"{ours}.residual.layer_norm", f"{theirs}.mlp_norm", norm)
    table |= _pairs("final_norm.layer_norm", "final_norm", norm)

    def head(dense: str, layer_norm: str) -> Table:  # ModernBertPredictionHead: dense, activation, LayerNorm
        return _pairs(dense, "head.dense", _params(config.head_bias)) | _pairs(layer_norm, "head.norm", norm)

    if heads.mlm_head and not (heads.classifier or heads.tagger):  # one `head` per checkpoint: a task model's has none
        table |= head("lm_head.mlp", "lm_head.layer_norm")
        if config.decoder_bias:
            table["lm_head.unembedding.bias"] = "decoder.bias"
    for name, present in (("classifier", heads.classifier), ("tagger", heads.tagger)):
        if present:
            table |= head(f"{name}.dense", f"{name}.layer_norm") | _pairs(f"{name}.out_proj", "classifier")
    return table


DEBERTA_LAYER = ("attention.self.query_proj", "attention.self.key_proj", "attention.self.value_proj", "attention.output.dense",
                 "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")


def deberta_table(config: BertConfig, heads: Heads) -> Table:
    """DebertaV2Model, DebertaV2ForMaskedLM (its default, legacy head: BERT's `cls.predictions`),
    DebertaV2For{Sequence,Token}Classification (the sequence head: ContextPooler's dense, then `classifier`).
    The relative-position embeddings and their LayerNorm are the encoder's (He et al. 2021)."""
    table = {"embedding.token_embedding.weight": "embeddings.word_embeddings.weight"}
    if config.type_vocab_size:
        table["embedding.token_type_embedding.weight"] = "embeddings.token_type_embeddings.weight"
    table |= _pairs("embedding.layer_norm", "embeddings.LayerNorm")
    table |= {"relative_positions.embedding.weight": "encoder.rel_embeddings.weight"}
    table |= _pairs("relative_positions.layer_norm", "encoder.LayerNorm")
    for i in range(config.num_layers):
        table |= _layer(f"transformer.{i}", f"encoder.layer.{i}", DEBERTA_LAYER)
    if heads.mlm_head:
        table |= _mlm("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias")
    return table | _first_token_heads(heads, dense="pooler.dense", out="classifier")


@dataclass(frozen=True)
class Family:
    """What loading and saving need to know of a family besides its key table."""

    prefix: str  # the base model's attribute in Hugging Face's task models ("roberta")
    class_prefix: str  # the transformers class names' start ("Roberta")
    table: Callable[[BertConfig, Heads], Table]
    head_keys: dict[str, str]  # head -> the tensor whose presence says a checkpoint has it
    # tensors a checkpoint may carry that hold nothing of their own: buffers (None) and the tied output layer
    # (-> the tensor it equals: the token embedding, or the output bias)
    derived: dict[str, str | None]
    sequence_key: str | None = None  # the tensor that only a sequence classifier has (None: config.json says)
    sequence_out: str = "classifier.weight"  # the sequence classifier's last weight (its rows: the labels)
    # the masked-LM head's tensors are named as the classifiers' (ModernBERT's `head`): with a task head, no MLM head
    head_shared: bool = False
    # the checkpoint keys that sit under the base model's prefix in a task model (DeBERTa's ContextPooler, `pooler.`, does not)
    base_parts: tuple[str, ...] = ()
    # tensors (key prefixes) the family's released checkpoints carry that no transformers class reads either: skipped
    # by name, everything else stays strict
    unread: tuple[str, ...] = ()


_BUFFERS = {"embeddings.position_ids": None, "embeddings.token_type_ids": None}
WORDS = "embeddings.word_embeddings.weight"
FAMILIES = {
    "bert": Family(
        "bert", "Bert", bert_table,
        {"mlm_head": "cls.predictions.transform.dense.weight", "nsp_head": "cls.seq_relationship.weight", "pooler": "pooler.dense.weight"},
        _BUFFERS | {"cls.predictions.decoder.weight": WORDS, "cls.predictions.decoder.bias": "cls.predictions.bias"},
    ),
    "roberta": Family(
        "roberta", "Roberta", roberta_table,
        {"mlm_head": "lm_head.dense.weight", "pooler": "pooler.dense.weight"},
        _BUFFERS | {"lm_head.decoder.weight": WORDS, "lm_head.decoder.bias": "lm_head.bias"},
        sequence_key="classifier.out_proj.weight", sequence_out="classifier.out_proj.weight",
    ),
    "distilbert": Family(
        "distilbert", "DistilBert", distilbert_table,
        {"mlm_head": "vocab_transform.weight"},
        _BUFFERS | {"vocab_projector.weight": WORDS},
        sequence_key="pre_classifier.weight",
    ),
    "albert": Family(
        "albert", "Albert", albert_table,
        {"mlm_head": "predictions.dense.weight", "nsp_head": "sop_classifier.classifier.weight", "pooler": "pooler.weight"},
        _BUFFERS | {"predictions.decoder.weight": WORDS, "predictions.decoder.bias": "predictions.bias"},
    ),
    "electra": Family(
        "electra", "Electra", electra_table,
        {"mlm_head": "generator_predictions.dense.weight", "discriminator": "discriminator_predictions.dense.weight"},
        _BUFFERS | {"generator_lm_head.weight": WORDS},
        sequence_key="classifier.out_proj.weight", sequence_out="classifier.out_proj.weight",
    ),
    "modernbert": Family(
        "model", "ModernBert", modernbert_table,
        {"mlm_head": "head.dense.weight"},
        {"decoder.weight": WORDS},
        head_shared=True,
    ),
    "deberta-v2": Family(
        "deberta", "DebertaV2", deberta_table,
        {"mlm_head": "cls.predictions.transform.dense.weight"},
        _BUFFERS | {"cls.predictions.decoder.weight": WORDS, "cls.predictions.decoder.bias": "cls.predictions.bias"},
        sequence_key="pooler.dense.weight", base_parts=("embeddings.", "encoder."),
        # microsoft/deberta-v3-base's pytorch_model.bin: the original training code's heads (a masked-LM head and the
        # replaced-token detector, He et al. 2023) and a position table that position_biased_input false leaves unused
        unread=("lm_predictions.lm_head.", "mask_predictions.", "embeddings.position_embeddings.weight"),
    ),
}
# under the prefix
BASE_MODEL_PARTS = ("embeddings.", "embeddings_project.", "encoder.", "transformer.", "pooler.", "layers.", "final_norm.")
