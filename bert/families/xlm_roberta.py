"""XLM-RoBERTa (Conneau et al. 2020): RoBERTa's tree and checkpoint names, trained on text in 100 languages with a
SentencePiece unigram vocabulary of 250,002 pieces (Kudo 2018; "▁" starts a word) in place of the byte-level BPE.
Everything but its model_type, its transformers classes, its paper and its piece marker is RoBERTa's
(bert/families/roberta.py): config.json, the key table, positions counted after the padding index, the heads."""
from __future__ import annotations

import dataclasses

from . import roberta
from .family import Heads, Table


def table(config, heads: Heads) -> Table:
    """RoBERTa's key table: XLMRobertaForMaskedLM and its kin name every tensor as RobertaForMaskedLM does."""
    return roberta.table(config, heads)


FAMILY = dataclasses.replace(
    roberta.FAMILY, table=table, model_type="xlm-roberta", class_prefix="XLMRoberta", piece_marker="▁",
    paper="Conneau et al. 2020, Unsupervised Cross-lingual Representation Learning at Scale",
)
