"""Hewitt & Manning's (2019) structural probes, trained with PyTorch on the model's device, every layer at once.

- distance probe: a rank-k linear map B (one per layer); the squared L2 distance ||B(h_i - h_j)||² is fit to the
  tree distance between words i and j with their L1 loss, summed over word pairs and divided by the squared
  sentence length, averaged over the sentences of a batch.
- depth probe: ||B h_i||² fit to word i's depth in the tree, L1 loss divided by the sentence length.

As in their code: B starts uniform in [-0.05, 0.05], Adam with learning rate 0.001, batches of sentences, and the
probe kept is the one with the lowest loss on held-out training sentences (here 10%, seeded). Each layer has its
own B; the layers train side by side in one tensor [layer, hidden, rank] (their losses are summed, so each B gets
exactly its own gradient; Adam's updates are per parameter), which is one pass over the data for all layers.

    probes = fit_structural_probes(features, seed=0)          # features: WordFeatures of the training sentences
    distances = probes.distances(test_features.sentence(0))    # [layer, word, word]
    depths = probes.depths(test_features.sentence(0))          # [layer, word]
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch

from ...errors import InvalidInputError
from .tree_metrics import tree_depths, tree_distances
from .word_features import WordFeatures

log = logging.getLogger(__name__)

PROBE_KINDS = ("distance", "depth")


@dataclass(frozen=True)
class StructuralProbeSettings:
    rank: int = 64  # k: B maps hidden -> rank (Hewitt & Manning: the scores level off around 64)
    epochs: int = 12  # passes over the training sentences (their code: up to 40, stopping early)
    batch_size: int = 32  # sentences per step (theirs: 20); a larger batch is fewer, larger steps
    learning_rate: float = 1e-3  # Adam
    dev_fraction: float = 0.1  # training sentences held out to pick each layer's best epoch


@dataclass(frozen=True)
class StructuralProbes:
    """Trained probes, per layer: distance maps and depth maps (None for a kind not trained)."""

    distance: torch.Tensor | None  # [layer, hidden, rank], on the CPU
    depth: torch.Tensor | None  # [layer, hidden, rank]
    settings: StructuralProbeSettings
    best_epochs: dict[str, list[int]]  # kind -> per layer, the epoch whose probe was kept (1-based)

    def distances(self, vectors: torch.Tensor) -> torch.Tensor:
        """[layer, word, word]: predicted squared distances for one sentence's [layer, word, hidden] vectors."""
        if self.distance is None:
            raise InvalidInputError("no distance probe was trained")
        projected = torch.einsum("lwh,lhr->lwr", vectors.float(), self.distance)
        return _squared_distances(projected)

    def depths(self, vectors: torch.Tensor) -> torch.Tensor:
        """[layer, word]: predicted squared norms (depths) for one sentence's [layer, word, hidden] vectors."""
        if self.depth is None:
            raise InvalidInputError("no depth probe was trained")
        return torch.einsum("lwh,lhr->lwr", vectors.float(), self.depth).pow(2).sum(-1)


def _squared_distances(projected: torch.Tensor) -> torch.Tensor:
    """[..., word, rank] -> [..., word, word] squared L2 distances, |p_i|² + |p_j|² - 2 p_i·p_j (memory of the
    result only, not of every difference vector), clamped at 0 against rounding."""
    norms = projected.pow(2).sum(-1)
    gram = projected @ projected.transpose(-1, -2)
    return (norms.unsqueeze(-1) + norms.unsqueeze(-2) - 2 * gram).clamp_min(0)


def fit_structural_probes(
    features: WordFeatures, kinds: tuple[str, ...] = PROBE_KINDS, settings: StructuralProbeSettings | None = None,
    seed: int = 0, device: torch.device | str | None = None,
) -> StructuralProbes:
    """Train the distance and/or depth probes of every layer on `features` (sentences with trees). device: where
    to train (pass the model's: `bert.devices.model_device(model)`); None = the CPU. Deterministic for a seed on
    the CPU."""
    return _fit(features, kinds, settings or StructuralProbeSettings(), seed, device)


