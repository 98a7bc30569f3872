"""Strict loading of each family (a missing, unexpected or mis-shaped tensor is an error that names it) and
saving: a folder we write loads in transformers' Auto classes and gives the same logits."""
from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

import bert
from bert.errors import CheckpointError
from family_support import ARCHITECTURES, FAMILIES, PRETRAINING, build_hf, family_batch, fast_pretraining_only, run_transformers

AUTO = {"ForMaskedLM": "AutoModelForMaskedLM", "ForPreTraining": "AutoModelForPreTraining",
        "ForSequenceClassification": "AutoModelForSequenceClassification", "ForTokenClassification": "AutoModelForTokenClassification"}
# One tensor of each family's checkpoint (the prefix is the base model's, as transformers saves a task model)
SOME_TENSOR = {
    "roberta": "roberta.encoder.layer.1.attention.self.key.weight",
    "distilbert": "distilbert.transformer.layer.1.ffn.lin1.weight",
    "albert": "albert.encoder.albert_layer_groups.0.albert_layers.0.ffn_output.weight",
    "electra": "electra.embeddings_project.weight",
}


@pytest.fixture(params=FAMILIES)
def saved(request, save_hf_model):
    family = request.param
    folder = save_hf_model(build_hf(family, PRETRAINING[family][0]))
    return family, folder, load_file(str(folder / "model.safetensors"))


def _rewrite(folder, state):
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


def test_a_missing_tensor_is_named(saved):
    family, folder, state = saved
    key = SOME_TENSOR[family]
    _rewrite(folder, {k: v for k, v in state.items() if k != key})
    with pytest.raises(CheckpointError, match=f"missing tensor '{key.split('.', 1)[1]}'"):
        bert.load_pretrained(str(folder))


def test_an_unexpected_tensor_is_named(saved):
    family, folder, state = saved
    _rewrite(folder, state | {f"{family}.encoder.extra.weight": torch.zeros(2)})
    with pytest.raises(CheckpointError, match="unexpected tensor 'encoder.extra.weight'"):
        bert.load_pretrained(str(folder))


def test_a_mis_shaped_tensor_is_named(saved):
    family, folder, state = saved
    key = SOME_TENSOR[family]
    _rewrite(folder, state | {key: state[key][:-1].contiguous()})
    with pytest.raises(CheckpointError, match=f"tensor '{key.split('.', 1)[1]}' has shape"):
        bert.load_pretrained(str(folder))


def test_a_config_that_says_another_family_is_refused_naming_the_tensor(saved):
    family, folder, _ = saved
    config = json.loads((folder / "config.json").read_text())
    other = "roberta" if family == "electra" else "electra"
    (folder / "config.json").write_text(json.dumps(config | {"model_type": other}))
    with pytest.raises(CheckpointError, match=f"(missing|unexpected) tensor .*model_type is '{other}'"):
        bert.load_pretrained(str(folder))


@pytest.mark.parametrize("family,architecture", fast_pretraining_only())
def test_saved_folder_loads_in_transformers_with_the_same_logits(family, architecture, save_hf_model, tmp_path, tiny_vocab_file):
    import transformers

    fields = {"num_labels": 2} if architecture == "AlbertForPreTraining" else {}
    original = build_hf(family, architecture, **fields)
    ours, _ = bert.load_pretrained(str(save_hf_model(original)))
    folder = bert.save_hf_folder(ours, tmp_path / "ours", tiny_vocab_file)
    auto = getattr(transformers, next(auto for suffix, auto in AUTO.items() if architecture.endswith(suffix)))
    if architecture == "ElectraForPreTraining":
        auto = transformers.AutoModelForPreTraining
    reloaded = auto.from_pretrained(folder, attn_implementation="eager").eval()
    assert type(reloaded).__name__ == architecture
    batch = family_batch(family)
    keep = batch[2].bool()
    before, after = run_transformers(original, family, batch), run_transformers(reloaded, family, batch)
    name = "prediction_logits" if architecture == "AlbertForPreTraining" else "logits"
    expected, got = getattr(before, name), getattr(after, name)
    if not architecture.endswith("SequenceClassification"):
        expected, got = expected[keep], got[keep]
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    if architecture == "AlbertForPreTraining":
        torch.testing.assert_close(after.sop_logits, before.sop_logits, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("family,architecture", ARCHITECTURES, ids=[name for _, name in ARCHITECTURES])
def test_parameter_counts_equal_transformers_models(family, architecture, save_hf_model):
    """bert.count_parameters from the config and the heads against the number of parameters transformers' model
    of the family holds (a tied tensor counted once)."""
    from bert.params import model_heads

    fields = {"num_labels": 2} if architecture == "AlbertForPreTraining" else {}
    theirs = build_hf(family, architecture, **fields)
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    counts = bert.count_parameters(ours.config, **model_heads(ours))
    assert counts["total"] == sum(p.numel() for p in theirs.parameters()) == sum(p.numel() for p in ours.parameters())
