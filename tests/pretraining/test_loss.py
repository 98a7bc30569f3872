"""pretraining_loss against cross-entropy written out by hand: -log softmax at the labelled positions, averaged,
plus the NSP term."""
from __future__ import annotations

import math

import torch

from bert.pretraining.data import Batch
from bert.pretraining.masking import IGNORE
from bert.pretraining.trainer import pretraining_loss

from .helpers import small_bert

VOCAB, MASK = 40, 4


def handmade_batch():
    input_ids = torch.tensor([[1, 10, 11, 12, 13, 2, 0], [1, 20, 21, 2, 22, 23, 2]])  # [CLS]=1, [SEP]=2, [PAD]=0
    token_type_ids = torch.tensor([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1]])
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1]])
    maskable = attention_mask.bool() & (input_ids > 2)
    batch = Batch(input_ids, token_type_ids, attention_mask, maskable, nsp_labels=torch.tensor([0, 1]))
    corrupted = input_ids.clone()
    corrupted[0, 2] = MASK  # chosen and masked
    corrupted[1, 4] = 30  # chosen and replaced at random
    labels = torch.full_like(input_ids, IGNORE)
    labels[0, 2], labels[1, 4], labels[1, 1] = 11, 22, 20  # (1, 1) chosen and kept as it is
    return batch, corrupted, labels


def negative_log_softmax(logits: list[float], target: int) -> float:
    """-log(exp(x_t) / sum_j exp(x_j)), with the max subtracted for stability, in Python floats."""
    top = max(logits)
    return -(logits[target] - top - math.log(sum(math.exp(x - top) for x in logits)))


def test_loss_equals_cross_entropy_by_hand():
    model = small_bert(VOCAB, nsp_head=True).eval()  # eval: no dropout, so two forward passes agree
    batch, corrupted, labels = handmade_batch()
    losses = pretraining_loss(model, batch, corrupted, labels)
    with torch.no_grad():
        hidden = model.encode(corrupted, batch.token_type_ids, batch.attention_mask)
        logits = model.lm_head(hidden).double().tolist()  # [batch, seq, vocab], every position
        nsp_logits = model.nsp_head(torch.tanh(model.pooler.dense(hidden[:, 0]))).double().tolist()
    labelled = [(0, 2), (1, 1), (1, 4)]
    mlm = sum(negative_log_softmax(logits[b][s], int(labels[b, s])) for b, s in labelled) / len(labelled)
    nsp = sum(negative_log_softmax(nsp_logits[b], int(batch.nsp_labels[b])) for b in range(2)) / 2
    assert math.isclose(losses["mlm"].item(), mlm, rel_tol=1e-5)
    assert math.isclose(losses["nsp"].item(), nsp, rel_tol=1e-5)
    assert math.isclose(losses["loss"].item(), mlm + nsp, rel_tol=1e-5)


def test_uniform_predictions_cost_log_vocab_plus_log_two():
    """With the unembedding and NSP weights at zero every logit is 0: the loss is ln 40 + ln 2 exactly."""
    model = small_bert(VOCAB, nsp_head=True).eval()
    with torch.no_grad():
        model.lm_head.unembedding.weight.zero_()  # tied: the token embedding is zero too; that does not matter here
        model.lm_head.unembedding.bias.zero_()
        model.nsp_head.weight.zero_()
        model.nsp_head.bias.zero_()
    batch, corrupted, labels = handmade_batch()
    losses = pretraining_loss(model, batch, corrupted, labels)
    assert math.isclose(losses["mlm"].item(), math.log(40), rel_tol=1e-6)
    assert math.isclose(losses["nsp"].item(), math.log(2), rel_tol=1e-6)
    assert math.isclose(losses["loss"].item(), math.log(80), rel_tol=1e-6)


def test_only_labelled_positions_count():
    model = small_bert(VOCAB).eval()
    batch, corrupted, labels = handmade_batch()
    batch.nsp_labels = None
    before = pretraining_loss(model, batch, corrupted, labels)["mlm"].item()
    # What an unlabelled position holds changes the context, not the terms: the loss moves, but keeps three terms.
    labels_one = torch.full_like(labels, IGNORE)
    labels_one[0, 2] = 11
    with torch.no_grad():
        logits = model(corrupted, batch.token_type_ids, batch.attention_mask).double().tolist()
    alone = pretraining_loss(model, batch, corrupted, labels_one)["mlm"].item()
    assert math.isclose(alone, negative_log_softmax(logits[0][2], 11), rel_tol=1e-5)
    assert not math.isclose(alone, before, rel_tol=1e-3)
    assert set(pretraining_loss(model, batch, corrupted, labels)) == {"mlm", "loss"}  # no NSP term without pairs


def test_a_batch_with_nothing_chosen_costs_zero_not_nan():
    """Short lines and small batches can draw no position at all (0.85**n); that step must not log NaN."""
    model = small_bert(VOCAB).train()
    batch, corrupted, _ = handmade_batch()
    batch.nsp_labels = None
    losses = pretraining_loss(model, batch, corrupted, torch.full_like(corrupted, IGNORE))
    assert losses["loss"].item() == 0.0
    losses["loss"].backward()  # still a graph: the training step goes on, with zero gradients
    assert all(p.grad is None or not p.grad.isnan().any() for p in model.parameters())
