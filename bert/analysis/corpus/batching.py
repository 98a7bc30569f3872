"""Running a model over many encodings: length-sorted, padded batches, and layer-by-layer hidden states.

Shared by the corpus-level analyses (probes, head statistics, mean head outputs for mean-ablation).
"""
from __future__ import annotations

from typing import Callable, Iterator, Sequence

import torch

from ...activation_cache import ActivationCache
from ...config import BertConfig
from ...costs import FLOAT_BYTES, Cost, pass_bytes
from ...devices import model_device
from ...hooks import every_layer, hook_name
from ...layers import residual_labels
from ...model import Bert
from ...tokenizer import Encoding


def record_encoder(model: Bert, input_ids, token_type_ids, attention_mask, hooks: list[str], stacked: Sequence[str] = ()) -> ActivationCache:
    """The encoder's activations at `hooks` (and the per-layer kinds in `stacked`, every layer, each recorded into
    one [layer, ...] tensor) for one batch; the masked-LM head is skipped (no logits asked for)."""
    no_logits = torch.zeros_like(input_ids, dtype=torch.bool)
    names = list(hooks) + [name for kind in stacked for name in every_layer(kind, model.config.num_layers)]
    _, cache = model.run_with_cache(input_ids, token_type_ids, attention_mask, names=names, logit_mask=no_logits)
    return cache


def residual_hooks(model: Bert) -> list[str]:
    """The residual stream after the embedding and after each layer: L + 1 hook names."""
    return [hook_name("embedding_out")] + every_layer("layer_out", model.config.num_layers)


def residual_names(model: Bert) -> list[str]:
    """The labels of the entries of `residual_hooks` (bert/layers.py): "embeddings", "after layer 0", ...,
    "after layer L-1"."""
    return residual_labels(model.config.num_layers)


def pad(encodings: Sequence[Encoding], pad_id: int, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, token_type_ids, attention_mask), each [batch, longest], padded on the right, on `device`."""
    longest = max(len(e) for e in encodings)
    input_ids = torch.full((len(encodings), longest), pad_id, dtype=torch.long, device="cpu")
    token_type_ids = torch.zeros((len(encodings), longest), dtype=torch.long, device="cpu")
    attention_mask = torch.zeros((len(encodings), longest), dtype=torch.long, device="cpu")
    for row, encoding in enumerate(encodings):
        n = len(encoding)
        input_ids[row, :n] = torch.tensor(encoding.input_ids, device="cpu")
        token_type_ids[row, :n] = torch.tensor(encoding.token_type_ids, device="cpu")
        attention_mask[row, :n] = 1
    return input_ids.to(device), token_type_ids.to(device), attention_mask.to(device)  # filled on the CPU, moved once


def batches(encodings: Sequence[Encoding], batch_size: int) -> Iterator[list[int]]:
    """Indices of `encodings` in batches of similar length (sorted by length: little padding)."""
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i]))
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def batches_cost(lengths: Sequence[int], batch_size: int = 32, lower: tuple[str, ...] = ("a smaller corpus",),
                 config: BertConfig | None = None, recorded_states: int = 0) -> Cost:
    """The passes `hook_batches` makes over encodings of these lengths: one per encoding, each padded to its
    batch's longest (batches sorted by length); tokens: the padded tokens per pass, rounded up. Its largest batch
    (the most padded tokens) is `rows_at_once` rows of that many tokens; with the model's `config`, the peak is
    priced for a pass that records `recorded_states` [row, seq, hidden] tensors per row and nothing else (the
    probes: every hidden state; no output head, the fused attention): the largest of the batches' `pass_bytes`
    (rows x their longest) and their recorded states."""
    if not lengths:
        return Cost(0, 0, lower)
    ordered = sorted(lengths)
    groups = [ordered[start : start + batch_size] for start in range(0, len(ordered), batch_size)]
    padded = [max(group) * len(group) for group in groups]
    tokens = -(-sum(padded) // len(ordered))
    peak = 0 if config is None else max(
        pass_bytes(config, max(group), len(group), head=False, fused=True) + recorded_states * len(group) * max(group) * config.hidden_size * FLOAT_BYTES
        for group in groups)
    rows = 0 if config is not None else -(-max(padded) // tokens)  # priced: none left out
    return Cost(len(ordered), tokens, lower, peak_bytes=peak, rows_at_once=rows)


ProgressCallback = Callable[[int, int], None]  # (encodings done, total), e.g. for a progress bar


@torch.no_grad()
def hook_batches(
    model: Bert,
    encodings: Sequence[Encoding],
    pad_id: int,
    hooks: list[str],
    batch_size: int = 32,
    progress: ProgressCallback | None = None,
    stacked: Sequence[str] = (),
) -> Iterator[tuple[list[int], ActivationCache]]:
    """Length-sorted batches through the model, on its device: (encoding indices, {hook: activation}).
    Rows past an encoding's length are padding."""
    device = model_device(model)
    done = 0
    for batch in batches(encodings, batch_size):
        input_ids, token_type_ids, attention_mask = pad([encodings[i] for i in batch], pad_id, device)
        yield batch, record_encoder(model, input_ids, token_type_ids, attention_mask, hooks, stacked)
        done += len(batch)
        if progress is not None:
            progress(done, len(encodings))


def residual_batches(
    model: Bert,
    encodings: Sequence[Encoding],
    pad_id: int,
    batch_size: int = 32,
    progress: ProgressCallback | None = None,
) -> Iterator[tuple[list[int], torch.Tensor]]:
    """`hook_batches` of the residual stream: (encoding indices, [layer + 1, batch, seq, hidden]), the
    embeddings first."""
    for batch, cache in hook_batches(model, encodings, pad_id, [hook_name("embedding_out")], batch_size, progress, ("layer_out",)):
        yield batch, cache.residual_stream()


def gather_residuals(
    model: Bert, encodings: Sequence[Encoding], picks: Sequence[tuple[int, int]], pad_id: int, batch_size: int = 32
) -> torch.Tensor:
    """The residual stream at chosen tokens, at every layer: [layer, pick, hidden] (layer 0 = embeddings),
    float32 on the CPU whatever the model's device and dtype (a corpus's worth of vectors, for the probes).

    picks: (encoding index, token position) pairs; the result's rows follow their order.
    """
    by_encoding: dict[int, list[tuple[int, int]]] = {}
    for row, (index, position) in enumerate(picks):
        by_encoding.setdefault(index, []).append((row, position))
    out = torch.empty(model.config.num_layers + 1, len(picks), model.config.hidden_size, device="cpu")
    wanted = [i for i in range(len(encodings)) if i in by_encoding]
    for batch, stacked in residual_batches(model, [encodings[i] for i in wanted], pad_id, batch_size):
        indices = [wanted[b] for b in batch]
        triples = [(row, batch_row, position) for batch_row, index in enumerate(indices) for row, position in by_encoding[index]]
        rows, batch_rows, positions = (list(column) for column in zip(*triples))
        out[:, rows] = stacked[:, batch_rows, positions].float().cpu()
    return out
