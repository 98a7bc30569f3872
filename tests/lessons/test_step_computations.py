"""What a lesson step costs is what its computations cost (viz_app/lessons/steps.py): the step's recorded pass,
what its computed values read and its page's computations for the step's settings (viz_app/specs/), each counted
once; a value that reads no pass (the model's size, a word's position) costs nothing, with no default of one pass.
The same `Computation` class as a page's, so the runner (viz_app/heavy.py's `run`) prices, slots, stops and
caches a step as it does a page's part."""
from __future__ import annotations

import pytest

from bert.costs import Cost
from viz_app.lessons.format import builtin_lessons, parse_lesson
from viz_app.lessons.resolve import step_state
from viz_app.lessons.steps import STEP, StepWork, step_computations, step_cost, step_inputs
from viz_app.specs.base import Computation, planned_cost
from viz_app.specs.recorded import RECORDED

SIZE_ONLY = """title: Size
about: A step that only says the model's size.
steps:
  - title: How big
    page: prediction
    state:
      text: "The dog [MASK]."
    text: "This model has {model.layers} layers."
"""


@pytest.mark.parametrize("name", list(builtin_lessons()))
def test_a_steps_cost_is_the_sum_of_its_computations_costs(loaded_small, name):
    lesson, session = builtin_lessons()[name], {}
    for index in range(len(lesson.steps)):
        planned = step_computations(lesson, index, loaded_small, session)
        assert all(isinstance(computation, Computation) for computation, _ in planned.values())
        inputs = step_inputs(lesson, index, loaded_small, session)
        parts = sum((computation.cost(inputs, work) for computation, work in planned.values()), Cost(0, 0))
        assert step_cost(lesson, index, loaded_small, session) == parts == planned_cost(planned, inputs)
        work = StepWork.of(lesson, index, session)
        assert STEP.cost(inputs, work) == parts  # what the runner prices: the same sum
        keys = [(computation.name, computation.cache_key(work)) for computation, work in planned.values()]
        assert len(keys) == len(set(keys)), "a computation two parts read is counted once"
        session |= step_state(lesson, index, session)


def test_a_value_that_reads_no_pass_adds_nothing_and_one_that_reads_the_pass_shares_the_pages(loaded_small):
    """The prediction page's figures read one recorded pass; a step saying the model's size adds nothing to it, and
    one saying the model's guess reads that same pass (the old table added a default pass for each value)."""
    tokens = len(loaded_small.tokenizer.encode("The dog [MASK].").tokens)
    for value in ("{model.layers}", "{top_guess}"):
        lesson = parse_lesson(SIZE_ONLY.replace("{model.layers}", value), "size")
        planned = step_computations(lesson, 0, loaded_small, {})
        assert [computation for computation, _ in planned.values()] == [RECORDED], value
        cost = step_cost(lesson, 0, loaded_small, {})  # one recorded pass, its kept arrays priced with it
        assert (cost.forward_passes, cost.backward_passes, cost.tokens) == (1, 0, tokens) and cost.kept_bytes > 0, value