def _fit(features: WordFeatures, kinds: tuple[str, ...], settings: StructuralProbeSettings, seed: int, device) -> StructuralProbes:
    unknown = set(kinds) - set(PROBE_KINDS)
    if unknown or not kinds:
        raise InvalidInputError(f"structural probe kinds must be among {PROBE_KINDS}, not {sorted(unknown) or kinds}")
    if any(s.heads is None for s in features.sentences):
        raise InvalidInputError("structural probes need a tree (heads) for every sentence")
    sentences = [i for i, s in enumerate(features.sentences) if len(s) > 1]  # one word: no distances to learn
    if len(sentences) < 2:
        raise InvalidInputError("structural probes need at least two sentences of two or more words")
    device = torch.device(device or "cpu")
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(sentences), generator=generator).tolist()
    held = max(1, round(settings.dev_fraction * len(sentences)))
    dev, train = [sentences[i] for i in order[:held]], [sentences[i] for i in order[held:]]
    layers, _, hidden = features.vectors.shape
    rank = min(settings.rank, hidden)
    maps = {k: (torch.rand(layers, hidden, rank, generator=generator) * 0.1 - 0.05).to(device).requires_grad_() for k in kinds}
    optimiser = torch.optim.Adam(list(maps.values()), lr=settings.learning_rate)
    train_batches = _batches(features, train, settings.batch_size, device)
    dev_batches = _batches(features, dev, 4 * settings.batch_size, device)
    best = {k: torch.full((layers,), float("inf")) for k in kinds}
    kept = {k: maps[k].detach().clone() for k in kinds}
    best_epochs = {k: [0] * layers for k in kinds}
    for epoch in range(1, settings.epochs + 1):
        for batch_index in torch.randperm(len(train_batches), generator=generator).tolist():
            optimiser.zero_grad()
            losses = _losses(maps, train_batches[batch_index])
            sum(loss.sum() for loss in losses.values()).backward()
            optimiser.step()
        with torch.no_grad():
            dev_loss = {k: torch.zeros(layers, device=device) for k in kinds}
            for batch in dev_batches:
                for k, loss in _losses(maps, batch).items():
                    dev_loss[k] += loss * batch.count
            for k in kinds:
                better = (dev_loss[k].cpu() / len(dev)) < best[k]
                best[k] = torch.where(better, dev_loss[k].cpu() / len(dev), best[k])
                kept[k][better] = maps[k].detach()[better]
                for layer in better.nonzero().flatten().tolist():
                    best_epochs[k][layer] = epoch
    log.info("structural probes: best epochs %s", best_epochs)
    return StructuralProbes(
        kept["distance"].cpu() if "distance" in kinds else None, kept["depth"].cpu() if "depth" in kinds else None,
        settings, best_epochs,
    )


@dataclass
class _Batch:
    vectors: torch.Tensor  # [layer, word, hidden]: the batch's words one after another (no padding)
    index: torch.Tensor  # [sentence, word] -> row of `vectors`; padding points at an extra row of zeros
    mask: torch.Tensor  # [sentence, word] True for real words
    lengths: torch.Tensor  # [sentence]
    distances: torch.Tensor  # [sentence, word, word] gold, 0 at padding
    depths: torch.Tensor  # [sentence, word] gold, 0 at padding
    count: int  # sentences


def _batches(features: WordFeatures, sentences: list[int], batch_size: int, device) -> list[_Batch]:
    """Batches of sentences of similar length (little padding), gold distances and depths beside them."""
    by_length = sorted(sentences, key=lambda i: len(features.sentences[i]))
    batches = []
    for start in range(0, len(by_length), batch_size):
        chosen = by_length[start : start + batch_size]
        longest = max(len(features.sentences[i]) for i in chosen)
        total = sum(len(features.sentences[i]) for i in chosen)
        index = torch.full((len(chosen), longest), total)
        distances = torch.zeros(len(chosen), longest, longest)
        depths = torch.zeros(len(chosen), longest)
        rows, offset = [], 0
        for row, sentence_index in enumerate(chosen):
            sentence = features.sentences[sentence_index]
            n = len(sentence)
            rows.append(torch.arange(features.starts[sentence_index], features.starts[sentence_index + 1]))
            index[row, :n] = torch.arange(offset, offset + n)
            offset += n
            distances[row, :n, :n] = torch.from_numpy(tree_distances(sentence.heads).astype(np.float32))
            depths[row, :n] = torch.from_numpy(tree_depths(sentence.heads).astype(np.float32))
        mask = index < total
        vectors = features.vectors[:, torch.cat(rows)].float()
        batches.append(_Batch(vectors.to(device), index.to(device), mask.to(device), mask.sum(1).float().to(device),
                              distances.to(device), depths.to(device), len(chosen)))
    return batches


def _losses(maps: dict[str, torch.Tensor], batch: _Batch) -> dict[str, torch.Tensor]:
    """Per kind, [layer]: Hewitt & Manning's L1 losses, averaged over the batch's sentences. One batched matrix
    product projects every word of every layer for both kinds."""
    kinds = list(maps)
    rank = maps[kinds[0]].shape[-1]
    projected = torch.bmm(batch.vectors, torch.cat([maps[k] for k in kinds], dim=-1))  # [layer, word, kinds x rank]
    projected = torch.cat([projected, projected.new_zeros(projected.shape[0], 1, projected.shape[-1])], dim=1)
    padded = projected[:, batch.index]  # [layer, sentence, word, kinds x rank]
    losses = {}
    for number, kind in enumerate(kinds):
        mine = padded[..., number * rank : (number + 1) * rank]
        if kind == "distance":
            predicted = _squared_distances(mine)  # [layer, sentence, word, word]
            pair_mask = (batch.mask[:, :, None] & batch.mask[:, None, :]).float()
            error = ((predicted - batch.distances) * pair_mask).abs().sum((-1, -2)) / batch.lengths.pow(2)
        else:
            predicted = mine.pow(2).sum(-1)  # [layer, sentence, word]
            error = ((predicted - batch.depths) * batch.mask.float()).abs().sum(-1) / batch.lengths
        losses[kind] = error.mean(-1)
    return losses
