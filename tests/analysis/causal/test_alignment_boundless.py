"""Boundless DAS (Wu et al. 2023) finds the size of a planted variable: a one-layer BERT whose weights are set by hand
so that a variable of k parts lives in a known k-dimensional subspace of the embedding output, and the [MASK]'s answer
needs every part swapped (bert/analysis/causal/alignment.py, `train_rotation` with method "boundless").

The planted model (hidden 8, every LayerNorm the identity on the vectors it sees):
- the variable's words: word "low i" and "high i" differ only along u_i = (e_i - e_{3+i}) / sqrt(2), by 2 sqrt(2)
  (i < k); every token's other coordinates are a fixed zero-mean filler, so LayerNorm leaves them as they are;
- attention is uniform (zero queries and keys); its values read the coordinates along u_0..u_2 only, and its output
  writes them back along the same directions, at every position, the [MASK]'s included; the MLP adds nothing;
- no masked-LM transform (`lm_transform=False`): the [MASK]'s logits are the tied embedding times its vector, the
  answers "2i" and "2i+1" reading -u_i and +u_i, with a decoder bias that puts the boundary at 90% of the way from
  the low word to the high one.
A pair swaps word "low i" for "high i" (part i of the variable); the intervened base answers as the source only if
the swapped subspace holds at least 90% of u_i. Each part is one direction, so a subspace of k - 1 dimensions
can carry at most k - 1 of them: the smallest subspace that moves every pair is the planted k-dimensional one.
"""
from __future__ import annotations

import math

import pytest
import torch

from bert.analysis.causal.alignment import AlignmentSettings, train_rotation
from bert.analysis.causal.interchange import evaluate, interchange_accuracy, prepare_pairs, record_pairs
from bert.config import BertConfig
from bert.data.variable_pairs import VariablePair
from bert.hooks import hook_name
from bert.model import Bert
from bert.tokenizer import BertTokenizer
from bert_test_support import TINY_VOCAB

PARTS, HIDDEN = 3, 8  # at most 3 planted directions, their negated copies (zero mean), 2 filler coordinates
THRESHOLD = 0.9  # the share of the way from the low word to the high one at which the answer changes
SITE = (hook_name("embedding_out"), "differs")
LETTERS = "abcdef"  # word "low i" is LETTERS[2i], "high i" LETTERS[2i + 1]


def planted_model(k: int) -> tuple[Bert, torch.Tensor, list[tuple[int, int]]]:
    """(the model, u [PARTS, hidden], the answers' (low, high) ids), its decoder bias not yet set."""
    config = BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=HIDDEN, num_layers=1, num_heads=1, intermediate_size=4,
                        max_position_embeddings=16, lm_transform=False, hidden_dropout=0.0, attention_dropout=0.0)
    model = Bert(config).eval()
    u = torch.zeros(PARTS, HIDDEN)
    for i in range(PARTS):
        u[i, i], u[i, PARTS + i] = 1 / math.sqrt(2), -1 / math.sqrt(2)
    filler = torch.zeros(HIDDEN)
    filler[2 * PARTS:] = torch.tensor([1.0, -1.0])
    answers = [(TINY_VOCAB.index(str(2 * i)), TINY_VOCAB.index(str(2 * i + 1))) for i in range(k)]
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.fill_(1.0 if name.endswith("layer_norm.weight") else 0.0)
        embedding = model.embedding.token_embedding.weight
        embedding[:] = filler * math.sqrt(HIDDEN / 2)  # zero mean, variance 1: LayerNorm leaves it
        for i in range(k):
            for letter, sign in ((LETTERS[2 * i], -1.0), (LETTERS[2 * i + 1], 1.0)):
                embedding[TINY_VOCAB.index(letter)] = filler * math.sqrt((HIDDEN - 2) / 2) + sign * math.sqrt(2) * u[i]
        attention = model.transformer[0].attention
        attention.attention.project_value.weight[:PARTS] = u  # value i: the coordinate along u_i
        attention.mlp.weight[:, :PARTS] = 0.5 * math.sqrt(2) * u.T  # written back along u_i
        for i, (low, high) in enumerate(answers):
            embedding[low], embedding[high] = -10 * u[i], 10 * u[i]
    return model, u, answers


