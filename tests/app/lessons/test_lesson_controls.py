"""A lesson step's notice names only controls the lesson view shows: the Lessons page's own buttons (Back, Next,
"Open this step in the app", ...), never a page's widget (a step's figures are drawn without the page's widgets,
viz_app/lessons/views.py). The widgets' labels are read from the source of the pages and the widget modules, as
the visitor reads them on screen; a notice names a control where it quotes its label, or where a sentence asks
to operate one (pick, choose, toggle, ...) and quotes it or spells a label of two words or more."""
from __future__ import annotations

import re
from pathlib import Path

from viz_app.lessons.format import builtin_lessons

ROOT = Path(__file__).resolve().parents[3]
WIDGET = re.compile(r"\b(?:button|download_button|selectbox|multiselect|radio|slider|select_slider|toggle|checkbox|"
                    r"text_input|text_area|number_input|file_uploader|segmented_control|pills|select_int|upload_box)"
                    r"\(\s*(?:f?\"([^\"{}]+)\"|f?'([^'{}]+)')")
QUOTED = re.compile(r"[\"“‘]([^\"”’]+)[\"”’]")
OPERATE = re.compile(r"\b(?:pick|choose|select|toggle|turn|switch|tick|untick|click|press|type|set|slide|drag)\b", re.I)
LESSON_VIEW = ("pages/lessons.py",)


def labels(paths) -> set[str]:
    return {(a or b).strip() for path in paths for a, b in WIDGET.findall(path.read_text())}


def app_labels() -> set[str]:
    files = [*(ROOT / "pages").glob("*.py"), *(ROOT / "viz_app" / "app").glob("*.py"), ROOT / "viz_app" / "Home.py"]
    return labels(files)


def controls_named(notice: str, shown: set[str], every: set[str]) -> list[str]:
    """What the notice names that the lesson view does not show (in lower case): a quoted label of the app's widgets; in a
    sentence that asks to operate a control, any quoted phrase, or a label of two words or more."""
    hidden, visible = {label.lower() for label in every - shown}, {label.lower() for label in shown}
    found = {phrase.strip().lower() for phrase in QUOTED.findall(notice)} & hidden
    for sentence in re.split(r"(?<=[.;!?])\s+", notice):
        if OPERATE.search(sentence):
            found |= {phrase.strip().lower() for phrase in QUOTED.findall(sentence)} - visible
            found |= {label for label in hidden if len(label.split()) > 1 and label in sentence.lower()}
    return sorted(found)


def test_the_labels_are_read_and_a_named_control_is_found():
    shown, every = labels(ROOT / path for path in LESSON_VIEW), app_labels()
    assert {"Back", "Next", "Open this step in the app"} <= shown
    assert {"Token to follow", "Hide [CLS] and [SEP]", "Exact sweep"} <= every  # one-pass, attention, causal tracing
    assert controls_named('Pick a token in "Token to follow": every later step shows it.', shown, every) == ["token to follow"]
    assert controls_named("For a long text, turn the exact sweep off.", shown, every) == ["exact sweep"]
    assert controls_named('Choose "nothing" to go back.', shown, every) == ["nothing"]  # an option, not shown
    assert controls_named("Look at the diagonal; dashed lines are the control tasks.", shown, every) == []
    assert controls_named('Press "Open this step in the app" to try it.', shown, every) == []


def test_each_steps_notice_names_only_controls_the_lesson_view_shows():
    shown, every = labels(ROOT / path for path in LESSON_VIEW), app_labels()
    found = [f"{lesson.name}, step {number}: {controls_named(step.notice, shown, every)}"
             for lesson in builtin_lessons().values() for number, step in enumerate(lesson.steps, 1)
             if step.notice and controls_named(step.notice, shown, every)]
    assert found == []
