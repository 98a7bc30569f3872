"""`python -m bert patch` and `python -m bert erase`: the JSON they write, and exit status 2 with one line on stderr
for bad input. A tiny random model keeps it fast; the real entry point runs once in a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bert.__main__ import main
from bert_test_support import synthetic_conllu

REPO = Path(__file__).resolve().parents[3]
PATCH = ["--clean", "the dog [MASK] at the park .", "--corrupted", "her cat [MASK] to the mail .", "--answer", "barked", "--foil", "mail"]


@pytest.fixture(scope="module")
def conllu_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("erase_cli") / "synthetic.conllu"
    path.write_text(synthetic_conllu(40))
    return path


@pytest.mark.parametrize("method", ["exact", "attribution"])
def test_patch_json_has_the_documented_shape(tiny_mlm_folder, tmp_path, capsys, method):
    out = tmp_path / "out" / "patch.json"
    assert main(["patch", "--model", str(tiny_mlm_folder), *PATCH, "--method", method, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result) == ["model", "clean", "corrupted", "answer", "foil", "clean_metric", "corrupted_metric", "tokens",
                            "residual", "attention", "mlp", "heads"]
    assert result["answer"] == "barked" and result["foil"] == "mail" and result["clean"] == PATCH[1]
    seq, layers, heads = 9, 2, 4
    assert len(result["tokens"]) == seq and result["tokens"][3] == "[MASK]"
    assert [len(result["residual"]), {len(row) for row in result["residual"]}] == [layers + 1, {seq}]
    for name in ("attention", "mlp"):
        assert [len(result[name]), {len(row) for row in result[name]}] == [layers, {seq}]
    assert [len(result["heads"]), {len(row) for row in result["heads"]}] == [layers, {heads}]
    if method == "exact":  # the [MASK] alone at the last layer restores everything
        assert result["residual"][-1][3] == pytest.approx(1.0, abs=1e-5)
    printed = capsys.readouterr().out  # residual rows by hidden_states index, the other sweeps by 0-based layer
    assert "residual   strongest: hidden_states[" in printed and "attention  strongest: layer " in printed


@pytest.mark.parametrize("case", ["lengths", "no mask", "answer in pieces", "same words", "batch size"])
def test_patch_bad_input_exits_2_with_one_line(tiny_mlm_folder, capsys, case):
    arguments = {
        "lengths": ["--clean", "the dog [MASK] .", "--corrupted", "the dog [MASK] at .", "--answer", "barked", "--foil", "mail"],
        "no mask": ["--clean", "the dog barked .", "--corrupted", "the cat barked .", "--answer", "barked", "--foil", "mail"],
        "answer in pieces": [*PATCH[:6], "--foil", "barking"],
        "same words": [*PATCH[:6], "--foil", "barked"],
        "batch size": [*PATCH, "--batch-size", "0"],
    }[case]
    assert main(["patch", "--model", str(tiny_mlm_folder), *arguments]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    expected = {"lengths": "clean has 6", "no mask": "has 0 [MASK]", "answer in pieces": "it splits into ['b', '##a'",
                "same words": "the same token", "batch size": "--batch-size must be at least 1"}[case]
    assert expected in lines[0]


def test_erase_json_has_the_documented_shape(tiny_mlm_folder, conllu_file, tmp_path):
    out = tmp_path / "erase.json"
    assert main(["erase", "--data", str(conllu_file), "--task", "upos", "--hidden-states-index", "1", "--model", str(tiny_mlm_folder),
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result) == ["model", "task", "hidden_states_index", "rank", "probe", "mlm"]
    assert result["task"] == "upos" and result["hidden_states_index"] == 1 and result["rank"] == 4 and result["model"] == str(tiny_mlm_folder)
    assert list(result["probe"]) == ["before", "after", "majority", "random_control"]
    assert list(result["mlm"]) == ["before", "after", "random_control"]
    assert all(0 <= value <= 1 for part in ("probe", "mlm") for value in result[part].values())


@pytest.mark.parametrize("case", ["missing file", "unknown task", "layer", "ud-ewt with --train", "negative limit"])
def test_erase_bad_input_exits_2_with_one_line(tiny_mlm_folder, conllu_file, tmp_path, capsys, case):
    arguments = {
        "missing file": ["--data", str(tmp_path / "nothing.conllu"), "--task", "upos", "--hidden-states-index", "1"],
        "unknown task": ["--data", str(conllu_file), "--task", "ner", "--hidden-states-index", "1"],
        "layer": ["--data", str(conllu_file), "--task", "upos", "--hidden-states-index", "7"],
        "ud-ewt with --train": ["--data", "ud-ewt", "--train", str(conllu_file), "--task", "upos", "--hidden-states-index", "1"],
        "negative limit": ["--data", str(conllu_file), "--task", "upos", "--hidden-states-index", "1", "--max-mlm-words", "-1"],
    }[case]
    assert main(["erase", *arguments, "--model", str(tiny_mlm_folder)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    expected = {"missing file": "not a file", "unknown task": "no 'ner' labels", "layer": "not 7",
                "ud-ewt with --train": "leave out --train", "negative limit": "--max-mlm-words must be 0 (all) or more"}[case]
    assert expected in lines[0]


@pytest.mark.slow
def test_the_real_entry_point_prints_one_error_line(tiny_mlm_folder):
    """`python -m bert patch` in its own process: the device line is not printed before a bad input's error."""
    done = subprocess.run(
        [sys.executable, "-m", "bert", "patch", "--model", str(tiny_mlm_folder), *PATCH[:6], "--foil", "barked"],
        capture_output=True, text=True, cwd=REPO, env=os.environ | {"PYTHONPATH": str(REPO)}, timeout=300,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: the answer and the foil are the same token ('barked'): the metric compares two different words"]
