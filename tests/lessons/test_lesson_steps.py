"""Lesson steps made concrete for a model: computed values checked against the model's own attention and
predictions worked out here by hand; every built-in step on a small model of another shape, figures without
Streamlit (the built-in model's, beside the Lessons page: tests/app/lessons/test_lessons_page.py)."""
from __future__ import annotations

import numpy as np
import pytest

from bert.analysis.causal.ablation import ablation_interventions, predict_ablated
from bert.predict import predict_masks
from viz_app.app import forward
from viz_app.lessons.steps import lesson_cost, step_cost
from viz_app.lessons.format import builtin_lessons, parse_lesson
from viz_app.lessons.resolve import NOT_AVAILABLE, resolve
from lesson_step_checks import resolved_and_checked

SENTENCE = "The chef who ran the kitchen cooked a delicious meal for the guests."


def one_step(text: str, state: str) -> object:
    return parse_lesson(f"title: T\nsteps:\n- title: S\n  page: attention\n  text: \"{text}\"\n  state: {state}\n", "t")


def recorded(loaded, text: str, masks=()) -> forward.ForwardResult:
    prepared = forward.prepare_input(loaded.tokenizer, text, "", masks, False, loaded.summary.max_positions)
    return forward.record(loaded.model, loaded.tokenizer, prepared)


@pytest.mark.parametrize("name, offset", [("previous_token_head", -1), ("next_token_head", 1)])
def test_neighbour_heads_are_the_largest_mean_share_of_the_pattern(loaded_minilm, name, offset):
    """The head with the largest mean p[i, i+offset], found here straight from the recorded patterns."""
    step = resolve(one_step(f"{{{name}}} pays {{{name}.share}}", f"{{text: '{SENTENCE}', head: {{computed: {name}}}}}"),
                   0, loaded_minilm)
    attention = recorded(loaded_minilm, SENTENCE).attention.astype(np.float64)  # [layer, head, query, key]
    share = np.diagonal(attention, offset=offset, axis1=-2, axis2=-1).mean(-1)  # [layer, head]
    layer, head = np.unravel_index(share.argmax(), share.shape)
    assert (step.state["layer"], step.state["head"]) == (layer, head)
    assert step.text == f"layer {layer}, head {head} pays {share[layer, head]:.0%}"


def test_sep_head_and_position_of(loaded_minilm):
    step = resolve(one_step("{sep_head}", f"{{text: '{SENTENCE}', head: {{computed: sep_head}}, "
                                          "focus: {computed: position_of, word: meal}}"), 0, loaded_minilm)
    result = recorded(loaded_minilm, SENTENCE)
    sep = np.array([t == "[SEP]" for t in result.tokens])
    share = result.attention[..., sep].sum(-1).mean(-1)
    assert (step.state["layer"], step.state["head"]) == np.unravel_index(share.argmax(), share.shape)
    assert result.tokens[step.state["focus"]] == "meal"


@pytest.mark.slow
def test_most_helpful_head_matches_ablating_every_head_one_by_one(loaded_minilm):
    text = "The chef cooked a delicious [MASK] for the guests."
    step = resolve(one_step("{most_helpful_head.guess} {most_helpful_head.before} {most_helpful_head.after} "
                            "{most_helpful_head.new_guess}", f"{{text: '{text}', ablation_heads: {{computed: most_helpful_head}}}}"),
                   0, loaded_minilm)
    model, tokenizer = loaded_minilm.model, loaded_minilm.tokenizer
    encoding = tokenizer.encode(text)
    [intact] = predict_ablated(model, tokenizer, encoding, top_k=1)
    target = intact.candidates[0].token_id

    def probability(heads) -> float:
        """p(target) at the [MASK] with `heads` zeroed, one pass each (the step ranks them in batches)."""
        [prediction] = predict_masks(model, tokenizer, encoding, 1, ablation_interventions(heads, "zero", None),
                                     originals={intact.position: target})
        return prediction.original_probability

    summary = loaded_minilm.summary
    after = {(l, h): probability([(l, h)]) for l in range(summary.layers) for h in range(summary.heads)}
    worst = min(after, key=after.get)
    assert step.state["ablation_heads"] == [worst]
    [new] = predict_ablated(model, tokenizer, encoding, [worst], top_k=1)
    assert step.text == (f"{intact.candidates[0].token} {intact.candidates[0].probability:.0%} {after[worst]:.0%} "
                         f"{new.candidates[0].token}")


def test_top_guess_and_the_rank_of_a_masked_word(loaded_minilm):
    step = resolve(one_step("{top_guess} {top_guess.rank}",
                            "{text: 'The dog barked at the mailman.', masks: {computed: position_of, word: barked}}"),
                   0, loaded_minilm)
    [mask] = recorded(loaded_minilm, "The dog barked at the mailman.", step.state["masks"]).masks
    assert mask.original == "barked"
    assert step.text == f"{mask.tokens[0]} {mask.original_rank}"


def test_what_cannot_be_computed_is_said_not_invented(loaded_minilm):
    step = resolve(one_step("Guess: {top_guess}. {next_sentence}",
                            "{text: 'No mask here.', focus: {computed: position_of, word: zebra}}"), 0, loaded_minilm)
    assert step.text == f"Guess: {NOT_AVAILABLE}. {NOT_AVAILABLE}"
    assert "focus" not in step.state
    assert any("the sentence has no [MASK]" in p for p in step.problems)
    assert any("'zebra' is not in the step's sentence" in p for p in step.problems)
    assert any("no second sentence" in p for p in step.problems)
    big = resolve(one_step("x", "{layer: 40, head: 3}"), 0, loaded_minilm)
    assert any("layer: 40 is beyond this model's 6 layers" in p for p in big.problems)


@pytest.mark.slow
def test_every_builtin_step_holds_for_another_shape_and_a_lesson_costs_its_dearest_step(loaded_small):
    """Every step of every lesson on a random 3-layer, 4-head BERT holds (lesson_step_checks.py: the built-in model's
    steps are checked beside the page in tests/app/lessons/test_lessons_page.py), and a lesson costs at least its
    dearest step."""
    for lesson in builtin_lessons().values():
        session = {}
        for index in range(len(lesson.steps)):
            step, _ = resolved_and_checked(lesson, index, loaded_small, session)
            session |= step.state
        assert lesson_cost(lesson, loaded_small, {}).forward_passes >= max(
            step_cost(lesson, i, loaded_small, {}).forward_passes for i in range(len(lesson.steps)))
