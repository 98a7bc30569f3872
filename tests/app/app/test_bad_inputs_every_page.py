"""Every page of the registry (viz_app/app/navigation.py) x every bad input: no uncaught exception and no traceback, only
the page's own one-line messages. A new page is covered by being registered.

The model is the tiny random BERT of tests/conftest.py (`tiny_mlm_folder`: 2 layers, 64 positions, a 90-token
vocabulary), so each page runs in a fraction of a second and a too-long input is long at 65 tokens already. One
AppTest per input is shared by its pages, as a visitor moving from page to page would. The known crash (only
[MASK]s on the saliency page) is in the fast run; the other inputs are marked slow.
"""
from __future__ import annotations

import pytest

from app_helpers import HOME, PAGES, TIMEOUT, go, no_exception, texts

LONG = "The dog barked at the [MASK] in the park. " * 60  # about 600 tokens: over 512 positions, and over the tiny 64
INPUTS = {  # name -> the link's query parameters (text, pair, masks, truncate)
    "only-masks": {"text": "[mask] [MASK] [Mask]"},
    "one-mask": {"text": "[MASK]"},
    "only-special-tokens": {"text": "[CLS] [SEP] [PAD] [UNK]"},
    "only-punctuation": {"text": "?! ... ,;: -- !!! ."},
    "two-segments": {"text": "The dog barked at the [MASK].", "pair": "It ran to the park."},
    "over-512-tokens": {"text": LONG},
    "over-512-tokens-cut": {"text": LONG, "truncate": "1"},
    "empty": {"text": ""},
    "only-spaces": {"text": "   \n\t  "},
    "only-control-characters": {"text": "\x00\x01\x07\x1b"},
    "emoji": {"text": "I love 🍕 and 🎻 music! 😀"},
    "arabic-rtl": {"text": "مرحبا بالعالم، كيف حالك؟"},
    "hebrew-rtl-mask": {"text": "שלום עולם [MASK] טוב"},
    "control-characters-and-mask": {"text": "The dog\x00\x07 barked\x1b at the [MASK]."},
    "unicode-mix": {"text": "Ünïcödé naïve café — “quotes” … ½ ∑ 漢字"},
    "html": {"text": "<script>alert('x')</script> <b>bold</b> <img src=x onerror=alert(1)> [MASK] & *stars* $x$"},
    "empty-second-sentence": {"text": "The dog barked at the [MASK].", "pair": "\x00\x07"},
    "masks-out-of-range": {"text": "The dog barked.", "masks": "0,1,99,-3"},
}
FAST = {"only-masks"}  # the rest: @slow


def _cases():
    for name in INPUTS:
        for page in PAGES:
            yield pytest.param(name, page, id=f"{name}-{page}", marks=() if name in FAST else pytest.mark.slow)


@pytest.fixture(scope="module")
def apps():
    """One AppTest per input, opened on first use and then moved from page to page."""
    return {}


@pytest.mark.parametrize("name, page", list(_cases()))
def test_no_page_raises_on_bad_input(apps, tiny_mlm_folder, name, page):
    from streamlit.testing.v1 import AppTest

    if name not in apps:
        at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
        at.query_params.update({"model": str(tiny_mlm_folder), **INPUTS[name]})
        at.run()
        no_exception(at)
        apps[name] = at
    at = go(apps[name], page)
    no_exception(at)
    shown = texts(at)
    assert "Traceback" not in shown and 'File "' not in shown, (name, page)
    assert not [error.value for error in at.sidebar.error], (name, page)  # the tiny model loaded
