"""The transcoders' model card, on text they never saw (as the SAE's, bert/analysis/features/sae_measures.py):

- per layer: variance_explained = 1 − Σ|y − y^|² / Σ|y − mean y|² of the MLP's output y; error_vs_zero =
  Σ|y − y^|² / Σ|y|² (the zero baseline, an MLP that writes nothing, scores 1); l0 (features active per token);
  dead_share (features that never fire on this text);
- masked-LM loss and top-1 agreement with the intact model when every MLP is replaced by its transcoder (no error
  terms: the replacement model), against every MLP zero-ablated, on a seeded 15% of each sentence's word pieces
  masked; loss_recovered = (zero − replaced) / (zero − intact).
"""
from __future__ import annotations

import torch

from ...devices import model_device
from ...interventions import zero
from ...model import Bert
from ...tokenizer import BertTokenizer
from ..corpus.batching import batches
from ..features.corpora import Corpus
from ..features.sae_measures import masked_lm_with
from .transcoder import Transcoders, splice_all
from .transcoder_train import mlp_pairs


@torch.no_grad()
def measure_transcoders(model: Bert, tokenizer: BertTokenizer, transcoders: Transcoders, corpus: Corpus,
                        mask_fraction: float = 0.15, seed: int = 0, batch_size: int = 32) -> dict:
    """The held-out figures as a JSON-ready dict."""
    figures = {"data": corpus.name, "sentences": len(corpus), "layers": _reconstruction(model, tokenizer, transcoders, corpus, batch_size)}
    if model.has_mlm_head:
        figures |= _masked_lm(model, tokenizer, transcoders, corpus, mask_fraction, seed, batch_size)
    return figures


def _reconstruction(model, tokenizer, transcoders: Transcoders, corpus: Corpus, batch_size: int) -> list[dict]:
    layers, features = transcoders.config.layers, transcoders.config.features
    device = model_device(model)
    count, total, squares, error = 0, torch.zeros(layers, transcoders.config.hidden, dtype=torch.float64), torch.zeros(layers), torch.zeros(layers)
    active, fired = torch.zeros(layers), torch.zeros(layers, features, dtype=torch.bool, device=device)
    for batch in batches(corpus.encodings, batch_size):
        pairs = mlp_pairs(model, tokenizer, [corpus.sentences[i] for i in batch]).to(device)  # [token, layer, 2, hidden]
        for layer in range(layers):
            values, indices = transcoders.encode_sparse(pairs[:, layer, 0], layer)
            y = pairs[:, layer, 1].double()
            error[layer] += float((transcoders.decode_sparse(values, indices, layer).double() - y).pow(2).sum())
            total[layer] += y.sum(0).cpu()
            squares[layer] += float(y.pow(2).sum())
            active[layer] += int((values > 0).sum())
            fired[layer, indices[values > 0]] = True
        count += len(pairs)
    variance = squares - total.pow(2).sum(1) / count  # Σ|y − mean|²
    return [{"layer": layer, "variance_explained": 1 - float(error[layer] / variance[layer]),
             "error_vs_zero": float(error[layer] / squares[layer]), "l0": float(active[layer]) / count,
             "dead_share": 1 - float(fired[layer].float().mean()), "tokens": count} for layer in range(layers)]


def _masked_lm(model, tokenizer, transcoders: Transcoders, corpus: Corpus, mask_fraction: float, seed: int, batch_size: int) -> dict:
    zeroed = {transcoders.config.output_hook(layer): zero for layer in range(transcoders.config.layers)}
    return masked_lm_with(model, tokenizer, corpus, lambda encodings, attention_mask: {
        "replaced": splice_all(transcoders), "zero_ablated": zeroed}, mask_fraction, seed, batch_size)
