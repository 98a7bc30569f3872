"""A lesson step as the app runs it: one `Computation` (viz_app/specs/base.py), the class a page's heavy parts are,
so the runner (viz_app/heavy.py's `run`) prices it, asks the budget, gives it a slot, stops it when its tab
closes and keeps its result, for the presenter, a following student and an exported lesson alike. Plain Python.

What a step computes is a set of page computations, each counted once however many parts read it:

- what its computed values read (viz_app/lessons/computed.py, each value's `reads`): the step's recorded pass, a
  context-mixing method, the causal runs, every head ablated;
- its figures: the page's spec's `computations(settings)` for the step's settings.

A step's cost is their costs' sum (`planned_cost`), from the step's literal state and the sentence it reads: a value
that reads no pass (the model's size, a word's position) costs nothing, and a step whose sentence cannot be read
runs nothing (it says why). Computing the step runs the same computations through a `PerModel`, so the values and
the figures share each result, and no pass is made that the price does not count.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from bert.costs import Cost
from bert.errors import BertError, StoppedError
from viz_app.app.forward import InputProblem, prepare_input
from viz_app.app.models import LoadedModel
from viz_app.app.text import escape_markdown
from viz_app.charts.base import Chart
from viz_app.lessons.computed import COMPUTED, PerModel
from viz_app.lessons.format import PLACEHOLDER, ComputedValue, Lesson
from viz_app.lessons.resolve import SIDEBAR_KEYS, ResolvedStep, resolve, step_state
from viz_app.lessons.views import view_charts
from viz_app.specs.base import Computation, Inputs, Planned, planned_cost
from viz_app.specs.catalog import SPECS

NOTHING = Cost(0, 0)


def value_names(lesson: Lesson, index: int) -> Iterable[str]:
    """The computed values step `index` reads: in its state and in the placeholders of its texts, each once."""
    step = lesson.steps[index]
    names = [value.name for value in (dict(lesson.state) | step.state_dict).values() if isinstance(value, ComputedValue)]
    for key in ("title", "text", "question", "answer", "notice"):
        names += [match.group(1) for match in PLACEHOLDER.finditer(getattr(step, key) or "")]
    return [name for name in dict.fromkeys(names) if name in COMPUTED]


def step_inputs(lesson: Lesson, index: int, loaded: LoadedModel, session: Mapping[str, Any]) -> Inputs:
    """The model and step `index`'s sentence (and pair) as its page reads it, the session's where the step sets none
    (a step's masks may be a value computed later: they do not change its length); no input where it cannot be read."""
    state = step_state(lesson, index, session)
    try:
        return Inputs(loaded, prepare_input(loaded.tokenizer, state["text"], state["pair"], (), state["truncate"],
                                            loaded.summary.max_positions))
    except InputProblem:
        return Inputs(loaded)


def step_computations(lesson: Lesson, index: int, loaded: LoadedModel, session: Mapping[str, Any]) -> Planned:
    """What step `index` computes for `loaded`: its values' computations, then its page's, each (computation, work)
    once; nothing where its sentence cannot be read."""
    inputs = step_inputs(lesson, index, loaded, session)
    if inputs.prepared is None:
        return {}
    state = step_state(lesson, index, session)
    reads = [read for name in value_names(lesson, index)
             for read in _unless_refused(lambda: COMPUTED[name].reads(state), ())]
    reads += _unless_refused(lambda: page_computations(lesson.steps[index].page, state, inputs).values(), ())
    return {_named(computation, work): (computation, work) for computation, work in reads}


def _unless_refused(plan: Callable[[], Any], refused: Any) -> Any:
    """`plan()`, or `refused` where the model or the sentence cannot have it (a family the page does not read, a
    pair the tokenizer splits unevenly): that part costs nothing, and the step says why when it is worked out."""
    try:
        return plan()
    except (BertError, InputProblem):
        return refused


def page_computations(page: str, state: Mapping[str, Any], inputs: Inputs) -> Planned:
    """What the figures of `page` a step draws compute: its spec's computations for the step's settings; nothing
    for a page a step does not draw (one without a spec)."""
    if page not in SPECS:
        return {}
    spec = SPECS[page]
    return spec.computations(spec.Settings.from_state(state, inputs))


def _named(computation: Computation, work) -> str:
    """One name per computation and work: two parts that read the same result plan it once."""
    return f"{computation.name} {computation.cache_key(work)!r}"


def step_cost(lesson: Lesson, index: int, loaded: LoadedModel, session: Mapping[str, Any]) -> Cost:
    """Step `index`'s computations' costs, summed (nothing for a part the model or the sentence cannot have)."""
    inputs = step_inputs(lesson, index, loaded, session)
    planned = step_computations(lesson, index, loaded, session)
    return sum((_unless_refused(lambda: planned_cost({name: part}, inputs), NOTHING) for name, part in planned.items()),
               NOTHING)


def lesson_cost(lesson: Lesson, loaded: LoadedModel, session: Mapping[str, Any]) -> Cost:
    """Every step's: what an exported lesson computes."""
    return sum((step_cost(lesson, index, loaded, session) for index in range(len(lesson.steps))), NOTHING)


@dataclass(frozen=True)
class StepWork:
    """Step `index` of `lesson` for the sentence it reads: the work of the step's computation, equal and hashed by
    value (the lesson by its digest: a lesson file's state may hold lists)."""

    lesson: Lesson = field(compare=False, repr=False)
    digest: str  # the lesson's, as written
    index: int
    sentence: tuple[str, str, bool]  # (text, pair, truncate) the step reads: its own, or the session's
    escape: bool = True  # Markdown-escape the computed values in its texts (the app); False: the HTML export escapes

    @classmethod
    def of(cls, lesson: Lesson, index: int, session: Mapping[str, Any], escape: bool = True) -> StepWork:
        """The step for the session's sentence where the step sets none."""
        state = step_state(lesson, index, session)
        return cls(lesson, hashlib.sha256(repr(lesson).encode()).hexdigest(), index,
                   tuple(state[key] for key in SIDEBAR_KEYS), escape)

    @property
    def session(self) -> dict[str, Any]:
        return dict(zip(SIDEBAR_KEYS, self.sentence))


@dataclass(frozen=True)
class WorkedStep:
    """A step worked out for one model: its texts and state, its figures, and why they could not be drawn (None:
    they were, or the page draws none here)."""

    step: ResolvedStep
    figures: tuple[Chart, ...]
    trouble: Exception | None = None


def step_computation(per_model: Callable[[LoadedModel], PerModel]) -> Computation[StepWork, WorkedStep]:
    """The step's `Computation`: priced at `step_cost`, computed through `per_model(loaded)` (the app's caches, or
    a `PerModel` of its own). Made once per model whatever the page's input (the step reads its own), and kept once
    for every session: a class on one step works it out once, and a student who finds it kept reads it free."""

    def compute(inputs: Inputs, work: StepWork) -> WorkedStep:
        loaded, runs = inputs.loaded, per_model(inputs.loaded)
        step = resolve(work.lesson, work.index, loaded, work.session, escape_markdown if work.escape else _as_is, runs)
        try:
            return WorkedStep(step, tuple(view_charts(step.page, loaded, step.state, runs)))
        except StoppedError:
            raise
        except (BertError, InputProblem, ValueError, RuntimeError) as trouble:  # never break the lesson: say so, go on
            return WorkedStep(step, (), trouble)

    return Computation("lessons.step", lambda work: "Working out this step and its figures for the loaded model",
                       cost=lambda inputs, work: step_cost(work.lesson, work.index, inputs.loaded, work.session),
                       compute=compute, per_model=True, shared=True, work=StepWork)


def _as_is(text: str) -> str:
    return text


STEP = step_computation(PerModel.of)  # outside the app (an export from the command line, a test)
