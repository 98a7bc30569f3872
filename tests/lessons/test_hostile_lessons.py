"""Lesson files written to hurt the server: each is refused with one short line naming the line or the key, before
anything grows (viz_app/server/safe_yaml.py), and the same loader reads the server's settings file."""
from __future__ import annotations

import tracemalloc

import pytest
import yaml

from bert.errors import BertError
from viz_app.server import safe_yaml
from viz_app.lessons.format import PAGES, STATE_KEYS, LessonError, parse_lesson
from viz_app.server.settings import SettingsError, read_settings

SHORT = 300  # characters of a message at most


def alias_bomb(levels: int) -> str:
    """The "billion laughs" in YAML: each level an alias list of the one before, 9**levels strings in all."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "title: T\nabout: A.\n" + "\n".join(lines) + f"\nsteps:\n- title: S\n  page: attention\n  text: *a{levels - 1}\n"


def error_of(text: str, most: int = SHORT) -> str:
    with pytest.raises(LessonError) as caught:
        parse_lesson(text, "bad", source="bad.yaml")
    message = str(caught.value)
    assert "\n" not in message and len(message) < most, message
    assert isinstance(caught.value, BertError)
    return message


def test_the_alias_bomb_is_refused_at_its_first_anchor_without_growing_memory():
    bomb = alias_bomb(7)
    assert len(bomb.encode()) < 700
    tracemalloc.start()
    try:
        message = error_of(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message == "bad.yaml, line 3: this is not valid YAML (anchors and aliases (& and *) are not read here; write each value out)"
    assert peak < 2_000_000, f"{peak:,} bytes at the peak"  # 9**7 strings would take gigabytes


def test_an_alias_alone_is_refused_too():
    assert "anchors and aliases" in error_of("title: &t T\nsteps: []")
    assert "anchors and aliases" in error_of("title: T\nsteps:\n- title: S\n  page: attention\n  text: *nothing\n")


@pytest.mark.parametrize("text, line", [
    ("[" * 50_000, 1),  # 50 kB of brackets: PyYAML's composer would recurse until RecursionError
    ("title: T\nsteps:\n- title: S\n  page: attention\n  text: x\n  state: {layer: " + "[" * 30 + "]" * 30 + "}\n", 6),
], ids=["50 kB of brackets", "a value 30 deep"])
def test_deep_nesting_is_refused_at_its_line(text, line):
    assert error_of(text) == f"bad.yaml, line {line}: this is not valid YAML (nested more than {safe_yaml.MAX_DEPTH} levels deep)"


def test_a_five_thousand_digit_number_is_refused_unconverted():
    message = error_of("title: T\nsteps:\n- title: S\n  page: attention\n  text: x\n  state: {layer: " + "9" * 5000 + "}\n")
    assert message == f"bad.yaml, line 6: this is not valid YAML (a number 5,000 characters long; at most {safe_yaml.MAX_DIGITS})"


def test_a_page_that_is_a_list_names_the_key():
    # the message lists every page a step may open: short, apart from that list (which grows with the app)
    listed = len(", ".join(PAGES))
    message = error_of("title: T\nsteps:\n- title: S\n  page: [x]\n  text: x\n", most=SHORT + listed)
    assert message.startswith("bad.yaml: step 1 (S): page: unknown page a list; use one of ")
    assert message.endswith(", ".join(PAGES))


def test_a_huge_value_is_quoted_short():
    huge = "x" * 100_000
    message = error_of(f"title: T\nsteps:\n- title: S\n  page: attention\n  text: x\n  state: {{layer: {huge}}}\n")
    assert message.startswith("bad.yaml: step 1 (S): state: layer: bad value 'xxxx") and "(100,002 characters)" in message
    long_key = "x" * 1000  # YAML keys are at most 1024 characters
    # short, apart from the list of every key a state takes (which grows with the app)
    listed = len(", ".join(STATE_KEYS))
    message = error_of(f"title: T\nsteps:\n- title: S\n  page: attention\n  text: x\n  state: {{{long_key}: 1}}\n", most=SHORT + listed)
    assert "x" * 61 not in message and "(1,000 characters): unknown key" in message


def test_good_yaml_reads_as_pyyaml_reads_it():
    text = "a: [1, 2.5, {b: yes, c: null}]\nd: 'text'\ne: 2026-01-01\n"
    assert safe_yaml.load(text) == yaml.safe_load(text)


def test_the_settings_file_refuses_aliases(tmp_path):
    settings = tmp_path / "settings.yaml"
    settings.write_text("class: &c true\ncached_hub_models: *c\n")
    with pytest.raises(SettingsError, match="anchors and aliases"):
        read_settings(["--settings", str(settings)], {})
