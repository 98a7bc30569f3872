"""Hooks across the family: the same name for the same thing, one more where a family has more, ALBERT's
shared layer recorded once per application under its depth, and a patched run equal to one made with
transformers' forward hooks on the same weights."""
from __future__ import annotations

import pytest
import torch

import bert
from bert.hooks import LAYER_HOOKS
from family_support import FAMILIES, PRETRAINING, build_hf, family_batch, run_transformers, write_tiny_tokenizer, zero_head_patches


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request, tmp_path_factory, tiny_vocab_file):
    """(family, ours, transformers' pre-training model) on the same random weights."""
    family = request.param
    theirs = build_hf(family, PRETRAINING[family][0], **({"num_labels": 2} if family == "albert" else {}))
    folder = tmp_path_factory.mktemp(family)
    theirs.save_pretrained(folder)
    write_tiny_tokenizer(folder, tiny_vocab_file)
    ours, _ = bert.load_pretrained(str(folder))
    return family, ours, theirs


def test_every_family_has_every_layer_hook_by_the_same_name(pair):
    family, ours, _ = pair
    names = set(ours.hook_names())
    for layer in range(ours.config.num_layers):
        assert {bert.hook_name(kind, layer) for kind in LAYER_HOOKS} <= names
    assert {bert.hook_name(kind) for kind in ("token", "position", "embedding_sum", "embedding_out")} <= names
    assert (bert.hook_name("token_type") in names) == (family != "distilbert")  # DistilBERT has no segment embedding
    assert (bert.hook_name("embedding_norm") in names) == (family in ("albert", "electra"))  # E -> H projection
    assert (bert.hook_name("replaced_logits") in names) == (family == "electra")  # the discriminator's head


def test_the_projection_hook_is_narrow_and_the_discriminator_gives_one_logit_per_token(pair):
    family, ours, _ = pair
    if family not in ("albert", "electra"):
        pytest.skip("no projection")
    input_ids, token_type_ids, mask = family_batch(family)
    output = "replaced" if family == "electra" else "mlm"
    logits, cache = ours.run_with_cache(input_ids, token_type_ids, mask, output=output)
    assert cache["embedding_norm"].shape == (*input_ids.shape, 16) and cache["embedding_out"].shape == (*input_ids.shape, 32)
    torch.testing.assert_close(cache["embedding_out"], ours.embedding.projection(cache["embedding_norm"]))
    if family == "electra":
        assert logits.shape == input_ids.shape
        torch.testing.assert_close(cache["replaced_logits"], logits)


def test_albert_shows_its_shared_layer_once_and_records_each_application(pair):
    family, ours, theirs = pair
    if family != "albert":
        pytest.skip("ALBERT only")
    outline = str(ours)
    assert outline.count("BertLayer(") == 1 and "SharedLayer(\n    applied 3 times" in outline
    batch = family_batch(family)
    _, cache = ours.run_with_cache(*batch, names=lambda name: name.endswith("hook_pattern") or name.endswith(".hook_out"))
    reference = run_transformers(theirs, family, batch)
    keep = batch[2].bool()
    for depth in range(3):
        assert f"transformer.{depth}.attention.attention.hook_pattern" in cache
        torch.testing.assert_close(cache["layer_out", depth][keep], reference.hidden_states[depth + 1][keep], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(cache["pattern", 0], cache["pattern", 1])  # the same weights, another input at each depth
    assert cache.stack("pattern").shape[0] == 3


def _output_projection(theirs, family: str):
    """transformers' attention output projection (its input: the heads' outputs side by side), per layer."""
    if family == "distilbert":
        return lambda layer: theirs.distilbert.transformer.layer[layer].attention.out_lin
    if family == "albert":
        return lambda layer: theirs.albert.encoder.albert_layer_groups[0].albert_layers[0].attention.dense
    return lambda layer: getattr(theirs, family).encoder.layer[layer].attention.output.dense


@pytest.mark.parametrize("layer,head", [(0, 1), (1, 0)])
def test_zeroing_a_head_equals_transformers_forward_hooks(pair, layer, head):
    family, ours, theirs = pair
    batch = family_batch(family)
    # the shared layer's module runs at every depth: patched at the layer's call only
    zero_head_in_transformers, zero_head_in_ours, _ = zero_head_patches(head, ours.config.head_size,
                                                                        layer if family == "albert" else None)
    handle = _output_projection(theirs, family)(layer).register_forward_pre_hook(zero_head_in_transformers)
    try:
        reference = run_transformers(theirs, family, batch)
    finally:
        handle.remove()
    output = "replaced" if family == "electra" else "mlm"
    logits, _ = ours.run_with_cache(*batch, names=[], interventions={bert.hook_name("z", layer): zero_head_in_ours}, output=output)
    unpatched, _ = ours.run_with_cache(*batch, names=[], output=output)
    keep = batch[2].bool()
    their_logits = reference.logits
    torch.testing.assert_close(logits[keep], their_logits[keep], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(logits[keep], unpatched[keep], atol=1e-4)  # the patch changed something
