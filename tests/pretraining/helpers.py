"""Plain helpers for the pre-training tests: tiny, fast models and corpus files (imported, not fixtures)."""
from __future__ import annotations

import torch

from bert import Bert, BertConfig


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
