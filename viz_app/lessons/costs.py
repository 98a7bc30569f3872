"""What a lesson step costs before it is worked out: its computed values (viz_app/lessons/computed.py) and its
figures (viz_app/lessons/views.py), in forward passes (bert/costs.py), from the step's literal state and the
sentences it names. The lesson page checks it against the server's budgets (viz_app/heavy.py) before it resolves
the step, as every page does before a heavy computation; a lesson file a student uploads goes through the same
check. Plain Python.

The costs are the library's cost functions of the computations the step makes; where a value or a figure reads a
recorded pass of the step's sentence, that pass counts once per value (the app shares it, so this is an upper
bound). A step whose sentence cannot be read costs nothing: it runs nothing and says why.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from bert.analysis.attention.mixing import mixing_cost
from bert.analysis.causal.ablation import rank_heads_cost
from bert.costs import Cost
from viz_app.specs import causal_tracing
from viz_app.app.forward import InputProblem, prepare_input
from viz_app.lessons.computed import COMPUTED
from viz_app.lessons.format import PLACEHOLDER, ComputedValue, Lesson
from viz_app.lessons.resolve import step_state
from viz_app.app.models import LoadedModel
from viz_app.app.navigation import LINK_PARAMS
from viz_app.specs.base import Inputs, planned_cost
from viz_app.specs.catalog import SPECS

NOTHING = Cost(0, 0)


class StepInput:
    """The step's state and the lengths of the sentences it names, for one model; no forward pass."""

    def __init__(self, loaded: LoadedModel, state: Mapping[str, Any]):
        self.loaded, self.state = loaded, state
        self.config = loaded.model.config

    def __getitem__(self, key: str):
        return self.state.get(key, LINK_PARAMS[key].default)

    @property
    def inputs(self) -> Inputs | None:
        """The model and the step's sentence (and pair) as the page reads it, for its length (a step's masks may be
        a value computed later; they do not change it); None when it cannot be read."""
        try:
            return Inputs(self.loaded, prepare_input(self.loaded.tokenizer, self["text"], self["pair"], (),
                                                     self["truncate"], self.loaded.summary.max_positions))
        except InputProblem:
            return None

    @property
    def tokens(self) -> int:
        """The step's sentence (and pair) as the page reads it; 0 when it cannot be read."""
        inputs = self.inputs
        return len(inputs.prepared.masked) if inputs else 0

    def passes(self, count: int) -> Cost:
        return Cost(count, self.tokens) if self.tokens else NOTHING


def _mixing(*methods: str) -> Callable[[StepInput], Cost]:
    def cost(step: StepInput) -> Cost:
        tokens = step.tokens
        return sum((mixing_cost(method, tokens, step.config) for method in methods), NOTHING) if tokens else NOTHING
    return cost


def _ranking(step: StepInput, more: int) -> Cost:
    """Every head ablated alone, and `more` passes beside (the recorded one, the best head's prediction)."""
    return rank_heads_cost(step.config, step.tokens) + step.passes(more) if step.tokens else NOTHING


def _causal(*computations) -> Callable[[StepInput], Cost]:
    """What the causal tracing page's computations cost for the step's sentences (a step's values and its figures
    read the same runs: counted for each, an upper bound)."""
    def cost(step: StepInput) -> Cost:
        settings, inputs = causal_tracing.Settings.from_state(step.state), Inputs(step.loaded)
        return sum((c.cost(inputs, settings.trace if c is causal_tracing.TRACE else settings.patching)
                    for c in computations), NOTHING)
    return cost


# computed value -> its cost; every other value reads one recorded pass of the step's sentence
VALUE_COSTS: dict[str, Callable[[StepInput], Cost]] = {
    "most_helpful_head": lambda step: _ranking(step, more=3),  # resolving such a step measures the ranking + 3
    "next_sentence": lambda step: step.passes(2),
    "patching": _causal(causal_tracing.ATTRIBUTION, causal_tracing.EXACT),
    "weight_to_special": lambda step: step.passes(1) + _mixing("attention")(step),  # the tokens, then the shares
    "norm_to_special": lambda step: step.passes(1) + _mixing("norm", "attention")(step),
    "zeroing_to_special": lambda step: step.passes(1) + _mixing("value-zeroing", "attention")(step),
    "residual_keeps": _mixing("norm", "norm-residual", "alti", "attention"),
    "trace": _causal(causal_tracing.TRACE),
}


def figure_cost(page: str, step: StepInput) -> Cost:
    """What the figures of `page` a step draws cost: its spec's computations for the step's settings; nothing for a
    page a step does not draw (one without a spec)."""
    if page not in SPECS:
        return NOTHING
    spec, inputs = SPECS[page], step.inputs
    return planned_cost(spec.computations(spec.Settings.from_state(step.state, inputs)), inputs) if inputs else NOTHING


def step_cost(lesson: Lesson, index: int, loaded: LoadedModel, session: Mapping[str, Any]) -> Cost:
    """Step `index`'s computed values and figures for `loaded`, the session's sentence where the step sets none."""
    step = StepInput(loaded, step_state(lesson, index, session))
    values = sum((VALUE_COSTS.get(name, lambda s: s.passes(1))(step) for name in value_names(lesson, index)), NOTHING)
    return values + figure_cost(lesson.steps[index].page, step)


def lesson_cost(lesson: Lesson, loaded: LoadedModel, session: Mapping[str, Any]) -> Cost:
    """Every step's: what an exported lesson computes."""
    return sum((step_cost(lesson, index, loaded, session) for index in range(len(lesson.steps))), NOTHING)


def value_names(lesson: Lesson, index: int) -> Iterable[str]:
    """The computed values step `index` reads: in its state and in the placeholders of its texts, each once."""
    step = lesson.steps[index]
    names = [value.name for value in (dict(lesson.state) | step.state_dict).values() if isinstance(value, ComputedValue)]
    for key in ("title", "text", "question", "answer", "notice"):
        names += [match.group(1) for match in PLACEHOLDER.finditer(getattr(step, key) or "")]
    return [name for name in dict.fromkeys(names) if name in COMPUTED]
