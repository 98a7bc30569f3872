"""ALBERT with several layer groups, each of several inner layers (transformers' num_hidden_groups=2,
inner_group_num=2, num_hidden_layers=4: four group applications of two layers each, eight layers in all) against
transformers on the same random weights: logits of every head, every hidden state and attention pattern, strict
loading, saving, the module outline, and a patched run equal to one patched with transformers' forward hooks."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import bert
from bert import Bert, BertConfig
from bert.errors import CheckpointError, ConfigError
from bert.hooks import every_hook_name
from family_support import build_hf, compare, family_batch, load_saved, run_transformers, zero_head_patches

GROUPS = dict(num_hidden_groups=2, inner_group_num=2, num_hidden_layers=4)
HEADS = [pytest.param("AlbertForPreTraining", id="AlbertForPreTraining"), pytest.param("AlbertForMaskedLM", id="AlbertForMaskedLM"),
         pytest.param("AlbertForSequenceClassification", id="AlbertForSequenceClassification", marks=pytest.mark.slow),
         pytest.param("AlbertForTokenClassification", id="AlbertForTokenClassification", marks=pytest.mark.slow)]
# transformers' AlbertTransformer: group application i (of 4) runs group int(i / (4 / 2)); each runs its two inner
# layers. So the eight layers, in order, are (group, inner layer):
ORDER = [(0, 0), (0, 1), (0, 0), (0, 1), (1, 0), (1, 1), (1, 0), (1, 1)]


def build_grouped(architecture: str):
    return build_hf("albert", architecture, **GROUPS, **({"num_labels": 2} if architecture == "AlbertForPreTraining" else {}))


@pytest.fixture(scope="module")
def pair(tmp_path_factory, tiny_vocab_file):
    """(ours, transformers' AlbertForPreTraining) on the same random weights, and the folder transformers saved."""
    theirs = build_grouped("AlbertForPreTraining")
    folder = tmp_path_factory.mktemp("albert_groups")
    return load_saved(theirs, folder, tiny_vocab_file), theirs, folder


@pytest.mark.parametrize("architecture", HEADS)
def test_every_head_hidden_state_and_attention_equals_transformers(architecture, save_hf_model):
    """compare() checks len(hidden_states) == num_layers + 1 and len(attentions) == num_layers: transformers
    gives one of each per inner layer's application, eight here."""
    theirs = build_grouped(architecture)
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    assert (ours.config.num_layers, ours.config.layer_groups, ours.config.layers_per_group) == (8, 2, 2)
    compare(ours, theirs, "albert", architecture, family_batch("albert"))


def test_depths_follow_the_order_transformers_applies_its_layers(pair):
    ours, theirs, _ = pair
    calls = []
    handles = [layer.register_forward_hook(lambda *_, at=(g, j): calls.append(at))
               for g, group in enumerate(theirs.albert.encoder.albert_layer_groups) for j, layer in enumerate(group.albert_layers)]
    try:
        run_transformers(theirs, "albert", family_batch("albert"))
    finally:
        for handle in handles:
            handle.remove()
    assert calls == ORDER
    assert [ours.config.shared_layer_at(depth) for depth in range(8)] == ORDER


def test_print_shows_each_distinct_layer_once_with_its_depths(pair):
    ours, _, _ = pair
    outline = str(ours)
    assert outline.count("BertLayer(") == 4 and "LayerGroups(\n    2 groups of 2 layers, 8 layer applications" in outline
    for (group, inner), depths in {(0, 0): "0, 2", (0, 1): "1, 3", (1, 0): "4, 6", (1, 1): "5, 7"}.items():
        assert f"applied 2 times, at depths {depths}" in outline
        assert ours.config.depths_of(group, inner) == [int(d) for d in depths.split(", ")]
    assert len(ours.transformer) == 8 and [application.depth for application in ours.transformer] == list(range(8))
    assert len(list(ours.transformer.parameters())) == 4 * 16  # four layers' tensors


def test_hook_names_count_every_layer_once(pair):
    ours, _, _ = pair
    names = ours.hook_names()
    expected = every_hook_name(8, lm_head=True, output_hooks=("pooled", "nsp_logits")) + [bert.hook_name("embedding_norm")]
    assert len(names) == len(set(names)) and set(names) == set(expected)
    outs = [name for name in names if name.endswith(".hook_out") and name.startswith("transformer.")]
    assert outs == [f"transformer.{depth}.{part}" for depth in range(8) for part in ("attention.hook_out", "hook_out")]


@pytest.mark.parametrize("depth,head", [(3, 1), (5, 0)])
def test_zeroing_a_head_equals_transformers_forward_hooks(pair, depth, head):
    """Depth 3 is the second application of group 0's inner layer 1; depth 5 the first of group 1's inner layer 1
    (ORDER): transformers' module is patched at that call only."""
    ours, theirs, _ = pair
    group, inner = ORDER[depth]
    call_to_patch = ORDER[:depth].count((group, inner))
    zero_head_in_transformers, zero_head_in_ours, calls = zero_head_patches(head, ours.config.head_size, call_to_patch)
    module = theirs.albert.encoder.albert_layer_groups[group].albert_layers[inner].attention.dense
    handle = module.register_forward_pre_hook(zero_head_in_transformers)
    batch = family_batch("albert")
    try:
        reference = run_transformers(theirs, "albert", batch)
    finally:
        handle.remove()
    assert len(calls) == 2  # each inner layer runs twice
    logits, cache = ours.run_with_cache(*batch, names=lambda name: name.endswith(".hook_out"),
                                        interventions={bert.hook_name("z", depth): zero_head_in_ours})
    unpatched, _ = ours.run_with_cache(*batch, names=[])
    keep = batch[2].bool()
    torch.testing.assert_close(logits[keep], reference.prediction_logits[keep], atol=1e-5, rtol=1e-5)
    for layer in range(8):
        torch.testing.assert_close(cache["layer_out", layer][keep], reference.hidden_states[layer + 1][keep], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(logits[keep], unpatched[keep], atol=1e-4)  # the patch changed something


def _rewrite(folder, state):
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


@pytest.fixture
def saved(save_hf_model):
    folder = save_hf_model(build_grouped("AlbertForMaskedLM"))
    return folder, load_file(str(folder / "model.safetensors"))


LAST_LAYER = "albert.encoder.albert_layer_groups.1.albert_layers.1"


def test_a_missing_inner_layer_tensor_is_named(saved):
    folder, state = saved
    key = f"{LAST_LAYER}.attention.query.weight"
    _rewrite(folder, {k: v for k, v in state.items() if k != key})
    with pytest.raises(CheckpointError, match=f"missing tensor '{key.split('.', 1)[1]}'"):
        bert.load_pretrained(str(folder))


def test_a_tensor_of_a_group_the_config_lacks_is_unexpected(saved):
    folder, state = saved
    key = "albert.encoder.albert_layer_groups.2.albert_layers.0.ffn.weight"
    _rewrite(folder, state | {key: state[f"{LAST_LAYER}.ffn.weight"].clone()})
    with pytest.raises(CheckpointError, match=f"unexpected tensor '{key.split('.', 1)[1]}'"):
        bert.load_pretrained(str(folder))


def test_a_mis_shaped_inner_layer_tensor_is_named(saved):
    folder, state = saved
    key = f"{LAST_LAYER}.ffn_output.weight"
    _rewrite(folder, state | {key: state[key][:-1].contiguous()})
    with pytest.raises(CheckpointError, match=f"tensor '{key.split('.', 1)[1]}' has shape"):
        bert.load_pretrained(str(folder))


def test_a_config_with_fewer_groups_than_the_checkpoint_names_the_extra_tensors(saved):
    folder, _ = saved
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"num_hidden_groups": 1}))
    with pytest.raises(CheckpointError, match="unexpected tensor 'encoder.albert_layer_groups.1"):
        bert.load_pretrained(str(folder))


