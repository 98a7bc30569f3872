"""ModernBERT (Warner et al. 2024) against `transformers` on the same random weights: a tiny checkpoint saved by
transformers' own classes loads through bert.load_pretrained (config.json's model_type picks the family) and gives
the same logits, every hidden state and every attention pattern within 1e-5, on rows longer than the local window
(local_attention 8: a token sees ±4 positions) in a padded batch; strict loading names the tensor; a folder we save
loads in transformers with the same logits.

The reference runs with attn_implementation="eager": it is the implementation that returns attention patterns,
and with it transformers keeps the padded batch as it is (ModernBERT unpads sequences only for flash attention),
so every pattern can be compared position by position.
"""
from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file, save_file

import bert
from bert import attention as attn
from bert.errors import CheckpointError
from family_support import MODERNBERT, build_hf, compare, family_batch, hf_family_config, run_transformers

TOLERANCE = dict(atol=1e-5, rtol=1e-5)
# the released configs' biases (none but the decoder's), every bias there is (the flags), and mean pooling
VARIANTS = {
    "released": {},
    "biases": dict(norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True, decoder_bias=False),
    "mean": dict(classifier_pooling="mean"),
}
CASES = [pytest.param(architecture, "released", id=architecture) for architecture in MODERNBERT] + [
    pytest.param("ModernBertForMaskedLM", "biases", id="ModernBertForMaskedLM-biases"),
    pytest.param("ModernBertForTokenClassification", "biases", id="ModernBertForTokenClassification-biases"),
    pytest.param("ModernBertForSequenceClassification", "mean", id="ModernBertForSequenceClassification-mean"),
]
OUTPUT = {"ModernBertForMaskedLM": "mlm", "ModernBertForSequenceClassification": "classifier", "ModernBertForTokenClassification": "tagger"}


def _loaded(architecture, variant, save_hf_model):
    theirs = build_hf("modernbert", architecture, **VARIANTS[variant])
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    return ours, theirs


@pytest.mark.parametrize("architecture,variant", CASES)
def test_checkpoint_loads_and_matches_transformers(architecture, variant, save_hf_model):
    ours, theirs = _loaded(architecture, variant, save_hf_model)
    assert ours.config.family == "modernbert"
    batch = family_batch("modernbert")
    assert batch[0].shape[1] > ours.config.local_attention and not batch[2].all()  # longer than the window, padded
    compare(ours, theirs, "modernbert", architecture, batch)
    # the fused attention path (nobody records the pattern) gives the same logits
    input_ids, _, attention_mask = batch
    with torch.no_grad():
        fused = ours(input_ids, attention_mask=attention_mask, output=OUTPUT[architecture])
    expected = run_transformers(theirs, "modernbert", batch).logits
    keep = attention_mask.bool()
    if architecture.endswith("SequenceClassification"):
        torch.testing.assert_close(fused, expected, **TOLERANCE)
    else:
        torch.testing.assert_close(fused[keep], expected[keep], **TOLERANCE)


@pytest.fixture(scope="module")
def pair(tmp_path_factory, tiny_vocab_file):
    """(ours, transformers' ModernBertForMaskedLM, the tiny tokenizer) on the same random weights."""
    from family_support import write_tiny_tokenizer

    theirs = build_hf("modernbert", "ModernBertForMaskedLM")
    folder = tmp_path_factory.mktemp("modernbert")
    theirs.save_pretrained(folder)
    write_tiny_tokenizer(folder, tiny_vocab_file)
    ours, tokenizer = bert.load_pretrained(str(folder))
    return ours, theirs, tokenizer


def test_local_layers_see_a_band_and_global_layers_everything(pair):
    """Layers 0 and 3 attend globally, 1 and 2 within ±4 (global every third layer from layer 0): transformers'
    patterns are zero outside `window_band` exactly in the local layers, and ours say which layer is which."""
    ours, theirs, _ = pair
    batch = family_batch("modernbert")
    reference = run_transformers(theirs, "modernbert", batch)
    seq = batch[0].shape[1]
    band = attn.window_band(seq, 4)
    assert band[10].nonzero().flatten().tolist() == list(range(6, 15))  # ±4 around position 10
    windows = [layer.attention.attention.window for layer in ours.transformer]
    assert windows == [None, 4, 4, None] == [ours.config.window(i) for i in range(4)]
    real_rows = reference.attentions[0][0]  # the first row is the longest: no padding
    for layer, window in enumerate(windows):
        outside = reference.attentions[layer][0][:, ~band]  # [head, query-key pairs outside the band]
        if window is None:
            assert outside.abs().max() > 1e-3  # the input is longer than the window: a global layer looks past it
        else:
            assert outside.abs().max() == 0
    assert real_rows.shape[-1] == seq


