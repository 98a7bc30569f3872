"""Small building blocks every page uses: the context check, chart display with exports, int pickers."""
from __future__ import annotations

import hashlib
import json
import weakref
from typing import Callable, Hashable

import streamlit as st
from plotly.basedatatypes import BaseFigure

from bert.analysis.attention.words import WordGroups, word_groups
from viz_app.export import html as export_html
from viz_app.app import page_context, show, state
from viz_app.app.text import joined, markdown
from viz_app.charts import flow
from viz_app.charts.base import Chart
from viz_app.app.navigation import LINK_PARAMS
from viz_app.app.page_context import Context

SHOWN_CHARTS = "_charts_shown"  # (key, Chart) of every chart show_chart drew in this run of the page
_DRAWN: dict[int, dict] = {}  # id of a Chart shown -> its figure as plotly's dict, while the Chart lives (_drawn)


def page_header(title: str, explanation: str) -> None:
    show.title("{}", title)
    show.caption("{}", explanation)


def contents(sections: dict[str, str]) -> None:
    """A long page's contents at its top: one link per section ({anchor: title}), each to the header drawn with
    that anchor (`st.header(title, anchor=anchor)`)."""
    links = (markdown("[{}](#{})", title, anchor) for anchor, title in sections.items())
    show.markdown("**On this page:** {}", joined(" · ", links))


def require(needs_input: bool = True) -> Context:
    """The context Home.py serves this page (see viz_app/app/page_context.py); if the model or, when the page reads
    the sentence, the input is missing, say what to do and stop the page here."""
    context = page_context.current()
    if context is None:
        st.info("Open the app with `streamlit run viz_app/Home.py`.")
        st.stop()
    if context.loaded is None:
        show.warning("{}", context.model.error or "Pick a model in the sidebar.")
        st.stop()
    st.session_state[SHOWN_CHARTS] = []  # this run's charts, for "Download this view"
    if needs_input and context.prepared is None:
        problem = context.sentence.problem if context.sentence else None
        message = problem.message if problem else "Type a sentence in the Sentence box at the top."
        (st.info if problem is None or problem.kind == "empty" else st.warning)(message)
        st.stop()
    return context


def show_chart(chart: Chart, key: str, on_click: Callable[[dict], dict] | None = None) -> None:
    """A plotly chart with its toolbar download (PNG or SVG, as chosen in the sidebar) and a CSV of its numbers.
    `on_click`: called with the selection event (Streamlit's `{"selection": {"points": [...], ...}}`) when the
    visitor clicks a point, before the page reruns; it gives the widgets' new values, {key: value}, as
    `state.filling` does; without it the chart takes no clicks."""
    image_format = st.session_state.get("image_format", LINK_PARAMS["image_format"].default)
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": image_format, "filename": chart.name, "scale": 2},
    }
    selecting = {}
    if on_click is not None:
        selecting = {"on_select": lambda: st.session_state.update(on_click(st.session_state.get(f"chart_{key}") or {})),
                     "selection_mode": "points"}
    st.plotly_chart(_drawn(chart), config=config, key=f"chart_{key}", width="stretch", **selecting)
    if moving := flow.element(chart.figure, f"chart_{key}"):  # markers that flow when drawn (charts/flow.py)
        st.html(moving, unsafe_allow_javascript=True)  # the app's own CSS and script, no visitor text
    st.session_state.setdefault(SHOWN_CHARTS, []).append((key, chart))
    if chart.caption:
        show.caption("{}", chart.caption)
    if _follows_class():
        return
    data = chart.data
    st.download_button(
        "CSV of this chart",
        data=lambda: data.to_csv(index=chart.keep_index),
        file_name=f"{chart.name}.csv",
        mime="text/csv",
        key=f"csv_{key}",
        on_click="ignore",
        icon=":material/download:",
        type="tertiary",
    )


