"""Text from a link is text: every URL parameter the page registry declares (viz_app/app/navigation.py, and the model), set to
Markdown and HTML, on every page. No element the browser renders as Markdown or HTML may carry a live link, image,
tag or emphasis from it: each page escapes what it quotes (viz_app/app/text.py's escape_markdown, html.escape)."""
from __future__ import annotations

import re

import pytest
from google.protobuf.json_format import MessageToDict

from app_helpers import PAGES, go, no_exception
from viz_app.app.navigation import LINK_PARAMS
from viz_app.app.url_params import MODEL_PARAM

PAYLOAD = "[Click](http://x) ![](http://x/i.png) <img src=x> **b**"
LIVE_MARKDOWN = {  # each as a Markdown renderer would read it; a backslash before a character makes it literal
    "link": re.compile(r"(?<!\\)\[Click(?<!\\)\]\("),
    "image": re.compile(r"(?<!\\)!\[\]\("),
    "tag": re.compile(r"(?<!\\)<img"),
    "bold": re.compile(r"(?<!\\)\*\*b\*\*"),
}
LIVE_HTML = {"tag": re.compile(r"<img src=x>"), "link": re.compile(r"href=[\"']?http://x")}
SENTENCES = {"text", "pair", "patch_clean", "patch_corrupted", "trace_text", "contexts_word"}  # a page needs a usable one
# the elements whose text the browser reads as Markdown, and their fields that hold it
MARKDOWN_FIELDS = {"body", "label", "help", "message", "options", "placeholder"}
PLAIN_TEXT = {"code", "textInput", "textArea", "selectbox", "multiselect", "text", "json", "dataframe"}


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _nodes(node):
    yield node
    for child in (getattr(node, "children", None) or {}).values():
        yield from _nodes(child)


def live_markup(at) -> list[str]:
    """(element, what is live, the text) for each rendered element that carries the payload's markup live."""
    found = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None:
            continue
        data = MessageToDict(proto)
        kind = node.type if isinstance(getattr(node, "type", None), str) else type(proto).__name__
        if kind in PLAIN_TEXT:
            continue
        if kind == "html" or (kind == "markdown" and data.get("allowHtml")):
            checks, texts = LIVE_HTML, list(_strings(data.get("body", "")))
        else:
            checks, texts = LIVE_MARKDOWN, [s for key in MARKDOWN_FIELDS for s in _strings(_field(data, key))]
        found += [f"{kind} ({name}): {text[:160]}" for text in texts for name, check in checks.items() if check.search(text)]
    return found


def _field(data: dict, key: str):
    """A field anywhere in an element's message (widgets keep theirs one level down)."""
    if key in data:
        return data[key]
    return [value[key] for value in data.values() if isinstance(value, dict) and key in value]


def query(*names: str, **fixed) -> dict:
    return {name: PAYLOAD for name in names} | fixed


SETTINGS = [name for name in LINK_PARAMS if name not in SENTENCES]
RUNS = {  # each declared parameter in at least one run, on every page
    "settings": query(*SETTINGS),
    "settings, one-sentence tracing": query(*SETTINGS, causal_mode="one"),
    "sentences": query(*SENTENCES),
    "model": query(MODEL_PARAM),  # a folder that does not load: the other pages would say only that
}


def test_every_declared_parameter_is_swept():
    swept = set().union(*RUNS.values())
    assert swept == set(LINK_PARAMS) | {MODEL_PARAM}


@pytest.mark.slow
def test_causal_tracing_quotes_link_words_as_text(open_app):
    at = open_app(**RUNS["settings, one-sentence tracing"])
    go(at, "causal_tracing")
    no_exception(at)
    warnings = [w.value for w in at.warning]
    assert any("is not one vocabulary token" in w for w in warnings), warnings
    assert live_markup(at) == []


@pytest.mark.slow
def test_a_model_named_by_a_link_is_quoted_as_text(open_app):
    at = open_app(**RUNS["model"])
    assert any("Could not load" in w.value for w in at.warning), [w.value for w in at.warning]
    assert live_markup(at) == []


@pytest.mark.slow
@pytest.mark.parametrize("run", list(RUNS))
def test_no_page_renders_markup_from_a_link(open_app, run):
    at = open_app(**RUNS[run])
    problems = []
    for page in PAGES:
        go(at, page)
        no_exception(at)
        problems += [f"{page}: {problem}" for problem in live_markup(at)]
    assert problems == []
