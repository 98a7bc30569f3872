"""A visitor's text is shown as text, by construction (viz_app/app/text.py, viz_app/app/show.py): every str the app
shows is escaped unless it is `Markdown`, which the app makes only from templates written in its code. Here the
source of every page and module is read (`ast`) for the calls that hand Streamlit Markdown, and the filling is
checked against an independent reader of Markdown (markdown-it-py, as tests/app/page_checks.py reads a page)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from page_checks import rendered
from viz_app.app.text import Markdown, address, joined, markdown, marked_sentence, without_images

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted([*(ROOT / "pages").glob("*.py"), *(ROOT / "viz_app").rglob("*.py")])
TEXT_MODULE = ROOT / "viz_app" / "app" / "text.py"  # where Markdown is made of filled templates
# Streamlit's calls whose text it reads as Markdown (widget labels are the pages' own words, checked by the sweep)
SHOWN_AS_MARKDOWN = {"markdown", "caption", "info", "warning", "error", "success", "toast", "title", "header",
                     "subheader", "write"}
HOSTILE = "[click](http://x.example/a) ![i](http://x.example/i.png) <img src=http://x.example/t> http://x.example/b www.x.example to@x.example"


def _literal(node: ast.expr) -> bool:
    """A str written out in the code: a constant, or an f-string with nothing filled in."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or (
        isinstance(node, ast.JoinedStr) and all(isinstance(part, ast.Constant) for part in node.values))


def _streamlit_objects(tree: ast.AST) -> set[str]:
    """The names a module binds to Streamlit's containers (st.columns, st.container, st.expander, st.sidebar, ...)."""
    names = {"st"}
    for node in ast.walk(tree):
        value, targets = None, []
        if isinstance(node, ast.Assign):
            value, targets = node.value, node.targets
        elif isinstance(node, ast.For):
            value, targets = node.iter, [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            value, targets = node.context_expr, [node.optional_vars]
        if value is not None and "st." in ast.unparse(value):
            names |= {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}
    return names


def unsafe_calls(path: Path) -> list[str]:
    """Each call in `path` that could hand Streamlit a str not written in the code as Markdown: Streamlit's Markdown
    calls with a text that is no literal (HTML written by the chart builders, unsafe_allow_html, is the sweep's:
    tests/app/page_checks.py `html_problems`); show's and markdown's with a template that is no literal; Markdown
    made of anything but a literal (outside viz_app/app/text.py)."""
    tree = ast.parse(path.read_text())
    containers = _streamlit_objects(tree)
    shows = {"show"} | {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                        and node.module == "viz_app.app" for alias in node.names if alias.name == "show" and alias.asname}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func, text = node.func, node.args[0]
        where = f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:100]}"
        if isinstance(func, ast.Attribute) and func.attr in SHOWN_AS_MARKDOWN:
            receiver = ast.unparse(func.value)
            if receiver in shows or (receiver.split(".")[0].split("[")[0] in containers
                                      and not any(k.arg == "unsafe_allow_html" for k in node.keywords)):
                found += [] if _literal(text) else [where]
        elif isinstance(func, ast.Name) and (func.id == "markdown" or (func.id == "Markdown" and path != TEXT_MODULE)):
            found += [] if _literal(text) else [where]
    return found


def test_every_call_that_shows_markdown_has_its_text_written_in_the_code():
    found = [call for path in SOURCES if path.name != "show.py" for call in unsafe_calls(path)]
    assert found == [], "\n".join(found)


def test_the_reader_of_the_source_finds_the_old_way(tmp_path):
    """The calls the circuits page made before show.py: its error, and a name from a link in an f-string."""
    page = tmp_path / "page.py"
    page.write_text("import streamlit as st\nleft, right = st.columns(2)\nst.warning(str(problem))\n"
                    "right.caption(f'Searching {corpus.name}')\nshow.warning(f'{problem}')\nMarkdown(word)\n"
                    "st.warning('Literal.')\nshow.warning('Not for this model: {}.', reason)\nlog.warning(problem)\n"
                    "from viz_app.app import show as shown\nshown.info(problem)\n")
    global ROOT
    kept, ROOT = ROOT, tmp_path
    try:
        assert [call.split(":")[1] for call in unsafe_calls(page)] == ["3", "4", "5", "6", "11"]
    finally:
        ROOT = kept


@pytest.mark.parametrize("value", [HOSTILE, ValueError(f"the foil {HOSTILE!r} is not one vocabulary token")])
def test_a_filled_template_makes_nothing_of_a_visitors_text(value):
    filled = markdown("**Not for this model:** {}.", value)
    assert rendered(filled) == [] and rendered(str(value)) != []  # the renderer sees the links unescaped
    assert "<strong>Not for this model:</strong>" in _html(filled)
    assert "click" in _html(filled) and "x.example" in _html(filled)  # shown, as text


def test_markdown_numbers_and_markdown_values_are_kept():
    part = markdown("**{}**", "a*b")
    assert markdown("{:,} of {:.0%}; {}", 12345, 0.5, part) == "12,345 of 50%; **a\\*b**"
    assert joined(" · ", [part, markdown("x")]) == "**a\\*b** · x"
    with pytest.raises(TypeError):
        joined(" · ", [part, "a plain str"])


def test_only_the_apps_own_addresses_become_links():
    assert rendered(address("http://10.0.0.5:8501/lessons?class=abc")) == ["link http://10.0.0.5:8501/lessons?class=abc"]
    assert rendered(address("http://x.example/a> <img src=http://x.example/t>")) == []


def test_a_lesson_keeps_its_links_and_loses_its_images():
    """A lesson's image becomes a "!" and a link: nothing is fetched when the step is shown."""
    assert rendered(without_images("[notes](http://x.example/n) ![i](http://x.example/i.png)")) == [
        "link http://x.example/n", "link http://x.example/i.png"]


def test_tokens_in_a_marked_sentence_are_text():
    from bert.pieces import WORDPIECE

    tokens = ["[CLS]", "[", "x", "](", "http", "://", "x.example", ")", "[SEP]"]
    shown = marked_sentence(tokens, [True, *[False] * 7, True], WORDPIECE, {2: "<img src=x>"})
    assert isinstance(shown, Markdown) and rendered(shown) == []


def _html(text: str) -> str:
    from page_checks import MARKDOWN

    return MARKDOWN.render(text)
