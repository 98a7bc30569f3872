"""Masked-LM corruption: choose 15% of the non-special tokens; of those 80% -> [MASK], 10% -> random, 10% kept
(Devlin et al. 2019, section 3.1). Choosing and replacing are two steps, so that other ways of choosing (whole
words; ALBERT's n-grams, ngram_masking.py) and of replacing (ELECTRA: all [MASK], electra.py) reuse them."""
from __future__ import annotations

import torch

IGNORE = -100  # label of positions the loss does not count


def mask_tokens(
    input_ids: torch.Tensor,
    maskable: torch.Tensor,
    mask_id: int,
    vocab_size: int,
    generator: torch.Generator,
    mask_probability: float = 0.15,
    word_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Returns (corrupted input_ids, labels) for a batch [batch, seq].

    maskable: bool [batch, seq], False for [CLS], [SEP], [PAD]: those are never chosen.
    word_ids: int [batch, seq] numbering words across the batch (-1 where not maskable): whole-word masking
    chooses words, not pieces, so "kroxldyphivc" is hidden in all its 7 pieces at once (as in Google's
    whole-word-masking BERT models, 2019).
    """
    chosen = choose_tokens(maskable, generator, mask_probability, word_ids)
    return corrupt(input_ids, chosen, mask_id, vocab_size, generator)


def corrupt(
    input_ids: torch.Tensor, chosen: torch.Tensor, mask_id: int, vocab_size: int, generator: torch.Generator, mask_share: float = 0.8
) -> tuple[torch.Tensor, torch.Tensor]:
    """(corrupted input_ids, labels): each chosen token becomes [MASK] with odds `mask_share` (BERT: 0.8), else a
    random token or itself, half and half; labels hold the original at chosen positions, IGNORE elsewhere."""
    labels = torch.where(chosen, input_ids, IGNORE)
    roll = torch.rand(input_ids.shape, generator=generator, device=generator.device)
    to_mask = chosen & (roll < mask_share)
    to_random = chosen & (roll >= mask_share) & (roll < (1 + mask_share) / 2)  # the rest stay as they are
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator, device=generator.device)
    corrupted = torch.where(to_mask, mask_id, torch.where(to_random, random_ids, input_ids))
    return corrupted, labels


def choose_tokens(maskable, generator, probability, word_ids=None) -> torch.Tensor:
    """bool [batch, seq]: each maskable token (or whole word, with word_ids) chosen with odds `probability`."""
    if word_ids is None:
        return maskable & (torch.rand(maskable.shape, generator=generator, device=generator.device) < probability)
    num_words = int(word_ids.max()) + 1
    word_chosen = torch.rand(num_words, generator=generator, device=generator.device) < probability
    return maskable & word_chosen[word_ids.clamp(min=0)]
