"""The causal tracing page's plain helpers: the settings a link gives (nonsense falls back), the answer and foil it
picks from the model's guesses, the word it noises, the batch size by length."""
from __future__ import annotations


import pytest

from viz_app.specs.causal_tracing import Settings, PatchingRequest, default_corrupt, default_corrupt_of, patching_batch, pick_answer_foil
from viz_app.app.navigation import LINK_PARAMS


def test_settings_from_a_link_and_their_defaults():
    settings = Settings.from_state({"causal_mode": "one", "trace_text": "A [MASK].", "trace_corrupt": [1], "trace_samples": 3,
                                          "patch_direction": "sideways", "patch_compare": "mlp"})
    assert settings.mode == "one" and settings.compare == "mlp"
    assert settings.patching.direction == "denoise"  # nonsense falls back to the first choice
    assert settings.trace.text == "A [MASK]." and settings.trace.corrupt == (1,) and settings.trace.samples == 3
    default = Settings.from_state({})
    assert default.patching == PatchingRequest(LINK_PARAMS["patch_clean"].default, LINK_PARAMS["patch_corrupted"].default)
    assert default.exact and default.trace.corrupt is None and default.trace.blocks is False
    hash(default)  # the requests are the caches' keys


@pytest.mark.parametrize(
    "clean, corrupted, answer, foil, expected",
    [
        (["he", "she"], ["she", "he"], None, None, ("he", "she")),
        (["he", "she"], ["he", "they"], None, None, ("he", "they")),  # the corrupted sentence's top guess is the answer
        (["he"], [], None, None, ("he", "")),
        (["he", "she"], ["she"], "it", None, ("it", "she")),  # a word typed by the user stays
        ([], [], None, "she", ("", "she")),
    ],
)
def test_answer_and_foil_come_from_the_guesses(clean, corrupted, answer, foil, expected):
    assert pick_answer_foil(clean, corrupted, answer, foil) == expected


def test_the_first_content_word_is_noised_with_all_its_pieces():
    tokens = ["[CLS]", "the", "e", "##iff", "##el", "tower", "is", "in", "[MASK]", ".", "[SEP]"]
    special = [True] + [False] * 9 + [True]
    assert default_corrupt(tokens, special) == [2, 3, 4]
    assert default_corrupt(["[CLS]", "the", "[MASK]", "[SEP]"], [True, False, False, True]) == []


def test_the_first_content_word_in_a_byte_level_input():
    """RoBERTa's pieces: "Ġ" starts a word, the first word has none, the pieces of a word share its word id."""
    from bert import Encoding
    from bert.pieces import byte_level_bpe

    tokens = ["<s>", "The", "ĠE", "iff", "el", "Ġtower", "Ġis", "Ġin", "<mask>", ".", "</s>"]
    word_ids = [None, 0, 1, 1, 1, 2, 3, 4, 5, 6, None]
    encoding = Encoding(list(range(11)), [0] * 11, tokens, [(0, 0)] * 11, [w is None for w in word_ids], word_ids,
                        pieces=byte_level_bpe())
    assert default_corrupt_of(encoding) == [2, 3, 4]


def test_fewer_rows_per_pass_for_long_inputs():
    assert patching_batch(10) == 64 and patching_batch(512) == 8 and patching_batch(5000) == 1


def test_the_pages_costs_count_every_cell_it_runs(tiny_mlm_folder):
    """The page's computations' costs against the cells the library's sweeps actually run (their progress callbacks' totals),
    plus the clean and corrupted runs (patching) or the clean run (tracing)."""
    from bert.analysis.causal.patching import patching_sweep, prepare_contrast
    from bert.analysis.causal.tracing import causal_trace
    from viz_app.app import models
    from viz_app.specs.base import Inputs
    from viz_app.specs.causal_tracing import EXACT, TRACE, TraceRequest
    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    model, tokenizer, inputs = loaded.model, loaded.tokenizer, Inputs(loaded)
    clean, corrupted = "the dog [MASK] at the park .", "her cat [MASK] to the mail ."
    contrast = prepare_contrast(tokenizer, clean, corrupted, "barked", "mail")
    totals = []
    patching_sweep(model, contrast, head_layer=1, progress=lambda done, total: totals.append(total))
    request = PatchingRequest(clean, corrupted, "barked", "mail", head_layer=1)
    assert EXACT.cost(inputs, request).forward_passes == 2 + totals[-1]
    assert EXACT.cost(inputs, PatchingRequest(clean, corrupted, head_layer=1)).forward_passes == 2 + 2 + totals[-1]  # + the guesses
    encoding = tokenizer.encode(clean)
    for blocks, sites in ((False, ("residual",)), (True, ("residual", "attention", "mlp"))):
        totals = []
        causal_trace(model, tokenizer, encoding, [2], sites=sites, samples=3, progress=lambda done, total: totals.append(total))
        traced = TraceRequest(clean, (2,), "barked", samples=3, blocks=blocks)
        assert TRACE.cost(inputs, traced).forward_passes == 1 + totals[-1]
