"""GTE (Zhang et al. 2024; transformers' `gte`) against `transformers` on the same random weights: a tiny checkpoint
saved by transformers' own Gte classes loads strictly through bert.load_pretrained and gives the same logits, every
hidden state and every attention pattern within 1e-5 on a padded batch (BERT's post-LN layers with rotary positions
and a gated MLP whose input maps have no bias); the hub's remote-code `new` folders are refused in one line."""
from __future__ import annotations

import pytest
import torch

import bert
from bert.errors import ConfigError
from bert_test_support import TINY_LAYOUT, TINY_VOCAB, pad_rows, random_rows, randomize_
from family_support import compare, compare_fused_and_counted

transformers = pytest.importorskip("transformers")
TOLERANCE = dict(atol=1e-5, rtol=1e-5)


def _build(architecture: str, **fields):
    config = transformers.GteConfig(vocab_size=len(TINY_VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=40, max_position_embeddings=64, pad_token_id=0, num_labels=3,
                                    attn_implementation="eager", **fields)
    torch.manual_seed(0)
    return randomize_(getattr(transformers, architecture)(config), seed=3)


def _batch():
    input_ids, token_type_ids, attention_mask = pad_rows(random_rows(len(TINY_VOCAB), TINY_LAYOUT, seed=0), 0)
    return input_ids, torch.zeros_like(token_type_ids), attention_mask


@pytest.mark.parametrize("architecture,fields", [
    ("GteForMaskedLM", {}),
    ("GteForSequenceClassification", {}),  # over BERT's pooler
    ("GteForTokenClassification", {"type_vocab_size": 0}),  # the English v1.5 model: no segments
])
def test_checkpoint_loads_strictly_and_matches_transformers_on_a_padded_batch(architecture, fields, save_hf_model):
    theirs = _build(architecture, **fields)
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    assert ours.config.family == "gte" and ours.config.rotary and not ours.config.pre_norm
    batch = _batch()
    compare(ours, theirs, "gte", architecture, batch)
    compare_fused_and_counted(ours, theirs, "gte", batch)


def test_saved_folder_loads_in_transformers_with_the_same_logits(save_hf_model, tmp_path):
    theirs = _build("GteForMaskedLM")
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    bert.save_hf_folder(ours, tmp_path / "ours")
    again = transformers.GteForMaskedLM.from_pretrained(tmp_path / "ours", attn_implementation="eager")
    input_ids, _, attention_mask = _batch()
    with torch.no_grad():
        torch.testing.assert_close(again(input_ids=input_ids, attention_mask=attention_mask).logits,
                                   theirs(input_ids=input_ids, attention_mask=attention_mask).logits, **TOLERANCE)


def test_config_json_both_ways():
    hf = _build("GteForMaskedLM").config.to_dict()
    config = bert.BertConfig.from_hf_dict(hf)
    assert (config.global_rope_theta, config.input_maps_bias, config.mlp_bias, config.type_vocab_size) == (160000.0, False, True, 1)
    for key, value in config.to_hf_dict().items():
        assert hf[key] == value, key


def test_the_hubs_remote_code_gte_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="model_type 'new'.*remote code.*'gte'"):
        bert.BertConfig.from_hf_dict({"model_type": "new"})
