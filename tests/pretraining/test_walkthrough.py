"""The page's walkthrough of one example is what training does: the same masking draw as the trainer's step, the
paper's 15% and 80/10/10 over many draws, half true and half random sentence pairs, and the trainer's loss."""
from __future__ import annotations

import math

import pytest
import torch

import bert.pretraining.trainer as trainer
from bert import Bert
from bert.pretraining import walkthrough
from bert.pretraining.nsp import IS_NEXT, IS_RANDOM, SWAPPED
from bert.pretraining.trainer import PretrainingObjective, TrainConfig, make_optimizer, make_scheduler, train_step

from .helpers import tiny_config

TEXT = "The man went to the store. He bought a gallon of milk. Then he walked home in the rain."
LONG = " ".join(f"Sentence number {n} tells a short story about unbelievable kroxldyphivc adventures." for n in range(8))


def trainer_step(model: Bert, tokenizer, batch, config: TrainConfig, monkeypatch=None) -> tuple[dict, list]:
    """One real training step on `batch` (step 0); returns its losses and what trainer.corrupt (the masking's last step) returned."""
    drawn = []
    if monkeypatch is not None:
        real = trainer.corrupt
        monkeypatch.setattr(trainer, "corrupt", lambda *a, **k: drawn.append(real(*a, **k)) or drawn[-1])
    optimizer = make_optimizer(model, config)
    losses = train_step(PretrainingObjective(model, True), tokenizer, batch, optimizer, make_scheduler(optimizer, 1, 10), config, 0)
    return losses, drawn


def small_model(tokenizer, **heads) -> Bert:
    torch.manual_seed(0)
    config = tiny_config(tokenizer.vocab_size, max_position_embeddings=walkthrough.MAX_LENGTH, hidden_dropout=0.0,
                         attention_dropout=0.0)
    return Bert(config, **heads)


@pytest.mark.parametrize("whole_word", [False, True])
def test_the_pages_draw_is_the_trainers_draw(tokenizer, monkeypatch, whole_word):
    batch, _ = walkthrough.sentence_batch(tokenizer, LONG)
    for seed in (0, 1, 7, 1234):
        monkeypatch.undo()
        _, drawn = trainer_step(small_model(tokenizer), tokenizer, batch, TrainConfig(seed=seed, whole_word=whole_word), monkeypatch)
        (corrupted, labels), = drawn
        shown = walkthrough.mask_example(tokenizer, batch, seed, whole_word)
        assert shown.shown_ids == corrupted[0].tolist(), "the same replacements at the same positions"
        assert shown.labels == labels[0].tolist()
        assert shown.chosen, "a draw over ~100 pieces chooses some"


@pytest.mark.slow
def test_over_many_draws_15_percent_then_80_10_10(tokenizer):
    batch, _ = walkthrough.sentence_batch(tokenizer, LONG)
    maskable = int(batch.maskable.sum())
    draws = [walkthrough.mask_example(tokenizer, batch, seed) for seed in range(1500)]
    chosen = sum(len(d.chosen) for d in draws)
    tokens = maskable * len(draws)

    def within(count: int, total: int, p: float) -> bool:  # 4.5 binomial standard deviations
        return abs(count / total - p) < 4.5 * math.sqrt(p * (1 - p) / total)

    assert within(chosen, tokens, 0.15), chosen / tokens
    kinds = [kind for d in draws for kind in d.kinds if kind]
    # a random token equal to the original (1 in 30,522) counts as kept: far inside the bounds
    for kind, p in (("mask", 0.8), ("random", 0.1), ("kept", 0.1)):
        assert within(kinds.count(kind), chosen, p), (kind, kinds.count(kind) / chosen)
    assert all(d.kinds[0] is None and d.kinds[-1] is None for d in draws), "[CLS] and [SEP] are never chosen"


def test_labels_are_the_originals_at_chosen_positions_only(tokenizer):
    batch, _ = walkthrough.sentence_batch(tokenizer, TEXT)
    shown = walkthrough.mask_example(tokenizer, batch, 3)
    for token, label, kind in zip(shown.tokens, shown.labels, shown.kinds):
        assert (label == -100) == (kind is None)
        assert kind is None or tokenizer.id_to_token(label) == token


@pytest.mark.slow
def test_next_sentence_pairs_are_half_true_half_random(tokenizer):
    text = " ".join(f"This is sentence {n} of my little story." for n in range(10))
    own = {f"this is sentence {n} of my little story ." for n in range(10)}
    pairs = [pair for seed in range(150) for pair in walkthrough.sentence_pairs(tokenizer, text, seed)]
    assert len(pairs) == 150 * 9
    true = sum(pair.label == IS_NEXT for pair in pairs)
    assert abs(true / len(pairs) - 0.5) < 4.5 * math.sqrt(0.25 / len(pairs))
    for pair in pairs:
        sep = pair.tokens.index("[SEP]")
        first, second = " ".join(pair.tokens[1:sep]), " ".join(pair.tokens[sep + 1 : -1])
        assert pair.tokens[0] == "[CLS]" and pair.tokens[-1] == "[SEP]"
        assert pair.segment_ids == [0] * (sep + 1) + [1] * (len(pair.tokens) - sep - 1)
        assert first in own
        if pair.label == IS_NEXT:
            assert int(second.split()[3]) == int(first.split()[3]) + 1, "the true next sentence"
        else:
            assert pair.label == IS_RANDOM and second not in own, "a sentence from other text"


@pytest.mark.slow
def test_sentence_order_pairs_swap_half_of_them(tokenizer):
    text = " ".join(f"This is sentence {n} of my little story." for n in range(10))
    pairs = [pair for seed in range(100) for pair in walkthrough.sentence_pairs(tokenizer, text, seed, "sop")]
    swapped = [pair for pair in pairs if pair.label == SWAPPED]
    assert abs(len(swapped) / len(pairs) - 0.5) < 4.5 * math.sqrt(0.25 / len(pairs))
    for pair in swapped:
        sep = pair.tokens.index("[SEP]")
        assert int(pair.tokens[4]) == int(pair.tokens[sep + 4]) + 1, "B came first in the text"


def test_one_sentence_is_not_enough_for_pairs(tokenizer):
    with pytest.raises(Exception, match="at least two sentences"):
        walkthrough.sentence_pairs(tokenizer, "Only one sentence here.", 0)


def test_the_examples_loss_is_the_trainers_loss_for_that_batch(tokenizer):
    pair = walkthrough.sentence_pairs(tokenizer, TEXT, 5)[0]
    draws = [walkthrough.mask_example(tokenizer, pair.batch, seed) for seed in range(40)]
    for masked in [d for d in draws if d.chosen][:3]:  # a short pair may have nothing chosen: its masked-LM loss is 0
        seed = masked.seed
        shown = walkthrough.example_loss(small_model(tokenizer, nsp_head=True), pair, masked)
        losses, _ = trainer_step(small_model(tokenizer, nsp_head=True), tokenizer, pair.batch, TrainConfig(seed=seed))
        assert math.isclose(shown.total, losses["loss"], rel_tol=1e-5)
        assert math.isclose(shown.mlm, losses["mlm"], rel_tol=1e-5) and math.isclose(shown.nsp, losses["nsp"], rel_tol=1e-5)
        assert math.isclose(sum(shown.token_losses) / len(shown.token_losses), shown.mlm, rel_tol=1e-5)
        assert shown.positions == masked.chosen
