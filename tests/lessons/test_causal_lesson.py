"""The causal tracing lesson's computed values, read straight off the library's patching and tracing grids here
(every step of it resolved and drawn on two models: tests/lessons/test_lesson_steps.py, with every built-in lesson)."""
from __future__ import annotations

import numpy as np
import pytest

from bert.analysis.causal.patching import patching_sweep, prepare_contrast
from bert.analysis.causal.tracing import causal_trace
from viz_app.lessons.format import builtin_lessons
from viz_app.lessons.resolve import resolve

LESSON = "where_a_word_travels"


@pytest.mark.slow  # the built-in model's exact sweep
def test_patching_values_are_read_off_the_sweep(loaded_minilm):
    lesson = builtin_lessons()[LESSON]
    step = resolve(lesson, 1, loaded_minilm)
    contrast = prepare_contrast(loaded_minilm.tokenizer, "The man said that [MASK] was tired.",
                                "The woman said that [MASK] was tired.", "he", "she")
    result = patching_sweep(loaded_minilm.model, contrast)
    man, mask = contrast.clean.tokens.index("man"), contrast.mask_position
    last_at_man = max(i for i in range(result.residual.shape[0]) if result.residual[i, man] >= 0.5)
    first_at_mask = min(i for i in range(result.residual.shape[0]) if result.residual[i, mask] >= 0.5)
    assert f'sits at "man" up to the output of layer {last_at_man - 1}' in step.text.replace("\n", " ")
    assert f"from the output of layer {first_at_mask - 1} on" in step.text.replace("\n", " ")
    heads = result.heads.numpy()
    layer, head = np.unravel_index(heads.argmax(), heads.shape)
    assert f"layer {layer}, head {head} restores {heads[layer, head]:.2f}" in resolve(lesson, 3, loaded_minilm).text.replace("\n", " ")


@pytest.mark.slow  # the built-in model's noise trace
def test_trace_values_are_read_off_the_trace(loaded_minilm):
    lesson = builtin_lessons()[LESSON]
    step = resolve(lesson, 5, loaded_minilm)
    encoding = loaded_minilm.tokenizer.encode("The woman said that [MASK] was tired.")
    trace = causal_trace(loaded_minilm.model, loaded_minilm.tokenizer, encoding, [2])
    assert f'p("{trace.answer}") from {trace.clean_probability:.0%} to {trace.corrupted_probability:.0%}' in step.text.replace("\n", " ")
