"""`python -m bert circuit`: the JSON it writes and exit status 2 with one line on stderr for bad input. A tiny
random model keeps it fast."""
from __future__ import annotations

import json

import pytest

from bert.__main__ import main

PAIR = ["--clean", "the dog [MASK] at the park .", "--corrupt", "her cat [MASK] to the mail .", "--answer", "barked", "--foil", "mail"]


@pytest.mark.parametrize("method", ["exact", "eap", "eap-ig", "eap-ig-activations"])
def test_circuit_json_has_the_documented_shape(tiny_mlm_folder, tmp_path, capsys, method):
    out = tmp_path / "out" / "circuit.json"
    assert main(["circuit", "--model", str(tiny_mlm_folder), *PAIR, "--method", method, "--steps", "3", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result) == ["model", "method", "metric", "nodes", "edges", "faithfulness", "cpr", "cmd"]
    assert result["method"] == method and result["metric"] == "logit-difference"
    layers, heads = 2, 4
    names = [node["name"] for node in result["nodes"]]
    assert names[0] == "embeddings" and names[-1] == "logits" and len(names) == 2 + layers * (heads + 1)
    # to each head's q, k, v: the embeddings and every earlier head and MLP; to an MLP also its own layer's heads
    edges_in = sum(3 * heads * (1 + layer * (heads + 1)) + 1 + layer * (heads + 1) + heads for layer in range(layers))
    assert len(result["edges"]) == edges_in + 1 + layers * (heads + 1)
    scores = [abs(edge["score"]) for edge in result["edges"]]
    assert scores == sorted(scores, reverse=True) and set(result["edges"][0]) == {"from", "to", "score"}
    assert any(edge["to"].endswith("<k>") for edge in result["edges"])
    assert result["faithfulness"][-1]["edges"] == len(result["edges"])
    assert result["faithfulness"][-1]["kept"] == pytest.approx(1.0, abs=1e-4)
    assert 0 <= result["cmd"] and result["cpr"] == pytest.approx(result["cpr"])
    assert "faithfulness CPR" in capsys.readouterr().out


@pytest.mark.parametrize("case", ["lengths", "missing foil", "both", "steps", "foil in pieces"])
def test_circuit_bad_input_exits_2_with_one_line(tiny_mlm_folder, capsys, case):
    arguments = {
        "lengths": ["--clean", "the dog [MASK] .", "--corrupt", "the dog [MASK] at .", "--answer", "barked", "--foil", "mail"],
        "missing foil": PAIR[:6],
        "both": [*PAIR, "--task", "pronoun"],
        "steps": [*PAIR, "--steps", "0"],
        "foil in pieces": [*PAIR[:6], "--foil", "barking"],
    }[case]
    assert main(["circuit", "--model", str(tiny_mlm_folder), *arguments]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    expected = {"lengths": "same number of word pieces", "missing foil": "give --clean, --corrupt, --answer and --foil",
                "both": "give one of", "steps": "at least 1", "foil in pieces": "not one vocabulary token"}[case]
    assert expected in lines[0]