def test_rotation_turns_each_pair_of_dimensions_by_its_angle():
    """attention.rotate against the rotation written with complex numbers: dimensions i and i + d/2 are the real and
    imaginary parts of one number, multiplied by exp(i * position * theta^(-2i/d)) (Su et al. 2021)."""
    torch.manual_seed(0)
    seq, head_dim, theta = 7, 8, 10000.0
    x = torch.randn(2, 3, seq, head_dim)
    cos, sin = attn.rotary_angles(seq, head_dim, theta)
    turned = attn.rotate(x, cos, sin)
    half = head_dim // 2
    for position in range(seq):
        for i in range(half):
            angle = position * theta ** (-2 * i / head_dim)
            number = torch.complex(x[..., position, i], x[..., position, i + half]) * complex(math.cos(angle), math.sin(angle))
            torch.testing.assert_close(turned[..., position, i], number.real)
            torch.testing.assert_close(turned[..., position, i + half], number.imag)


def test_hooks_record_rotated_q_and_k_and_the_modernbert_parts(pair):
    ours, *_ = pair
    names = set(ours.hook_names())
    assert bert.hook_name("position") not in names and bert.hook_name("token_type") not in names  # rotary, no segments
    assert bert.hook_name("final_norm") in names and bert.hook_name("attention_in", 0) not in names  # layer 0: normed embeddings
    for layer in range(1, 4):
        assert {bert.hook_name(kind, layer) for kind in ("attention_in", "mlp_in", "mlp_gate")} <= names
    input_ids, _, mask = family_batch("modernbert")
    _, cache = ours.run_with_cache(input_ids, attention_mask=mask)
    q, k = cache["q", 1], cache["k", 1]
    scores = attn.masked_scores(q, k, mask, window=4)
    torch.testing.assert_close(cache["scores", 1], scores)  # the recorded q and k are the ones the scores use
    unrotated = attn.split_heads(ours.transformer[1].attention.attention.project_query(cache["attention_in", 1]), 2)
    assert not torch.allclose(q[:, :, 1:], unrotated[:, :, 1:])  # turned (position 0 is not)
    torch.testing.assert_close(q[:, :, 0], unrotated[:, :, 0])
    layer = ours.transformer[1].residual
    post = torch.nn.functional.gelu(cache["mlp_pre", 1]) * cache["mlp_gate", 1]
    torch.testing.assert_close(cache["mlp_post", 1], post)
    torch.testing.assert_close(cache["mlp_result", 1], layer.mlp2(post))


def test_the_outline_shows_what_modernbert_changes(pair):
    ours, *_ = pair
    outline = str(ours)
    for part in ("window=±4, rotary theta=10000", "global, rotary theta=160000", "(gate): Linear", "(final_norm): FinalNorm",
                 "bias=False"):
        assert part in outline
    assert "position_embedding" not in outline and "token_type_embedding" not in outline


def _saved(save_hf_model):
    folder = save_hf_model(build_hf("modernbert", "ModernBertForMaskedLM"))
    return folder, load_file(str(folder / "model.safetensors"))


def _rewrite(folder, state):
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})


@pytest.mark.parametrize("change,message", [
    ("missing", "missing tensor 'layers.1.attn_norm.weight'"),
    ("unexpected", "unexpected tensor 'layers.0.attn_norm.weight'"),  # layer 0 has no attention LayerNorm
    ("mis-shaped", r"tensor 'layers.1.attn.Wqkv.weight' has shape \(95, 32\), but config.json implies \(96, 32\)"),
])
def test_strict_loading_names_the_tensor(change, message, save_hf_model):
    folder, state = _saved(save_hf_model)
    if change == "missing":
        state.pop("model.layers.1.attn_norm.weight")
    elif change == "unexpected":
        state["model.layers.0.attn_norm.weight"] = torch.ones(32)
    else:
        state["model.layers.1.attn.Wqkv.weight"] = state["model.layers.1.attn.Wqkv.weight"][:-1].contiguous()
    _rewrite(folder, state)
    with pytest.raises(CheckpointError, match=message):
        bert.load_pretrained(str(folder))


