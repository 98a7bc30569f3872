"""`python -m bert predict` and `bert.predict.predict_masks`, on a tiny transformers-made BertForMaskedLM folder
(so they do not depend on the trained MiniLM head), checked against transformers' own probabilities."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import bert
from bert.__main__ import main
from bert.errors import InvalidInputError
from bert.predict import predict_masks
from bert.pretrained import MINILM_HEAD_FILE
from bert_test_support import TINY_VOCAB, called

TEXT = "the dog [MASK] at the mailman."


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m bert ARGS` in a fresh interpreter (where the device line, logged at the start, is checked)."""
    return subprocess.run([sys.executable, "-m", "bert", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})


def call_cli(capsys, *args: str) -> subprocess.CompletedProcess:
    """`python -m bert ARGS` through the command's `main`, in this process. The real entry point in a fresh
    interpreter is run by the tests that use `run_cli` and by the last test here."""
    return called(main, capsys, *args)


def reference_probabilities(folder, text: str, pair: str | None = None) -> tuple[list[str], torch.Tensor]:
    """Tokens, and transformers' softmax over the vocabulary at each [MASK]: [masks, vocab]."""
    from transformers import BertForMaskedLM, BertTokenizerLegacy

    tokenizer = BertTokenizerLegacy(str(folder / "vocab.txt"))
    model = BertForMaskedLM.from_pretrained(folder).eval()
    inputs = tokenizer(text, pair, return_tensors="pt", return_token_type_ids=True)
    with torch.no_grad():
        logits = model(**inputs).logits[0]
    at_mask = inputs["input_ids"][0] == tokenizer.mask_token_id
    return tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist()), logits[at_mask].softmax(-1)


def test_cli_json_matches_transformers(tiny_mlm_folder, capsys):
    result = call_cli(capsys, "predict", TEXT, "--model", str(tiny_mlm_folder), "--top-k", "4", "--json")
    assert result.returncode == 0, result.stderr
    predictions = json.loads(result.stdout)
    tokens, probabilities = reference_probabilities(tiny_mlm_folder, TEXT)
    assert len(predictions) == 1 and predictions[0]["position"] == tokens.index("[MASK]") == 3
    candidates = predictions[0]["candidates"]
    expected = probabilities[0].topk(4)
    assert [c["token_id"] for c in candidates] == expected.indices.tolist()
    torch.testing.assert_close(torch.tensor([c["probability"] for c in candidates]), expected.values, atol=1e-5, rtol=1e-5)
    assert all(set(c) == {"token", "token_id", "probability", "is_continuation"} for c in candidates)
    assert all(c["is_continuation"] == c["token"].startswith("##") for c in candidates)


def test_cli_plain_output(tiny_mlm_folder, capsys):
    result = call_cli(capsys, "predict", "the [mask] barked.", "--model", str(tiny_mlm_folder), "--top-k", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("[MASK] #1 (token 2):") and result.stdout.count("%") == 2


def test_cli_bad_model_path_exits_2_with_one_line(tmp_path, capsys):
    result = call_cli(capsys, "predict", TEXT, "--model", str(tmp_path / "no_such_model"), "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "no_such_model" in lines[0], result.stderr


def test_cli_model_without_mlm_head_exits_2(tmp_path, tiny_vocab_file, capsys):
    encoder = bert.Bert(bert.BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32), mlm_head=False)
    folder = bert.save_hf_folder(encoder, tmp_path / "encoder", tiny_vocab_file)
    result = call_cli(capsys, "predict", TEXT, "--model", str(folder))
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "masked-LM head" in result.stderr


@pytest.fixture(scope="module")
def tiny_mlm(tiny_mlm_folder):
    return bert.load_pretrained(str(tiny_mlm_folder))


def test_predict_two_masks_in_a_pair(tiny_mlm, tiny_mlm_folder):
    model, tokenizer = tiny_mlm
    text, pair = "the [MASK] barked.", "her cat [MASK] to the park."
    predictions = predict_masks(model, tokenizer, tokenizer.encode(text, pair), top_k=3)
    tokens, probabilities = reference_probabilities(tiny_mlm_folder, text, pair)
    assert [p.position for p in predictions] == [i for i, t in enumerate(tokens) if t == "[MASK]"]
    for prediction, expected in zip(predictions, probabilities):
        assert [c.token_id for c in prediction.candidates] == expected.topk(3).indices.tolist()
        probs = [c.probability for c in prediction.candidates]
        assert probs == sorted(probs, reverse=True)


def test_predict_without_mask_and_bad_top_k(tiny_mlm):
    model, tokenizer = tiny_mlm
    assert predict_masks(model, tokenizer, tokenizer.encode("the dog barked."), top_k=5) == []
    with pytest.raises(InvalidInputError, match="top_k"):
        predict_masks(model, tokenizer, tokenizer.encode(TEXT), top_k=0)
    everything = predict_masks(model, tokenizer, tokenizer.encode(TEXT), top_k=10_000)
    assert len(everything[0].candidates) == model.config.vocab_size
    assert abs(sum(c.probability for c in everything[0].candidates) - 1) < 1e-4


@pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason="bert/weights/minilm_mlm.safetensors is not trained yet")
def test_builtin_minilm_carries_the_trained_head_file(minilm_path):
    """"minilm" = the package's MiniLM with every tensor of the head files (masked-LM, then next-sentence) put
    over it. (How good its guesses are depends on how far training got; that is the training recipe's
    evaluation, not a unit test.)"""
    from safetensors.torch import load_file

    from bert.checkpoint import read_state_dict, to_hf_state_dict
    from bert.pretrained import MINILM_NSP_FILE

    model, tokenizer = bert.load_pretrained("minilm")
    assert model.has_mlm_head
    loaded = {k.removeprefix("bert."): v for k, v in to_hf_state_dict(model).items()}
    shipped, package = load_file(MINILM_HEAD_FILE), read_state_dict(minilm_path / "model.safetensors")
    shipped |= load_file(MINILM_NSP_FILE) if MINILM_NSP_FILE.is_file() else {}
    for key, tensor in shipped.items():
        assert torch.equal(loaded[key], tensor.float()), key
    for key in set(loaded) - set(shipped):
        assert torch.equal(loaded[key], package[key].float()), key
    predictions = predict_masks(model, tokenizer, tokenizer.encode("The capital of France is [MASK]."), top_k=5)
    assert len(predictions) == 1 and len(predictions[0].candidates) == 5


