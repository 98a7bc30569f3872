"""Devices and precision: the default-device choice, and no tensor made on the wrong device.

This machine has no GPU, so the plumbing is tested on the CPU with a decoy: the model stays on the CPU while
PyTorch's *default* device is `meta` (`with torch.device("meta")`). A tensor made without saying where lands
on `meta`; meeting the model's CPU tensors it raises, and a `meta` result cannot become a number. So every
function below passes only if each tensor it makes follows the model's device (or is on the CPU on purpose).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import bert
from bert import devices
from bert.analysis.causal import ablation
from bert.analysis.corpus import batching as corpus
from bert.analysis.attention import head_stats
from bert.analysis.representations import logit_lens
from bert.analysis.attribution import saliency
from bert.data import LabelledSentence
from bert.errors import InvalidInputError
from bert.predict import predict_masks
from bert_test_support import SENTENCES

GPUS = [
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")),
    pytest.param("mps", marks=pytest.mark.skipif(not devices._mps_available(), reason="no Apple MPS GPU on this machine")),
]


@pytest.fixture(scope="module")
def masked(tokenizer):
    return tokenizer.encode("the dog barked at the mailman.", "her cat went to the park.").with_masks([2, 5], tokenizer.mask_id)


# --- the default device -------------------------------------------------------------------------------------

@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")])
def test_default_device_prefers_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(devices, "_mps_available", lambda: mps)
    assert devices.default_device() == torch.device(expected)
    assert devices.resolve_device("auto") == torch.device(expected)
    assert devices.resolve_device(None) == torch.device(expected)


def test_asking_for_a_missing_or_unknown_device_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devices, "_mps_available", lambda: False)
    with pytest.raises(InvalidInputError, match="no CUDA GPU"):
        devices.resolve_device("cuda")
    with pytest.raises(InvalidInputError, match="no Apple GPU"):
        devices.resolve_device("mps")
    with pytest.raises(InvalidInputError, match="not a device"):
        devices.resolve_device("gpu please")
    with pytest.raises(InvalidInputError, match="bfloat16"):
        devices.resolve_dtype("float8")
    assert devices.resolve_device("cpu") == torch.device("cpu")


def test_autocast_dtype_follows_the_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert devices.autocast_dtype(torch.device("cuda")) == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)  # e.g. a V100
    assert devices.autocast_dtype(torch.device("cuda")) is None
    assert devices.autocast_dtype(torch.device("mps")) is None
    native = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert devices.autocast_dtype(torch.device("cpu")) == (torch.bfloat16 if native else None)


def test_as_numpy_takes_bfloat16_which_numpy_lacks():
    values = torch.tensor([[1.5, -2.25]], dtype=torch.bfloat16)
    array = devices.as_numpy(values)
    assert array.dtype == np.float32 and array.tolist() == [[1.5, -2.25]]


# --- no tensor on the wrong device --------------------------------------------------------------------------

def test_meta_default_device_catches_a_tensor_made_without_a_device(tiny_model, tokenizer, masked):
    """The decoy works: the same call with tensors made on the default device fails."""
    with torch.device("meta"), pytest.raises((RuntimeError, NotImplementedError)):
        input_ids, token_type_ids = masked.tensors()
        float(tiny_model(input_ids, token_type_ids).sum())


def test_prediction_and_every_per_input_analysis_follow_the_model(tiny_model, tokenizer, masked):
    with torch.no_grad():
        expected = predict_masks(tiny_model, tokenizer, masked, top_k=3)
    with torch.device("meta"):
        predictions = predict_masks(tiny_model, tokenizer, masked, top_k=3)
        lenses = logit_lens.logit_lens(tiny_model, tokenizer, masked)
        ranking = ablation.rank_heads(tiny_model, tokenizer, masked)
        mean_z = ablation.mean_head_outputs(tiny_model, tokenizer, [LabelledSentence("the dog barked at the cat.")])
        mean_ranking = ablation.rank_heads(tiny_model, tokenizer, masked, mode="mean", mean_z=mean_z)
        ablated = ablation.predict_ablated(tiny_model, tokenizer, masked, [(0, 1)], "mean", mean_z.cpu())
        explained = [saliency.saliency(tiny_model, tokenizer, masked, method, steps=4) for method in saliency.METHODS]
    assert predictions == expected
    assert [lens.final.token_id for lens in lenses] == [p.candidates[0].token_id for p in predictions]
    assert ranking.effect.device.type == mean_ranking.effect.device.type == "cpu"
    assert torch.isfinite(ranking.effect).all() and torch.isfinite(mean_ranking.effect).all()
    assert mean_z.device.type == "cpu" and len(ablated) == 2
    assert all(np.isfinite(s.attributions).all() for s in explained)


def test_corpus_passes_follow_the_model(tiny_model, tokenizer):
    sentences = [LabelledSentence(text) for text in ("the dog barked.", "her cat went to the park.", "the mailman is at the park.")]
    encodings = [tokenizer.encode(s.text) for s in sentences]
    with torch.device("meta"):
        statistics = head_stats.corpus_head_statistics(tiny_model, tokenizer, sentences, pairs=False)
        residuals = corpus.gather_residuals(tiny_model, encodings, [(0, 1), (2, 3)], tokenizer.pad_id)
    assert np.isfinite(statistics["self"]).all()
    assert residuals.device.type == "cpu" and residuals.dtype == torch.float32 and torch.isfinite(residuals).all()


def test_a_training_step_and_evaluation_follow_the_model(tokenizer):
    from bert.pretraining.data import DataConfig, collate
    from bert.pretraining.trainer import PretrainingObjective, TrainConfig, evaluate, make_optimizer, train_step

    torch.manual_seed(0)
    model = bert.Bert(bert.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_layers=1, num_heads=2,
                                      intermediate_size=32, max_position_embeddings=32))
    config = TrainConfig(steps=4, warmup_steps=1, whole_word=True)
    ids = [tokenizer.encode(text).input_ids for text in ("the dog barked at the mailman.", "her cat went to the park.")]
    batch = collate([(row, [0] * len(row), -1) for row in ids], tokenizer)
    optimizer = make_optimizer(model, config)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    objective = PretrainingObjective(model, mlm=True)
    train_step(objective, tokenizer, batch, optimizer, scheduler, config, 0)  # AdamW makes its state (torch's own code)
    with torch.device("meta"):
        losses = train_step(objective, tokenizer, batch, optimizer, scheduler, config, 1)
        metrics = evaluate(model, tokenizer, [batch], config)
    assert np.isfinite(losses["loss"]) and np.isfinite(metrics["perplexity"])
    assert all(p.device.type == "cpu" for p in model.parameters())


# --- loading onto a device, in a dtype ----------------------------------------------------------------------

def test_load_pretrained_puts_the_model_on_the_device_in_the_dtype(tiny_mlm_folder):
    model, _ = bert.load_pretrained(str(tiny_mlm_folder), device="cpu", dtype="bfloat16")
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert devices.model_device(model) == torch.device("cpu") and not model.training
    with pytest.raises(InvalidInputError, match="dtype"):
        bert.load_pretrained(str(tiny_mlm_folder), dtype="int8")


@pytest.mark.slow
def test_bfloat16_minilm_predicts_like_float32(minilm_path):
    """Reduced precision on the real weights: the top-1 at a masked word mostly agrees with float32, and the
    logits stay close (bench/precision.py measures the full figures the README gives)."""
    full, tokenizer = bert.load_pretrained("minilm")
    half, _ = bert.load_pretrained("minilm", dtype=torch.bfloat16)
    agree, worst = [], 0.0
    for text in SENTENCES:
        encoding = tokenizer.encode(text)
        words = [i for i, special in enumerate(encoding.special) if not special][:3]
        masked = encoding.with_masks(words[1:2] or words, tokenizer.mask_id)
        input_ids, token_type_ids = masked.tensors()
        at_mask = input_ids == tokenizer.mask_id
        with torch.no_grad():
            a = full(input_ids, token_type_ids, logit_mask=at_mask)
            b = half(input_ids, token_type_ids, logit_mask=at_mask).float()
        agree.append(bool(a.argmax(-1) == b.argmax(-1)))
        worst = max(worst, float((a - b).abs().max()))
    assert sum(agree) >= 0.8 * len(agree), f"top-1 agreed on {sum(agree)} of {len(agree)}"
    assert 0 < worst < 1.0  # bfloat16 has 8 bits of mantissa: differences, but small against logits of size ~10


@pytest.mark.parametrize("device", GPUS)
def test_minilm_on_a_gpu_matches_transformers_on_the_cpu(device, minilm_path, minilm_batch):
    transformers = pytest.importorskip("transformers")
    ours, _ = bert.load_pretrained("minilm-encoder", device=device)
    theirs = transformers.BertModel.from_pretrained(str(minilm_path)).eval()
    input_ids, token_type_ids, attention_mask = minilm_batch
    with torch.no_grad():
        hidden = ours.encode(input_ids.to(device), token_type_ids.to(device), attention_mask.to(device)).cpu()
        reference = theirs(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).last_hidden_state
    keep = attention_mask.bool()
    torch.testing.assert_close(hidden[keep], reference[keep], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("device", GPUS)
def test_training_on_a_gpu_follows_the_cpu(device, tmp_path, tokenizer):
    """What the decoy cannot see: batches built on the CPU must reach the GPU (masking stays on the CPU, so
    both runs mask the same tokens; dropout 0)."""
    from bert.pretraining.data import DataConfig
    from bert.pretraining.trainer import TrainConfig, train

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the dog barked at the mailman.\nher cat went to the park.\nthe mailman is at the park.\n")
    config = TrainConfig(steps=4, learning_rate=1e-2, warmup_steps=1, eval_every=1, checkpoint_every=4, whole_word=True)
    losses = {}
    for where in ("cpu", device):
        torch.manual_seed(0)
        model = bert.Bert(bert.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_layers=1, num_heads=2,
                                          intermediate_size=32, max_position_embeddings=32, hidden_dropout=0.0,
                                          attention_dropout=0.0)).to(where)
        train(model, tokenizer, corpus, corpus, tmp_path / where, config, DataConfig(max_length=16, batch_size=2))
        losses[where] = [json.loads(line)["train_loss"] for line in (tmp_path / where / "log.jsonl").read_text().splitlines()]
    torch.testing.assert_close(torch.tensor(losses[device]), torch.tensor(losses["cpu"]), atol=1e-4, rtol=1e-4)
