"""A local layer's window on the attention page (ModernBERT, Warner et al. 2024; sliding-window attention as in
Beltagy et al. 2020): the pattern heatmap greys the query-key pairs outside `bert.attention.window_band` in a local
layer and draws no band in a global one. On a tiny ModernBERT built by transformers' own class (local_attention 8:
each token sees 4 on each side; layers 0 and 3 global) and a sentence longer than the window, the grey cells are
exactly where the pattern (as transformers' eager attention draws it) is zero, and the caption says which layers
are local."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from app_helpers import HOME, TIMEOUT, array, figures, go, no_exception, texts
from bert.attention import window_band
from families.family_support import build_hf, write_tiny_tokenizer
from viz_app.charts.attention import OUTSIDE_WINDOW, pattern_heatmap

SENTENCE = "the dog barked at the cat and the man went to the park with the [MASK]."


def _outside(figure: dict) -> list[dict]:
    return [trace for trace in figure["data"] if trace.get("name") == OUTSIDE_WINDOW]


def test_the_heatmap_greys_exactly_the_pairs_outside_the_band():
    seq, window = 11, 2
    pattern = np.random.default_rng(0).random((seq, seq))
    tokens = [f"t{i}" for i in range(seq)]
    band = window_band(seq, window).numpy()
    figure = pattern_heatmap(pattern, tokens, list(range(seq)), 1, 0, band=band).figure.to_plotly_json()
    (grey,) = _outside(figure)
    np.testing.assert_array_equal(~np.isnan(array(grey["z"]).astype(float)), ~band)
    assert array(grey["z"]).astype(float)[0, seq - 1] == 1  # the first token cannot reach the last
    # without [CLS] (position 0): the band restricted to the positions shown
    shown = list(range(1, seq))
    figure = pattern_heatmap(pattern, tokens, shown, 1, 0, band=band).figure.to_plotly_json()
    np.testing.assert_array_equal(~np.isnan(array(_outside(figure)[0]["z"]).astype(float)), ~band[1:, 1:])
    assert not _outside(pattern_heatmap(pattern, tokens, shown, 0, 0).figure.to_plotly_json())


@pytest.fixture(scope="module")
def modernbert(tmp_path_factory, tiny_vocab_file):
    """(the saved folder, transformers' eager attentions [layer][head, query, key] on SENTENCE's ids)."""
    import bert

    folder = tmp_path_factory.mktemp("modernbert")
    theirs = build_hf("modernbert", "ModernBertForMaskedLM", max_position_embeddings=256)
    theirs.save_pretrained(folder)
    write_tiny_tokenizer(folder, tiny_vocab_file)
    _, tokenizer = bert.load_pretrained(str(folder))
    ids = torch.tensor([tokenizer.encode(SENTENCE).input_ids])
    with torch.no_grad():
        attentions = theirs(input_ids=ids, output_attentions=True).attentions
    return folder, [layer[0].numpy() for layer in attentions]


@pytest.mark.slow  # the app on a model, four times
@pytest.mark.parametrize("layer,window", [(1, 4), (2, 4), (0, None), (3, None)])
def test_the_attention_page_draws_a_local_layers_window(modernbert, layer, window):
    from streamlit.testing.v1 import AppTest

    modernbert_folder, reference = modernbert
    at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
    at.query_params.update({"model": str(modernbert_folder), "text": SENTENCE, "layer": str(layer)})
    at.run()
    go(at, "attention")
    no_exception(at)
    pattern = next(figure for figure in figures(at) if figure["layout"]["title"]["text"].startswith(f"Layer {layer}, head 0"))
    attention = array(pattern["data"][0]["z"]).astype(float)
    seq = attention.shape[0]
    np.testing.assert_allclose(attention, reference[layer][0], atol=1e-5)  # head 0 as transformers draws it
    shown = texts(at)
    if window is None:
        assert not _outside(pattern) and "is local" not in shown
        assert (attention[~window_band(seq, 4).numpy()] > 0).any()  # a global layer looks past the window
        return
    assert seq > 2 * window + 1  # the sentence is longer than the window
    band = window_band(seq, window).numpy()
    (grey,) = _outside(pattern)
    np.testing.assert_array_equal(~np.isnan(array(grey["z"]).astype(float)), ~band)
    assert (attention[~band] == 0).all() and (attention[band] > 0).all()  # grey exactly where nothing is taken
    assert f"Layer {layer} is local: each token sees only the {window} tokens on each side" in shown
