"""Key-table helpers: the pieces of the checkpoint names that several families share.

Hugging Face names are written without the base model's prefix (`bert.`, `roberta.`, ...), which task models put
before the encoder's tensors and bare encoders do not (bert/checkpoint.py removes it on reading and adds it on
writing). Each family's own table is in its module.

Where a checkpoint fuses tensors that our modules keep apart (ModernBERT's Wqkv holds q, k and v; its Wi the
MLP's input and gate), the table names one block of rows of it: `chunk("layers.0.attn.Wqkv.weight", 1, 3)`, the
key's second third (`split_key` reads it back); loading cuts the tensor, saving joins the blocks in order.
"""
from __future__ import annotations

from dataclasses import dataclass

from .family import Heads, Table

# Our names for one encoder layer's tensors, in the order a family's own layer names are listed.
LAYER_PARTS = ("attention.attention.project_query", "attention.attention.project_key", "attention.attention.project_value",
               "attention.mlp", "attention.layer_norm", "residual.mlp1", "residual.mlp2", "residual.layer_norm")
# BERT's names for them (Devlin et al. 2019's released checkpoints, kept by the families that reuse BERT's code)
BERT_LAYER = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
              "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")
BUFFERS = {"embeddings.position_ids": None, "embeddings.token_type_ids": None}  # tensors that are buffers, not weights
WORDS = "embeddings.word_embeddings.weight"  # the token embedding, which a tied decoder equals


def pairs(ours: str, theirs: str, params: tuple[str, ...] = ("weight", "bias")) -> Table:
    return {f"{ours}.{param}": f"{theirs}.{param}" for param in params}


def params(bias: bool) -> tuple[str, ...]:
    return ("weight", "bias") if bias else ("weight",)


def chunk(key: str, index: int, count: int) -> str:
    """Block `index` of `count` equal blocks of rows of the checkpoint's tensor `key`: "key[index/count]"."""
    return f"{key}[{index}/{count}]"


def chunks(ours: tuple[str, ...], theirs: str, bias: bool) -> Table:
    """Our modules `ours`, in order, as equal blocks of rows of the fused Linear `theirs`."""
    return {f"{mine}.{param}": chunk(f"{theirs}.{param}", index, len(ours))
            for index, mine in enumerate(ours) for param in params(bias)}


def split_key(theirs: str) -> tuple[str, int, int]:
    """(checkpoint key, block index, block count) of a table entry; (key, 0, 1) for a whole tensor."""
    if not theirs.endswith("]") or "[" not in theirs:
        return theirs, 0, 1
    key, block = theirs[:-1].rsplit("[", 1)
    index, count = block.split("/")
    return key, int(index), int(count)


def bert_embeddings(config, positions: bool = True) -> Table:
    """BERT's embedding names (without the position table where a family has none)."""
    table = {"embedding.token_embedding.weight": WORDS}
    if positions:
        table["embedding.position_embedding.weight"] = "embeddings.position_embeddings.weight"
    if config.type_vocab_size:
        table["embedding.token_type_embedding.weight"] = "embeddings.token_type_embeddings.weight"
    return table | pairs("embedding.layer_norm", "embeddings.LayerNorm")


def layer(ours: str, theirs: str, their_parts: tuple[str, ...]) -> Table:
    """One encoder layer: our LAYER_PARTS under `ours`, the family's parts (in the same order) under `theirs`."""
    table = {}
    for mine, their_part in zip(LAYER_PARTS, their_parts, strict=True):
        table |= pairs(f"{ours}.{mine}", f"{theirs}.{their_part}")
    return table


def encoder(config, theirs: str, their_parts: tuple[str, ...] = BERT_LAYER) -> Table:
    """Every layer: ours `transformer.{i}`, theirs `{theirs}.{i}`."""
    return {k: v for i in range(config.num_layers) for k, v in layer(f"transformer.{i}", f"{theirs}.{i}", their_parts).items()}


@dataclass(frozen=True)
class MaskedLM:
    """Where a family's checkpoints keep the masked-LM head (transformers' BertLMPredictionHead and its kin): the
    transform's dense and LayerNorm, the output bias, and the output layer, whose weight is the token embedding
    (tied) and whose bias, where it has one of its own name, equals `bias`. One place for these names: the key
    table, the tensor that says a checkpoint has the head, and the tied tensors all read them."""

    dense: str
    layer_norm: str
    bias: str
    decoder: str

    def table(self, heads: Heads) -> Table:
        """Its key table, for a model that has it (`heads.mlm_head`); else none."""
        if not heads.mlm_head:
            return {}
        return pairs("lm_head.mlp", self.dense) | pairs("lm_head.layer_norm", self.layer_norm) | {"lm_head.unembedding.bias": self.bias}

    @property
    def key(self) -> str:
        """The tensor whose presence says a checkpoint has the head."""
        return f"{self.dense}.weight"

    @property
    def tied(self) -> dict[str, str]:
        """The output layer's tensors, which hold nothing of their own (the token embedding; the output bias)."""
        tied = {f"{self.decoder}.weight": WORDS}
        if f"{self.decoder}.bias" != self.bias:
            tied[f"{self.decoder}.bias"] = self.bias
        return tied


def linear_heads(heads: Heads, pooler: str, nsp: str) -> Table:
    """The pooler, the two-way sentence head over it, and the classifier and tagger as single linear maps."""
    table = {}
    if heads.pooler:
        table |= pairs("pooler.dense", pooler)
    if heads.nsp_head:
        table |= pairs("nsp_head", nsp)
    if heads.classifier:
        table |= pairs("classifier", "classifier")
    if heads.tagger:
        table |= pairs("tagger", "classifier")
    return table


def first_token_heads(heads: Heads, dense: str, out: str) -> Table:
    """The classifier over the first token (FirstTokenClassifier) and the tagger."""
    table = {}
    if heads.classifier:
        table |= pairs("classifier.dense", dense) | pairs("classifier.out_proj", out)
    if heads.tagger:
        table |= pairs("tagger", "classifier")
    return table
