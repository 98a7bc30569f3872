"""`python -m bert neurons` and `python -m bert sae train`: the JSON and files they write, and exit status 2 with
one line on stderr for bad input. A tiny random model keeps it fast."""
from __future__ import annotations

import json

import pytest
from safetensors.torch import load_file

from bert.__main__ import main

LINES = ["the dog barked at the mail man", "her cat went to the park", "the cat is at the park and the dog is to",
         "a dog went to her park", "the mail man is at the dog park", "her dog barked and the cat went"]


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("features_cli") / "lines.txt"
    path.write_text("\n".join(LINES * 40) + "\n")
    return path


def test_neurons_json_has_the_documented_shape(tiny_mlm_folder, text_file, tmp_path, capsys):
    out = tmp_path / "out" / "neuron.json"
    assert main(["neurons", "--model", str(tiny_mlm_folder), "--layer", "1", "--neuron", "7", "--data", str(text_file),
                 "--top", "5", "--json", str(out), "--device", "cpu"]) == 0
    result = json.loads(out.read_text())
    assert list(result) == ["model", "layer", "neuron", "top"]
    assert result["model"] == str(tiny_mlm_folder) and result["layer"] == 1 and result["neuron"] == 7
    assert len(result["top"]) == 5
    for example in result["top"]:
        assert set(example) == {"sentence", "position", "token", "activation"}
        assert example["sentence"] in LINES and isinstance(example["position"], int)
    activations = [e["activation"] for e in result["top"]]
    assert activations == sorted(activations, reverse=True)
    assert "neuron 7 of layer 1" in capsys.readouterr().out