def _follows_class() -> bool:
    """A student who follows the class sees the teacher's view without the charts' downloads: a class's step is drawn
    for every student at once, and eight download buttons were a tenth of the attention page's run; Explore on my own
    brings them back, on the same view (docs/teaching.md)."""
    context = page_context.current()
    return context is not None and context.follows


class _AsDict(BaseFigure):
    """A figure already turned into plotly's dict, handed to st.plotly_chart, which takes a figure's `to_dict()` (a
    deep copy of every number in it) and serialises that."""

    def __init__(self, figure: dict):  # BaseFigure's own __init__ would validate the whole figure again
        object.__setattr__(self, "_figure", figure)

    def to_dict(self) -> dict:
        return self._figure


def _drawn(chart: Chart) -> _AsDict:
    """The chart's figure as plotly's dict, made once for each Chart (st.plotly_chart does not change it): a chart
    kept for every session (the lessons' steps, the attention page) is drawn for a class of students, and the copy
    was most of what a chart cost a page's run. A Chart's figure is not changed once the chart is shown."""
    figure = _DRAWN.get(id(chart))
    if figure is None:
        figure = _DRAWN[id(chart)] = chart.figure.to_dict()
        weakref.finalize(chart, _DRAWN.pop, id(chart), None)
    return _AsDict(figure)


def figure_key(name: str, chart: Chart) -> str:
    """`name` and a digest of the chart's figure, a key for a chart that takes clicks: Streamlit draws a changed
    figure anew and drops its selection, so such a chart is never redrawn changed under one key (its stale
    selection would come back as a click)."""
    drawn = json.dumps(chart.figure.to_plotly_json(), sort_keys=True, default=str)
    return f"{name}_{hashlib.blake2b(drawn.encode(), digest_size=6).hexdigest()}"


def last_drawn(name: str, here: Hashable) -> Hashable | None:
    """What `here` was on this browser session's run before (None the first time), and remember it for the next: where a
    diagram's tokens come from when the visitor opens another of its blocks."""
    key = f"_last_drawn_{name}"
    before = st.session_state.get(key)
    st.session_state[key] = here
    return before


def select_int(label: str, key: str, options: list[int], format_func=str, help: str | None = None, default=None) -> int:
    """A selectbox over ints shown by a label (a token, a [MASK]'s position), kept in the URL by viz_app/app/state.py as
    the bare int; it survives page switches and stays valid when the options change (`default`: the page's pick)."""
    return st.selectbox(label, options, format_func=format_func, help=help, **state.kept(key, options, default))


def download_view(title: str, name: str, keys: list[str] | None = None, label: str = "Download this view") -> None:
    """A "Download this view" button: the charts this page drew so far (those of `keys` if given), interactive,
    in one HTML file that opens with no server and no network."""
    if _follows_class():
        return
    charts = [chart for key, chart in st.session_state.get(SHOWN_CHARTS, []) if keys is None or key in keys]
    context = page_context.current()
    meta = f"Model: {context.key.source}."
    if context.sentence:
        sentence = context.sentence
        meta += f" Sentence: {sentence.text}" + (f" | Second sentence: {sentence.pair}" if sentence.pair else "")
    st.download_button(
        label,
        data=lambda: export_html.view_document(title, charts, meta),
        file_name=f"{name}.html",
        mime="text/html",
        key=f"view_{name}",
        on_click="ignore",
        icon=":material/download:",
        disabled=not charts,
        help="One HTML file with these charts, still interactive: it opens in any browser, with no app and no network.",
    )


UNITS = LINK_PARAMS["units"].choices  # "word pieces", "words"


def units_picker(context: Context, words_note: str) -> WordGroups | None:
    """"word pieces" or "words" (the `units` link parameter); for words, the input's words (each word's pieces
    merged as Clark et al. 2019 did) and `words_note` under the picker, else None."""
    units = st.segmented_control("Show", list(UNITS), required=True, **state.kept("units", UNITS),
                                 help="Word pieces: what the model reads. Words: each word's pieces merged.")
    if units != "words":
        return None
    show.caption("{}", words_note)
    return word_groups(context.prepared.masked)
