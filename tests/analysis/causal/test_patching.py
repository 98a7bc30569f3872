"""Activation patching and attribution patching against transformers forward hooks on the same weights; the
batched sweep against one patched pass per cell; the checks on the two sentences."""
from __future__ import annotations

import pytest
import torch

import bert
from bert.analysis.causal.patching import (
    Patch, attribution_sweep, patched_metric, patching_sweep, prepare_contrast, record_runs, site_hook, sweep_patches,
)
from bert.errors import InvalidInputError
from bert.interventions import patch as patch_intervention

CLEAN, CORRUPTED, ANSWER, FOIL = "the dog [MASK] at the park .", "her cat [MASK] to the mail .", "barked", "mail"


@pytest.fixture(scope="module")
def models(tiny_mlm_folder):
    """(ours, transformers' BertForMaskedLM, tokenizer) on the same random weights."""
    from transformers import BertForMaskedLM

    ours, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    return ours, reference, tokenizer


@pytest.fixture(scope="module")
def contrast(models):
    return prepare_contrast(models[2], CLEAN, CORRUPTED, ANSWER, FOIL)


# ---- the reference: transformers' modules with PyTorch forward hooks -------------------------------------------


def hf_module(reference, site: str, layer: int):
    """The module whose output is the site (for "heads": whose input is the heads' concatenated outputs)."""
    if site == "residual":
        return reference.bert.embeddings if layer == 0 else reference.bert.encoder.layer[layer - 1]
    block = reference.bert.encoder.layer[layer]
    return {"attention": block.attention.output.dense, "mlp": block.output.dense, "heads": block.attention.output.dense}[site]


def _as_tensor(output):
    return output[0] if isinstance(output, tuple) else output


def hf_run(reference, input_ids, mask_position, answer_id, foil_id, record=(), replace=None, offsets=()):
    """One transformers pass: (metric, {(site, layer): activation}). replace: {(site, layer): fn(activation) ->
    activation}; offsets: (site, layer) where a zero tensor requiring grad is added (returned in the dict)."""
    recorded, handles, added = {}, [], {}
    heads = reference.config.num_attention_heads

    def make_hook(key):
        site = key[0]

        def transform(activation):
            if site == "heads":  # [batch, seq, hidden] -> [batch, head, seq, head_dim], as our hook_z
                activation = activation.unflatten(-1, (heads, -1)).transpose(1, 2)
            if replace and key in replace:
                activation = replace[key](activation)
            if key in offsets:
                added[key] = torch.zeros_like(activation, requires_grad=True)
                activation = activation + added[key]
            recorded[key] = activation.detach()
            if site == "heads":
                activation = activation.transpose(1, 2).flatten(-2)
            return activation

        if site == "heads":
            return "pre", lambda module, args: (transform(args[0]),)
        return "post", lambda module, args, output: transform(_as_tensor(output))

    for key in set(record) | set(replace or {}) | set(offsets):
        kind, hook = make_hook(key)
        module = hf_module(reference, *key)
        handles.append(module.register_forward_pre_hook(hook) if kind == "pre" else module.register_forward_hook(hook))
    try:
        logits = reference(input_ids=input_ids, token_type_ids=torch.zeros_like(input_ids)).logits
    finally:
        for handle in handles:
            handle.remove()
    metric = logits[0, mask_position, answer_id] - logits[0, mask_position, foil_id]
    return metric, recorded, added


def hf_cell(reference, contrast, source, patch: Patch, base_ids):
    key = (patch.site, patch.layer)
    position = slice(None) if patch.position is None else patch.position

    def put(activation):
        activation = activation.clone()
        if patch.site == "heads":
            head = slice(None) if patch.head is None else patch.head
            activation[:, head, position] = source[key][:, head, position]
        else:
            activation[:, position] = source[key][:, position]
        return activation

    with torch.no_grad():
        metric, _, _ = hf_run(reference, base_ids, contrast.mask_position, contrast.answer_id, contrast.foil_id, replace={key: put})
    return float(metric)


def every_key(reference):
    layers = reference.config.num_hidden_layers
    return [("residual", layer) for layer in range(layers + 1)] + [
        (site, layer) for site in ("attention", "mlp", "heads") for layer in range(layers)
    ]


