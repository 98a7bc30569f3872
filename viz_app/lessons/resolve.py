"""A lesson step made concrete for the loaded model: computed state values found, texts filled in, and the
link that opens the same view in anyone's browser. No Streamlit here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping
from urllib.parse import urlencode

from bert.errors import BertError
from viz_app.app.forward import InputProblem
from viz_app.lessons.computed import COMPUTED, POSITION_KEYS, Finding, NotComputable, PerModel, StepFacts
from viz_app.lessons.format import PLACEHOLDER, ComputedValue, Lesson
from viz_app.app.navigation import DEFAULT_PAGE, LINK_PARAMS
from viz_app.app.url_params import DEFAULT_TEXT, MODEL_PARAM

NOT_AVAILABLE = "(not available for this model)"
SIDEBAR_KEYS = ("text", "pair", "truncate")  # drawn before any page: applied before the next run starts
LAYER_LIMITED = ("layer", "mlp_layer", "rollout_layer", "contexts_layer", "search_layer")
HEAD_LIMITED = ("head", "search_head")


@dataclass(frozen=True)
class ResolvedStep:
    number: int  # 1-based
    total: int
    title: str
    text: str
    question: str
    answer: str
    notice: str
    page: str
    state: dict[str, Any]  # every key the step sets, literal and computed; text and pair always
    problems: tuple[str, ...] = ()  # one line each: what could not be computed for this model, and why
    choices: tuple[str, ...] = ()  # the question's short answers, for a class to pick from

    def query(self, model: str | None) -> dict[str, str]:
        """The step's state as a link's query parameters (the model first). `model`: the loaded model as this
        visitor's links name it (a teacher's folder by its offered name); None: the step's own `model:`. The step's
        `model:` as written (it may be a folder on the server) never overrides `model`: a student's address bar
        and history would keep it."""
        model = model or self.state.get(MODEL_PARAM)
        wanted = {MODEL_PARAM: model} if model else {}
        for key, value in self.state.items():
            if key != MODEL_PARAM and value != LINK_PARAMS[key].default:
                wanted[key] = LINK_PARAMS[key].dump(value)
        return wanted

    def link(self, base_url: str, model: str | None) -> str:
        """The URL of the step's page with its state, e.g. http://host:8501/attention?model=minilm&layer=2."""
        path = "" if self.page == DEFAULT_PAGE else self.page  # the default page is at the root
        return f"{base_url.rstrip('/')}/{path}?{urlencode(self.query(model))}"


def step_state(lesson: Lesson, index: int, session: Mapping[str, Any]) -> dict[str, Any]:
    """The step's literal state over the lesson's; the sentence (and pair) from the session when neither sets it."""
    state = dict(lesson.state) | lesson.steps[index].state_dict
    for key, default in (("text", DEFAULT_TEXT), ("pair", ""), ("truncate", False)):
        state.setdefault(key, session.get(key, default))
    return state


def resolve(lesson: Lesson, index: int, loaded, session: Mapping[str, Any] | None = None,
            escape: Callable[[str], str] = lambda text: text, per_model: PerModel | None = None) -> ResolvedStep:
    """Step `index` (from 0) for `loaded` (a viz_app.app.models.LoadedModel). `escape` is applied to computed values
    before they go into the texts (Markdown escaping in the app; the HTML export escapes the whole text).
    per_model: the runs its figures read too (default: a new `PerModel.of(loaded)`)."""
    per_model = per_model or PerModel.of(loaded)
    step = lesson.steps[index]
    state = step_state(lesson, index, session or {})
    problems: list[str] = []
    where = f"step {index + 1} ({step.title})"

    def find(name: str, facts: StepFacts, arguments=()) -> Finding | None:
        try:
            return COMPUTED[name].compute(facts, **dict(arguments))
        except (NotComputable, BertError, InputProblem) as reason:  # this model cannot: the step says so and goes on
            problems.append(f"{where}: {name}: {reason}")
            return None

    plain = StepFacts(loaded, state["text"], state["pair"], (), state["truncate"])
    computed = {key: value for key, value in state.items() if isinstance(value, ComputedValue)}
    for key, value in computed.items():  # positions first: they choose the masks the other values see
        if key in POSITION_KEYS:
            del state[key]
            if found := find(value.name, plain, value.arguments):
                state[key] = [found.position] if key == "masks" else found.position
    facts = StepFacts(loaded, state["text"], state["pair"], state.get("masks", ()), state["truncate"], state, per_model)
    for key, value in computed.items():
        if key in state and isinstance(state[key], ComputedValue):
            del state[key]
            if found := find(value.name, facts, value.arguments):
                state |= _set(key, found)
    problems += _out_of_range(state, loaded.summary, where)
    values: dict[str, Finding | None] = {}

    def fill(text: str) -> str:
        def replace(match) -> str:
            name, field_name = match.group(1), match.group(2)
            if name not in values:
                values[name] = find(name, facts)
            found = values[name]
            if found is None:
                return NOT_AVAILABLE
            return escape(found.fields[field_name] if field_name else found.text)

        return PLACEHOLDER.sub(replace, text)

    texts = [fill(getattr(step, key)) for key in ("title", "text", "question", "answer", "notice")]
    return ResolvedStep(index + 1, len(lesson.steps), *texts, step.page, state, tuple(dict.fromkeys(problems)),
                        step.choices)


def _set(key: str, found: Finding) -> dict[str, Any]:
    """What a computed value sets: a head sets its layer too (the page's layer and head pickers)."""
    if found.head is not None:
        layer, head = found.head
        if key == "head":
            return {"layer": layer, "head": head}
        if key == "search_head":
            return {"search_layer": layer, "search_head": head, "search_by": "head"}
        if key == "ablation_heads":
            return {"ablation_heads": [(layer, head)]}
    return {key: found.layer}


def _out_of_range(state: dict[str, Any], summary, where: str) -> list[str]:
    """Literal layers and heads beyond the loaded model (the page then picks its own)."""
    problems = []
    for keys, count, what in ((LAYER_LIMITED, summary.layers, "layers"), (HEAD_LIMITED, summary.heads, "heads")):
        for key in keys:
            if isinstance(state.get(key), int) and state[key] >= count:
                problems.append(f"{where}: {key}: {state[key]} is beyond this model's {count} {what} (0 to {count - 1})")
    return problems
