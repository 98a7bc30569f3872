"""One streaming pass that serves every unit of a layer: the top-k tokens of each unit and its histogram.

    tracker = TopTracker(units=1536, k=20, bin_edges=np.linspace(-0.2, 6.0, 63))
    for rows, activations in batches:          # rows: LongTensor[n], activations: [n, unit]
        tracker.add(rows, activations)
    scan = tracker.result()                    # UnitScan: top_values [unit, k], top_rows [unit, k], counts, means

Memory stays at k x units plus the histograms, whatever the corpus's size: no unit is ever re-run.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...errors import InvalidInputError


@dataclass(frozen=True)
class UnitScan:
    """Every unit of one layer over a corpus. Rows are the corpus's flat token rows (corpora.Corpus)."""

    top_values: np.ndarray  # [unit, k] float32, largest first
    top_rows: np.ndarray  # [unit, k] int64, the row of each (-1 where the corpus had fewer than k rows)
    bin_edges: np.ndarray  # [bins + 1]: values below the first edge count in the first bin, above the last in the last
    counts: np.ndarray  # [unit, bins] int64
    means: np.ndarray  # [unit] float64: the mean activation over every counted row
    active: np.ndarray  # [unit] int64: rows where the unit is above zero
    num_rows: int  # rows seen
    active_only: bool = False  # counts (and means) only over rows where the unit is above zero

    @property
    def num_units(self) -> int:
        return self.top_values.shape[0]


class TopTracker:
    """Running top-k per unit and per-unit histograms over shared bin edges."""

    def __init__(self, units: int, k: int, bin_edges, active_only: bool = False):
        if not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive whole number, not {k!r}")
        edges = torch.as_tensor(np.asarray(bin_edges, dtype=np.float32))
        if edges.dim() != 1 or len(edges) < 2 or bool((edges[1:] <= edges[:-1]).any()):
            raise InvalidInputError("bin_edges must be at least two increasing numbers")
        self.units, self.k, self.edges, self.active_only = units, k, edges, active_only
        self.values = torch.full((k, units), -torch.inf)  # [k, unit]
        self.rows = torch.full((k, units), -1, dtype=torch.long)
        self.counts = torch.zeros(units * (len(edges) - 1), dtype=torch.long)
        self.sums = torch.zeros(units, dtype=torch.float64)
        self.active = torch.zeros(units, dtype=torch.long)
        self.num_rows = 0

    @torch.no_grad()
    def add(self, rows: torch.Tensor, activations: torch.Tensor) -> None:
        """rows: LongTensor[n], the flat rows of `activations` ([n, unit], any device and float dtype)."""
        activations = activations.detach().float().cpu()
        if activations.dim() != 2 or activations.shape[1] != self.units or activations.shape[0] != len(rows):
            raise InvalidInputError(f"activations must be [{len(rows)}, {self.units}], not {tuple(activations.shape)}")
        rows = rows.cpu()
        values = torch.cat([self.values, activations])  # [k + n, unit]
        self.values, picked = values.topk(self.k, dim=0)  # rows not yet filled stay at -inf, row -1
        kept = picked < self.k  # [k, unit]: a row kept from before, else row picked - k of this batch
        self.rows = torch.where(kept, self.rows.gather(0, picked.clamp(max=self.k - 1)), rows[(picked - self.k).clamp(min=0)])
        bins = len(self.edges) - 1
        positive = activations > 0
        if self.active_only:  # only the entries where a unit fires (an SAE's few per row): no dense [n, unit] work
            unit = positive.nonzero()[:, 1]  # row-major, as activations[positive] lists them
            fired = activations[positive]
            flat = torch.bucketize(fired, self.edges[1:-1], right=True) + unit * bins
            self.sums.index_add_(0, unit, fired.double())
        else:
            bucket = torch.bucketize(activations, self.edges[1:-1], right=True)  # [n, unit] in 0 .. bins - 1
            flat = (bucket + torch.arange(self.units) * bins).flatten()
            self.sums += activations.sum(0, dtype=torch.float64)
        self.counts += torch.bincount(flat, minlength=self.units * bins)
        self.active += positive.sum(0)
        self.num_rows += len(rows)

    def result(self) -> UnitScan:
        bins = len(self.edges) - 1
        counts = self.counts.view(self.units, bins).numpy()
        denominators = counts.sum(1) if self.active_only else np.full(self.units, self.num_rows)
        means = self.sums.numpy() / np.maximum(denominators, 1)
        values = self.values.T.numpy().copy()
        return UnitScan(values, self.rows.T.numpy().copy(), self.edges.numpy(), counts, means, self.active.numpy(),
                        self.num_rows, self.active_only)