def planted_pairs(k: int) -> list[VariablePair]:
    return [VariablePair(f"{LETTERS[2 * i]} [MASK] .", f"{LETTERS[2 * i + 1]} [MASK] .", str(2 * i), str(2 * i + 1))
            for i in range(k)]


def calibrated(k: int, tokenizer: BertTokenizer):
    """The planted model with its decoder bias set so that each pair's two answers tie at THRESHOLD of the way from
    the base's vector to the source's; its prepared pairs and their source vectors at the site."""
    model, u, answers = planted_model(k)
    pairs, _ = prepare_pairs(tokenizer, planted_pairs(k), 16)
    base, source, base_logits, source_logits = record_pairs(model, tokenizer.pad_id, pairs, [SITE])
    between = base[SITE] + THRESHOLD * (source[SITE] - base[SITE])
    at_threshold = evaluate(model, tokenizer.pad_id, pairs, *SITE, between, None)
    with torch.no_grad():
        for (low, high), (low_logit, high_logit) in zip(answers, at_threshold):
            model.lm_head.unembedding.bias[low] += float(high_logit - low_logit) / 2
            model.lm_head.unembedding.bias[high] -= float(high_logit - low_logit) / 2
    return model, u, pairs, source[SITE]


@pytest.fixture(scope="module")
def tokenizer(tiny_vocab_file):
    return BertTokenizer.from_vocab(tiny_vocab_file)


def swapped_accuracy(model, tokenizer, pairs, source, basis) -> float:
    logits = evaluate(model, tokenizer.pad_id, pairs, *SITE, source, basis)
    return interchange_accuracy(logits, torch.ones(len(pairs), dtype=torch.bool))


@pytest.mark.parametrize("k", [2, 3])
def test_the_planted_model_needs_every_part(tokenizer, k):
    """Its own check: each sentence gives its answer; the planted subspace moves every pair, all of it but one part
    leaves that part's pair at the base's answer, and 85% of the way is not enough."""
    model, u, pairs, source = calibrated(k, tokenizer)
    _, _, base_logits, source_logits = record_pairs(model, tokenizer.pad_id, pairs, [SITE])
    assert (base_logits[:, 0] > base_logits[:, 1]).all() and (source_logits[:, 1] > source_logits[:, 0]).all()
    assert swapped_accuracy(model, tokenizer, pairs, source, u[:k].T) == 1
    assert swapped_accuracy(model, tokenizer, pairs, source, u[: k - 1].T) == pytest.approx((k - 1) / k)
    assert swapped_accuracy(model, tokenizer, pairs, source, u[:k].T * math.sqrt(0.85)) == 0  # 85% of each difference


@pytest.mark.parametrize("k", [2, 3])
def test_boundless_das_learns_the_planted_size(tokenizer, k):
    """The learned boundary lands at k, the learned subspace holds the planted one (each u_i at least 95% inside it)
    and its swap moves every pair. Temperatures from 2 to 0.1: the boundary's in coordinates, for 8 of them."""
    model, u, pairs, source = calibrated(k, tokenizer)
    settings = AlignmentSettings(method="boundless", steps=150, batch_size=16, temperatures=(2.0, 0.1))
    basis, dims = train_rotation(model, tokenizer.pad_id, pairs, source, torch.ones(len(pairs), dtype=torch.bool), *SITE,
                                 settings)
    assert dims == k and basis.shape == (HIDDEN, k)
    assert ((u[:k] @ basis).norm(dim=1) ** 2 > 0.95).all()
    assert swapped_accuracy(model, tokenizer, pairs, source, basis) == 1