@pytest.mark.parametrize("architecture", MODERNBERT)
def test_saved_folder_loads_in_transformers_with_the_same_logits(architecture, save_hf_model, tmp_path, tiny_vocab_file):
    import transformers

    original = build_hf("modernbert", architecture)
    ours, _ = bert.load_pretrained(str(save_hf_model(original)))
    folder = bert.save_hf_folder(ours, tmp_path / "ours", tiny_vocab_file)
    auto = {"ModernBertForMaskedLM": transformers.AutoModelForMaskedLM,
            "ModernBertForSequenceClassification": transformers.AutoModelForSequenceClassification,
            "ModernBertForTokenClassification": transformers.AutoModelForTokenClassification}[architecture]
    reloaded = auto.from_pretrained(folder, attn_implementation="eager").eval()
    assert type(reloaded).__name__ == architecture
    written, expected_keys = load_file(str(folder / "model.safetensors")), load_file(str(save_hf_model(original, "again") / "model.safetensors"))
    assert set(written) == set(expected_keys)
    for key, tensor in expected_keys.items():
        torch.testing.assert_close(written[key], tensor, atol=0, rtol=0)  # fused Wqkv and Wi joined back in order
    batch = family_batch("modernbert")
    keep = batch[2].bool()
    before, after = run_transformers(original, "modernbert", batch).logits, run_transformers(reloaded, "modernbert", batch).logits
    if not architecture.endswith("SequenceClassification"):
        before, after = before[keep], after[keep]
    torch.testing.assert_close(after, before, **TOLERANCE)


def test_released_config_json_and_transformers_config_agree():
    """A config.json as the released checkpoints write it (global_attn_every_n_layers, global_rope_theta,
    local_rope_theta) and as transformers 5 writes it (layer_types, rope_parameters) read the same; ours, written
    back, gives transformers the same layer types and rotary bases."""
    import transformers

    released = {"model_type": "modernbert", "hidden_size": 32, "num_hidden_layers": 7, "num_attention_heads": 2,
                "intermediate_size": 40, "vocab_size": 50, "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0,
                "local_rope_theta": 10000.0, "local_attention": 8, "norm_bias": False, "hidden_activation": "gelu"}
    ours = bert.BertConfig.from_hf_dict(released)
    theirs = transformers.ModernBertConfig(**{k: v for k, v in released.items() if k != "model_type"})
    assert [ours.window(i) is None for i in range(7)] == [t == "full_attention" for t in theirs.layer_types]
    assert ours.rope_theta(0) == theirs.rope_parameters["full_attention"]["rope_theta"]
    assert ours.rope_theta(1) == theirs.rope_parameters["sliding_attention"]["rope_theta"]
    assert bert.BertConfig.from_hf_dict(theirs.to_dict()) == ours
    written = transformers.ModernBertConfig(**{k: v for k, v in ours.to_hf_dict().items() if k != "model_type"})
    assert written.layer_types == theirs.layer_types and written.rope_parameters == theirs.rope_parameters
    assert (written.local_attention, written.norm_bias, written.mlp_bias, written.attention_bias) == (8, False, False, False)
    with pytest.raises(bert.errors.ConfigError, match="rotary scaling"):
        bert.BertConfig.from_hf_dict(released | {"rope_parameters": {"full_attention": {"rope_type": "yarn", "rope_theta": 1.0}}})


def test_a_fresh_modernbert_has_the_released_shape():
    """BertConfig.modernbert_base against transformers' default ModernBertConfig (the base model's): the same
    parameter count for the masked-LM model."""
    import transformers

    with torch.device("meta"):
        ours = bert.Bert(bert.BertConfig.modernbert_base())
        theirs = transformers.ModernBertForMaskedLM(transformers.ModernBertConfig())
    count = lambda model: sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    assert count(ours) == count(theirs)


def test_hf_config_of_the_tiny_model_reads_back(save_hf_model):
    folder = save_hf_model(build_hf("modernbert", "ModernBertForMaskedLM"))
    config = bert.BertConfig.from_hf_dict(json.loads((folder / "config.json").read_text()))
    expected = hf_family_config("modernbert")
    assert (config.num_layers, config.local_attention, config.global_attn_every_n_layers) == (
        expected.num_hidden_layers, expected.local_attention, 3)


@pytest.mark.parametrize("architecture,variant", CASES)
def test_parameter_counts_equal_transformers_models(architecture, variant, save_hf_model):
    """bert.count_parameters from the config and the heads against the parameters transformers' model holds."""
    from bert.params import model_heads

    ours, theirs = _loaded(architecture, variant, save_hf_model)
    counts = bert.count_parameters(ours.config, **model_heads(ours))
    assert counts["total"] == sum(p.numel() for p in theirs.parameters()) == sum(p.numel() for p in ours.parameters())


