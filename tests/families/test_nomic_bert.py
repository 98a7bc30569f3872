"""NomicBERT (Nussbaum et al. 2024; transformers' `nomic_bert`) against `transformers` on the same random weights: a
tiny checkpoint saved by transformers' own NomicBert classes loads strictly through bert.load_pretrained and gives
the same logits, every hidden state and every attention pattern within 1e-5 on a padded batch with two segments
(BERT's post-LN layers with rotary positions, no biases in attention or the MLP, a SwiGLU MLP, a SiLU masked-LM
head); a folder we save loads in transformers with the same logits; a head_dim that does not split the hidden size
is refused."""
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
    settings = dict(vocab_size=len(TINY_VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=40, max_position_embeddings=64, pad_token_id=0, num_labels=3, layer_norm_eps=1e-5,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000.0}, attn_implementation="eager")
    torch.manual_seed(0)
    return randomize_(getattr(transformers, architecture)(transformers.NomicBertConfig(**(settings | fields))), seed=3)


def _batch():
    return pad_rows(random_rows(len(TINY_VOCAB), TINY_LAYOUT, seed=0), 0)  # two segments where a row has a pair


@pytest.mark.parametrize("architecture,fields", [
    ("NomicBertForMaskedLM", {}),
    ("NomicBertForSequenceClassification", {"rope_parameters": {"rope_type": "default", "rope_theta": 500.0}}),  # over BERT's pooler
    ("NomicBertForTokenClassification", {"hidden_act": "gelu"}),
])
def test_checkpoint_loads_strictly_and_matches_transformers_on_a_padded_batch(architecture, fields, save_hf_model):
    theirs = _build(architecture, **fields)
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    assert ours.config.family == "nomic_bert" and ours.config.rotary and ours.config.gated_mlp and not ours.config.pre_norm
    batch = _batch()
    assert batch[1].any() and not batch[2].all()  # a second segment and padding
    compare(ours, theirs, "nomic_bert", architecture, batch)
    compare_fused_and_counted(ours, theirs, "nomic_bert", batch)


def test_saved_folder_loads_in_transformers_with_the_same_logits(save_hf_model, tmp_path):
    theirs = _build("NomicBertForMaskedLM")
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    bert.save_hf_folder(ours, tmp_path / "ours")
    again = transformers.NomicBertForMaskedLM.from_pretrained(tmp_path / "ours", attn_implementation="eager")
    input_ids, token_type_ids, attention_mask = _batch()
    with torch.no_grad():
        torch.testing.assert_close(again(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).logits,
                                   theirs(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).logits,
                                   **TOLERANCE)


def test_config_json_both_ways_and_its_defaults():
    hf = _build("NomicBertForMaskedLM").config.to_dict()
    config = bert.BertConfig.from_hf_dict(hf)
    assert (config.global_rope_theta, config.activation, config.attention_bias, config.mlp_bias, config.type_vocab_size) == (
        1000.0, "silu", False, False, 2)
    for key, value in config.to_hf_dict().items():
        assert hf[key] == value, key
    defaults = bert.BertConfig.from_hf_dict({"model_type": "nomic_bert"})  # transformers' defaults: nomic-embed-text-v1.5's
    reference = transformers.NomicBertConfig()
    assert (defaults.vocab_size, defaults.max_position_embeddings, defaults.activation, defaults.global_rope_theta) == (
        reference.vocab_size, reference.max_position_embeddings, reference.hidden_act, reference.rope_parameters["rope_theta"])


def test_a_head_dim_that_does_not_split_the_hidden_size_is_refused():
    with pytest.raises(ConfigError, match=r"head_dim 16 is not hidden_size / num_attention_heads \(32 / 4\)"):
        bert.BertConfig.from_hf_dict({"model_type": "nomic_bert", "hidden_size": 32, "num_attention_heads": 4, "head_dim": 16})