def test_predict_reports_the_masked_tokens_rank_and_probability(tiny_mlm):
    model, tokenizer = tiny_mlm
    plain = tokenizer.encode("the dog barked at the cat.")
    masked = plain.with_masks([2, 6], tokenizer.mask_id)
    originals = {2: plain.input_ids[2]}  # the caller says what was at position 2 only
    predictions = predict_masks(model, tokenizer, masked, top_k=3, originals=originals)
    with torch.no_grad():
        logits = model(*masked.tensors())[0]  # [seq, vocab], every position
    probabilities = logits[2].softmax(-1)
    order = probabilities.argsort(descending=True).tolist()  # by hand: the position in the sorted vocabulary
    first, second = predictions
    assert first.original_id == plain.input_ids[2]
    assert first.original_rank == order.index(plain.input_ids[2]) + 1
    assert first.original_probability == pytest.approx(float(probabilities[plain.input_ids[2]]), rel=1e-5)
    assert second.original_id is None and second.original_rank is None and second.original_probability is None
    top = predict_masks(model, tokenizer, masked, top_k=1, originals={2: order[0]})[0]
    assert top.original_rank == 1 and top.original_probability == pytest.approx(top.candidates[0].probability)


@pytest.mark.slow
def test_cli_says_which_device_and_dtype_it_uses(tiny_mlm_folder):
    plain = run_cli("predict", TEXT, "--model", str(tiny_mlm_folder), "--json", "--device", "cpu")
    half = run_cli("predict", TEXT, "--model", str(tiny_mlm_folder), "--json", "--device", "cpu", "--dtype", "bfloat16")
    assert plain.returncode == half.returncode == 0, plain.stderr + half.stderr
    assert "device: cpu, float32" in plain.stderr and "device: cpu, bfloat16" in half.stderr
    full, reduced = (json.loads(r.stdout)[0]["candidates"] for r in (plain, half))
    assert abs(full[0]["probability"] - reduced[0]["probability"]) < 0.02  # bfloat16 keeps ~3 significant digits


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU: asking for one is not an error")
def test_cli_asking_for_a_missing_gpu_exits_2_with_one_line(tiny_mlm_folder, capsys):
    result = call_cli(capsys, "predict", TEXT, "--model", str(tiny_mlm_folder), "--device", "cuda")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["error: device cuda was asked for, but PyTorch sees no CUDA GPU here: use \"cpu\" instead"]


# Runs `python -m bert ARGS` in a fresh interpreter, then prints the app modules it had imported (last line, JSON).
_APP_MODULES_AFTER = """
import json, runpy, sys
sys.argv = ["bert", *json.loads(sys.argv[1])]
try:
    runpy.run_module("bert", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    code = stop.code
print(json.dumps({"code": code, "app": sorted(m for m in sys.modules if m.split(".")[0] in ("streamlit", "viz_app"))}))
"""


@pytest.mark.parametrize("args", [
    ["--help"],
    pytest.param(["predict", "The [MASK] barked.", "--model", "minilm"],
                 marks=[pytest.mark.slow,
                        pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason=f"{MINILM_HEAD_FILE} is not there")]),
], ids=["help", "predict"])
@pytest.mark.slow  # a fresh interpreter that imports torch: ten seconds
def test_the_library_command_line_imports_neither_streamlit_nor_the_app(args):
    result = subprocess.run([sys.executable, "-c", _APP_MODULES_AFTER, json.dumps(args)], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.splitlines()[-1])
    assert outcome["code"] == 0, result.stderr
    assert outcome["app"] == []
