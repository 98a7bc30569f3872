"""Loaded models for the lesson tests: the built-in minilm, and a small random BERT of another shape (3 layers of
4 heads) on the same vocabulary, so that every lesson is checked on two models that disagree about every head."""
from __future__ import annotations

import pytest
import torch

from bert.pretrained import MINILM_HEAD_FILE


@pytest.fixture(scope="session")
def loaded_minilm(minilm_path):
    if not MINILM_HEAD_FILE.is_file():
        pytest.skip(f"{MINILM_HEAD_FILE} (MiniLM's MLM head) is not there")
    from viz_app.app import models

    return models.load(models.ModelKey.of("minilm"))


@pytest.fixture(scope="session")
def loaded_small(minilm):
    """A random BERT with every head (MLM, NSP), 3 layers of 4 heads, on MiniLM's tokenizer."""
    from bert import Bert, BertConfig
    from bert_test_support import randomize_
    from viz_app.app import models

    _, tokenizer = minilm
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=3, num_heads=4,
                        intermediate_size=48, max_position_embeddings=128)
    torch.manual_seed(0)
    model = randomize_(Bert(config, mlm_head=True, pooler=True, nsp_head=True), seed=3).eval()
    return models.LoadedModel(models.ModelKey("small-random"), model, tokenizer, models.summarize(model))
