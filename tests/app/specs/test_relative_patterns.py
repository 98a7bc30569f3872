"""The app's recorded pass (viz_app/app/forward.py) on DeBERTa-v3 (He et al. 2021): its scores add relative-position
terms that q and k alone do not give, so the patterns the pages draw are the recorded ones; they equal
transformers' attentions on the same random weights (eager attention, the implementation that returns them)."""
from __future__ import annotations

import numpy as np
import torch

import bert
from families.family_support import build_hf, write_tiny_tokenizer
from viz_app.app.forward import patterns_of, prepare_input, record


def test_deberta_patterns_are_transformers_attentions(tmp_path, tiny_vocab_file):
    theirs = build_hf("deberta-v2", "DebertaV2ForMaskedLM")
    theirs.save_pretrained(tmp_path)
    write_tiny_tokenizer(tmp_path, tiny_vocab_file)
    model, tokenizer = bert.load_pretrained(str(tmp_path))
    text = "the dog barked at the [MASK] and the cat went to the park because the dog was loud ."
    prepared = prepare_input(tokenizer, text, None, [], False, model.config.max_position_embeddings)
    result = record(model, tokenizer, prepared)
    ids = torch.tensor([prepared.masked.input_ids])
    with torch.no_grad():
        attentions = theirs(input_ids=ids, output_attentions=True).attentions
    expected = np.stack([attention[0].numpy() for attention in attentions])
    assert len(prepared.masked.input_ids) > 2 * model.config.position_buckets  # the log buckets are used
    np.testing.assert_allclose(result.attention, expected, atol=1e-5, rtol=1e-5)
    # q and k alone miss the position terms: recomputing from them would draw other patterns
    assert not np.allclose(patterns_of(result.queries, result.keys), expected, atol=1e-3)
