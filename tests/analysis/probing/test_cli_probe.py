"""`python -m bert probe`: the JSON and CSV it writes, its table, and exit status 2 with one line for bad input.
A tiny random model keeps it fast; the real entry point runs once in a subprocess."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bert.__main__ import main
from bert_test_support import free_port, synthetic_conllu

REPO = Path(__file__).resolve().parents[3]

MEASURES = {"accuracy", "control_accuracy", "selectivity"}


@pytest.fixture(scope="module")
def conllu_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("probe_cli") / "synthetic.conllu"
    path.write_text(synthetic_conllu(30))
    return path


def test_json_and_csv_have_the_documented_shape(tiny_mlm_folder, conllu_file, tmp_path, capsys):
    out_json, out_csv = tmp_path / "out" / "probes.json", tmp_path / "probes.csv"
    status = main(["probe", "--data", str(conllu_file), "--model", str(tiny_mlm_folder), "--tasks", "upos,deprel,arcs,distance,depth",
                   "--json", str(out_json), "--csv", str(out_csv), "--seed", "2", "--pieces", "mean", "--device", "cpu"])
    assert status == 0
    result = json.loads(out_json.read_text())
    assert {"model", "data", "tasks", "baselines"} <= set(result) and result["model"] == str(tiny_mlm_folder)
    assert result["pieces"] == "mean" and result["seed"] == 2 and result["data"] == "synthetic.conllu"
    assert list(result["tasks"]) == ["upos", "deprel", "arcs", "distance", "depth"]
    for name, task in result["tasks"].items():
        assert [layer["hidden_states_index"] for layer in task["layers"]] == [0, 1, 2] and task["best_hidden_states_index"] in (0, 1, 2)
        expected = MEASURES if name in ("upos", "deprel", "arcs") else {"uuas", "spearman"} if name == "distance" else {"root_accuracy", "spearman"}
        assert all(set(layer) == expected | {"hidden_states_index"} for layer in task["layers"]), name
    assert {"linear_uuas", "embeddings_uuas", "embeddings_root_accuracy"} <= set(result["baselines"])
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 5 * 3 and rows[0]["task"] == "upos" and rows[0]["residual_name"] == "embeddings"
    table = capsys.readouterr().out
    assert "upos (best " in table and "linear_uuas" in table and "control_accuracy" in table


def test_with_a_training_file_it_tests_on_data(tiny_mlm_folder, conllu_file, tmp_path):
    test_file = tmp_path / "test.conllu"
    test_file.write_text(synthetic_conllu(6, seed=9))
    out = tmp_path / "probes.json"
    assert main(["probe", "--data", str(test_file), "--train", str(conllu_file), "--model", str(tiny_mlm_folder),
                 "--tasks", "upos", "--json", str(out), "--mdl"]) == 0
    result = json.loads(out.read_text())
    assert result["num_train_sentences"] == 30 and result["num_test_sentences"] == 6
    assert result["data"] == "test.conllu (trained on synthetic.conllu)"
    assert {"codelength", "compression", "control_codelength"} <= set(result["tasks"]["upos"]["layers"][0])


@pytest.mark.slow
def test_the_builtin_wordnet_sentences_go_through_the_same_probes(tiny_mlm_folder, tmp_path):
    out = tmp_path / "wordnet.json"
    assert main(["probe", "--data", "wordnet", "--model", str(tiny_mlm_folder), "--tasks", "position,pos",
                 "--json", str(out), "--max-train-words", "300"]) == 0
    result = json.loads(out.read_text())
    assert result["data"] == "the built-in WordNet sentences" and list(result["tasks"]) == ["position", "pos"]
    kept = result["num_train_sentences"] + result["num_test_sentences"]  # the tiny vocabulary makes long inputs
    skipped = sum(int(note.split()[0]) for note in result["notes"] if "longer than the model's" in note)
    assert kept + skipped == 992 and abs(result["num_test_sentences"] / kept - 0.2) < 0.02
    for task in result["tasks"].values():
        assert all(set(layer) == MEASURES | {"hidden_states_index"} for layer in task["layers"])
    assert result["tasks"]["pos"]["num_test"] == result["num_test_sentences"]  # one headword per held-out sentence
    assert {"majority_pos", "embeddings_position_accuracy"} <= set(result["baselines"])


@pytest.mark.parametrize("case", ["missing file", "unknown task", "no usable sentence", "not utf-8", "ud-ewt with --train"])
def test_bad_input_exits_2_with_one_line(tiny_mlm_folder, conllu_file, tmp_path, capsys, case):
    bad = tmp_path / "bad.conllu"
    arguments = {
        "missing file": ["--data", str(tmp_path / "nothing.conllu")],
        "unknown task": ["--data", str(conllu_file), "--tasks", "upos,height"],
        "no usable sentence": ["--data", str(bad)],
        "not utf-8": ["--data", str(bad)],
        "ud-ewt with --train": ["--data", "ud-ewt", "--train", str(conllu_file)],
    }[case]
    bad.write_bytes(b"1\tdog\tdog\tNOUN\t_\t_\t5\troot\t_\t_\n" if case == "no usable sentence" else b"1\tcaf\xe9\n")
    assert main(["probe", *arguments, "--model", str(tiny_mlm_folder)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    expected = {"missing file": "not a file", "unknown task": "'height'", "no usable sentence": "line 1: head 5 is outside",
                "not utf-8": "line 1: not UTF-8", "ud-ewt with --train": "leave out --train"}[case]
    assert expected in lines[0]


@pytest.mark.slow
def test_torchrun_on_two_ranks_gives_the_results_of_one_process(tiny_mlm_folder, conllu_file, tmp_path):
    """The real entry point under torchrun: each rank runs the model over half the sentences, rank 0 probes."""
    arguments = ["-m", "bert", "probe", "--data", str(conllu_file), "--model", str(tiny_mlm_folder), "--tasks", "upos,distance", "--device", "cpu"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO)}
    runs = {
        "alone": [sys.executable, *arguments],
        "torchrun": [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port()), *arguments],
    }
    results = {}
    for name, command in runs.items():
        done = subprocess.run(command + ["--json", str(tmp_path / f"{name}.json")], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.count("upos (best ") == 1  # one table: rank 0's
        results[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert results["torchrun"]["tasks"] == results["alone"]["tasks"]
    assert results["torchrun"]["baselines"] == results["alone"]["baselines"]


def test_a_column_file_makes_every_label_column_a_task(tiny_mlm_folder, tmp_path):
    """CoNLL-2003 style: a word and label columns per line; -DOCSTART- ignored; no tree, so no tree tasks."""
    rows = ["-DOCSTART- -X- O", ""]
    for number in range(20):
        rows += ["the DT O", f"{'dog' if number % 2 else 'cat'} NN B-ANIMAL", "barked VBD O", ". . O", ""]
    path = tmp_path / "ner.txt"
    path.write_text("\n".join(rows))
    out = tmp_path / "ner.json"
    assert main(["probe", "--data", str(path), "--model", str(tiny_mlm_folder), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result["tasks"]) == ["column2", "column3"] and result["num_test_sentences"] == 4
    assert "linear_uuas" not in result["baselines"]
    assert main(["probe", "--data", str(path), "--model", str(tiny_mlm_folder), "--tasks", "distance"]) == 2
