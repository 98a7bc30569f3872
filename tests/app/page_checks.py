"""What must hold on every page the app renders, whatever the model and the input (tests/app/app/test_every_page.py
checks each on every render): each returns the problems it finds, an empty list when there are none.

- `exceptions`: no exception (Home.py shows a page's failure to the owner): a heavy computation reached outside
  viz_app/heavy.py's `run` is one, refused by the watcher Home.py runs every page under;
- `shown_problems`: no traceback, no file of the server named;
- `live_markup`: text from a link never renders as Markdown or HTML (a link, an image, a tag, emphasis);
- `formed_links`: no link or image made from a visitor's address, as a Markdown renderer reads the page (`rendered`);
- `html_problems`: only the pages that write HTML do, with the visitor's text escaped; chart labels carry no tag;
- `layers_beyond`: one numbering, layers counted from 0 (a model of n layers never shows "layer n").
"""
from __future__ import annotations

import json
import re

from google.protobuf.json_format import MessageToDict
from markdown_it import MarkdownIt
from streamlit.testing.v1.element_tree import Widget

from app_helpers import ROOT, figures, page_html, texts
from viz_app.specs.word_contexts import OUR_FINDING

PAYLOAD = ("[Click](http://x) ![](http://x/i.png) <img src=x> **Bold** http://x.example/bare www.x.example "
           "to@x.example")  # Markdown, HTML and bare addresses (no lower-case guess is "Bold")
PAYLOAD_HOSTS = ("x", "x.example")  # the hosts its addresses name
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


def _read_as_markup(at):
    """(kind, the element's fields) of each rendered element the browser reads as Markdown or HTML (not plain text)."""
    for node in nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None:
            continue
        kind = node.type if isinstance(getattr(node, "type", None), str) else type(proto).__name__
        if kind not in PLAIN_TEXT:
            yield kind, MessageToDict(proto)


def live_markup(at) -> list[str]:
    """(element, what is live, the text) for each rendered element that carries the payload's markup live."""
    found = []
    for kind, data in _read_as_markup(at):
        if kind == "html" or (kind == "markdown" and data.get("allowHtml")):
            checks, strings = LIVE_HTML, list(_strings(data.get("body", "")))
        else:
            checks, strings = LIVE_MARKDOWN, [s for key in MARKDOWN_FIELDS for s in _strings(_field(data, key))]
        found += [f"{kind} ({name}): {text[:160]}" for text in strings for name, check in checks.items() if check.search(text)]
    return found


# CommonMark with raw HTML, as Streamlit's frontend reads Markdown (react-markdown, remark-gfm, rehype-raw), and
# GitHub's autolinks, which the frontend also finds in text (remark-gfm): "http(s)://", "www." and e-mail addresses
MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
AUTOLINK = re.compile(r"https?://[^\s<]+|www\.[^\s<]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
HTML_ADDRESS = re.compile(r"<(a|img)\b[^>]*?(?:href|src)\s*=\s*[\"']?([^\s\"'>]+)", re.IGNORECASE)


def rendered(markdown: str) -> list[str]:
    """The addresses of the links and images a Markdown renderer makes of `markdown`, as "link <address>",
    "image <address>" (an `<a>`/`<img>` in raw HTML, a bare address GitHub's Markdown links)."""
    found = []
    for block in MARKDOWN.parse(markdown):
        if block.type == "html_block":
            found += _html_addresses(block.content)
        in_link = False  # a link's own text is not linked again
        for token in block.children or []:
            in_link = (in_link or token.type == "link_open") and token.type != "link_close"
            if token.type == "link_open":
                found.append(f"link {token.attrs.get('href', '')}")
            elif token.type == "image":
                found.append(f"image {token.attrs.get('src', '')}")
            elif token.type == "html_inline":
                found += _html_addresses(token.content)
            elif token.type == "text" and not in_link:
                found += [f"link {address}" for address in AUTOLINK.findall(token.content)]
    return found


def _html_addresses(html: str) -> list[str]:
    return [f"{'link' if tag.lower() == 'a' else 'image'} {address}" for tag, address in HTML_ADDRESS.findall(html)]


def formed_links(at, hosts=PAYLOAD_HOSTS) -> list[str]:
    """Each link or image a Markdown renderer makes, in any element the browser reads as Markdown, of an address on
    one of `hosts` (a visitor's: the app's own text links nowhere)."""
    found = []
    for kind, data in _read_as_markup(at):
        for text in (s for key in MARKDOWN_FIELDS for s in _strings(_field(data, key))):
            found += [f"{kind}: {made} in {text[:160]!r}" for made in rendered(text) if _host(made) in hosts]
    return found


def _host(made: str) -> str:
    """"link http://x.example/bare" -> "x.example"; an e-mail address's host; "www.x.example/w" -> "x.example"."""
    address = made.split(" ", 1)[1]
    address = address.split("://", 1)[-1].split("@")[-1].removeprefix("mailto:")
    host = re.split(r"[/:?#]", address, maxsplit=1)[0]
    return host.removeprefix("www.")


def html_problems(at, page: str) -> list[str]:
    """A page outside WRITE_HTML writes no HTML at all (the sidebar's own style rule aside); those in it never a tag
    from the visitor's text; no chart label holds a tag (plotly renders a few)."""
    found = []
    if page in WRITE_HTML:
        for element in [*at.get("html"), *(m for m in at.markdown if m.proto.allow_html)]:
            body = element.proto.body if hasattr(element.proto, "body") else element.value
            found += [f"HTML with {tag}" for tag in ("<script>", "<img", "<b>bold") if tag in body]
    else:
        found += ["an HTML element"] * len(page_html(at))
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
