"""Kobayashi et al. 2020 (section 4.2, figure 2) with bert-base-uncased: in the middle layers [SEP] and punctuation
get large attention weights but small norms ‖αf(x)‖. Runs where bert-base-uncased is in the local Hugging Face
cache (`python -m bert download bert-base-uncased`, once, online); skipped otherwise."""
from __future__ import annotations

import numpy as np
import pytest

from bert.analysis.attention.mixing import context_mixing, record_for_mixing
from bert.hub import cached_folder
from bert_test_support import SENTENCES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bert_base():
    if cached_folder("bert-base-uncased") is None:
        pytest.skip("bert-base-uncased is not in the local Hugging Face cache (python -m bert download bert-base-uncased)")
    import bert

    return bert.load_pretrained("bert-base-uncased")


def test_sep_and_punctuation_get_large_weights_but_small_norms_in_the_middle_layers(bert_base):
    """Share of each query's row that goes to [SEP] and punctuation, averaged over layers 3-8 (of 0-11) and the
    sentences: the attention weights give it much more than the norms (rows of norms normalised to sum to 1)."""
    model, tokenizer = bert_base
    weight_shares, norm_shares = [], []
    for sentence in SENTENCES[:8]:
        encoding = tokenizer.encode(sentence)
        _, cache = record_for_mixing(model, *encoding.tensors())
        special = np.array([token == "[SEP]" or (len(token) == 1 and not token.isalnum()) for token in encoding.tokens])
        weights = context_mixing(model, cache, "attention").layers[3:9]
        norms = context_mixing(model, cache, "norm").layers[3:9]
        norms = norms / norms.sum(-1, keepdims=True)
        weight_shares.append(weights[..., special].sum(-1).mean())
        norm_shares.append(norms[..., special].sum(-1).mean())
    assert np.mean(weight_shares) > 0.3  # the weights' well-known pull to [SEP] and punctuation (Clark et al. 2019)
    assert np.mean(norm_shares) < 0.5 * np.mean(weight_shares)
