"""The recipe's phase-2 mix: everyday sources repeated, others sampled, cloze copies and held-out text kept out."""
import importlib.util
from pathlib import Path

import pytest

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "train_minilm_mlm.py"


@pytest.fixture
def recipe():
    spec = importlib.util.spec_from_file_location("train_minilm_mlm", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def corpus(tmp_path):
    sources = tmp_path / ".cache" / "sources"
    sources.mkdir(parents=True)
    (sources / "movie-dialog.txt").write_text("Where are you going tonight?\nI left my keys at home.\n")
    # The same line in a later source belongs to the first (build_corpus keeps the first copy).
    (sources / "sotu.txt").write_text("Where are you going tonight?\nThe economy grew last year.\nTaxes fell.\n")
    (tmp_path / "train.txt").write_text(
        "Where are you going tonight?\nThe economy grew last year.\nTaxes fell.\n"
        "Every night I brushed my teeth before going to bed, said Tom.\n"  # a filled-in copy of a cloze sentence
    )  # "I left my keys at home." is held out: not in train.txt
    (tmp_path / "cloze.tsv").write_text("# topic: home\nI brushed my [MASK] before going to bed.\tteeth\n")
    return tmp_path


def test_everyday_sources_repeat_others_are_sampled_cloze_copies_never_enter(recipe, corpus, monkeypatch):
    monkeypatch.setattr(recipe, "OTHERS_KEPT", 1.0)
    out = corpus / "mix.txt"
    counts = recipe.build_everyday_mix(corpus, out, corpus / "cloze.tsv")
    lines = out.read_text().splitlines()
    repeats = recipe.EVERYDAY_REPEATS["movie-dialog"]
    assert sorted(lines) == sorted(["Where are you going tonight?"] * repeats + ["The economy grew last year.", "Taxes fell."])
    assert counts == {"cloze copies left out": 1, "movie-dialog": repeats, "sotu": 2}
    assert not any("brushed" in line or "keys" in line for line in lines)

    monkeypatch.setattr(recipe, "OTHERS_KEPT", 0.0)
    recipe.build_everyday_mix(corpus, out, corpus / "cloze.tsv")
    assert out.read_text().splitlines() == ["Where are you going tonight?"] * repeats
    assert not (corpus / "mix.txt.tmp").exists()
