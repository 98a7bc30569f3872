"""Head statistics over a corpus (Clark et al. 2019, "What Does BERT Look At?", section 3).

For every layer and head: the average share of attention to [CLS], to [SEP], to punctuation (periods and commas
among it), to the previous and the next token, to itself, and the attention entropy, averaged over every query
token of a sentence set. The per-input statistics are `attention_stats.head_statistics`; this module runs the
model over many inputs and merges them with `attention_stats.combine` (a mean over all queries of the corpus).

Clark et al. fed BERT-base pairs of Wikipedia segments ([CLS] A [SEP] B [SEP]); by default we pair consecutive
sentences of the set the same way. `CLARK_2019` lists their published findings and `clark_2019_reference()` their
Figure 2's per-layer values (bert/data/clark2019_reference.csv), for drawing beside ours when the loaded model is
BERT-base.
"""
from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from ...data import LabelledSentence
from ...devices import as_numpy, model_device
from ...costs import Cost
from ...errors import InvalidInputError
from ...layers import from_one_based
from ...model import Bert
from ...tokenizer import BertTokenizer
from .attention_stats import HeadStatistics, KeyRoles, combine, head_statistics
from ..corpus.batching import batches, batches_cost, pad, record_encoder


@dataclass(frozen=True)
class PublishedFinding:
    statistic: str  # a key of attention_stats.STATISTICS
    paper_layers: tuple[int, ...]  # as the paper counts them, from 1
    claim: str  # in this project's numbering (bert/layers.py), saying the paper's where it quotes a number

    @property
    def layers(self) -> tuple[int, ...]:
        """The paper's layers in this project's numbering (from 0)."""
        return tuple(from_one_based(layer) for layer in self.paper_layers)


# Clark, Khandelwal, Levy & Manning (2019), BlackboxNLP, section 3 and figure 2, for BERT-base (uncased). The paper
# counts layers from 1; the claims below count from 0, as everything here does.
CLARK_2019 = (
    PublishedFinding("sep", (6, 7, 8, 9, 10), "more than half of the attention in layers 5-9 goes to [SEP] (the paper's layers 6-10, counted from 1)"),
    PublishedFinding("cls", (1, 2, 3), "early layers' heads attend to [CLS] more than later ones"),
    PublishedFinding("punctuation", (10, 11, 12), "heads in the last layers attend much to periods and commas"),
    PublishedFinding("previous", (1, 2, 3, 4), "previous-token heads (over half their attention on the previous token) are found mainly in early layers"),
    PublishedFinding("next", (1, 2, 3, 4), "next-token heads (over half their attention on the next token) are found mainly in early layers"),
)
CLARK_2019_SOURCE = 'Clark et al. 2019, "What Does BERT Look At? An Analysis of BERT\'s Attention", BlackboxNLP'


CLARK_2019_FILE = Path(__file__).resolve().parents[2] / "data" / "clark2019_reference.csv"


@dataclass(frozen=True)
class PublishedValues:
    """Clark et al. 2019's Figure 2 for one statistic, indexed by layer from 0 (the paper's layer 1 is [0]; NaN where
    the figure shows no value)."""

    statistic: str  # a key of attention_stats.STATISTICS
    layer_mean: np.ndarray | None  # [layer] the mean over the layer's heads; None where the paper drew no mean
    strongest_head: np.ndarray  # [layer] the layer's highest single head


@functools.lru_cache(maxsize=1)
def clark_2019_reference() -> dict[str, PublishedValues]:
    """statistic -> its published BERT-base values (read-only arrays), from bert/data/clark2019_reference.csv."""
    rows: dict[str, dict[str, np.ndarray]] = {}
    with CLARK_2019_FILE.open(encoding="utf-8") as file:
        for row in csv.DictReader(line for line in file if not line.startswith("#")):
            values = np.array([float(row[f"L{layer}"] or "nan") for layer in range(1, 13)])
            values.flags.writeable = False
            rows.setdefault(row["statistic"], {})[row["measure"]] = values
    return {name: PublishedValues(name, measures.get("layer_mean"), measures["strongest_head"]) for name, measures in rows.items()}


def is_bert_base(model: Bert) -> bool:
    """True for the shape of BERT-base (12 layers, 12 heads, hidden 768), where the published numbers apply."""
    config = model.config
    return (config.num_layers, config.num_heads, config.hidden_size) == (12, 12, 768)


def _inputs(tokenizer: BertTokenizer, sentences: Sequence[LabelledSentence], pairs: bool, max_tokens: int) -> list:
    """The model's inputs: consecutive sentences as A and B (pairs), or each sentence alone, cut to max_tokens."""
    if not sentences:
        raise InvalidInputError("head statistics need at least one sentence")
    if pairs and len(sentences) >= 2:
        return [tokenizer.encode(a.text, b.text, max_length=max_tokens, truncate=True)
                for a, b in zip(sentences[0::2], sentences[1::2])]
    return [tokenizer.encode(s.text, max_length=max_tokens, truncate=True) for s in sentences]


def head_statistics_cost(tokenizer: BertTokenizer, sentences: Sequence[LabelledSentence], max_positions: int,
                         pairs: bool = True, max_tokens: int = 128, batch_size: int = 32) -> Cost:
    """The passes `corpus_head_statistics` makes over these sentences, before it starts (max_positions: the
    model's longest input)."""
    encodings = _inputs(tokenizer, sentences, pairs, min(max_tokens, max_positions))
    return batches_cost([len(e) for e in encodings], batch_size, ("the number of sentences",))


@torch.no_grad()
def corpus_head_statistics(
    model: Bert,
    tokenizer: BertTokenizer,
    sentences: Sequence[LabelledSentence],
    pairs: bool = True,
    max_tokens: int = 128,
    batch_size: int = 32,
    progress: Callable[[float, str], None] | None = None,
) -> HeadStatistics:
    """Statistics of every head, [layer, head] each, averaged over all query tokens of the sentences.

    pairs: feed consecutive sentences as A and B (as Clark et al. did); else each sentence alone. max_tokens: each
    input is cut to this many tokens (at most the model's positions), as the page says.
    Special tokens are queries too, as in the paper; padding is never a query nor a key.
    """
    encodings = _inputs(tokenizer, sentences, pairs, min(max_tokens, model.config.max_position_embeddings))
    results = []
    for done, batch in enumerate(batches(encodings, batch_size)):
        if progress:
            progress(done * batch_size / len(encodings), "running the model")
        chosen = [encodings[i] for i in batch]
        input_ids, token_type_ids, attention_mask = pad(chosen, tokenizer.pad_id, model_device(model))
        cache = record_encoder(model, input_ids, token_type_ids, attention_mask, [], stacked=("pattern",))
        patterns = as_numpy(cache.stack("pattern"))  # [layer, batch, head, query, key]
        for row, encoding in enumerate(chosen):
            n = len(encoding)
            roles = KeyRoles.from_special(encoding.tokens, encoding.special)
            results.append(head_statistics(patterns[:, row, :, :n, :n], roles))
    if progress:
        progress(1.0, "done")
    return combine(results)


def top_heads(statistics: HeadStatistics, name: str, count: int = 5) -> list[tuple[int, int, float]]:
    """(layer, head, value) of the `count` heads with the highest mean of statistic `name`, layers from 0."""
    values = np.nan_to_num(statistics[name], nan=-np.inf)
    order = np.argsort(-values, axis=None, kind="stable")[:count]
    heads = values.shape[1]
    return [(int(i) // heads, int(i) % heads, float(values.flat[i])) for i in order]
