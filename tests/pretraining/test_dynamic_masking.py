"""RoBERTa's dynamic masking and full-sentence inputs (Liu et al. 2019, sections 4.1 and 4.2), through the
trainer's own masking (trainer.step_masks) and data (data.batches).

The rates are checked against the paper's (15% chosen; 80% [MASK], 10% random, 10% kept) with bounds that
scipy's binomial distribution gives for the sample's size, not hand-picked tolerances.
"""
from __future__ import annotations

import itertools

import pytest
import torch

from bert.pretraining.data import DataConfig, batches
from bert.pretraining.masking import IGNORE
from bert.pretraining.trainer import TrainConfig, step_masks

LINES = [f"sentence {n} tells of the {w} who walked along the river bank at dawn with a lantern and a small brown dog"
         for n, w in zip(range(40), itertools.cycle(["farmer", "teacher", "sailor", "baker"]))]
CONFIDENCE = 1 - 1e-6  # a correct masker falls outside the interval once in a million runs


def corpus(tmp_path, lines=LINES):
    path = tmp_path / "train.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def masks_by_sentence(path, tokenizer, config: TrainConfig, epoch: int) -> dict[tuple, tuple]:
    """{sentence's token ids: its labels} for one epoch, the step counted on from epoch 0 as training does."""
    data = DataConfig(max_length=64, batch_size=8)
    steps_per_epoch = sum(1 for _ in batches(path, tokenizer, data, config.seed, 0))
    seen = {}
    for step, batch in enumerate(batches(path, tokenizer, data, config.seed, epoch), start=epoch * steps_per_epoch):
        _, labels = step_masks(batch, tokenizer, config, step)
        for row in range(len(batch.input_ids)):
            length = int(batch.attention_mask[row].sum())
            seen[tuple(batch.input_ids[row, :length].tolist())] = tuple(labels[row, :length].tolist())
    return seen


def test_dynamic_masks_change_between_epochs_and_static_ones_do_not(tmp_path, tokenizer):
    path = corpus(tmp_path)
    dynamic = TrainConfig(seed=3)
    first, second = (masks_by_sentence(path, tokenizer, dynamic, epoch) for epoch in (0, 1))
    assert first.keys() == second.keys() and len(first) == len(LINES)
    assert all(first[s] != second[s] for s in first), "a sentence seen again kept its mask"
    assert masks_by_sentence(path, tokenizer, dynamic, 1) == second, "the same seed draws the same masks"
    static = TrainConfig(seed=3, static_masks=True)
    first, second = (masks_by_sentence(path, tokenizer, static, epoch) for epoch in (0, 1))
    assert first == second, "a static mask is drawn once per sequence"
    # yet each sequence has its own draw (two near-identical sentences may still happen to get the same one)
    assert len(set(first.values())) >= 0.9 * len(first), "static masks drawn once for all sequences"
    assert masks_by_sentence(path, tokenizer, TrainConfig(seed=4, static_masks=True), 0) != first, "and the seed changes them"


@pytest.mark.parametrize("static", [False, True])
def test_rates_hold_on_a_big_sample(static, tmp_path, tokenizer):
    from scipy import stats  # here: every test worker collects this module, and scipy.stats takes a second

    path = corpus(tmp_path, [f"{n} {line}" for n in range(60) for line in LINES[:10]])  # 600 different sentences
    config = TrainConfig(seed=0, static_masks=static)
    sample = list(batches(path, tokenizer, DataConfig(max_length=64, batch_size=8), 0, 0))
    epochs = 1 if static else 8  # static: one draw per sequence is all there is
    maskable = chosen = as_mask = as_random = kept = 0
    for step, batch in enumerate(sample * epochs):
        corrupted, labels = step_masks(batch, tokenizer, config, step)
        picked = labels != IGNORE
        assert not (picked & ~batch.maskable).any()
        maskable += int(batch.maskable.sum())
        chosen += int(picked.sum())
        as_mask += int((picked & (corrupted == tokenizer.mask_id)).sum())
        kept += int((picked & (corrupted == batch.input_ids)).sum())
        as_random += int((picked & (corrupted != tokenizer.mask_id) & (corrupted != batch.input_ids)).sum())
    assert chosen > 2000 * epochs
    coincidence = 1 / tokenizer.vocab_size  # a random token that happens to be the original counts as kept
    for count, total, rate in ((chosen, maskable, 0.15), (as_mask, chosen, 0.8), (as_random, chosen, 0.1 * (1 - coincidence)),
                               (kept, chosen, 0.1 + 0.1 * coincidence)):
        low, high = stats.binom.interval(CONFIDENCE, total, rate)
        assert low <= count <= high, f"{count} of {total} against a rate of {rate}: outside [{low}, {high}]"


def test_full_sentences_pack_consecutive_lines_without_pairs(tmp_path, tokenizer):
    documents = [LINES[:5], LINES[5:7], LINES[7:12]]
    path = tmp_path / "docs.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in documents) + "\n", encoding="utf-8")
    data = DataConfig(max_length=64, batch_size=4, full_sentences=True, chunk_lines=100)
    examples = [b.sequence(row) for b in batches(path, tokenizer, data, 0, 0) for row in range(len(b.input_ids))]
    assert all(e.nsp_labels is None and int(e.token_type_ids.abs().sum()) == 0 for e in examples)
    assert all(len(e.input_ids[0]) <= 64 for e in examples)
    line_ids = [tokenizer.encode_plain([line])[0] for line in LINES[:12]]
    assert max(len(ids) for ids in line_ids) * 2 + 3 <= 64, "the test needs two lines to fit in one example"
    packed = [e.input_ids[0].tolist() for e in examples]
    assert all(ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id for ids in packed)
    # Read back in the file's order, the examples hold every line once, a [SEP] wherever a document ends inside one.
    ordered = sorted(packed, key=lambda ids: next(i for i, line in enumerate(line_ids) if ids[1 : 1 + len(line)] == line))
    inside = [token for ids in ordered for token in ids[1:-1]]
    expected = []
    for doc_index, doc in enumerate(documents):
        for line in doc:
            expected += tokenizer.encode_plain([line])[0]
        expected.append(tokenizer.sep_id)
    unseparated = [t for t in inside if t != tokenizer.sep_id]
    assert unseparated == [t for t in expected if t != tokenizer.sep_id]
    assert len(packed) < 12, "lines are packed together, not one per example"
    assert any(tokenizer.sep_id in ids[1:-1] for ids in packed), "documents meet inside an example with a [SEP] between"


def test_full_sentences_refuse_sentence_pairs():
    from bert.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="no sentence pairs"):
        DataConfig(full_sentences=True, next_sentence=True)