# ---- the tests ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["denoise", "noise"])
def test_every_sweep_equals_transformers_forward_hooks(models, contrast, direction):
    ours, reference, _ = models
    clean_ids, corrupted_ids = (torch.tensor([e.input_ids]) for e in (contrast.clean, contrast.corrupted))
    with torch.no_grad():
        args = (contrast.mask_position, contrast.answer_id, contrast.foil_id)
        clean_metric, clean, _ = hf_run(reference, clean_ids, *args, record=every_key(reference))
        corrupted_metric, corrupted, _ = hf_run(reference, corrupted_ids, *args, record=every_key(reference))
    source, base_ids, source_metric, base_metric = (
        (clean, corrupted_ids, clean_metric, corrupted_metric) if direction == "denoise" else (corrupted, clean_ids, corrupted_metric, clean_metric)
    )
    result = patching_sweep(ours, contrast, direction=direction, head_layer=1, batch_size=7)
    assert result.clean_metric == pytest.approx(float(clean_metric), abs=1e-4)
    assert result.corrupted_metric == pytest.approx(float(corrupted_metric), abs=1e-4)
    seq = len(contrast.clean)
    grids = {site: (getattr(result, site), sweep_patches(ours, site, seq)) for site in ("residual", "attention", "mlp", "heads")}
    grids["head_positions"] = (result.head_positions, [Patch("heads", 1, p, h) for h in range(4) for p in range(seq)])
    for name, (grid, patches) in grids.items():
        expected = [(hf_cell(reference, contrast, source, patch, base_ids) - float(base_metric)) / float(source_metric - base_metric)
                    for patch in patches]
        torch.testing.assert_close(grid.flatten(), torch.tensor(expected), atol=1e-4, rtol=0, msg=name)


def test_patching_a_whole_first_layer_gives_one_nothing_gives_zero(models, contrast):
    ours = models[0]
    assert patched_metric(ours, contrast, [Patch("residual", 0)]) == pytest.approx(1.0, abs=1e-5)
    assert patched_metric(ours, contrast, []) == pytest.approx(0.0, abs=1e-6)
    last = ours.config.num_layers
    assert patched_metric(ours, contrast, [Patch("residual", last, contrast.mask_position)]) == pytest.approx(1.0, abs=1e-5)
    result = patching_sweep(ours, contrast, sites=["residual"])
    expected = torch.zeros(len(contrast.clean))
    expected[contrast.mask_position] = 1  # the LM head reads the [MASK] position only
    torch.testing.assert_close(result.residual[last], expected, atol=1e-5, rtol=0)


def test_batched_sweep_equals_one_patched_pass_per_cell(models, contrast):
    """Every cell in its own forward pass with bert.interventions.patch, against many cells per pass."""
    ours = models[0]
    batched = patching_sweep(ours, contrast, sites=["residual", "attention", "mlp"], batch_size=64)
    hooks = [site_hook(site, layer) for site in ("residual", "attention", "mlp") for layer in range(3 if site == "residual" else 2)]
    clean, _, clean_metric, corrupted_metric = record_runs(ours, contrast, hooks)
    input_ids, token_type_ids = contrast.corrupted.tensors()
    for site in ("residual", "attention", "mlp"):
        single = []
        for patch in sweep_patches(ours, site, len(contrast.clean)):
            name = site_hook(patch.site, patch.layer)
            with torch.no_grad():
                logits, _ = ours.run_with_cache(input_ids, token_type_ids, names=[],
                                                interventions={name: patch_intervention(clean[name], [patch.position])})
            metric = float(logits[0, contrast.mask_position, contrast.answer_id] - logits[0, contrast.mask_position, contrast.foil_id])
            single.append((metric - corrupted_metric) / (clean_metric - corrupted_metric))
        torch.testing.assert_close(getattr(batched, site).flatten(), torch.tensor(single), atol=1e-5, rtol=0, msg=site)
    one_row = patching_sweep(ours, contrast, sites=["heads"], head_layer=0, batch_size=1)
    many_rows = patching_sweep(ours, contrast, sites=["heads"], head_layer=0, batch_size=100)
    torch.testing.assert_close(one_row.heads, many_rows.heads, atol=1e-5, rtol=0)
    torch.testing.assert_close(one_row.head_positions, many_rows.head_positions, atol=1e-5, rtol=0)


