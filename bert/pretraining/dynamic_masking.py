"""Static against dynamic masking (Liu et al. 2019, RoBERTa, section 4.1).

BERT's data was masked once, when it was prepared: a sequence showed the same hidden tokens every time training
met it again (Devlin et al. 2019 duplicated the data ten times, so ten masks per sequence over 40 epochs).
RoBERTa draws the mask anew each time a sequence is fed to the model. The trainer masks dynamically by default:
each step draws from a generator seeded by (seed, step) (trainer.masking_generator), so the same sentence in the
next epoch gets a fresh draw. With TrainConfig(static_masks=True) it masks statically instead: each sequence from
a generator seeded by (seed, its tokens), the same draw whenever it comes back.
"""
from __future__ import annotations

import zlib
from typing import Callable

import torch

from .data import Batch
from .masking import IGNORE


def sequence_generator(seed: int, input_ids: torch.Tensor) -> torch.Generator:
    """The CPU generator that masks this one sequence (its token ids, no padding) in a run seeded `seed`: the
    same tokens, the same generator, at any step and in any batch."""
    digest = zlib.crc32(input_ids.detach().cpu().to(torch.int64).numpy().tobytes())
    return torch.Generator().manual_seed(seed * 1_000_003 + digest)


def static_masks(
    batch: Batch, seed: int, mask: Callable[[Batch, torch.Generator], tuple[torch.Tensor, torch.Tensor]]
) -> tuple[torch.Tensor, torch.Tensor]:
    """(corrupted, labels) for the batch, each row masked by `mask` (trainer.mask_batch) on its own, without its
    padding, with its own sequence_generator: a row's draw depends only on the row's tokens."""
    corrupted, labels = batch.input_ids.clone(), torch.full_like(batch.input_ids, IGNORE)
    for row in range(len(batch.input_ids)):
        alone, length = batch.sequence(row), int(batch.attention_mask[row].sum())
        corrupted[row, :length], labels[row, :length] = (t[0] for t in mask(alone, sequence_generator(seed, alone.input_ids[0])))
    return corrupted, labels
