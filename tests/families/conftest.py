"""The family tests save transformers' checkpoints with the tiny WordPiece vocabulary; its special tokens are
BERT's, so the folder says so by role (special_tokens_map.json), whatever the family."""
from __future__ import annotations

from pathlib import Path

import pytest

from family_support import write_tiny_tokenizer


@pytest.fixture
def save_hf_model(tmp_path, tiny_vocab_file):
    """save(model, name) -> folder: save_pretrained, plus the tiny vocab.txt and its special tokens by role."""

    def save(model, name: str = "hf_model", **save_kwargs) -> Path:
        folder = tmp_path / name
        model.save_pretrained(folder, **save_kwargs)
        write_tiny_tokenizer(folder, tiny_vocab_file)
        return folder

    return save
