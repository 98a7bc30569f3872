"""CamemBERT (Martin et al. 2020): RoBERTa's tree and checkpoint names trained on French text (OSCAR) with a
SentencePiece vocabulary of 32,005 pieces ("▁" starts a word). Everything but its model_type, its transformers
classes, its paper and its piece marker is RoBERTa's (bert/families/roberta.py), as for XLM-RoBERTa."""
from __future__ import annotations

import dataclasses

from . import roberta
from .family import Heads, Table


def table(config, heads: Heads) -> Table:
    """RoBERTa's key table: CamembertForMaskedLM and its kin name every tensor as RobertaForMaskedLM does."""
    return roberta.table(config, heads)


FAMILY = dataclasses.replace(
    roberta.FAMILY, table=table, model_type="camembert", class_prefix="Camembert", piece_marker="▁",
    paper="Martin et al. 2020, CamemBERT: a Tasty French Language Model",
)