@pytest.mark.parametrize("arguments, message", [
    (["--layer", "9", "--neuron", "0"], "layer must be"),
    (["--layer", "0", "--neuron", "-1"], "neuron must be"),
    (["--layer", "0", "--neuron", "0", "--top", "0"], "--top"),
    (["--layer", "0", "--neuron", "0", "--data", "no/such/file.txt"], "neither a file nor a folder"),
])
def test_neurons_bad_input_is_one_line_and_exit_2(tiny_mlm_folder, capsys, arguments, message):
    assert main(["neurons", "--model", str(tiny_mlm_folder), "--data", "builtin", *arguments]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error:") and message in error[0]


def test_sae_train_writes_weights_and_config(tiny_mlm_folder, text_file, tmp_path, capsys):
    out = tmp_path / "sae"
    assert main(["sae", "train", "--model", str(tiny_mlm_folder), "--hidden-states-index", "2", "--data", str(text_file), "--features", "32",
                 "--k", "4", "--steps", "3", "--batch-tokens", "64", "--buffer-tokens", "256", "--out", str(out), "--measure", str(text_file.with_name("m.txt")),
                 "--device", "cpu"]) == 2  # the measuring file does not exist yet
    text_file.with_name("m.txt").write_text("her dog went to the park\nthe cat barked at the man\n")
    assert main(["sae", "train", "--model", str(tiny_mlm_folder), "--hidden-states-index", "2", "--data", str(text_file), "--features", "32",
                 "--k", "4", "--steps", "3", "--batch-tokens", "64", "--buffer-tokens", "256", "--out", str(out), "--measure", str(text_file.with_name("m.txt")),
                 "--float16", "--device", "cpu"]) == 0
    tensors = load_file(out / "sae.safetensors")
    assert {name: tuple(t.shape) for name, t in tensors.items()} == {"W_enc": (64, 32), "b_enc": (32,), "W_dec": (32, 64), "b_dec": (64,)}
    assert str(tensors["W_dec"].dtype) == "torch.float16"
    config = json.loads((out / "config.json").read_text())
    assert {"model", "layer", "k", "features", "special_tokens", "input_scale", "data", "steps", "held_out"} <= set(config)
    assert (config["layer"], config["k"], config["features"], config["steps"], config["special_tokens"]) == (2, 4, 32, 3, True)
    assert config["data"] == str(text_file) and config["input_scale"] > 0
    assert {"variance_explained", "l0", "dead_share", "mlm_loss", "loss_recovered", "top1_agreement"} <= set(config["held_out"])
    printed = json.loads(capsys.readouterr().out)
    assert printed["held_out"] == config["held_out"]
    assert main(["sae", "train", "--model", str(tiny_mlm_folder), "--hidden-states-index", "2", "--data", str(text_file), "--features", "32",
                 "--k", "4", "--steps", "3", "--out", str(out), "--measure", "builtin", "--device", "cpu"]) == 2
    assert "less than one batch" in capsys.readouterr().err  # the finished run's checkpoint, and too little text left


@pytest.mark.parametrize("arguments, message", [
    (["--hidden-states-index", "1", "--features", "4", "--k", "8"], "features >= k"),
    (["--hidden-states-index", "7", "--features", "8", "--k", "2"], "--hidden-states-index must lie"),
    (["--hidden-states-index", "1", "--features", "8", "--k", "2", "--data", "ud-ewt", "--measure", "ud-ewt-dev"], "same text"),
])
def test_sae_bad_input_is_one_line_and_exit_2(tiny_mlm_folder, text_file, tmp_path, capsys, arguments, message):
    command = ["sae", "train", "--model", str(tiny_mlm_folder), "--out", str(tmp_path / "x"), "--device", "cpu"]
    data = [] if "--data" in arguments else ["--data", str(text_file)]
    assert main(command + data + arguments) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error:") and message in error[0]


def train_on_two_ranks(model_folder, data, tmp_path, steps: int):
    """`python -m bert sae train` under torchrun with two CPU ranks: (the finished process, the config it wrote)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from bert_test_support import free_port

    repo = Path(__file__).resolve().parents[3]
    measure = tmp_path / "measure.txt"
    measure.write_text("her dog went to the park\nthe cat barked at the man\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(repo)}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(free_port()),
               "-m", "bert", "sae", "train", "--model", str(model_folder), "--hidden-states-index", "1", "--data", str(data),
               "--features", "32", "--k", "4", "--steps", str(steps), "--batch-tokens", "32", "--buffer-tokens", "128",
               "--checkpoint-every", "2", "--out", str(tmp_path / "sae"), "--measure", str(measure), "--device", "cpu"]
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, json.loads((tmp_path / "sae" / "config.json").read_text())


@pytest.mark.slow
def test_sae_train_under_torchrun_on_two_ranks(tiny_mlm_folder, text_file, tmp_path):
    """The real entry point under torchrun: each rank reads every other line, the gradients are averaged, rank 0
    writes and reports once."""
    done, config = train_on_two_ranks(tiny_mlm_folder, text_file, tmp_path, steps=4)
    assert done.stdout.count('"held_out"') == 1  # rank 0 reports for both
    assert config["steps"] == 4 and config["tokens"] == 4 * 32 * 2  # two ranks x 32 vectors a step
    assert set(load_file(tmp_path / "sae" / "sae.safetensors")) == {"W_enc", "b_enc", "W_dec", "b_dec"}


@pytest.mark.slow
def test_two_ranks_stop_together_when_one_runs_out_of_text(tiny_mlm_folder, tmp_path):
    """Lines of very different lengths: one rank's share of the text gives fewer batches than the other's. Every
    rank stops at the same step (else the one left would wait for the other in the gradient exchange)."""
    words = " ".join(LINES).split()
    lines = [" ".join(words[(i + j) % len(words)] for j in range(1 + (7 * i) % 40)) for i in range(120)]
    data = tmp_path / "uneven.txt"
    data.write_text("\n".join(lines) + "\n")
    done, config = train_on_two_ranks(tiny_mlm_folder, data, tmp_path, steps=10_000)
    assert 0 < config["steps"] < 10_000 and config["tokens"] == config["steps"] * 32 * 2
    assert "the text ran out" in done.stderr


def test_sae_measure_on_other_text_and_a_refused_folder(tiny_mlm_folder, tmp_path, capsys):
    import torch

    from bert.analysis.corpus.model_fingerprint import model_fingerprint
    from bert.analysis.features.sae import SaeConfig, TopKSae
    from bert.pretrained import load_folder

    model, _ = load_folder(tiny_mlm_folder)
    sae = TopKSae(SaeConfig("tiny", model_fingerprint(model), 1, 64, 128, 64, True))
    with torch.no_grad():  # the identity: [I, -I], so every figure is known
        sae.W_enc.copy_(torch.cat([torch.eye(64), -torch.eye(64)], 1))
        sae.W_dec.copy_(torch.cat([torch.eye(64), -torch.eye(64)], 0))
    sae.save(tmp_path / "sae")
    data = tmp_path / "text.txt"
    data.write_text("\n".join(LINES) + "\n")
    out = tmp_path / "figures.json"
    assert main(["sae", "measure", "--sae", str(tmp_path / "sae"), "--model", str(tiny_mlm_folder), "--data", str(data),
                 "--json", str(out), "--device", "cpu"]) == 0
    figures = json.loads(out.read_text())
    assert figures["variance_explained"] == pytest.approx(1.0, abs=1e-6) and figures["sentences"] == len(LINES)
    capsys.readouterr()
    (tmp_path / "sae" / "sae.safetensors").write_bytes(b"not safetensors")
    assert main(["sae", "measure", "--sae", str(tmp_path / "sae"), "--model", str(tiny_mlm_folder), "--data", str(data)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "cannot be read" in error[0]


def test_sae_label_keeps_a_label_with_the_run(tmp_path, capsys):
    from bert.analysis.features.sae import SaeConfig, TopKSae, load_sae

    folder = TopKSae(SaeConfig("test", "", 1, 4, 8, 2, True)).save(tmp_path / "sae")
    assert main(["sae", "label", "--sae", str(folder), "--feature", "3", "--text", "the suffix -ness"]) == 0
    assert main(["sae", "label", "--sae", str(folder), "--feature", "5", "--text", "barking"]) == 0
    assert load_sae(folder).labels == {3: "the suffix -ness", 5: "barking"}
    assert main(["sae", "label", "--sae", str(folder), "--feature", "3", "--text", ""]) == 0  # removed
    assert load_sae(folder).labels == {5: "barking"}
    capsys.readouterr()
    assert main(["sae", "label", "--sae", str(folder), "--feature", "8", "--text", "x"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "feature 8 is outside this SAE's 0 .. 7" in error[0]
