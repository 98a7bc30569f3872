"""The newer ModernBERT checkpoints (model_type "modernbert"): Ettin's encoders (Weller et al. 2025) and mmBERT
(Marone et al. 2025) set config.json fields that ModernBERT-base does not. Every field of transformers'
ModernBertConfig is either read (changing it changes our BertConfig, or is refused in words) or named in
bert/families/modernbert.py's NO_EFFECT; a random checkpoint with the released folders' own fields set away from
the defaults ("sans_pos", both rotary bases 160,000, a small window, another norm epsilon, sparse prediction, the
training code's switches, mean pooling with a SiLU classifier) loads strictly and matches transformers within 1e-5
on a padded batch longer than the window."""
from __future__ import annotations

import json

import pytest
import torch

import bert
from bert.errors import ConfigError
from bert.families import modernbert
from bert_test_support import TINY_VOCAB, randomize_
from family_support import compare, family_batch

transformers = pytest.importorskip("transformers")
TOLERANCE = dict(atol=1e-5, rtol=1e-5)
# what the released Ettin and mmBERT folders' config.json hold besides transformers' fields, set away from their values
TRAINING_CODE_FIELDS = dict(position_embedding_type="sans_pos", reference_compile=True, repad_logits_with_grad=True,
                            gradient_checkpointing=True, layer_norm_eps=1e-3, unk_token_id=3, mask_token_id=4)


def _altered(key: str, value, hf: dict) -> dict:
    """config.json with `key` set to a value other than transformers' default."""
    words = {"hidden_activation": "silu", "classifier_activation": "silu", "classifier_pooling": "mean"}
    if key == "num_hidden_layers":  # layer_types then follows the default spacing
        return {k: v for k, v in hf.items() if k != "layer_types"} | {key: value * 2}
    if key == "layer_types":
        return hf | {key: ["full_attention"] * len(value)}
    if key == "rope_parameters":
        return hf | {key: {kind: {**part, "rope_theta": part["rope_theta"] * 2} for kind, part in value.items()}}
    if isinstance(value, bool):
        return hf | {key: not value}
    if isinstance(value, (int, float)):
        return hf | {key: value * 2 if value else 0.5}
    return hf | {key: words.get(key, value)}


def test_every_field_of_transformers_config_is_read_or_named_as_changing_nothing():
    generic = set(transformers.PreTrainedConfig().to_dict())
    hf = transformers.ModernBertConfig().to_dict()
    default = bert.BertConfig.from_hf_dict(hf)
    fields = sorted((set(hf) - generic - {"model_type"}) | set(TRAINING_CODE_FIELDS))
    assert {"sparse_prediction", "deterministic_flash_attn", "rope_parameters", "norm_eps", "tie_word_embeddings"} <= set(fields)
    for key in fields:
        changed = _altered(key, hf.get(key, TRAINING_CODE_FIELDS.get(key)), hf)
        if key in modernbert.NO_EFFECT:
            assert bert.BertConfig.from_hf_dict(changed) == default, key
            continue
        try:
            assert bert.BertConfig.from_hf_dict(changed) != default, f"{key} is neither read nor in NO_EFFECT"
        except ConfigError:
            pass  # refused in words (tie_word_embeddings false)
    assert set(modernbert.NO_EFFECT) <= set(fields) | {"pad_token_id"}


def test_an_untied_decoder_is_refused_in_words():
    with pytest.raises(ConfigError, match="tie_word_embeddings is false: a masked-LM decoder with weights of its own"):
        bert.BertConfig.from_hf_dict(transformers.ModernBertConfig(tie_word_embeddings=False).to_dict())


def _released_like(architecture: str):
    """Ettin's settings (both rotary bases 160,000; a window), mmBERT's pooling, every field away from its default."""
    ids = dict(pad_token_id=0, cls_token_id=TINY_VOCAB.index("[CLS]"), sep_token_id=TINY_VOCAB.index("[SEP]"),
               bos_token_id=TINY_VOCAB.index("[CLS]"), eos_token_id=TINY_VOCAB.index("[SEP]"))
    layer_types = ["full_attention" if i % 3 == 0 else "sliding_attention" for i in range(4)]
    config = transformers.ModernBertConfig(
        vocab_size=len(TINY_VOCAB), hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=40,
        max_position_embeddings=64, local_attention=8, layer_types=layer_types, norm_eps=1e-6,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 160000.0}},
        sparse_prediction=True, sparse_pred_ignore_index=0, deterministic_flash_attn=True, initializer_range=0.5,
        initializer_cutoff_factor=3.0, classifier_pooling="mean", classifier_activation="silu", classifier_bias=True,
        num_labels=3, attn_implementation="eager", **ids)
    torch.manual_seed(0)
    return randomize_(getattr(transformers, architecture)(config), seed=3).eval()


@pytest.mark.parametrize("architecture", ["ModernBertForMaskedLM", "ModernBertForSequenceClassification"])
def test_a_checkpoint_with_the_released_fields_matches_transformers(architecture, save_hf_model):
    theirs = _released_like(architecture)
    folder = save_hf_model(theirs)
    config_file = folder / "config.json"
    config_file.write_text(json.dumps(json.loads(config_file.read_text()) | TRAINING_CODE_FIELDS))
    ours, _ = bert.load_pretrained(str(folder))
    assert (ours.config.global_rope_theta, ours.config.local_rope_theta, ours.config.layer_norm_eps) == (160000.0, 160000.0, 1e-6)
    assert (ours.config.classifier_pooling, ours.config.lm_activation, ours.config.head_bias) == ("mean", "silu", True)
    batch = family_batch("modernbert")
    assert batch[0].shape[1] > ours.config.local_attention and not batch[2].all()
    compare(ours, theirs, "modernbert", architecture, batch)