@pytest.mark.parametrize("architecture", ["AlbertForPreTraining", "AlbertForMaskedLM"])
def test_saved_folder_loads_in_transformers_with_the_same_outputs(pair, architecture, save_hf_model, tmp_path, tiny_vocab_file):
    import transformers

    original = build_grouped(architecture)
    ours, _ = bert.load_pretrained(str(save_hf_model(original)))
    folder = bert.save_hf_folder(ours, tmp_path / "ours", tiny_vocab_file)
    written = json.loads((folder / "config.json").read_text())
    assert {key: written[key] for key in GROUPS} == GROUPS
    reloaded = getattr(transformers, f"AutoModelFor{architecture[len('AlbertFor'):]}").from_pretrained(folder, attn_implementation="eager").eval()
    assert type(reloaded).__name__ == architecture
    batch = family_batch("albert")
    keep = batch[2].bool()
    before, after = run_transformers(original, "albert", batch), run_transformers(reloaded, "albert", batch)
    name = "prediction_logits" if architecture == "AlbertForPreTraining" else "logits"
    torch.testing.assert_close(getattr(after, name)[keep], getattr(before, name)[keep], atol=1e-5, rtol=1e-5)
    for got, expected in zip(after.hidden_states, before.hidden_states, strict=True):
        torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-5)
    if architecture == "AlbertForPreTraining":
        torch.testing.assert_close(after.sop_logits, before.sop_logits, atol=1e-5, rtol=1e-5)


