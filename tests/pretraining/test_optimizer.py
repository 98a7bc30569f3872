"""The learning-rate schedule (warm-up, then linear decay: Devlin et al. 2019), AdamW's decay groups, and what learns."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from bert.pretraining.data import Batch
from bert.pretraining.masking import IGNORE
from bert.pretraining.trainer import TrainConfig, lr_factor, make_optimizer, pretraining_loss, select_trainable

from .helpers import small_bert


def test_lr_warms_up_linearly_then_decays_linearly_to_zero():
    warmup, total = 10, 110
    assert lr_factor(0, warmup, total) == 0.0
    assert lr_factor(5, warmup, total) == pytest.approx(0.5)
    assert lr_factor(10, warmup, total) == pytest.approx(1.0)
    assert lr_factor(60, warmup, total) == pytest.approx(0.5)
    assert lr_factor(110, warmup, total) == 0.0
    assert lr_factor(150, warmup, total) == 0.0  # never negative past the end
    factors = [lr_factor(s, warmup, total) for s in range(total + 1)]
    rising, falling = factors[: warmup + 1], factors[warmup:]
    assert all(b - a == pytest.approx(0.1) for a, b in zip(rising, rising[1:]))  # straight lines, both sides
    assert all(a - b == pytest.approx(0.01) for a, b in zip(falling, falling[1:]))


def test_no_warmup_starts_at_the_peak():
    assert lr_factor(0, 0, 100) == 1.0
    assert lr_factor(50, 0, 100) == pytest.approx(0.5)


def _names(model, params) -> set[str]:
    by_id = {id(p): name for name, p in model.named_parameters()}
    return {by_id[id(p)] for p in params}


def test_adamw_does_not_decay_biases_or_layer_norms():
    model = small_bert(nsp_head=True)
    optimizer = make_optimizer(model, TrainConfig(weight_decay=0.05, learning_rate=3e-4))
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert decay["lr"] == no_decay["lr"]
    # The reference, by module type rather than by name: every LayerNorm parameter and every bias is exempt.
    exempt = {id(p) for m in model.modules() if isinstance(m, nn.LayerNorm) for p in m.parameters()}
    exempt |= {id(m.bias) for m in model.modules() if getattr(m, "bias", None) is not None}
    assert {id(p) for p in no_decay["params"]} == exempt
    assert {id(p) for p in decay["params"]} == {id(p) for p in model.parameters()} - exempt
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))  # the tied matrix once
    assert "embedding.token_embedding.weight" in _names(model, decay["params"])


def test_train_all_and_freezing_the_tied_token_embedding():
    model = small_bert(nsp_head=True)
    learning = select_trainable(model, "all", freeze_token_embedding=False)
    assert len(learning) == len(list(model.parameters())) and all(p.requires_grad for p in model.parameters())
    learning = select_trainable(model, "all", freeze_token_embedding=True)
    frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
    assert frozen == {"embedding.token_embedding.weight"}
    assert not model.lm_head.unembedding.weight.requires_grad  # one tensor, two uses: frozen in both
    assert model.lm_head.unembedding.bias.requires_grad  # the output bias is not tied
    assert _names(model, learning) == {name for name, p in model.named_parameters() if p.requires_grad}


HEADS = {"lm_head.mlp.weight", "lm_head.mlp.bias", "lm_head.layer_norm.weight", "lm_head.layer_norm.bias",
         "lm_head.unembedding.bias", "pooler.dense.weight", "pooler.dense.bias", "nsp_head.weight", "nsp_head.bias"}


def test_train_head_only_trains_the_heads_and_leaves_the_encoder_as_it_was():
    model = small_bert(nsp_head=True)
    learning = select_trainable(model, "head", freeze_token_embedding=False)
    assert _names(model, learning) == HEADS
    # The encoder, its (tied) token embedding included, must give the same hidden states after an update.
    ids = torch.tensor([[1, 10, 11, 12, 2]])
    types, mask = torch.zeros_like(ids), torch.ones_like(ids)
    model.eval()
    with torch.no_grad():
        before = model.encode(ids, types, mask)
    optimizer = make_optimizer(model, TrainConfig(train="head", learning_rate=1e-2, warmup_steps=0))
    labels = torch.full_like(ids, IGNORE)
    labels[0, 2] = 11
    batch = Batch(ids, types, mask, ids > 2, torch.tensor([0]))
    pretraining_loss(model, batch, ids, labels)["loss"].backward()
    optimizer.step()
    with torch.no_grad():
        assert torch.equal(model.encode(ids, types, mask), before)


def test_train_top_layers():
    model = small_bert()  # 2 layers, MLM head only
    learning = _names(model, select_trainable(model, "top:1", freeze_token_embedding=False))
    top = {n for n, _ in model.named_parameters() if n.startswith("transformer.1.")}
    assert top and learning == top | (HEADS & {n for n, _ in model.named_parameters()})
    assert not any(n.startswith(("transformer.0.", "embedding.")) for n in learning)
    everything = _names(model, select_trainable(model, "top:2", freeze_token_embedding=False))
    assert everything == {n for n, _ in model.named_parameters()} - {"embedding.token_embedding.weight", "embedding.position_embedding.weight",
                                                                     "embedding.token_type_embedding.weight", "embedding.layer_norm.weight", "embedding.layer_norm.bias"}


@pytest.mark.parametrize("what", ["top:3", "top:10", "top:x", "heads", "", "top:-1"])
def test_impossible_choices_are_errors(what):
    with pytest.raises(ValueError, match="train"):
        select_trainable(small_bert(), what, freeze_token_embedding=False)


def test_optimizer_holds_only_what_learns():
    model = small_bert(nsp_head=True)
    optimizer = make_optimizer(model, TrainConfig(train="top:1", freeze_token_embedding=True))
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    assert held == {id(p) for p in model.parameters() if p.requires_grad}
    assert id(model.embedding.token_embedding.weight) not in held
