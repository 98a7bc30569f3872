"""Running a model over many encodings: length-sorted, padded batches, and layer-by-layer hidden states.

Shared by the corpus-level analyses (probes, head statistics, mean head outputs for mean-ablation).
"""
from __future__ import annotations

from typing import Iterator, Sequence

import torch

from ..hooks import every_layer, hook_name
from ..model import Bert
from ..tokenizer import Encoding


def residual_hooks(model: Bert) -> list[str]:
    """The residual stream after the embedding and after each layer: L + 1 hook names."""
    return [hook_name("embedding_out")] + every_layer("layer_out", model.config.num_layers)


def layer_names(model: Bert) -> list[str]:
    """Display names for the entries of `residual_hooks`: "embeddings", "layer 1", ..., "layer L"."""
    return ["embeddings"] + [f"layer {i + 1}" for i in range(model.config.num_layers)]


def pad(encodings: Sequence[Encoding], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, token_type_ids, attention_mask), each [batch, longest], padded on the right."""
    longest = max(len(e) for e in encodings)
    input_ids = torch.full((len(encodings), longest), pad_id, dtype=torch.long)
    token_type_ids = torch.zeros((len(encodings), longest), dtype=torch.long)
    attention_mask = torch.zeros((len(encodings), longest), dtype=torch.long)
    for row, encoding in enumerate(encodings):
        n = len(encoding)
        input_ids[row, :n] = torch.tensor(encoding.input_ids)
        token_type_ids[row, :n] = torch.tensor(encoding.token_type_ids)
        attention_mask[row, :n] = 1
    return input_ids, token_type_ids, attention_mask


def batches(encodings: Sequence[Encoding], batch_size: int) -> Iterator[list[int]]:
    """Indices of `encodings` in batches of similar length (sorted by length: little padding)."""
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i]))
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


@torch.no_grad()
def gather_residuals(
    model: Bert, encodings: Sequence[Encoding], picks: Sequence[tuple[int, int]], pad_id: int, batch_size: int = 32
) -> torch.Tensor:
    """The residual stream at chosen tokens, at every layer: [layer, pick, hidden] (layer 0 = embeddings).

    picks: (encoding index, token position) pairs; the result's rows follow their order.
    """
    hooks = residual_hooks(model)
    by_encoding: dict[int, list[tuple[int, int]]] = {}
    for row, (index, position) in enumerate(picks):
        by_encoding.setdefault(index, []).append((row, position))
    out = torch.empty(len(hooks), len(picks), model.config.hidden_size)
    wanted = [i for i in range(len(encodings)) if i in by_encoding]
    for batch in batches([encodings[i] for i in wanted], batch_size):
        indices = [wanted[b] for b in batch]
        input_ids, token_type_ids, attention_mask = pad([encodings[i] for i in indices], pad_id)
        _, cache = model.run_with_cache(input_ids, token_type_ids, attention_mask, names=hooks)
        stacked = torch.stack([cache[h] for h in hooks])  # [layer, batch, seq, hidden]
        triples = [(row, batch_row, position) for batch_row, index in enumerate(indices) for row, position in by_encoding[index]]
        rows, batch_rows, positions = (list(column) for column in zip(*triples))
        out[:, rows] = stacked[:, batch_rows, positions]
    return out