@pytest.mark.parametrize("direction", ["denoise", "noise"])
def test_attribution_patching_is_gradient_times_difference(models, contrast, direction):
    """Its definition, computed on transformers: d metric / d activation at the base run, times (source - base)."""
    ours, reference, _ = models
    keys = every_key(reference)
    ids = {name: torch.tensor([e.input_ids]) for name, e in (("clean", contrast.clean), ("corrupted", contrast.corrupted))}
    args = (contrast.mask_position, contrast.answer_id, contrast.foil_id)
    with torch.no_grad():
        metrics, acts = {}, {}
        for name in ids:
            metrics[name], acts[name], _ = hf_run(reference, ids[name], *args, record=keys)
    source, base = ("clean", "corrupted") if direction == "denoise" else ("corrupted", "clean")
    metric, _, offsets = hf_run(reference, ids[base], *args, offsets=keys)
    gradients = dict(zip(keys, torch.autograd.grad(metric, [offsets[key] for key in keys])))
    scale = float(metrics[source] - metrics[base])

    def expected(key):  # [seq], or [head, seq]
        return (gradients[key] * (acts[source][key] - acts[base][key]))[0].sum(-1) / scale

    result = attribution_sweep(ours, contrast, direction=direction, head_layer=0)
    layers = reference.config.num_hidden_layers
    for site in ("residual", "attention", "mlp", "heads"):
        rows = [expected((site, layer)) for layer in range(layers + (site == "residual"))]
        want = torch.stack([row.sum(-1) if site == "heads" else row for row in rows])
        torch.testing.assert_close(getattr(result, site), want, atol=1e-4, rtol=1e-4, msg=site)
    torch.testing.assert_close(result.head_positions, expected(("heads", 0)), atol=1e-4, rtol=1e-4)
    assert all(not p.requires_grad or p.grad is None for p in ours.parameters()), "attribution must not leave gradients on the shared model"


# ---- bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "clean, corrupted, answer, foil, message",
    [
        ("the dog [MASK] at her cat .", "the dog [MASK] at her .", "barked", "went",
         r"same number of word pieces.*clean has 9 \['\[CLS\]', 'the'.*corrupted has 8"),
        ("the dog barked at her cat .", "her cat barked at the dog .", "barked", "went", r"clean sentence has 0 \[MASK\]"),
        ("the dog [MASK] at [MASK] cat .", "her cat [MASK] at [MASK] dog .", "barked", "went", r"has 2 \[MASK\]; it needs exactly one"),
        ("the dog [MASK] at her cat .", "her cat at [MASK] the dog .", "barked", "went", r"\[MASK\] is at token 3 .* at 4"),
        ("the dog [MASK] at her cat .", "her cat [MASK] at the dog .", "barking", "went",
         r"the answer 'barking' is not one vocabulary token \(it splits into \['b', '##a', '##r', '##k', '##i', '##n', '##g'\]\)"),
        ("the dog [MASK] at her cat .", "her cat [MASK] at the dog .", "barked", "", r"the foil '' is not one vocabulary token \(it is empty\)"),
        ("the dog [MASK] at her cat .", "her cat [MASK] at the dog .", "barked", "BARKED", r"answer and the foil are the same token \('barked'\)"),
        ("the dog [MASK] at her cat .", " the dog [MASK] at her cat . ", "barked", "went", r"clean and corrupted sentences are the same"),
    ],
)
def test_bad_contrasts_say_what_to_change(models, clean, corrupted, answer, foil, message):
    with pytest.raises(InvalidInputError, match=message):
        prepare_contrast(models[2], clean, corrupted, answer, foil)


def test_equal_metrics_are_reported_instead_of_divided_by(models):
    """Two spellings the uncased tokenizer makes the same input: the metric cannot move."""
    ours, _, tokenizer = models
    contrast = prepare_contrast(tokenizer, "the dog [MASK] at her cat .", "The Dog [MASK] at her cat .", "barked", "went")
    with pytest.raises(InvalidInputError, match=r"does not change the metric, so there is nothing to restore"):
        patching_sweep(ours, contrast)
    with pytest.raises(InvalidInputError, match=r"does not change the metric"):
        attribution_sweep(ours, contrast)


def test_bad_options_are_refused(models, contrast, tiny_model):
    ours = models[0]
    with pytest.raises(InvalidInputError, match="unknown site"):
        patching_sweep(ours, contrast, sites=["neurons"])
    with pytest.raises(InvalidInputError, match="direction must be one of denoise, noise"):
        patching_sweep(ours, contrast, direction="up")
    with pytest.raises(InvalidInputError, match="head_layer must be a layer from 0 to 1"):
        patching_sweep(ours, contrast, head_layer=2)
    with pytest.raises(InvalidInputError, match="batch_size must be at least 1"):
        patching_sweep(ours, contrast, batch_size=0)
    encoder = bert.Bert(ours.config, mlm_head=False).eval()
    with pytest.raises(InvalidInputError, match="load a model with a masked-LM head"):
        patching_sweep(encoder, contrast)


def test_strongest_cells_are_the_largest_in_size(models, contrast):
    result = patching_sweep(models[0], contrast, sites=["residual", "heads"])
    cells = result.strongest("residual", count=4)
    values = sorted(result.residual.flatten().abs().tolist(), reverse=True)[:4]
    assert [abs(value) for _, _, value in cells] == pytest.approx(values)
    assert all(result.residual[row, column] == value for row, column, value in cells)
    with pytest.raises(InvalidInputError, match="no 'mlp' sweep"):
        result.strongest("mlp")
