"""Words, not word pieces, on the attention, MLP and saliency pages (the `units` link parameter), through Home.py:
each word-level figure against Clark et al. 2019's merge written out word by word on the same page's piece-level
figure."""
from __future__ import annotations

import numpy as np
import pytest

from app_helpers import array, as_read, figures, no_exception

pytestmark = pytest.mark.slow  # every test here runs the app

TEXT = "The unbelievably tall giraffe nibbled eucalyptus leaves."


def piece_groups(tokens: list[str]) -> list[list[int]]:
    """Word by word from the pieces' spelling: a "##" piece continues the word before it."""
    groups: list[list[int]] = []
    for position, token in enumerate(tokens):
        if token.startswith("##") and groups:
            groups[-1].append(position)
        else:
            groups.append([position])
    return groups


def heatmap(at, title_part: str) -> tuple[np.ndarray, list[str]]:
    chart = next(f for f in figures(at) if title_part in f["layout"]["title"]["text"])
    trace = chart["data"][0]
    return array(trace["z"]).astype(float), list(trace["x"])


def test_attention_in_words_is_clark_et_al_merge_of_the_pieces(open_app):
    pieces_page = open_app("attention", text=TEXT, layer=2, head=5)
    no_exception(pieces_page)
    pieces, piece_labels = heatmap(pieces_page, "where each token (row) looks")
    words_page = open_app("attention", text=TEXT, layer=2, head=5, units="words")
    no_exception(words_page)
    words, word_labels = heatmap(words_page, "where each token (row) looks")
    groups = piece_groups([label.split(" ", 1)[-1] if " " in label else label for label in piece_labels])
    assert len(groups) < len(piece_labels) == pieces.shape[0]  # some word is in pieces
    expected = np.array([[np.mean([pieces[q, keys].sum() for q in queries]) for keys in groups] for queries in groups])
    np.testing.assert_allclose(words, expected, atol=2e-6)
    np.testing.assert_allclose(words.sum(axis=1), 1.0, atol=1e-5)
    assert any("unbelievably" in label for label in word_labels) and len(word_labels) == len(groups)
    assert any("Clark et al. (2019)" in as_read(caption.value) for caption in words_page.caption)


def test_mlp_and_saliency_in_words(open_app):
    pieces_page = open_app("mlp", text=TEXT, mlp_layer=3, neuron=7)
    words_page = open_app("mlp", text=TEXT, mlp_layer=3, neuron=7, units="words")
    no_exception(words_page)
    by_piece = next(f for f in figures(pieces_page) if "neuron 7" in f["layout"]["title"]["text"].lower())
    by_word = next(f for f in figures(words_page) if "neuron 7" in f["layout"]["title"]["text"].lower())
    piece_values = array(by_piece["data"][0]["y"]).astype(float)
    groups = piece_groups([str(x).split(" ", 1)[-1] for x in by_piece["data"][0]["x"]])
    np.testing.assert_allclose(array(by_word["data"][0]["y"]).astype(float),
                               [piece_values[g].mean() for g in groups], atol=1e-5)

    masked = TEXT.replace("giraffe", "[MASK]")
    pieces_page = open_app("saliency", text=masked, saliency_method="gradient_x_input")
    words_page = open_app("saliency", text=masked, saliency_method="gradient_x_input", units="words")
    no_exception(words_page)
    by_piece, by_word = figures(pieces_page)[0], figures(words_page)[0]
    groups = piece_groups([str(x).split(" ", 1)[-1] for x in by_piece["data"][0]["x"]])
    for part_pieces, part_words in zip(by_piece["data"], by_word["data"]):
        values = array(part_pieces["y"]).astype(float)
        np.testing.assert_allclose(array(part_words["y"]).astype(float), [values[g].sum() for g in groups], atol=1e-5)
