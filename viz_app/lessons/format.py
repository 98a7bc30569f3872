"""The lesson file format (YAML) and its validation. No Streamlit here: the CLI and the tests use it too.

A lesson is a title, a one-line `about`, an optional `state` every step starts from, and 1 or more steps. A step
has a `title`, a short `text` for the class, the `page` it shows, that page's `state` (the keys the app's links
carry: text, pair, masks, layer, head, top_k, ...), an optional `question` with its `answer` (and `choices`: 2 to 6
short answers students following a class pick from, one click each), and what to `notice`.
A state value is literal (`layer: 3`) or computed for the loaded model and the step's sentence
(`head: {computed: previous_token_head}`); texts may quote computed values (`{previous_token_head.share}`).
docs/teaching.md has an example.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bert.errors import BertError, quoted, shortened
from viz_app.server import safe_yaml
from viz_app.lessons.computed import COMPUTED
from viz_app.app.navigation import CHOICES, LINK_PARAMS
from viz_app.app.navigation import PAGES as APP_PAGES, current_path
from viz_app.app.url_params import MODEL_PARAM

BUILTIN_FOLDER = Path(__file__).parent / "builtin"

# url name -> (file in pages/, title): the pages a step can open, every page of the app but this one
PAGES = {url: (page.file, page.title) for url, page in APP_PAGES.items() if url != "lessons"}
STATE_KEYS = (MODEL_PARAM, *LINK_PARAMS)  # CHOICES: state keys whose value is one of a few names (each list: of them)
LESSON_KEYS = {"title", "about", "state", "steps"}
STEP_KEYS = {"title", "text", "page", "state", "question", "answer", "choices", "notice"}
CHOICE_COUNT = (2, 6)  # a question's choices: at least, at most
CHOICE_LENGTH = 80  # characters of one choice at most: a button's label
PLACEHOLDER = re.compile(r"\{([a-z_]+)(?:\.([a-z_]+))?\}")  # {name} or {name.field}: a computed value in a text


class LessonError(BertError, ValueError):
    """A lesson file that cannot be used; the message names the file, the step and the key (or the line)."""


@dataclass(frozen=True)
class Step:
    title: str
    text: str
    page: str  # a key of PAGES
    state: tuple[tuple[str, Any], ...] = ()  # (key, value) in file order; a computed value is a ComputedValue
    question: str = ""
    answer: str = ""
    notice: str = ""
    choices: tuple[str, ...] = ()  # short answers students pick from, in class (one click each)

    @property
    def state_dict(self) -> dict[str, Any]:
        return dict(self.state)


@dataclass(frozen=True)
class ComputedValue:
    name: str  # a key of COMPUTED
    arguments: tuple[tuple[str, str], ...] = ()  # e.g. (("word", "barked"),)


@dataclass(frozen=True)
class Lesson:
    name: str  # the file's stem: what `python -m viz_app.export.lesson NAME` takes
    title: str
    about: str
    steps: tuple[Step, ...]
    state: tuple[tuple[str, Any], ...] = ()  # every step starts from this
    source: str = field(default="", compare=False)  # where it was read from, for messages


def builtin_lessons() -> dict[str, Lesson]:
    """The lessons that ship with the app, by name, in the order of the numbers their file names start with. Read
    once per process and again only when a file changes (its size or time): the Lessons page asks on every run, and
    parsing the ten files is a tenth of a second of CPU, which a class of a hundred would pay at each step."""
    paths = sorted(BUILTIN_FOLDER.glob("*.yaml"), key=lambda path: int(path.stem.split("_", 1)[0]))
    stamps = tuple((str(path), path.stat().st_mtime_ns, path.stat().st_size) for path in paths)
    return dict(_builtin_lessons(stamps))  # a new dict each time; the Lesson values are frozen


@functools.lru_cache(maxsize=1)
def _builtin_lessons(stamps: tuple[tuple[str, int, int], ...]) -> dict[str, Lesson]:
    return {Path(path).stem.split("_", 1)[1]: load_lesson(path, Path(path).stem.split("_", 1)[1]) for path, _, _ in stamps}


def load_lesson(path: str | Path, name: str | None = None) -> Lesson:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise LessonError(f"{path}: cannot read the lesson file ({error})") from error
    return parse_lesson(text, name or path.stem, source=path.name)


def parse_lesson(text: str, name: str, source: str = "lesson") -> Lesson:
    """Read and check a lesson; raises LessonError with a one-line message (file, line or step, key), whatever the
    text holds (viz_app/server/safe_yaml.py refuses aliases, deep nesting and huge numbers before building anything)."""
    try:
        return _lesson(text, name, source)
    except LessonError:
        raise
    except (ValueError, TypeError, RecursionError) as error:  # a check this module missed: still one line, no traceback
        raise LessonError(f"{source}: this lesson cannot be read ({type(error).__name__})") from error


def _lesson(text: str, name: str, source: str) -> Lesson:
    try:
        data = safe_yaml.load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise LessonError(f"{source}{where}: this is not valid YAML ({problem})") from error
    if not isinstance(data, dict):
        raise LessonError(f"{source}: a lesson is a mapping with title, about and steps")
    _no_unknown(data, LESSON_KEYS, source)
    title = _text(data, "title", source, required=True)
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise LessonError(f"{source}: steps: give a list of at least one step")
    state = _state(data.get("state") or {}, f"{source}: state")
    return Lesson(name, title, _text(data, "about", source), tuple(_step(s, i, source) for i, s in enumerate(steps, 1)),
                  state, source)


def _step(data: Any, number: int, source: str) -> Step:
    where = f"{source}: step {number}"
    if not isinstance(data, dict):
        raise LessonError(f"{where}: a step is a mapping with title, text, page and state")
    if isinstance(data.get("title"), str):
        where += f" ({data['title']})"
    _no_unknown(data, STEP_KEYS, where)
    page = current_path(data["page"]) if isinstance(data.get("page"), str) else data.get("page")  # an old address too
    if not isinstance(page, str) or page not in PAGES:
        raise LessonError(f"{where}: page: unknown page {quoted(page)}; use one of {', '.join(PAGES)}")
    step = Step(
        title=_text(data, "title", where, required=True), text=_text(data, "text", where, required=True), page=page,
        state=_state(data.get("state") or {}, f"{where}: state"), question=_text(data, "question", where),
        answer=_text(data, "answer", where), notice=_text(data, "notice", where),
        choices=_choices(data.get("choices"), where),
    )
    if bool(step.question) != bool(step.answer):
        raise LessonError(f"{where}: {'answer' if step.question else 'question'}: a question needs its answer, and an answer its question")
    if step.choices and not step.question:
        raise LessonError(f"{where}: choices: choices answer a question; give the question too")
    for key in ("title", "text", "question", "answer", "notice"):
        for name, field_name in PLACEHOLDER.findall(getattr(step, key)):
            _check_placeholder(name, field_name, f"{where}: {key}")
    return step


def _no_unknown(data: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(str(key) for key in data if key not in allowed)
    if unknown:
        raise LessonError(f"{where}: {shortened(unknown[0])}: unknown key; use {', '.join(sorted(allowed))}")


def _text(data: dict, key: str, where: str, required: bool = False) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise LessonError(f"{where}: {key}: give a non-empty text")
    return value.strip()


def _choices(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    low, high = CHOICE_COUNT
    if not isinstance(value, list) or not low <= len(value) <= high:
        raise LessonError(f"{where}: choices: give a list of {low} to {high} short answers")
    choices = tuple(str(choice).strip() for choice in value if isinstance(choice, (str, int, float)))
    if len(choices) != len(value) or not all(choices) or len(set(choices)) != len(choices):
        raise LessonError(f"{where}: choices: each choice a different, non-empty text")
    if any(len(choice) > CHOICE_LENGTH for choice in choices):
        raise LessonError(f"{where}: choices: each choice at most {CHOICE_LENGTH} characters (a button's label)")
    return choices


def _state(data: Any, where: str) -> tuple[tuple[str, Any], ...]:
    if not isinstance(data, dict):
        raise LessonError(f"{where}: give a mapping of keys to values, e.g. layer: 3")
    return tuple((str(key), _value(str(key), value, f"{where}: {shortened(str(key))}")) for key, value in data.items())


def _value(key: str, value: Any, where: str) -> Any:
    """A state value as the app holds it (parsed as a link's query parameter would be), or a ComputedValue."""
    if key not in STATE_KEYS:
        raise LessonError(f"{where}: unknown key; the state takes {', '.join(STATE_KEYS)}")
    if isinstance(value, dict):
        return _computed(key, value, where)
    if key == MODEL_PARAM:
        if not isinstance(value, str) or not value.strip():
            raise LessonError(f"{where}: give a model's name, e.g. minilm or bert-base-uncased")
        return value.strip()
    if value is None:
        raise LessonError(f"{where}: give a value")
    try:
        parsed = LINK_PARAMS[key].parse(_as_link_text(value))
    except (ValueError, TypeError):
        raise LessonError(f"{where}: bad value {quoted(value)}") from None
    allowed = CHOICES.get(key)
    chosen = parsed if isinstance(parsed, list) else [parsed]
    if allowed and any(choice not in allowed for choice in chosen):
        raise LessonError(f"{where}: bad value {quoted(value)}; use {', '.join(allowed)}")
    if isinstance(parsed, int) and not isinstance(parsed, bool) and parsed < 0:
        raise LessonError(f"{where}: bad value {quoted(value)}; give a number from 0")
    return parsed


def _as_link_text(value: Any) -> str:
    """YAML's value as a link would write it: lists joined by commas, booleans as 1/0, [layer, head] as layer.head."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list):
        return ",".join(".".join(map(str, v)) if isinstance(v, list) else str(v) for v in value)
    if isinstance(value, (int, str)):
        return str(value)
    raise TypeError(value)


def _computed(key: str, value: dict, where: str) -> ComputedValue:
    name = value.get("computed")
    if not isinstance(name, str) or name not in COMPUTED:
        raise LessonError(f"{where}: computed: unknown value {quoted(name)}; use one of {', '.join(COMPUTED)}")
    kind = COMPUTED[name]
    if key not in kind.state_keys:
        raise LessonError(f"{where}: {name} cannot set {key}; it sets {', '.join(kind.state_keys) or 'nothing (texts only)'}")
    arguments = {k: v for k, v in value.items() if k != "computed"}
    if set(arguments) != set(kind.arguments) or not all(isinstance(v, str) and v.strip() for v in arguments.values()):
        wanted = ", ".join(f"{a}: ..." for a in kind.arguments) or "no arguments"
        raise LessonError(f"{where}: {name} takes {wanted}")
    return ComputedValue(name, tuple(sorted((k, v.strip()) for k, v in arguments.items())))


def _check_placeholder(name: str, field_name: str, where: str) -> None:
    if name not in COMPUTED:
        raise LessonError(f"{where}: {{{name}}}: unknown computed value; use one of {', '.join(COMPUTED)}")
    if COMPUTED[name].arguments:
        raise LessonError(f"{where}: {{{name}}} needs arguments: set it in the step's state and quote it there")
    if field_name and field_name not in COMPUTED[name].fields:
        raise LessonError(f"{where}: {{{name}.{field_name}}}: unknown field; use {', '.join(COMPUTED[name].fields)}")
