"""RoBERTa, DistilBERT, ALBERT and ELECTRA against `transformers` on the same random weights: each family's
checkpoint, saved by transformers, loads through bert.load_pretrained (config.json's model_type picks the family)
and gives the same logits, hidden states and attention patterns within 1e-5, in a padded batch."""
from __future__ import annotations

import pytest
import torch

import bert
from family_support import ARCHITECTURES, build_hf, compare, family_batch


@pytest.mark.parametrize("family,architecture", ARCHITECTURES, ids=[name for _, name in ARCHITECTURES])
def test_checkpoint_loads_and_matches_transformers(family, architecture, save_hf_model):
    theirs = build_hf(family, architecture, **({"num_labels": 2} if architecture == "AlbertForPreTraining" else {}))  # the SOP head
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    assert ours.config.family == family
    compare(ours, theirs, family, architecture, family_batch(family))
