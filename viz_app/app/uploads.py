"""Every upload box of the app: it states its byte cap and enforces it before the file is read.

Three fences, outermost first:
1. `server.maxUploadSize` (.streamlit/config.toml, in MB): Streamlit's server refuses a larger request body while it
   streams in, whatever a browser sends; it is the largest cap below (SERVER_CAP_MB).
2. each box's `max_upload_size` (whole MB, rounded up): the browser refuses a larger file before sending it.
3. `upload_box` checks the exact byte count Streamlit recorded (`UploadedFile.size`) before anything reads, copies
   or decodes the bytes; `read_text` then decodes within the same cap.
"""
from __future__ import annotations

import math

import streamlit as st
from viz_app.app import show

SERVER_CAP_MB = 5  # = server.maxUploadSize in .streamlit/config.toml (tests/app/test_uploads.py checks they agree)
TEXT_BYTES = 2_000_000  # a plain-text file of sentences
PAIRS_BYTES = 1_000_000  # a file of base/source pairs (thousands of pairs; the page trains on 512 at most)
LESSON_BYTES = 200_000  # a lesson file (the longest built-in one is about 10 kB)
# and the boxes whose cap their reader keeps: feature-labels JSON (bert.analysis.features.feature_labels.MAX_BYTES,
# 2 MB), a treebank or labelled-column file (viz_app/specs/probes/runs.py's MAX_LABELLED_BYTES, 5 MB)


def size_text(size: int) -> str:
    return f"{size / 1e6:g} MB" if size >= 1_000_000 else f"{size / 1e3:g} kB"


def upload_box(label: str, types: list[str], key: str, most_bytes: int, help: str | None = None):
    """st.file_uploader capped at `most_bytes` (its label says so). Returns the UploadedFile within the cap, or None
    (nothing uploaded, or a message shown for a file over the cap: its bytes are not read)."""
    cap = f"At most {size_text(most_bytes)}."
    upload = st.file_uploader(label, type=types, key=key, help=f"{cap} {help}" if help else cap,
                              max_upload_size=math.ceil(most_bytes / 1_048_576))
    if upload is not None and upload.size > most_bytes:
        show.warning("That file is {:,} bytes; this box takes at most {:,} bytes ({}). Upload a part of it.",
                     upload.size, most_bytes, size_text(most_bytes))
        return None
    return upload


def read_text(upload, most_bytes: int = TEXT_BYTES) -> str | None:
    """An uploaded file's text, or None after a message: too large (checked before reading), not UTF-8, empty."""
    if upload.size > most_bytes:
        show.warning("That file is {:,} bytes; the limit is {:,} bytes. Upload a shorter text.", upload.size,
                     most_bytes)
        return None
    try:
        text = upload.getvalue().decode("utf-8")
    except UnicodeDecodeError:
        st.warning("That file is not UTF-8 text. Save it as plain UTF-8 text and upload it again.")
        return None
    if not text.strip():
        st.warning("That file is empty. Upload a .txt file with some sentences in it.")
        return None
    return text