def test_context_mixing_refuses_pre_norm_layers_in_words(pair):
    """The mixing decompositions take BERT's post-LN layer apart; on ModernBERT they say so instead of giving numbers,
    and the attention weights themselves are transformers' patterns."""
    from bert.analysis.attention.mixing import context_mixing, record_for_mixing

    ours, *_ = pair
    input_ids = family_batch("modernbert")[0][:1]
    _, cache = record_for_mixing(ours, input_ids, torch.zeros_like(input_ids))
    for method in ("norm", "globenc", "alti", "decompx", "value-zeroing"):
        with pytest.raises(bert.errors.InvalidInputError, match="pre-norm"):
            context_mixing(ours, cache, method)
    reference = run_transformers(pair[1], "modernbert", (input_ids, torch.zeros_like(input_ids), torch.ones_like(input_ids)))
    expected = torch.stack([pattern[0].mean(0) for pattern in reference.attentions]).numpy()
    assert abs(context_mixing(ours, cache, "attention").layers - expected).max() < 1e-5


def test_saliency_splits_over_the_token_embedding_alone(pair):
    """Integrated gradients on ModernBERT: its embedding is the token's alone (positions turn q and k), f(x) is
    transformers' log p at the [MASK], and the attributions add up to f(x) - f(baseline)."""
    from bert.analysis.attribution.saliency import saliency

    ours, theirs, tokenizer = pair
    encoding = tokenizer.encode("the dog [MASK] at the park .")
    result = saliency(ours, tokenizer, encoding, "integrated_gradients", steps=64)
    assert result.parts == ("token",) and result.attributions.shape == (1, len(encoding.input_ids))
    ids = torch.tensor([encoding.input_ids])
    reference = run_transformers(theirs, "modernbert", (ids, torch.zeros_like(ids), torch.ones_like(ids)))
    expected = reference.logits[0, result.position].log_softmax(-1)[result.explained.answer_id]
    assert result.score == pytest.approx(float(expected), abs=1e-4)
    assert result.total == pytest.approx(result.score - result.baseline_score, rel=0.01, abs=1e-3)


def test_logit_lens_and_split_passes_read_through_the_final_layer_norm(pair):
    """A pre-norm model's heads read the residual stream through final_norm: the logit lens at every layer is
    transformers' head and decoder over model.final_norm(hidden_states[i]), and a pass split at a layer
    (residual_at, then logits_above) gives transformers' logits."""
    from bert.analysis.features.residuals import logits_above, residual_at
    from bert.analysis.representations.logit_lens import logit_lens

    ours, theirs, tokenizer = pair
    encoding = tokenizer.encode("the dog [MASK] at the park .")
    ids = torch.tensor([encoding.input_ids])
    reference = run_transformers(theirs, "modernbert", (ids, torch.zeros_like(ids), torch.ones_like(ids)))
    (lens,) = logit_lens(ours, tokenizer, encoding, top_k=3)
    with torch.no_grad():
        for index, layer in enumerate(lens.layers):
            hidden = reference.hidden_states[index][0, lens.position]
            if index < len(lens.layers) - 1:  # the last hidden state is already normed
                hidden = theirs.model.final_norm(hidden)
            probabilities = theirs.decoder(theirs.head(hidden)).softmax(-1)
            assert [candidate.token_id for candidate in layer.top] == probabilities.topk(3).indices.tolist()
        split = logits_above(ours, 2, residual_at(ours, 2, ids, torch.zeros_like(ids)))
    torch.testing.assert_close(split, reference.logits, **TOLERANCE)


def test_a_folder_with_tokenizer_json_loads_whole_and_predicts_as_transformers(tmp_path):
    """A folder as ModernBERT's hub folders are: tokenizer.json (byte-level BPE, BERT's special tokens) beside the
    weights. bert.load_pretrained reads both; a typed [MASK] gives transformers' logits for its own tokenizer's ids."""
    import transformers

    from tokenizer_support import build_tokenizer

    reference = build_tokenizer("modernbert", tmp_path)
    theirs = build_hf("modernbert", "ModernBertForMaskedLM", vocab_size=len(reference), pad_token_id=reference.pad_token_id)
    theirs.save_pretrained(tmp_path)
    ours, tokenizer = bert.load_pretrained(str(tmp_path))
    text = "Paris is the [MASK] of France, a country in Europe with many old towns and rivers."
    encoding = tokenizer.encode(text)
    expected = reference(text, return_tensors="pt")
    assert encoding.input_ids == expected["input_ids"][0].tolist() and len(encoding) > ours.config.local_attention
    ids = torch.tensor([encoding.input_ids])
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), theirs(**expected).logits, **TOLERANCE)
    assert isinstance(transformers.AutoTokenizer.from_pretrained(tmp_path)("x")["input_ids"], list)
