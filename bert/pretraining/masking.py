"""Masked-LM corruption: choose 15% of the non-special tokens; of those 80% -> [MASK], 10% -> random, 10% kept."""
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
    chosen = _choose(maskable, generator, mask_probability, word_ids)
    labels = torch.where(chosen, input_ids, IGNORE)
    roll = torch.rand(input_ids.shape, generator=generator, device=generator.device)
    to_mask = chosen & (roll < 0.8)
    to_random = chosen & (roll >= 0.8) & (roll < 0.9)  # the last 10% stay as they are
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator, device=generator.device)
    corrupted = torch.where(to_mask, mask_id, torch.where(to_random, random_ids, input_ids))
    return corrupted, labels


def _choose(maskable, generator, probability, word_ids) -> torch.Tensor:
    if word_ids is None:
        return maskable & (torch.rand(maskable.shape, generator=generator, device=generator.device) < probability)
    num_words = int(word_ids.max()) + 1
    word_chosen = torch.rand(num_words, generator=generator, device=generator.device) < probability
    return maskable & word_chosen[word_ids.clamp(min=0)]
