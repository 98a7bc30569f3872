"""What must hold on every page the app renders, whatever the model and the input (tests/app/app/test_every_page.py
checks each on every render): each returns the problems it finds, an empty list when there are none.

- `exceptions`: no exception (Home.py shows a page's failure to the owner): a heavy computation reached outside
  viz_app/heavy.py's `run` is one, refused by the watcher Home.py runs every page under;
- `shown_problems`: no traceback, no file of the server named;
- `live_markup`: text from a link never renders as Markdown or HTML (a link, an image, a tag, emphasis);
- `html_problems`: only the pages that write HTML do, with the visitor's text escaped; chart labels carry no tag;
- `layers_beyond`: one numbering, layers counted from 0 (a model of n layers never shows "layer n").
"""
from __future__ import annotations

import json
import re

from google.protobuf.json_format import MessageToDict
from streamlit.testing.v1.element_tree import Widget

from app_helpers import ROOT, figures, texts
from viz_app.specs.word_contexts import OUR_FINDING

PAYLOAD = "[Click](http://x) ![](http://x/i.png) <img src=x> **Bold**"  # Markdown and HTML (no lower-case guess is "Bold")
LIVE_MARKDOWN = {  # each as a Markdown renderer would read it; a backslash before a character makes it literal
    "link": re.compile(r"(?<!\\)\[Click(?<!\\)\]\("),
    "image": re.compile(r"(?<!\\)!\[\]\("),
    "tag": re.compile(r"(?<!\\)<img"),
    "bold": re.compile(r"(?<!\\)\*\*Bold\*\*"),
}
LIVE_HTML = {"tag": re.compile(r"<img src=x>"), "link": re.compile(r"href=[\"']?http://x")}
# the elements whose text the browser reads as Markdown, and their fields that hold it
MARKDOWN_FIELDS = {"body", "label", "help", "message", "options", "placeholder"}
PLAIN_TEXT = {"code", "textInput", "textArea", "selectbox", "multiselect", "text", "json", "dataframe"}
ABOUT_THE_BUILT_IN_MODEL = (OUR_FINDING,)  # shown whatever the model: its layers are MiniLM's six
WRITE_HTML = {"corpus_search", "sentence_tasks", "how_bert_was_trained", "lessons", "features"}  # chips, matches: escaped


def nodes(node):
    """Every element and block of an AppTest's tree."""
    yield node
    for child in (getattr(node, "children", None) or {}).values():
        yield from nodes(child)


def widgets(at) -> dict:
    """key -> the widget drawn with it, whatever its kind."""
    return {node.key: node for node in nodes(at._tree) if isinstance(node, Widget) and node.key}


def exceptions(at) -> list[str]:
    return [f"exception: {error.value} {''.join(getattr(error, 'stack_trace', []))[-300:]}" for error in at.exception]


def shown_problems(at) -> list[str]:
    shown = texts(at)
    return [f"shows {what!r}" for what in ("Traceback", 'File "', str(ROOT)) if what in shown]


def live_markup(at) -> list[str]:
    """(element, what is live, the text) for each rendered element that carries the payload's markup live."""
    found = []
    for node in nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None:
            continue
        data = MessageToDict(proto)
        kind = node.type if isinstance(getattr(node, "type", None), str) else type(proto).__name__
        if kind in PLAIN_TEXT:
            continue
        if kind == "html" or (kind == "markdown" and data.get("allowHtml")):
            checks, strings = LIVE_HTML, list(_strings(data.get("body", "")))
        else:
            checks, strings = LIVE_MARKDOWN, [s for key in MARKDOWN_FIELDS for s in _strings(_field(data, key))]
        found += [f"{kind} ({name}): {text[:160]}" for text in strings for name, check in checks.items() if check.search(text)]
    return found


def html_problems(at, page: str) -> list[str]:
    """A page outside WRITE_HTML writes no HTML at all; those in it never a tag from the visitor's text; no chart
    label holds a tag (plotly renders a few)."""
    found = []
    if page in WRITE_HTML:
        for element in [*at.get("html"), *(m for m in at.markdown if m.proto.allow_html)]:
            body = element.proto.body if hasattr(element.proto, "body") else element.value
            found += [f"HTML with {tag}" for tag in ("<script>", "<img", "<b>bold") if tag in body]
    else:
        found += ["an HTML element"] * len(at.get("html"))
        found += [f"Markdown with HTML: {m.value[:80]}" for m in at.markdown if m.proto.allow_html]
    for figure in figures(at):
        for trace in figure["data"]:
            for axis in ("x", "y", "text"):
                labels = trace.get(axis)
                if isinstance(labels, list) and labels and isinstance(labels[0], str):
                    found += [f"a chart label {label!r}" for label in labels if "<" in label and "<br>" not in label]
    return found


def layers_beyond(at, num_layers: int) -> list[str]:
    """Any "layer n" or beyond (a label, a chart's axis or hover text, a picker's options) of a model with
    num_layers layers: a page that counted from 1 would show one. What a page tells of the built-in model whatever
    the model picked (ABOUT_THE_BUILT_IN_MODEL) is left out."""
    pickers = [*at.select_slider, *at.selectbox]
    shown = texts(at) + json.dumps(figures(at)) + json.dumps([getattr(w, "options", None) for w in pickers])
    for text in ABOUT_THE_BUILT_IN_MODEL:
        shown = shown.replace(text, "")
    return [shown[max(0, m.start() - 40):m.end() + 10] for m in re.finditer(r"\b[Ll]ayer (\d+)\b", shown)
            if int(m.group(1)) >= num_layers]


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _field(data: dict, key: str):
    """A field anywhere in an element's message (widgets keep theirs one level down)."""
    if key in data:
        return data[key]
    return [value[key] for value in data.values() if isinstance(value, dict) and key in value]
