"""Reading what an AppTest page shows: switch pages, decode plotly figures to numpy, collect the page's text."""
from __future__ import annotations

import base64
import functools
import json
import re
import threading
from pathlib import Path

import numpy as np

from bert.analysis.representations.self_similarity import EXAMPLES
from viz_app.app import navigation
from viz_app.app.sidebar import PAGE_LINKS_WRAP
from viz_app.charts import flow
from viz_app.specs import features


def _scan_for_components_once() -> None:
    """Every new AppTest scans the installed packages for Streamlit components (about 0.3-0.4 s of CPU each, finding
    none here); a server scans once when it starts (streamlit.runtime.Runtime), so the tests' process does too."""
    from streamlit.components.v2 import manifest_scanner

    if not hasattr(manifest_scanner.scan_component_manifests, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


_scan_for_components_once()


def _wait_for_the_run(runner, timeout: float = 3) -> None:
    """AppTest.run's wait for the script thread, on an event. Streamlit's own (`require_widgets_deltas`) wakes every
    millisecond and scans every event the run has sent so far, taking the interpreter's lock from the thread the page
    runs in: in a sampled profile of the every-page sweep that loop was about a tenth of the test process's busy time
    (docs/benchmarks.md, "The test suite"). This waits for the same event, the runner's SHUTDOWN, and on a timeout
    stops the run and raises as Streamlit's does."""
    from streamlit.runtime.scriptrunner import ScriptRunnerEvent

    stopped = threading.Event()

    def on_event(sender, event, **kwargs) -> None:
        if event == ScriptRunnerEvent.SHUTDOWN:
            stopped.set()

    runner.on_event.connect(on_event, weak=False)
    try:
        if runner.script_stopped() or stopped.wait(timeout):  # sent before the connection, or after it
            return
    finally:
        runner.on_event.disconnect(on_event)
    runner.request_stop()
    runner.join()
    raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")


def _wait_on_an_event() -> None:
    """Put `_wait_for_the_run` where AppTest.run looks for its wait (left as it is in a Streamlit without it)."""
    from streamlit.testing.v1 import local_script_runner

    if callable(getattr(local_script_runner, "require_widgets_deltas", None)):
        local_script_runner.require_widgets_deltas = _wait_for_the_run


_wait_on_an_event()

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "viz_app" / "Home.py"
PAGES = {url_path: f"../pages/{page.file}" for url_path, page in navigation.PAGES.items()}  # every page, as Home.py lists them
NO_SENTENCE = navigation.NO_SENTENCE_BOX | {"lessons"}  # pages that run without a sentence (the lessons page has the box)
NO_MODEL = {"how_bert_was_trained"}  # pages that show the picked model nothing (their own built-in model, shipped runs)
TIMEOUT = 600  # seconds per script run: generous, the CPUs are shared with training runs
UPLOAD_LABEL = features.CORPUS_LABELS[features.UPLOAD]  # what Streamlit wrote for the corpus pickers' "upload"
PLAY = "\n".join(EXAMPLES["play"])

# old links (tests/app/app/test_old_links.py): the parameters Streamlit's own binding kept, each with a value other than its
# default as Streamlit spelt it
FORMERLY_BOUND = {
    "top_k": (12, "12"), "layer": (3, "3"), "head": (5, "5"), "statistic": ("sep", "sep"),
    "units": ("words", "words"), "k": (8, "8"), "mlp_layer": (2, "2"), "neurons_shown": (64, "64"),
    "probes_count": (20, "20"), "probes_ud_count": (50, "50"), "probe_seed": (7, "7"),
    "patch_clean": ("The king said that [MASK] was tired.",) * 2,
    "patch_corrupted": ("The queen said that [MASK] was tired.",) * 2,
    "trace_text": ("The king said that [MASK] was tired.",) * 2, "trace_samples": (5, "5"),
    "rollout_layer": (4, "4"), "stats_count": (30, "30"), "stats_statistic": ("cls", "cls"),
    "saliency_steps": (64, "64"), "saliency_samples": (50, "50"), "search_head": (2, "2"), "search_k": (20, "20"),
    "contexts_word": ("play", "play"), "contexts_sentences": (PLAY, PLAY),
    "features_look_at": ("MLP neurons", "MLP neurons"), "features_shown": (32, "32"),
    "features_corpus": ("upload", UPLOAD_LABEL), "neurons_layer": (2, "2"), "neurons_corpus": ("upload", UPLOAD_LABEL),
    "tasks_class": ("calm", "calm"), "compare_folder": ("/no/such/folder", "/no/such/folder"),
    "compare_count": (60, "60"),
}


def open_page(page: str, query: dict):
    """Run Home.py once with these URL query parameters, then switch to `page` (its url path); check no exception."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
    at.query_params.update({k: str(v) for k, v in query.items()})
    at.run()
    if page != navigation.DEFAULT_PAGE:
        go(at, page)
    no_exception(at)
    return at


def go(at, page: str):
    at.switch_page(PAGES[page]).run()
    return at


def no_exception(at) -> None:
    assert not at.exception, "\n".join(str(e.value) + "\n" + "".join(getattr(e, "stack_trace", [])) for e in at.exception)


def page_html(at) -> list:
    """The HTML elements the page wrote: every one but the sidebar's style rule (viz_app/app/sidebar.py) and the
    keyframes and the script of a chart's flowing markers (viz_app/charts/flow.py), the app's own."""
    return [element for element in at.get("html")
            if element.proto.body != PAGE_LINKS_WRAP and not element.proto.body.startswith(flow.START)]


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
    """All text the page shows in markdown, captions, alerts and titles, joined, as a reader sees it (a backslash
    that keeps a character literal in Markdown dropped): for "the page says X" checks."""
    parts = []
    for kind in ("title", "markdown", "caption", "info", "warning", "error", "subheader"):
        parts += [as_read(str(element.value)) for element in getattr(at, kind)]
    parts += [str(element.value) for element in at.code]
    return "\n".join(parts)


def as_read(markdown: str) -> str:
    """Markdown as a reader sees it: a backslash that keeps ASCII punctuation literal (CommonMark) dropped."""
    return _MARKDOWN_ESCAPE.sub(r"\1", markdown)


_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


ONE_STEP = """
title: One step
about: One step on the attention page.
steps:
  - title: Look back
    page: attention
    text: Look at the pattern.
"""  # a lesson for class_showing


def class_showing(monkeypatch, lesson_text: str, name: str):
    """A class of the test's own (class mode, a fresh presenter key) whose presenter shows the first step of the
    lesson written in `lesson_text`, on the built-in model: the class's room."""
    import secrets

    from viz_app.lessons.format import parse_lesson
    from viz_app.server import singletons

    key = secrets.token_urlsafe(12)
    monkeypatch.setenv("BERT_INSIDE_CLASS", "1")
    monkeypatch.setenv("BERT_INSIDE_PRESENTER_KEY", key)
    room = singletons.class_room(key)
    room.show(key, parse_lesson(lesson_text, name), 0, model="minilm")
    return room
