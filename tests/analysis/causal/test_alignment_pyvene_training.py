"""A DAS run of ours against one trained by pyvene (Wu et al. 2024) on the same weights: pyvene's recipe (its
IntervenableModel around transformers' BertForMaskedLM, a LowRankRotatedSpaceIntervention of one dimension at the
subject's position of layer 0's output, Adam on the rotation alone with the model's gradients off, cross-entropy of
the intervened [MASK]'s two answers against the source's, as `train_rotation`'s loss), with the same pairs, starting
rotation, batches, steps and learning rate as `train_rotation` (bert/analysis/causal/alignment.py). pyvene's side is
bench/pyvene_das.py, which runs the same on the built-in model. Both rotations are scored by the same held-out
interchange intervention accuracy; they must land within 3 points. The two trainings differ only by float rounding,
which moves a pair or two across the answers' boundary: the held-out template has over 200 pairs (every letter of
the tiny vocabulary as the subject), so that a pair is under half a point."""
from __future__ import annotations

import importlib.util

import pytest
import torch

from bench.pyvene_das import pyvene_rotation, starting_rotation
from bert.analysis.causal.alignment import AlignmentSettings, train_rotation
from bert.analysis.causal.interchange import evaluate, interchange_accuracy, prepare_pairs, record_pairs
from bert.data.variable_pairs import VariablePair
from bert.hooks import hook_name

# pyvene (4 s to import) is imported where it is used, not when the tests are collected
pytestmark = pytest.mark.skipif(importlib.util.find_spec("pyvene") is None,
                                reason="pyvene is a test dependency (pyproject.toml's test extra)")

TEMPLATES = ["her {w} [MASK] to the mail .", "the {w} [MASK] to the park ."]  # 9 word pieces each: no padding; the
# two where the tiny random model's choice between the answers depends on the word
WORDS = list("abcdefghijklmnopqrstuvwxyz")
ANSWERS = ("to", "at")
SITE = (hook_name("layer_out", 0), "subject")
SETTINGS = AlignmentSettings(method="das", dims=1, steps=40, batch_size=8, learning_rate=0.01, seed=0)


def pairs_for(ours, tokenizer) -> list[VariablePair]:
    """Every ordered pair of two words in a template whose own preferences between the two answers differ (the
    base's answer first)."""
    ids = [tokenizer.token_to_id(word) for word in ANSWERS]
    pairs = []
    for t, template in enumerate(TEMPLATES):
        encodings = [tokenizer.encode(template.format(w=w)) for w in WORDS]
        at = tokenizer.mask_positions(encodings[0])[0]
        with torch.no_grad():
            logits = ours(torch.tensor([e.input_ids for e in encodings]))[:, at][:, ids]
        prefers = {w: ANSWERS[int(row.argmax())] for w, row in zip(WORDS, logits)}
        for a in WORDS:
            for b in WORDS:
                if prefers[a] != prefers[b]:
                    pairs.append(VariablePair(template.format(w=a), template.format(w=b), prefers[a], prefers[b], a, b,
                                              prefers[a], prefers[b], f"t{t}", a, b))
    return pairs


def test_a_das_run_lands_within_3_points_of_pyvenes(tiny_mlm_folder):
    import bert
    from transformers import BertForMaskedLM

    theirs = BertForMaskedLM.from_pretrained(tiny_mlm_folder).eval()
    ours, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    prepared, _ = prepare_pairs(tokenizer, pairs_for(ours, tokenizer), 64)
    held_out = max(p.pair.template for p in prepared)  # the last template with pairs
    train = [p for p in prepared if p.pair.template != held_out]
    test = [p for p in prepared if p.pair.template == held_out]
    assert len(train) >= 200 and len(test) >= 200
    _, train_source, _, _ = record_pairs(ours, tokenizer.pad_id, train, [SITE])
    _, test_source, _, _ = record_pairs(ours, tokenizer.pad_id, test, [SITE])
    ours_basis, _ = train_rotation(ours, tokenizer.pad_id, train, train_source[SITE], torch.ones(len(train), dtype=torch.bool),
                                   *SITE, SETTINGS)
    start = starting_rotation(ours.config.hidden_size, SETTINGS)
    theirs_basis = pyvene_rotation(theirs, 0, tokenizer.pad_id, train, start, SETTINGS, loss_over="answers")
    expected = torch.ones(len(test), dtype=torch.bool)
    scores = [interchange_accuracy(evaluate(ours, tokenizer.pad_id, test, *SITE, test_source[SITE], basis), expected)
              for basis in (start, ours_basis, theirs_basis)]
    assert max(scores[1:]) > scores[0] + 0.1  # training moved the answers: the comparison can fail
    assert abs(scores[1] - scores[2]) <= 0.03, scores
