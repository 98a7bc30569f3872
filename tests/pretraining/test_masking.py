"""Masked-LM corruption against the paper's numbers (Devlin et al. 2019): 15% chosen; of those 80% [MASK], 10% random, 10% kept.

The references are the published rates and binomial tolerances, not our own code: each draw of a 64x128 batch
has ~7,000 maskable tokens, so a few hundred draws pin a rate to well under half a percentage point.
"""
from __future__ import annotations

import torch

from bert.pretraining.data import collate, word_numbers
from bert.pretraining.masking import IGNORE, mask_tokens

CLS, SEP, PAD, MASK, VOCAB = 101, 102, 0, 103, 30522
DRAWS = 300


def synthetic_batch(rows: int = 64, seq: int = 128, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """[CLS] words [SEP] [PAD]...: ordinary ids (>= 1000, never special), lengths from 8 to seq."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, VOCAB, (rows, seq), generator=g)
    lengths = torch.randint(8, seq + 1, (rows,), generator=g)
    positions = torch.arange(seq)
    ids[:, 0] = CLS
    ids[positions >= lengths[:, None]] = PAD
    ids[torch.arange(rows), lengths - 1] = SEP
    maskable = (ids != CLS) & (ids != SEP) & (ids != PAD)
    return ids, maskable


def test_fifteen_percent_chosen_then_80_10_10():
    ids, maskable = synthetic_batch()
    generator = torch.Generator().manual_seed(1234)
    chosen = as_mask = as_random = kept = maskable_total = 0
    for _ in range(DRAWS):
        corrupted, labels = mask_tokens(ids, maskable, MASK, VOCAB, generator)
        picked = labels != IGNORE
        chosen += int(picked.sum())
        maskable_total += int(maskable.sum())
        as_mask += int((picked & (corrupted == MASK)).sum())
        kept += int((picked & (corrupted == ids)).sum())
        as_random += int((picked & (corrupted != MASK) & (corrupted != ids)).sum())
    assert abs(chosen / maskable_total - 0.15) < 0.002
    assert abs(as_mask / chosen - 0.80) < 0.004
    # A random replacement equals the original 1 time in 30522: "kept" is 10% plus that sliver.
    assert abs(as_random / chosen - 0.10) < 0.003
    assert abs(kept / chosen - 0.10) < 0.003


def test_special_tokens_never_chosen_and_labels_are_the_originals():
    ids, maskable = synthetic_batch()
    generator = torch.Generator().manual_seed(7)
    ever_chosen = torch.zeros_like(maskable)
    for _ in range(DRAWS):
        corrupted, labels = mask_tokens(ids, maskable, MASK, VOCAB, generator)
        picked = labels != IGNORE
        ever_chosen |= picked
        assert not (picked & ~maskable).any(), "a [CLS], [SEP] or [PAD] was chosen"
        assert torch.equal(corrupted[~picked], ids[~picked]), "a token that was not chosen was changed"
        assert torch.equal(labels[picked], ids[picked]), "a label is not the original token"
        assert (labels[~picked] == IGNORE).all()
    assert ever_chosen[maskable].float().mean() > 0.99  # and every ordinary position gets its turn


def test_random_replacements_spread_over_the_vocabulary():
    ids, maskable = synthetic_batch()
    generator = torch.Generator().manual_seed(3)
    replacements = []
    for _ in range(50):
        corrupted, labels = mask_tokens(ids, maskable, MASK, VOCAB, generator)
        swapped = (labels != IGNORE) & (corrupted != MASK) & (corrupted != ids)
        replacements.append(corrupted[swapped])
    replacements = torch.cat(replacements)
    assert replacements.min() >= 0 and replacements.max() < VOCAB
    # Uniform over 30522 ids: the mean id is near the middle, and almost all of ~30k draws are distinct.
    assert abs(replacements.float().mean() / VOCAB - 0.5) < 0.02
    assert replacements.unique().numel() > 0.5 * replacements.numel()


def test_masks_change_from_draw_to_draw_and_repeat_with_the_seed():
    ids, maskable = synthetic_batch()
    first = mask_tokens(ids, maskable, MASK, VOCAB, torch.Generator().manual_seed(5))
    again = mask_tokens(ids, maskable, MASK, VOCAB, torch.Generator().manual_seed(5))
    other = mask_tokens(ids, maskable, MASK, VOCAB, torch.Generator().manual_seed(6))
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    both = ((first[1] != IGNORE) & (other[1] != IGNORE)).sum() / (first[1] != IGNORE).sum()
    assert abs(float(both) - 0.15) < 0.03  # independent draws overlap by chance only


def test_mask_probability_is_honoured():
    ids, maskable = synthetic_batch()
    generator = torch.Generator().manual_seed(11)
    _, labels = mask_tokens(ids, maskable, MASK, VOCAB, generator, mask_probability=0.4)
    assert abs(float((labels != IGNORE).sum() / maskable.sum()) - 0.4) < 0.03


# --- whole-word masking, on real WordPiece splits -------------------------------------------------------------

SENTENCES = [
    "the kroxldyphivc unbelievably outmanoeuvred the photosynthesizing hippopotamus",
    "electroencephalography is not an everyday word, but walking the dog is",
    "she said: don't overthink the antidisestablishmentarianism chapter!",
    "unhappily, the quarterbacks rescheduled their reconnaissance",
    "a cat sat on the mat",
]


def word_batch(tokenizer, copies: int = 12):
    """The sentences, encoded, and for every token the (row, word) it belongs to per the `tokenizers` word ids."""
    examples, owners = [], []
    for row, text in enumerate(SENTENCES * copies):
        encoding = tokenizer.encode(text)
        examples.append((encoding.input_ids, encoding.token_type_ids, -1))
        owners.append([None if w is None else (row, w) for w in encoding.word_ids])
    return collate(examples, tokenizer), owners


def test_word_numbers_group_exactly_the_pieces_of_each_word(tokenizer):
    batch, owners = word_batch(tokenizer, copies=1)
    numbers = word_numbers(batch.input_ids, batch.maskable, tokenizer)
    seen: dict[tuple[int, int], int] = {}
    for row, row_owners in enumerate(owners):
        for position, owner in enumerate(row_owners):
            number = int(numbers[row, position])
            if owner is None:
                assert number == -1
                continue
            assert seen.setdefault(owner, number) == number, f"the pieces of word {owner} got different numbers"
    assert len(set(seen.values())) == len(seen), "two words share a number"
    assert (numbers[~batch.maskable] == -1).all()
    assert any(tokenizer.subwords("kroxldyphivc")[1:]), "the test needs words of several pieces"


def test_whole_word_masking_chooses_whole_words_at_fifteen_percent(tokenizer):
    batch, owners = word_batch(tokenizer)
    words = word_numbers(batch.input_ids, batch.maskable, tokenizer)
    pieces_of: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for row, row_owners in enumerate(owners):
        for position, owner in enumerate(row_owners):
            if owner is not None:
                pieces_of.setdefault(owner, []).append((row, position))
    multi_piece = [p for p in pieces_of.values() if len(p) > 1]
    assert len(multi_piece) > 50
    generator = torch.Generator().manual_seed(99)
    words_chosen = tokens_chosen = as_mask = 0
    for _ in range(DRAWS):
        corrupted, labels = mask_tokens(batch.input_ids, batch.maskable, tokenizer.mask_id, tokenizer.vocab_size, generator, word_ids=words)
        picked = labels != IGNORE
        picked_rows = picked.tolist()
        for pieces in pieces_of.values():
            states = {picked_rows[row][position] for row, position in pieces}
            assert len(states) == 1, "a word was only partly chosen"
            words_chosen += states.pop()
        tokens_chosen += int(picked.sum())
        as_mask += int((picked & (corrupted == tokenizer.mask_id)).sum())
        assert not (picked & ~batch.maskable).any()
        assert torch.equal(labels[picked], batch.input_ids[picked])
    assert abs(words_chosen / (DRAWS * len(pieces_of)) - 0.15) < 0.006
    assert abs(as_mask / tokens_chosen - 0.80) < 0.01
