"""Feature labels kept with an SAE run (labels.json beside sae.safetensors): written and read back by the loader,
a bad file refused with a message that names the problem, the shipped SAE's folder never written to."""
import json
import re

import pytest
import torch

from bert.analysis.features.feature_labels import (LABELS_FILE, MAX_LABEL, FeatureLabelsError, parse_labels,
                                                   read_labels, write_labels)
from bert.analysis.features.sae import SaeConfig, TopKSae, load_sae
from bert.analysis.features.shipped import SHIPPED_SAE


@pytest.fixture()
def folder(tmp_path):
    sae = TopKSae(SaeConfig(model="test", fingerprint="", layer=1, hidden=3, features=8, k=2, special_tokens=True))
    with torch.no_grad():
        sae.W_dec.copy_(torch.eye(8, 3))
    return sae.save(tmp_path / "sae")


def test_labels_round_trip_through_the_loader(folder):
    assert load_sae(folder).labels == {}  # no labels.json yet
    write_labels(folder, {5: "  barking <dogs> & cats ", 0: "the suffix -ness", 3: "   "}, features=8)
    assert json.loads((folder / LABELS_FILE).read_text(encoding="utf-8")) == {"0": "the suffix -ness",
                                                                              "5": "barking <dogs> & cats"}
    assert load_sae(folder).labels == {0: "the suffix -ness", 5: "barking <dogs> & cats"}  # blank ones dropped
    assert load_sae(folder, labels=False).labels == {}
    write_labels(folder, {7: "über"}, features=8)  # replaces the file, non-ASCII kept
    assert read_labels(folder, 8) == {7: "über"}


@pytest.mark.parametrize("text, problem", [
    ("{not json", "is not JSON"),
    ('["barking"]', "must be a JSON object of feature number to label"),
    ('{"dog": "barking"}', "'dog' is not a feature number"),
    ('{"-1": "barking"}', "'-1' is not a feature number"),
    ('{"8": "barking"}', "feature 8 is outside this SAE's 0 .. 7"),
    ('{"2": 3}', "the label of feature 2 is 3, not text"),
    ('{"2": "' + "x" * (MAX_LABEL + 1) + '"}', f"is {MAX_LABEL + 1} characters long; at most {MAX_LABEL}"),
    pytest.param("[" * 200_000, "is nested too deeply", id="200 kB deep"),  # json's decoder recurses: RecursionError, caught
    pytest.param('{"2": ' + "9" * 5000 + "}", "holds a number too long to read", id="5,000-digit label"),  # int(): ValueError
    pytest.param('{"' + "9" * 5000 + '": "x"}', "'99999", id="5,000-digit key"),  # quoted short, never converted
    pytest.param('{"2": [' + "1, " * 100_000 + "1]}", "the label of feature 2 is a list, not text", id="a long list"),
])
def test_a_bad_labels_file_is_refused_with_a_message_naming_the_problem(folder, text, problem):
    (folder / LABELS_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(FeatureLabelsError, match=f"labels.json of sae.*{re.escape(problem)}"):
        load_sae(folder)
    with pytest.raises(FeatureLabelsError, match="mine.json"):
        parse_labels(text.encode(), 8, "mine.json")


def test_bytes_that_are_not_utf8_are_refused():
    with pytest.raises(FeatureLabelsError, match="not JSON"):
        parse_labels(b'{"1": "\xff"}', 8)


def test_a_label_is_checked_before_writing_and_the_shipped_folder_is_never_written(folder):
    with pytest.raises(FeatureLabelsError, match="outside"):
        write_labels(folder, {9: "too far"}, features=8)
    assert not (folder / LABELS_FILE).exists()  # nothing half-written
    before = sorted(p.name for p in SHIPPED_SAE.iterdir())
    with pytest.raises(FeatureLabelsError, match="shipped inside the package"):
        write_labels(SHIPPED_SAE, {1: "anything"}, features=4096)
    assert sorted(p.name for p in SHIPPED_SAE.iterdir()) == before
