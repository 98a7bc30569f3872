"""The lesson "What each word takes from the others": its numbers read straight off the library's matrices for
MiniLM, and every step resolved and drawn on two models of different shapes."""
from __future__ import annotations

import numpy as np
import pytest

from bert.analysis.attention.mixing import context_mixing, record_for_mixing
from viz_app.lessons.format import builtin_lessons
from viz_app.lessons.resolve import NOT_AVAILABLE, resolve
from viz_app.lessons.views import PerModel, view_charts

LESSON = "what_each_word_takes"
TEXT = "The chef, who ran the kitchen, cooked a meal for the guests."


def special_share(matrices: np.ndarray, tokens: list[str], layers: range) -> float:
    """The mean share of a row, rows normalised, on [SEP], "," and "." over `layers`, written out by hand."""
    columns = [i for i, token in enumerate(tokens) if token in ("[SEP]", ",", ".")]
    shares = matrices / matrices.sum(-1, keepdims=True)
    return float(np.mean([shares[layer][:, columns].sum(-1).mean() for layer in layers]))


def test_the_shares_are_read_off_the_librarys_matrices(loaded_minilm):
    model, tokenizer = loaded_minilm.model, loaded_minilm.tokenizer
    encoding = tokenizer.encode(TEXT)
    _, cache = record_for_mixing(model, *encoding.tensors())
    middle = range(1, 5)  # the middle half of MiniLM's six layers
    lesson = builtin_lessons()[LESSON]
    texts = [" ".join(resolve(lesson, index, loaded_minilm).text.split()) for index in range(3)]
    weights = special_share(context_mixing(model, cache, "attention").layers, encoding.tokens, middle)
    norms = special_share(context_mixing(model, cache, "norm").layers, encoding.tokens, middle)
    zeroing = special_share(context_mixing(model, cache, "value-zeroing").layers, encoding.tokens, middle)
    assert f"(layers 1 to 4), the attention weights give {weights:.0%} of every row" in texts[0]
    assert f"[SEP] and punctuation get {norms:.0%} of each row" in texts[1]
    assert f"account for {zeroing:.0%} of the change" in texts[2]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["loaded_minilm", "loaded_small"])
def test_every_step_resolves_and_draws(model, request):
    loaded = request.getfixturevalue(model)
    lesson = builtin_lessons()[LESSON]
    per_model, session = PerModel.of(loaded), {}
    for index in range(len(lesson.steps)):
        step = resolve(lesson, index, loaded, session)
        session |= step.state
        assert not step.problems and NOT_AVAILABLE not in step.text and "{" not in step.text, step.problems
        assert 0 <= step.state["rollout_layer"] < loaded.summary.layers
        charts = view_charts(step.page, loaded, step.state, per_model)
        assert len(charts) == (2 if step.state["mixing_compare"] == "none" else 4)
