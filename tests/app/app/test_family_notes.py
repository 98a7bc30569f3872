"""The sidebar's notes on a model built unlike BERT's layers (viz_app/app/models.py's family_notes) say what its
config has, never what another family's has: rotary positions with or without segments and pre-norm, RMSNorm and
grouped-query attention."""
from __future__ import annotations

from bert import BertConfig
from viz_app.app.models import family_notes

SIZES = dict(hidden_size=32, num_layers=2, num_heads=4, intermediate_size=40, vocab_size=100, max_position_embeddings=64)


def test_each_note_follows_the_config():
    assert family_notes(BertConfig(**SIZES)) == []
    modern = " ".join(family_notes(BertConfig.of_family("modernbert", **SIZES, pad_token_id=0)))
    assert "no segment embeddings" in modern and "(pre-norm)" in modern and "RMSNorm" not in modern
    gte = " ".join(family_notes(BertConfig.of_family("gte", **SIZES, pad_token_id=0)))  # post-LN, one segment
    assert "Positions rotated into q and k" in gte and "segment" not in gte and "pre-norm" not in gte
    euro = " ".join(family_notes(BertConfig.of_family("eurobert", **SIZES, key_value_heads=2, pad_token_id=0)))
    assert "RMSNorm in place of LayerNorm" in euro and "every 2 heads share one key and one value head, 2 of each" in euro
