"""The probes page in a real browser (Chromium + Playwright, as test_browser.py): upload a small CoNLL-U file,
run the probes and see the per-layer curves and one sentence's predicted tree against its gold tree; a bad file
gets its message. Screenshots go to $SCREENSHOT_DIR when it is set.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_probes.py -q
"""
from __future__ import annotations

from browser_support import SLOW, open_page, screenshot, settle


def _conllu(count: int) -> bytes:
    """The first `count` sentences of the shipped UD English EWT dev file."""
    from bert.analysis.probing.treebank import BUILTIN_FILES, BUILTIN_FOLDER

    blocks = (BUILTIN_FOLDER / BUILTIN_FILES["dev"]).read_text(encoding="utf-8").split("\n\n")[:count]
    return ("\n\n".join(blocks) + "\n\n").encode()


def test_an_uploaded_treebank_draws_curves_and_a_tree(browser, app_url, tmp_path):
    page, errors = open_page(browser, app_url + "/probes?probes_source=labelled&probe_treebank_tasks=upos,distance",
                             {"width": 1440, "height": 2600})  # Streamlit draws a chart only once it is on screen
    page.get_by_text("Choose a .conllu, .conll, .tsv or .txt file").wait_for(timeout=SLOW)
    upload = page.locator("input[type=file]")
    bad = tmp_path / "bad.conllu"
    bad.write_bytes(b"1\tThe\t_\tDET\t_\t_\t2\tdet\t_\t_\n2\tdog\t_\tNOUN\t_\t_\t7\troot\t_\t_\n")
    upload.set_input_files(str(bad))
    page.get_by_text("head 7 is outside the sentence").wait_for(timeout=SLOW)
    good = tmp_path / "ewt_start.conllu"
    good.write_bytes(_conllu(30))
    upload.set_input_files(str(good))
    page.get_by_text("Run the probes").wait_for(timeout=SLOW)
    page.get_by_text("Run the probes").click()
    page.get_by_text("One sentence: the predicted tree against the gold tree").wait_for(timeout=SLOW)
    settle(page, charts=2)
    screenshot(page, "probes_treebank")
    tree = page.locator(".js-plotly-plot").nth(1)
    assert tree.get_by_text("predicted arc, in the gold tree").count() == 1
    assert tree.locator(".annotation").count() >= 3  # the sentence's words, between the two trees
    assert page.get_by_text("Summary per task").count() == 1
    assert page.get_by_role("button", name="JSON of the whole run").count() == 1
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()