def test_parameter_count_equals_transformers(pair):
    from bert.params import model_heads

    ours, theirs, _ = pair
    counts = bert.count_parameters(ours.config, **model_heads(ours))
    assert counts["total"] == sum(p.numel() for p in theirs.parameters()) == sum(p.numel() for p in ours.parameters())


def test_config_json_fields_both_ways():
    """num_hidden_layers counts group applications; num_layers every inner layer's application."""
    hf = {"model_type": "albert", "hidden_size": 32, "num_attention_heads": 2, "embedding_size": 16, **GROUPS}
    config = BertConfig.from_hf_dict(hf)
    assert (config.num_layers, config.group_applications, config.layer_groups, config.layers_per_group) == (8, 4, 2, 2)
    assert config.distinct_layers == 4 and config.shared_layers
    written = config.to_hf_dict()
    assert {key: written[key] for key in GROUPS} == GROUPS
    assert BertConfig.from_hf_dict(written) == config


@pytest.mark.parametrize("fields,message", [
    (dict(num_hidden_layers=3, num_hidden_groups=2), "3 group applications .* not a multiple of layer_groups"),
    (dict(num_hidden_groups=0), "must be 1 or more"),
    (dict(inner_group_num=0), "must be 1 or more"),
])
def test_groups_that_do_not_divide_the_layers_are_refused(fields, message):
    with pytest.raises(ConfigError, match=message):
        BertConfig.from_hf_dict({"model_type": "albert", "hidden_size": 32, "num_attention_heads": 2, **fields})


def test_config_checks_its_group_fields():
    sizes = dict(vocab_size=40, hidden_size=16, num_heads=2, intermediate_size=24, max_position_embeddings=16)
    with pytest.raises(ConfigError, match="num_layers 5 is not a multiple of layers_per_group"):
        BertConfig.of_family("albert", num_layers=5, layers_per_group=2, **sizes)
    with pytest.raises(ConfigError, match="need shared_layers"):
        BertConfig(num_layers=4, layer_groups=2, **sizes)
    model = Bert(BertConfig.of_family("albert", num_layers=6, layer_groups=3, layers_per_group=1, **sizes))
    assert [application.depth for application in model.transformer[4:]] == [4, 5]
    assert [model.config.shared_layer_at(depth) for depth in range(6)] == [(0, 0), (0, 0), (1, 0), (1, 0), (2, 0), (2, 0)]


def test_context_mixing_recomputes_each_layer_as_transformers(pair):
    """The analyses walk `model.transformer` as BERT's layers: each of the eight layers, recomputed from its
    recorded parts with the weights it was applied with (no value zeroed), is transformers' hidden state."""
    from bert.analysis.attention.mixing import METHODS, context_mixing, record_for_mixing
    from bert.analysis.attention.mixing_parts import recorded_layers
    from bert.analysis.attention.value_zeroing import zeroed_outputs

    ours, theirs, _ = pair
    input_ids, token_type_ids, attention_mask = (row[:1, :6] for row in family_batch("albert"))
    assert bool(attention_mask.all())
    _, cache = record_for_mixing(ours, input_ids, token_type_ids)
    reference = run_transformers(theirs, "albert", (input_ids, token_type_ids, attention_mask))
    layers = recorded_layers(ours, cache)
    assert [recorded.layer for recorded in layers] == list(range(8))
    for recorded in layers:
        unchanged = zeroed_outputs(recorded, recorded.x.new_ones(1, 6))[0]
        torch.testing.assert_close(unchanged, reference.hidden_states[recorded.layer + 1][0], atol=1e-5, rtol=1e-5)
    for method in METHODS:
        mixing = context_mixing(ours, cache, method).layers
        assert mixing.shape == (8, 6, 6) and np.isfinite(mixing).all(), method


def test_architecture_note_counts_transformers_distinct_layers(pair):
    """The Architecture page's line under the tree names as many distinct layers as transformers builds modules."""
    from transformers.models.albert.modeling_albert import AlbertLayer

    from viz_app.specs.architecture import architecture_note

    ours, theirs = pair[0], pair[1]
    distinct = sum(isinstance(module, AlbertLayer) for module in theirs.modules())
    note = architecture_note(ours.config)
    assert f"the {len(ours.transformer)} layers apply {distinct} layers' weights" in note
    assert ours.config.distinct_layers == distinct == 4
