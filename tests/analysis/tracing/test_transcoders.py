"""Transcoders, one per layer: the pairs they learn from against transformers' own MLP input and output, training
that beats the zero baseline on held-out tokens, a checkpoint resumed (and one of another run refused), files
checked on loading, splicing. A tiny random model keeps it fast."""
from __future__ import annotations

import dataclasses
import logging

import pytest
import torch

from bert.analysis.circuits.encoder_parts import EncoderParts
from bert.analysis.corpus.model_fingerprint import model_fingerprint
from bert.analysis.features.corpora import corpus_from_texts
from bert.analysis.tracing.transcoder import (TranscoderConfig, TranscoderFileError, Transcoders, load_transcoders,
                                              splice_all)
from bert.analysis.tracing.transcoder_measures import measure_transcoders
from bert.analysis.tracing.transcoder_train import TranscoderSettings, mlp_pairs, train_transcoders, transcoder_losses
from bert.pretrained import load_folder

TRAIN = ["the dog barked at the mail man", "her cat went to the park", "the cat is at the park and the dog is to",
         "a dog went to her park", "the mail man is at the dog park", "her dog barked and the cat went"]
HELD_OUT = ["the cat barked at her dog", "a man went to the park and the cat is at her man"]
SETTINGS = TranscoderSettings(features=48, k=6, steps=4, batch_tokens=64, buffer_tokens=256, checkpoint_every=2,
                              sentences_per_batch=8, learning_rate=3e-3)


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    model, tokenizer = load_folder(tiny_mlm_folder)
    return model.eval(), tokenizer


def test_pairs_are_what_transformers_mlp_reads_and_writes(tiny, tiny_mlm_folder):
    from transformers import BertForMaskedLM

    model, tokenizer = tiny
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    seen = {}
    hooks = []
    for layer, block in enumerate(reference.bert.encoder.layer):
        hooks.append(block.intermediate.register_forward_hook(lambda m, args, out, layer=layer: seen.__setitem__(("in", layer), args[0])))
        hooks.append(block.output.dense.register_forward_hook(lambda m, args, out, layer=layer: seen.__setitem__(("out", layer), out)))
    ids = torch.tensor([tokenizer.encode(TRAIN[2]).input_ids])
    with torch.no_grad():
        reference(ids)
    pairs = mlp_pairs(model, tokenizer, [TRAIN[2]])  # [token, layer, 2, hidden]
    assert pairs.shape == (ids.shape[1], 2, 2, 64)
    for layer in range(2):
        torch.testing.assert_close(pairs[:, layer, 0], seen["in", layer][0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(pairs[:, layer, 1], seen["out", layer][0], atol=1e-5, rtol=1e-5)


def test_training_beats_the_zero_baseline_on_held_out_tokens_and_resumes(tiny, tmp_path, caplog):
    model, tokenizer = tiny
    lines = [TRAIN[i % len(TRAIN)] for i in range(400)]
    held_out = corpus_from_texts("held out", HELD_OUT, tokenizer)
    transcoders, first = train_transcoders(model, tokenizer, lines, SETTINGS, tmp_path, "tiny", "lines")
    assert (tmp_path / "checkpoint.pt").is_file() and first.steps == 4 and first.tokens == 4 * 64
    with caplog.at_level(logging.INFO):
        transcoders, resumed = train_transcoders(model, tokenizer, lines, dataclasses.replace(SETTINGS, steps=30), tmp_path, "tiny", "lines")
    assert "resuming" in caplog.text and "at step 4" in caplog.text
    assert resumed.steps == 30 and resumed.tokens == 30 * 64 and resumed.input_scales == first.input_scales
    assert torch.allclose(transcoders.W_dec.norm(dim=-1), torch.ones(2, 48), atol=1e-5)
    figures = measure_transcoders(model, tokenizer, transcoders, held_out)
    for layer in figures["layers"]:
        # Σ|y − y^|² against Σ|y|²: an MLP replaced by nothing scores 1; the mean output alone explains no variance
        # (after one step, b_dec the mean: about 0.5 and -0.04 here; after 30 steps about 0.4 and 0.2)
        assert layer["error_vs_zero"] < 1 and layer["variance_explained"] > 0.1 and 0 < layer["l0"] <= 6
    assert set(figures["mlm_loss"]) == {"intact", "replaced", "zero_ablated"}
    with pytest.raises(TranscoderFileError, match="--k 6 there, 4 here"):
        train_transcoders(model, tokenizer, lines, dataclasses.replace(SETTINGS, k=4, steps=40), tmp_path, "tiny", "lines")


def test_the_auxiliary_loss_trains_only_dead_features(tiny):
    """AuxK (Gao et al. 2024): the features marked dead, outside every token's top k, get a gradient from the
    auxiliary loss and from nothing else; with none dead it is zero."""
    model, tokenizer = tiny
    pairs = mlp_pairs(model, tokenizer, TRAIN[:3])
    config = TranscoderConfig("tiny", model_fingerprint(model), 2, 64, 48, 6, "attention_out", [1.0, 1.0], [1.0, 1.0])
    transcoders = Transcoders(config)
    with torch.no_grad():
        for parameter in transcoders.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=torch.Generator().manual_seed(1)) * 0.3)
    loss, _, fired, aux = transcoder_losses(transcoders, pairs, torch.zeros(2, 48, dtype=torch.bool))
    assert float(aux) == 0.0
    dead = ~fired  # never in a top k of this batch
    assert bool(dead.any())
    transcoders.zero_grad()
    loss.backward()
    assert not transcoders.W_dec.grad[dead].any()
    loss, _, _, aux = transcoder_losses(transcoders, pairs, dead, aux_k=4)
    transcoders.zero_grad()
    aux.backward()
    assert float(aux.detach()) > 0 and bool(transcoders.W_dec.grad[dead].abs().sum(-1).gt(0).any())
    assert not transcoders.W_dec.grad[~dead].any()


