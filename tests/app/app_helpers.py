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


def texts(at) -> str:
    """All text the page shows in markdown, captions, alerts and titles, joined: for "the page says X" checks."""
    parts = []
    for kind in ("title", "markdown", "caption", "info", "warning", "error", "subheader", "code"):
        parts += [str(element.value) for element in getattr(at, kind)]
    return "\n".join(parts)
