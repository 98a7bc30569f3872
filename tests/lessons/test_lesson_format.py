"""Lesson files: every built-in lesson validates; bad files get one-line messages naming the step and key (or line)."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from bert.errors import BertError
from viz_app.lessons.computed import COMPUTED
from viz_app.app import navigation
from viz_app.lessons.format import PAGES, ComputedValue, LessonError, builtin_lessons, load_lesson, parse_lesson

ROOT = Path(__file__).resolve().parents[2]
GOOD_STEP = "- title: First\n  page: attention\n  text: Look at the pattern.\n"


def lesson(steps: str, head: str = "title: T\nabout: A lesson.\n") -> str:
    return head + "steps:\n" + textwrap.dedent(steps).strip("\n").replace("\n", "\n  ").join(["  ", "\n"])


def error_of(text: str) -> str:
    with pytest.raises(LessonError) as caught:
        parse_lesson(text, "bad", source="bad.yaml")
    message = str(caught.value)
    assert "\n" not in message, "one line"
    assert isinstance(caught.value, BertError)
    return message


def test_every_builtin_lesson_validates_with_five_to_ten_steps():
    lessons = builtin_lessons()
    assert list(lessons) == ["fill_in_the_blank", "three_embeddings", "where_each_word_looks", "what_the_layers_know",
                             "from_pretraining_to_a_task", "where_a_word_travels", "what_each_word_takes",
                             "one_pass_step_by_step", "which_connections_carry_the_answer", "where_is_the_variable"]
    for name, found in lessons.items():
        assert 5 <= len(found.steps) <= 10, name
        assert found.title and found.about
        for step in found.steps:
            assert step.page in PAGES and step.text
            assert bool(step.question) == bool(step.answer)


def test_builtin_lessons_compute_heads_instead_of_naming_them():
    """No "layer 3, head 7" written into a built-in lesson: the heads it talks about are computed."""
    for found in builtin_lessons().values():
        for step in found.steps:
            for text in (step.text, step.question, step.answer, step.notice):
                assert not re.search(r"\b(layer|head)\s+\d", text, re.IGNORECASE), (found.name, step.title, text)
            state = step.state_dict
            if "head" in state:
                assert isinstance(state["head"], ComputedValue) or state["head"] == 0


def test_steps_open_every_page_of_the_app_but_the_lessons():
    """The navigation (viz_app/app/navigation.py) lists every file in pages/; a step can open each page but this one."""
    files = {path.name for path in (ROOT / "pages").glob("*.py")}
    assert {page.file for page in navigation.PAGES.values()} == files
    assert set(PAGES) == set(navigation.PAGES) - {"lessons"}
    assert all(PAGES[url] == (page.file, page.title) for url, page in navigation.PAGES.items() if url in PAGES)


def test_a_good_lesson_reads_its_values_as_the_links_do():
    found = parse_lesson(lesson("""
        - title: Masks and heads
          page: head_ablation
          text: "The head {previous_token_head} pays {previous_token_head.share}."
          state:
            text: "The [MASK] barked."
            masks: [2, 3]
            ablation_heads: [[0, 1], [3, 7]]
            hide_special: true
            top_k: 5
            probe_tasks: [position, pos]
            head: {computed: previous_token_head}
            focus: {computed: position_of, word: barked}
          question: Why?
          answer: Because.
          choices: [Because, "Why not", 3]
    """), "good")
    assert found.steps[0].choices == ("Because", "Why not", "3")
    state = found.steps[0].state_dict
    assert state["masks"] == [2, 3] and state["ablation_heads"] == [(0, 1), (3, 7)]
    assert state["hide_special"] is True and state["top_k"] == 5 and state["probe_tasks"] == ["position", "pos"]
    assert state["head"] == ComputedValue("previous_token_head")
    assert state["focus"] == ComputedValue("position_of", (("word", "barked"),))


@pytest.mark.parametrize("steps, expected", [
    ("- title: S\n  page: nowhere\n  text: x", "bad.yaml: step 1 (S): page: unknown page 'nowhere'"),
    ("- title: S\n  page: attention\n  text: x\n  state: {colour: red}", "bad.yaml: step 1 (S): state: colour: unknown key"),
    ("- title: S\n  page: attention\n  text: x\n  state: {layer: three}", "bad.yaml: step 1 (S): state: layer: bad value 'three'"),
    ("- title: S\n  page: attention\n  text: x\n  state: {layer: -1}", "bad.yaml: step 1 (S): state: layer: bad value -1"),
    ("- title: S\n  page: attention\n  text: x\n  state: {statistic: loudness}", "bad.yaml: step 1 (S): state: statistic: bad value 'loudness'"),
    ("- title: S\n  page: probes\n  text: x\n  state: {probe_tasks: [pos, mood]}", "bad.yaml: step 1 (S): state: probe_tasks: bad value"),
    ("- title: S\n  page: attention\n  text: x\n  state: {head: {computed: best_head}}", "state: head: computed: unknown value 'best_head'"),
    ("- title: S\n  page: attention\n  text: x\n  state: {top_k: {computed: sep_head}}", "state: top_k: sep_head cannot set top_k"),
    ("- title: S\n  page: attention\n  text: x\n  state: {focus: {computed: position_of}}", "state: focus: position_of takes word: ..."),
    ("- title: S\n  page: attention\n  text: See {sep_head.colour}.", "step 1 (S): text: {sep_head.colour}: unknown field"),
    ("- title: S\n  page: attention\n  text: See {best_head}.", "step 1 (S): text: {best_head}: unknown computed value"),
    ("- title: S\n  page: attention\n  text: x\n  question: Why?", "step 1 (S): answer: a question needs its answer"),
    ("- title: S\n  page: attention\n  text: x\n  colour: red", "step 1 (S): colour: unknown key"),
    ("- title: S\n  page: attention\n  text: x\n  choices: [a, b]", "step 1 (S): choices: choices answer a question"),
    ("- title: S\n  page: attention\n  text: x\n  question: Q?\n  answer: A.\n  choices: [only one]",
     "step 1 (S): choices: give a list of 2 to 6 short answers"),
    ("- title: S\n  page: attention\n  text: x\n  question: Q?\n  answer: A.\n  choices: [same, same]",
     "step 1 (S): choices: each choice a different, non-empty text"),
    ("- title: S\n  page: attention\n  text: x\n  question: Q?\n  answer: A.\n  choices: [ok, {a: b}]",
     "step 1 (S): choices: each choice a different, non-empty text"),
    ("- title: S\n  page: attention\n  text: x\n  question: Q?\n  answer: A.\n  choices: [ok, " + "x" * 81 + "]",
     "step 1 (S): choices: each choice at most 80 characters"),
    ("- title: S\n  page: attention", "step 1 (S): text: give a non-empty text"),
    (GOOD_STEP + "- title: T\n  page: attention\n  text: x\n  state: {masks: [a]}", "step 2 (T): state: masks: bad value"),
])
def test_bad_steps_name_the_step_and_the_key(steps, expected):
    assert expected in error_of(lesson(steps))


def test_bad_yaml_names_the_line():
    text = "title: T\nabout: A lesson.\nsteps:\n  - title: S\n    page: attention\n    text: [unclosed\n    state: {}\n"
    message = error_of(text)
    assert message.startswith("bad.yaml, line ") and "not valid YAML" in message
    line = int(message.split("line ")[1].split(":")[0])
    assert 6 <= line <= 8  # PyYAML reports where the flow sequence breaks off


def test_bad_top_level():
    assert "a lesson is a mapping" in error_of("- just a list")
    assert "steps: give a list of at least one step" in error_of("title: T\nsteps: []")
    assert "bad.yaml: colour: unknown key" in error_of("title: T\ncolour: red\nsteps: []")
    assert "bad.yaml: state: layer: bad value" in error_of("title: T\nstate: {layer: x}\nsteps:\n" + GOOD_STEP)


def test_a_file_that_cannot_be_read(tmp_path):
    with pytest.raises(LessonError, match="cannot read the lesson file"):
        load_lesson(tmp_path / "missing.yaml")
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LessonError, match="cannot read the lesson file"):
        load_lesson(tmp_path / "binary.yaml")


def test_the_example_in_the_docs_is_a_valid_lesson():
    text = (ROOT / "docs" / "teaching.md").read_text()
    blocks = [block.split("```", 1)[0] for block in text.split("```yaml\n")[1:]]
    example = next(block for block in blocks if "\nsteps:" in block)  # the lesson (another block is server settings)
    found = parse_lesson(example, "example")
    assert len(found.steps) >= 2
    documented = set(re.findall(r"^\| `(\w+)`", text, re.MULTILINE))
    assert set(COMPUTED) <= documented, "every computed value is listed in docs/teaching.md"


def test_builtin_lessons_are_read_once_and_again_when_a_file_changes(tmp_path, monkeypatch):
    from viz_app.lessons import format as lesson_format

    for path in sorted(lesson_format.BUILTIN_FOLDER.glob("*.yaml"))[:2]:
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(lesson_format, "BUILTIN_FOLDER", tmp_path)
    read = []
    monkeypatch.setattr(lesson_format, "load_lesson", lambda path, name=None: read.append(name) or load_lesson(path, name))
    first = builtin_lessons()
    assert builtin_lessons() == first and len(read) == 2  # the second call reads no file
    name, lesson = next(iter(first.items()))
    changed = next(tmp_path.glob(f"*_{name}.yaml"))
    changed.write_text(changed.read_text(encoding="utf-8").replace(lesson.title, "A new title", 1), encoding="utf-8")
    assert builtin_lessons()[name].title == "A new title"  # its size changed: read again
    builtin_lessons()["a lesson of the caller's"] = lesson  # a caller's dict is its own
    assert "a lesson of the caller's" not in builtin_lessons()
