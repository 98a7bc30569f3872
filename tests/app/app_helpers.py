"""Reading what an AppTest page shows: switch pages, decode plotly figures to numpy, collect the page's text."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "viz_app" / "Home.py"
PAGES = {
    "prediction": "../pages/1_prediction.py",
    "attention": "../pages/2_attention.py",
    "embeddings": "../pages/3_embeddings.py",
    "mlp": "../pages/4_mlp.py",
    "architecture": "../pages/5_architecture.py",
}
TIMEOUT = 600  # seconds per script run: generous, the CPUs are shared with training runs


ENTRY = """
import streamlit as st
from viz_app import page_context, sentence_box, sidebar, state

st.set_page_config(page_title="Inside BERT", layout="wide")
state.load_from_url()
pages = [st.Page({prediction!r}, title="Masked prediction", url_path="prediction", default=True)] + [
    st.Page(path, title=title, url_path=name) for name, path, title in {pages!r}
]
page = st.navigation(pages)
model = sidebar.render()
sentence = sentence_box.render(page.url_path, model.loaded, model.source)
context = page_context.Context.of(model, sentence)
state.write_url(context.source)
with page_context.serve(context):
    page.run()
"""


def write_entry(folder: Path, pages: dict[str, tuple[str, str]]) -> Path:
    """An entry script that mirrors viz_app/Home.py with these pages ({url name: (file in pages/, title)})."""
    listed = [(name, str(ROOT / "pages" / file), title) for name, (file, title) in pages.items()]
    path = folder / "entry.py"
    path.write_text(ENTRY.format(prediction=str(ROOT / "pages" / "1_prediction.py"), pages=listed))
    return path


def open_entry_page(entry: Path, page_file: str, query: dict):
    """Run `entry` once with these URL query parameters, then switch to pages/<page_file>; check no exception."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(entry), default_timeout=TIMEOUT)
    at.query_params.update({k: str(v) for k, v in query.items()})
    at.run()
    at.switch_page(str(ROOT / "pages" / page_file)).run()
    no_exception(at)
    return at


def go(at, page: str):
    at.switch_page(PAGES[page]).run()
    return at


def no_exception(at) -> None:
    assert not at.exception, "\n".join(str(e.value) + "\n" + "".join(getattr(e, "stack_trace", [])) for e in at.exception)


def figures(at) -> list[dict]:
    """Every plotly chart on the page, as its figure dict."""
    return [json.loads(element.proto.spec) for element in at.get("plotly_chart")]


def array(value) -> np.ndarray:
    """A plotly JSON array: a list, or plotly's typed array {"dtype", "bdata" (base64), "shape"}."""
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            data = data.reshape([int(s) for s in str(shape).split(",")])
        return data
    return np.asarray(value)


def bound_to_url(widget) -> str:
    """The URL parameter Streamlit keeps this widget's value in (`bind="query-params"`), "" if none. Streamlit's
    browser side writes the address bar as the user changes a bound widget, and AppTest runs no browser: the
    address bar itself is checked in tests/browser/test_browser_url.py."""
    return widget.proto.query_param_key


def texts(at) -> str:
    """All text the page shows in markdown, captions, alerts and titles, joined: for "the page says X" checks."""
    parts = []
    for kind in ("title", "markdown", "caption", "info", "warning", "error", "subheader", "code"):
        parts += [str(element.value) for element in getattr(at, kind)]
    return "\n".join(parts)
