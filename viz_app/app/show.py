"""The one road from the app's text to Streamlit's Markdown: messages, captions, headings and paragraphs. Each takes a
literal template and the values to fill it with (viz_app/app/text.py `markdown`): a value is shown as Markdown only
if it is `Markdown`, so a visitor's text, or an error quoting it, is shown as text wherever it goes. Streamlit's own
calls are left for literal text (tests/app/app/test_visitor_text.py reads every call from the source).

    show.warning("“{}” is not a word of sentence {}.", settings.word, number)
    show.warning("{}", error)  # the library's message, quoting what the visitor typed
"""
from __future__ import annotations

import streamlit as st

from viz_app.app.text import markdown as _markdown


def _show(kind: str):
    def shown(template: str, /, *values, on=None, **options):
        """Fill `template` (a literal) with `values` (each escaped unless Markdown) and show it; `on`: a column or
        container to draw it in (the page's main area by default); `options`: Streamlit's own (icon=, anchor=, help=)."""
        return getattr(st if on is None else on, kind)(_markdown(template, *values), **options)

    shown.__name__ = shown.__qualname__ = kind
    shown.__doc__ = f"st.{kind} of a filled template. " + shown.__doc__
    return shown


markdown = _show("markdown")
caption = _show("caption")
info = _show("info")
warning = _show("warning")
error = _show("error")
success = _show("success")
toast = _show("toast")
title = _show("title")
header = _show("header")
subheader = _show("subheader")