def test_neuron_init_is_the_mlp_with_relu_when_every_feature_is_kept(tiny):
    """--init neurons: with k = features (the MLP's width) the transcoder is W2 ReLU(W1 x + b1) + b2, computed here
    from the MLP's own nn.Linear weights, whatever the scales."""
    from bert.analysis.tracing.transcoder_train import neuron_init

    model, tokenizer = tiny
    width = model.config.intermediate_size
    config = TranscoderConfig("tiny", model_fingerprint(model), 2, 64, width, width, "attention_out", [1.7, 0.4], [0.3, 2.5])
    transcoders = Transcoders(config)
    neuron_init(transcoders, model)
    pairs = mlp_pairs(model, tokenizer, TRAIN[:2])
    for layer in range(2):
        block = EncoderParts.of(model).layers[layer].module.residual
        x = pairs[:, layer, 0]
        expected = torch.relu(x @ block.mlp1.weight.T + block.mlp1.bias) @ block.mlp2.weight.T + block.mlp2.bias
        torch.testing.assert_close(transcoders(x, layer), expected, atol=1e-4, rtol=1e-4)
    with pytest.raises(Exception, match="--features"):
        neuron_init(Transcoders(dataclasses.replace(config, features=width - 1, k=4)), model)


def test_files_round_trip_and_refuse_other_weights(tiny, tiny_mlm_folder, tmp_path):
    model, _ = tiny
    config = TranscoderConfig("tiny", model_fingerprint(model), 2, 64, 16, 3, "attention_out", [1.5, 2.0], [0.5, 1.0])
    transcoders = Transcoders(config)
    with torch.no_grad():
        for parameter in transcoders.parameters():
            parameter.copy_(torch.randn(parameter.shape))
    transcoders.save(tmp_path / "t")
    loaded = load_transcoders(tmp_path / "t", model)
    x = torch.randn(5, 64)
    torch.testing.assert_close(loaded(x, 1), transcoders(x, 1))
    half = transcoders.save(tmp_path / "half", dtype=torch.float16)  # half the file, loaded as float32
    assert (half / "transcoders.safetensors").stat().st_size < 0.6 * (tmp_path / "t" / "transcoders.safetensors").stat().st_size
    rounded = Transcoders(config)
    rounded.load_state_dict({name: value.half().float() for name, value in transcoders.state_dict().items()})
    loaded_half = load_transcoders(half, model)
    assert loaded_half.W_enc.dtype == torch.float32
    torch.testing.assert_close(loaded_half(x, 1), rounded(x, 1))
    other, _ = load_folder(tiny_mlm_folder)
    with torch.no_grad():
        other.embedding.token_embedding.weight[0, 0] += 1.0
    with pytest.raises(TranscoderFileError, match="other weights"):
        load_transcoders(tmp_path / "t", other)
    (tmp_path / "t" / "transcoders.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(TranscoderFileError, match="cannot be read"):
        load_transcoders(tmp_path / "t")


def test_splicing_replaces_each_mlp_output_by_the_transcoders(tiny):
    """W_enc = 0 (no feature fires) and b_dec = c: every MLP writes c / s_out at every position, as a patch of
    its output with that vector does."""
    from bert.interventions import zero

    model, tokenizer = tiny
    ids = torch.tensor([tokenizer.encode(TRAIN[0]).input_ids])
    transcoders = Transcoders(TranscoderConfig("tiny", "", 2, 64, 8, 2, "attention_out", [1.0, 1.0], [2.0, 4.0]))
    constant = torch.randn(2, 64)
    with torch.no_grad():
        transcoders.b_dec.copy_(constant)
    spliced, _ = model.run_with_cache(ids, names=[], interventions=splice_all(transcoders))
    patched = {f"transformer.{layer}.residual.hook_result": (lambda y, name, c=constant[layer] / scale: c.expand_as(y))
               for layer, scale in enumerate((2.0, 4.0))}
    reference, _ = model.run_with_cache(ids, names=[], interventions=patched)
    torch.testing.assert_close(spliced, reference)
    with torch.no_grad():
        transcoders.b_dec.zero_()
    zeroed, _ = model.run_with_cache(ids, names=[], interventions=splice_all(transcoders, layers=[1]))
    reference, _ = model.run_with_cache(ids, names=[], interventions={"transformer.1.residual.hook_result": zero})
    torch.testing.assert_close(zeroed, reference)
    assert float((zeroed - model(ids)).abs().max().detach()) > 1e-3  # the splice is in force
