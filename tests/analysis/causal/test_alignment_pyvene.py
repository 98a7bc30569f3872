"""Our interchange intervention against pyvene's (Wu et al. 2024), the reference implementation of distributed
alignment search: for a fixed rotation and k, pyvene's RotatedSpaceIntervention on transformers' masked-LM model
and bert.analysis.causal.interchange on ours, loaded from the same tiny random weights, give the same logits to
float32 rounding. pyvene's type table has no BERT or RoBERTa entry, so the site is named by module path
(`bert.encoder.layer[0].output`: that layer's output, our `transformer.0.hook_out`)."""
from __future__ import annotations

import importlib.util

import pytest
import torch

from bert.analysis.causal.interchange import interchange
from bert.hooks import hook_name
from bert_test_support import TINY_VOCAB, hf_config, randomize_

# pyvene (4 s to import) is imported where it is used, not when the tests are collected
pytestmark = pytest.mark.skipif(importlib.util.find_spec("pyvene") is None,
                                reason="pyvene is a test dependency (pyproject.toml's test extra)")

LAYER, POSITION, K = 0, 2, 3


def pyvene_logits(theirs, module_path: str, rotation: torch.Tensor, base: dict, source: dict) -> torch.Tensor:
    import pyvene

    intervention = pyvene.RotatedSpaceIntervention(embed_dim=rotation.shape[0])
    intervention.rotate_layer.weight = rotation  # through the orthogonal parametrisation's right inverse
    torch.testing.assert_close(intervention.rotate_layer.weight, rotation, rtol=0, atol=1e-6)
    intervention.set_interchange_dim(K)
    config = pyvene.IntervenableConfig(representations=[pyvene.RepresentationConfig(
        component=f"{module_path}.encoder.layer[{LAYER}].output", unit="pos", max_number_of_units=1, intervention=intervention)])
    model = pyvene.IntervenableModel(config, theirs)
    with torch.no_grad():
        _, out = model(base, [source], unit_locations={"sources->base": ([[[POSITION]]], [[[POSITION]]])})
    return out.logits


def our_logits(ours, rotation: torch.Tensor, base: dict, source: dict) -> torch.Tensor:
    hook = hook_name("layer_out", LAYER)
    with torch.no_grad():
        _, cache = ours.run_with_cache(source["input_ids"], source.get("token_type_ids"), names=[hook])
        swap = interchange(torch.tensor([POSITION]), cache[hook][:, POSITION], rotation[:, :K])
        logits, _ = ours.run_with_cache(base["input_ids"], base.get("token_type_ids"), names=[], interventions={hook: swap})
    return logits


def inputs(pad_free_ids: list[int], with_types: bool) -> dict:
    ids = torch.tensor([pad_free_ids])
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)} | ({"token_type_ids": torch.zeros_like(ids)} if with_types else {})


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_the_rotated_swap_equals_pyvenes(family, tmp_path, tiny_vocab_file):
    from transformers import BertForMaskedLM

    from families.family_support import build_hf, load_saved

    if family == "bert":
        torch.manual_seed(0)
        theirs = randomize_(BertForMaskedLM(hf_config(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                                                      intermediate_size=48)), seed=4)
    else:
        theirs = build_hf("roberta", "RobertaForMaskedLM", seed=4)
    ours = load_saved(theirs, tmp_path / family, tiny_vocab_file)
    mask, word = TINY_VOCAB.index("[MASK]"), TINY_VOCAB.index("dog")
    base = inputs([TINY_VOCAB.index("[CLS]"), 20, word, mask, 30, TINY_VOCAB.index("[SEP]")], family == "bert")
    source = inputs([TINY_VOCAB.index("[CLS]"), 20, TINY_VOCAB.index("cat"), mask, 30, TINY_VOCAB.index("[SEP]")], family == "bert")
    hidden = ours.config.hidden_size
    rotation = torch.linalg.qr(torch.randn(hidden, hidden, generator=torch.Generator().manual_seed(1))).Q
    expected = pyvene_logits(theirs, family, rotation, base, source)
    got = our_logits(ours, rotation, base, source)
    with torch.no_grad():
        plain = theirs(**base).logits
    assert (expected - plain).abs().max() > 1e-2  # the swap changes the logits: the comparison can fail
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
