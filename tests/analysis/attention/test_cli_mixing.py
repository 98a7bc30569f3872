"""`python -m bert mixing`: the JSON it writes, for every method, and exit status 2 with one line on stderr for bad
input. A tiny random model saved in Hugging Face layout keeps it fast."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bert.__main__ import main
from bert.analysis.attention.mixing import METHODS

TEXT = "the dog [MASK] at the mailman ."


@pytest.mark.parametrize("method", list(METHODS))
def test_json_has_the_documented_shape(tiny_mlm_folder, tmp_path, method):
    out = tmp_path / "out" / "mixing.json"
    assert main(["mixing", "--model", str(tiny_mlm_folder), "--text", TEXT, "--method", method, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result) == ["model", "text", "method", "tokens", "layers", "whole_model"]
    assert result["text"] == TEXT and result["method"] == method
    tokens = result["tokens"]
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "[MASK]" in tokens
    seq = len(tokens)
    layers = np.array(result["layers"])
    assert layers.shape == (2, seq, seq)  # the tiny checkpoint's two layers, the first one first
    if METHODS[method].rows_sum_to_one:
        np.testing.assert_allclose(layers.sum(-1), 1.0, atol=1e-5)
    if method in ("norm", "norm-residual"):
        assert result["whole_model"] is None
    else:
        assert np.array(result["whole_model"]).shape == (seq, seq)


def test_layers_are_in_the_order_the_model_applies_them(tiny_mlm_folder, tmp_path):
    """layers[i] is the i-th layer's head-averaged attention, as transformers returns it."""
    import torch
    from transformers import BertForMaskedLM

    from bert import BertTokenizer

    out = tmp_path / "attention.json"
    assert main(["mixing", "--model", str(tiny_mlm_folder), "--text", TEXT, "--method", "attention", "--json", str(out)]) == 0
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    input_ids, token_type_ids = BertTokenizer.from_folder(tiny_mlm_folder).encode(TEXT).tensors()
    with torch.no_grad():
        attentions = reference(input_ids=input_ids, token_type_ids=token_type_ids, output_attentions=True).attentions
    expected = np.stack([a[0].mean(0).numpy() for a in attentions])
    np.testing.assert_allclose(np.array(json.loads(out.read_text())["layers"]), expected, atol=1e-5)


@pytest.mark.parametrize("arguments, message", [
    (["--text", "   ", "--method", "alti"], "--text is empty"),
    (["--text", "the dog " * 40, "--method", "alti"], "positions"),
])
def test_bad_input_is_one_line_and_exit_2(tiny_mlm_folder, capsys, arguments, message):
    assert main(["mixing", "--model", str(tiny_mlm_folder), *arguments]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err and len(err.splitlines()) == 1


def test_unknown_method_is_refused_by_argparse(tiny_mlm_folder, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["mixing", "--model", str(tiny_mlm_folder), "--text", TEXT, "--method", "gradients"])
    assert exit_info.value.code == 2 and "invalid choice: 'gradients'" in capsys.readouterr().err


def test_decompx_without_an_output_head_is_one_line_and_exit_2(save_hf_model, capsys):
    """An encoder alone (transformers' BertModel) has no logit for DecompX to decompose; the other methods run."""
    from transformers import BertModel

    from bert_test_support import TINY_CONFIGS, hf_config

    folder = save_hf_model(BertModel(hf_config(**TINY_CONFIGS["1layer-h32-2heads"])), "encoder")
    capsys.readouterr()  # transformers' own progress bars while saving
    assert main(["mixing", "--model", str(folder), "--text", TEXT, "--method", "decompx"]) == 2
    err = capsys.readouterr().err.strip()
    assert "neither a masked-LM head nor a classifier" in err and len(err.splitlines()) == 1
    assert main(["mixing", "--model", str(folder), "--text", TEXT, "--method", "alti"]) == 0
