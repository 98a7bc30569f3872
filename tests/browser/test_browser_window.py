"""The attention page in Chromium with a tiny ModernBERT (Warner et al. 2024) saved by transformers' own class:
local_attention 8, so in layer 1 (local) each token sees 4 on each side. With a sentence longer than that window,
the head's heatmap carries the grey band of the pairs the layer cannot reach (its trace named OUTSIDE_WINDOW, grey in
exactly the cells `window_band` leaves out) and the caption says the layer is local."""
from __future__ import annotations

import base64
import urllib.parse

import numpy as np
import pytest

from bert.attention import window_band
from browser_support import SLOW, open_page, screenshot, settle
from viz_app.charts.attention import OUTSIDE_WINDOW

SENTENCE = "the dog barked at the cat and the man went to the park with the [MASK]."
# every drawn plotly figure's traces as the page holds them: (name, z), z plotly's typed array {dtype, bdata}
TRACES = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(figure => (figure.data || []).map(
    trace => [trace.name || '', trace.z ? {dtype: trace.z.dtype, bdata: trace.z.bdata} : null]))"""


def _cells(z) -> np.ndarray:
    """The grey trace's values: plotly's typed array decoded (1 outside the window, NaN inside)."""
    return np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))


@pytest.fixture(scope="module")
def modernbert_folder(tmp_path_factory, tiny_vocab_file):
    pytest.importorskip("transformers")
    from families.family_support import build_hf, write_tiny_tokenizer

    folder = tmp_path_factory.mktemp("modernbert")
    build_hf("modernbert", "ModernBertForMaskedLM", max_position_embeddings=256).save_pretrained(folder)
    write_tiny_tokenizer(folder, tiny_vocab_file)
    return folder


def test_a_local_layer_shows_its_window_on_the_attention_page(browser, app_url, modernbert_folder):
    import bert

    _, tokenizer = bert.load_pretrained(str(modernbert_folder))
    seq = len(tokenizer.encode(SENTENCE).input_ids)
    query = urllib.parse.urlencode({"model": str(modernbert_folder), "text": SENTENCE, "layer": 1})
    page, errors = open_page(browser, f"{app_url}/attention?{query}")
    page.get_by_text("Layer 1 is local: each token sees only the 4 tokens on each side").wait_for(timeout=SLOW)
    settle(page, charts=0)
    (grey,) = [_cells(z) for name, z in page.evaluate(TRACES) if name == OUTSIDE_WINDOW]  # one band
    np.testing.assert_array_equal(~np.isnan(grey), ~window_band(seq, 4).numpy().ravel())  # every pair out of reach
    screenshot(page, "modernbert_local_window")
    assert page.get_by_text("Traceback").count() == 0
    assert not errors, errors
    page.context.close()
