"""Small building blocks every page uses: the context check, chart display with exports, token chips."""
from __future__ import annotations

import re

import streamlit as st

from viz_app import page_context, state
from viz_app.charts.base import Chart
from viz_app.page_context import Context

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:=^&\"'])")


def page_header(title: str, explanation: str) -> None:
    st.title(title)
    st.caption(explanation)


def require(needs_input: bool = True) -> Context:
    """The context Home.py serves this page (see viz_app/page_context.py); if the model or, when the page reads
    the sentence, the input is missing, say what to do and stop the page here."""
    context = page_context.current()
    if context is None:
        st.info("Open the app with `streamlit run viz_app/Home.py`.")
        st.stop()
    if context.loaded is None:
        st.warning(context.model_error or "Pick a model in the sidebar.")
        st.stop()
    if needs_input and context.prepared is None:
        message = context.problem.message if context.problem else "Type a sentence in the Sentence box at the top."
        (st.info if context.problem is None or context.problem.kind == "empty" else st.warning)(message)
        st.stop()
    return context


def show_chart(chart: Chart, key: str) -> None:
    """A plotly chart with its toolbar download (PNG or SVG, as chosen in the sidebar) and a CSV of its numbers."""
    image_format = st.session_state.get("image_format", "png")
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": image_format, "filename": chart.name, "scale": 2},
    }
    st.plotly_chart(chart.figure, config=config, key=f"chart_{key}", width="stretch")
    if chart.caption:
        st.caption(chart.caption)
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


def escape_markdown(text: str) -> str:
    """Show user text literally inside Markdown (pill labels, captions): no formatting, links, HTML or LaTeX."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def chip_labels(tokens: list[str], positions: list[int]) -> dict[int, str]:
    """Unique Markdown-safe labels for token chips: repeated tokens get invisible zero-width suffixes,
    because a pills widget tells its options apart by label."""
    labels, seen = {}, {}
    for position in positions:
        token = tokens[position]
        seen[token] = seen.get(token, 0) + 1
        labels[position] = escape_markdown(token) + "\u200b" * (seen[token] - 1)
    return labels


def select_int(label: str, key: str, options: list[int], format_func=str, help: str | None = None, default=None) -> int:
    """A selectbox over ints shown by a label (a token, a [MASK]'s position), kept in the URL by viz_app/state.py as
    the bare int; it survives page switches and stays valid when the options change. A selectbox shown as the int
    itself needs none of this: `st.selectbox(..., key=key, bind="query-params")`."""
    state.clamp(key, options, default)
    return st.selectbox(label, options, key=key, format_func=format_func, help=help, persist_state="session")
