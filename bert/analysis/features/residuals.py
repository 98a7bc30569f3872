"""The residual stream at one layer, computed only as far as that layer, and streamed over a text in batches.

`residual_at(model, i, ...)` is `hidden_states[i]` (0 = the embeddings, i = the output of layer i): the layers
above i are not run, which halves the cost of reading a middle layer.
"""
from __future__ import annotations

import itertools
import logging
from typing import Iterable, Iterator, Sequence

import torch

from ...devices import model_device
from ...errors import InvalidInputError
from ...model import Bert
from ...model_inputs import check_inputs
from ...tokenizer import BertTokenizer
from ..corpus.batching import pad

log = logging.getLogger(__name__)


@torch.no_grad()
def residual_at(model: Bert, layer: int, input_ids, token_type_ids, attention_mask=None) -> torch.Tensor:
    """hidden_states[layer]: [batch, seq, hidden]."""
    if not isinstance(layer, int) or not 0 <= layer <= model.config.num_layers:
        raise InvalidInputError(f"layer must be a whole number from 0 (embeddings) to {model.config.num_layers}, not {layer!r}")
    token_type_ids = check_inputs(model.config, input_ids, token_type_ids, attention_mask)
    if attention_mask is not None and bool(attention_mask.all()):
        attention_mask = None  # as Bert.encode: the fused attention kernel is faster without a mask
    x = model.embedding(input_ids, token_type_ids, attention_mask)
    relative = model.relative_input(x.shape[1])  # DeBERTa's relative positions; None in the other families
    for block in model.transformer[:layer]:
        x = block(x, attention_mask, relative)
    return x


@torch.no_grad()
def logits_above(model: Bert, layer: int, hidden: torch.Tensor, attention_mask=None, logit_mask=None) -> torch.Tensor:
    """The masked-LM logits from hidden_states[layer] on: the layers above it, then the MLM head (at `logit_mask`
    only, when given). With `residual_at`, one pass split in two, so that a change at the layer reruns only the
    layers above it."""
    if attention_mask is not None and bool(attention_mask.all()):
        attention_mask = None
    relative = model.relative_input(hidden.shape[1])
    for block in model.transformer[layer:]:
        hidden = block(hidden, attention_mask, relative)
    return model.mlm_logits(model.final_hidden(hidden), logit_mask)


def residual_stream(
    model: Bert, tokenizer: BertTokenizer, texts: Iterable[str], layer: int, special_tokens: bool = True,
    sentences_per_batch: int = 64, sort_window: int = 16,
) -> Iterator[torch.Tensor]:
    """[tokens, hidden] float32 per batch of `sentences_per_batch` sentences: every real token's vector at
    hidden_states[layer] ([CLS]/[SEP] only with special_tokens), padding left out. Within each window of
    `sort_window` batches the sentences are sorted by length (little padding), so the vectors come out of text
    order: shuffle them before training. Sentences too long for the model are cut to its length, with a warning."""
    device = model_device(model)
    texts = iter(texts)
    while window := list(itertools.islice(texts, sentences_per_batch * sort_window)):
        window.sort(key=len)
        for start in range(0, len(window), sentences_per_batch):
            yield _batch_residuals(model, tokenizer, window[start : start + sentences_per_batch], layer, special_tokens, device)


def _batch_residuals(model, tokenizer, texts: Sequence[str], layer: int, special_tokens: bool, device) -> torch.Tensor:
    encodings = [tokenizer.encode(text, max_length=model.config.max_position_embeddings, truncate=True) for text in texts]
    for encoding in encodings:
        if encoding.truncated:
            log.warning("a training sentence lost its last %d tokens (the model has %d positions)",
                        encoding.truncated, model.config.max_position_embeddings)
    input_ids, token_type_ids, attention_mask = pad(encodings, tokenizer.pad_id, device)
    hidden = residual_at(model, layer, input_ids, token_type_ids, attention_mask)
    keep = attention_mask.bool()
    if not special_tokens:
        keep &= ~torch.tensor([e.special + [True] * (input_ids.shape[1] - len(e)) for e in encodings], device=device)
    return hidden[keep].float()
