"""What one family of BERT is, as a value: `Family`, which each module of bert/families/ fills in for its family
and bert/families/registry.py lists. The model (bert/model.py), the loader and saver (bert/checkpoint.py), the
config (bert/config.py), the tokenizer (bert/tokenizer.py) and the app read a family only through it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .tables import MaskedLM

Table = dict[str, str]  # ours -> Hugging Face's name, one line per tensor (bert/families/tables.py)


@dataclass(frozen=True)
class Heads:
    """Which heads a model has, as the key tables and Bert's constructor name them."""

    mlm_head: bool = False
    pooler: bool = False
    nsp_head: bool = False
    classifier: bool = False
    tagger: bool = False
    discriminator: bool = False


def _no_sized_differences(fields: dict) -> dict:
    return {}


@dataclass(frozen=True)
class Family:
    """Everything that is one family's: BertConfig's fields it sets, its config.json, its checkpoint names, its
    transformers classes, its tokenizer's defaults and its paper."""

    model_type: str  # Hugging Face's config.json model_type, and BertConfig.family
    paper: str  # the paper that introduced it
    # BertConfig fields the family sets besides its sizes (what BertConfig.of_family applies)
    differences: dict
    # config.json (a dict) -> BertConfig's fields; and back (BertConfig -> config.json without model_type)
    read_config: Callable[[dict], dict]
    write_config: Callable[[object], dict]
    table: Callable[[object, Heads], Table]  # (config, heads) -> the key table
    prefix: str  # the base model's attribute in Hugging Face's task models ("roberta")
    class_prefix: str  # the transformers class names' start ("Roberta")
    # tensors a checkpoint may carry that hold nothing of their own: buffers (None) and the tied output layer
    # (-> the tensor it equals: the token embedding, or the output bias; the masked-LM head's: from `masked_lm`)
    derived: dict[str, str | None]
    special_tokens: dict[str, str]  # the tokenizer's special tokens by role, where its folder does not say
    piece_marker: str  # how its tokenizer marks pieces: "##" continues a word (WordPiece), "Ġ" or "▁" starts one; "": none (characters)
    # BertConfig fields that follow from the sizes given (RoBERTa's position_offset from pad_token_id)
    sized_differences: Callable[[dict], dict] = _no_sized_differences
    token_types: int = 1  # segments its tokenizer gives where config.json does not say (BERT's: 2)
    sequence_key: str | None = None  # the tensor that only a sequence classifier has (None: config.json says)
    sequence_out: str = "classifier.weight"  # the sequence classifier's last weight (its rows: the labels)
    # the masked-LM head's tensors are named as the classifiers' (ModernBERT's `head`): with a task head, no MLM head
    head_shared: bool = False
    # the checkpoint keys that sit under the base model's prefix in a task model (BERT's: embeddings, encoder, pooler)
    base_parts: tuple[str, ...] = ("embeddings.", "encoder.", "pooler.")
    # tensors (key prefixes, or key endings such as a buffer's in every layer) the family's released checkpoints carry
    # that no model here reads: skipped by name, everything else stays strict
    unread: tuple[str, ...] = ()
    characters: bool = False  # its vocab.txt lists single characters (ESM's amino acids), read as such, not as WordPiece
    discriminator: bool = False  # it has a replaced-token head (output "replaced"), saved as {class_prefix}ForPreTraining
    sentence_order: bool = False  # its two-way sentence head says whether A and B are in order, not whether B follows A
    # the transformers class of a model with a sentence head and no masked-LM head ("ForNextSentencePrediction")
    sentence_head_alone: str = "ForNextSentencePrediction"
    first_position: Callable[[dict], int] = field(default=lambda hf: 0)  # config.json -> rows of the position table no token reads
    # where its checkpoints keep the masked-LM head (bert/families/tables.py), which its `table` also reads; None: its
    # table names the head itself (ModernBERT's `head`, shared with the classifiers)
    masked_lm: MaskedLM | None = None
    # head -> the tensor whose presence says a checkpoint has it (the masked-LM head's: from `masked_lm`)
    head_keys: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if self.masked_lm is not None:  # the head's names, written once in `masked_lm`
            object.__setattr__(self, "head_keys", {"mlm_head": self.masked_lm.key, **self.head_keys})
            object.__setattr__(self, "derived", {**self.derived, **self.masked_lm.tied})

    def longest_input(self, hf: dict) -> int:
        """The longest input a config.json allows: its position table less the rows no token reads."""
        return int(hf.get("max_position_embeddings", 512)) - self.first_position(hf)

    def config_fields(self, sizes: dict) -> dict:
        """BertConfig's fields for a model of this family with these sizes (and any other field given)."""
        return {"family": self.model_type, **self.differences, **self.sized_differences(sizes), **sizes}
