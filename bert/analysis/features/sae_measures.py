"""How good a sparse autoencoder is, on text it never saw (the measures of Gao et al. 2024 and SAELens):

- variance_explained: 1 - sum |x - x^|^2 / sum |x - mean x|^2 over the tokens it reads;
- l0: features active per token (at most k); dead_share: features that never fire on this text;
- masked-LM loss and top-1 agreement with the intact model when x^ replaces x in the forward pass (spliced), against
  zero-ablating the layer (x replaced by zeros), on a seeded 15% of each sentence's word pieces masked;
  loss_recovered = (zero - spliced) / (zero - intact): 1 is as good as the model itself, 0 as bad as no layer.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...devices import model_device
from ...interventions import zero
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from ..corpus.batching import batches, pad
from .corpora import Corpus
from .residuals import residual_at
from .sae import TopKSae, splice


@torch.no_grad()
def measure_sae(model: Bert, tokenizer: BertTokenizer, sae: TopKSae, corpus: Corpus, mask_fraction: float = 0.15,
                seed: int = 0, batch_size: int = 32) -> dict:
    """The held-out figures as a JSON-ready dict."""
    figures = _reconstruction(model, tokenizer, sae, corpus, batch_size)
    if model.has_mlm_head:
        figures |= _masked_lm(model, tokenizer, sae, corpus, mask_fraction, seed, batch_size)
    return {"data": corpus.name, "sentences": len(corpus)} | figures


def _reconstruction(model, tokenizer, sae, corpus: Corpus, batch_size: int) -> dict:
    device = model_device(model)
    count, total, total_squares, error = 0, 0.0, 0.0, 0.0
    active, fired = 0, torch.zeros(sae.config.features, dtype=torch.bool, device=device)
    for batch in batches(corpus.encodings, batch_size):
        encodings = [corpus.encodings[i] for i in batch]
        input_ids, token_type_ids, attention_mask = pad(encodings, tokenizer.pad_id, device)
        x = residual_at(model, sae.config.layer, input_ids, token_type_ids, attention_mask)
        x = x[_trained_positions(encodings, attention_mask, sae.config.special_tokens)].double()
        values, indices = sae.encode_sparse(x.float())
        error += float((sae.decode_sparse(values, indices).double() - x).pow(2).sum())
        count, total, total_squares = count + len(x), total + x.sum(0), total_squares + x.pow(2).sum(0)
        active += int((values > 0).sum())
        fired[indices[values > 0]] = True
    variance = float((total_squares - total * total / count).sum())  # sum |x - mean|^2
    return {"tokens": count, "variance_explained": 1 - error / variance, "l0": active / count,
            "dead_share": 1 - float(fired.float().mean()), "special_tokens": sae.config.special_tokens}


def _masked_lm(model, tokenizer, sae, corpus: Corpus, mask_fraction: float, seed: int, batch_size: int) -> dict:
    def runs(encodings, attention_mask):
        keep = ~_trained_positions(encodings, attention_mask, sae.config.special_tokens)
        return {"spliced": {sae.hook: splice(sae, keep)}, "zero_ablated": {sae.hook: zero}}

    return masked_lm_with(model, tokenizer, corpus, runs, mask_fraction, seed, batch_size)


def masked_lm_with(model, tokenizer, corpus: Corpus, runs, mask_fraction: float, seed: int, batch_size: int) -> dict:
    """The masked-LM loss and top-1 agreement with the intact model of two runs with interventions, on a seeded
    `mask_fraction` of each sentence's word pieces masked. `runs(encodings, attention_mask)` gives a batch's
    {name: interventions} for the replaced run first and the zero-ablated one second; loss_recovered = (zero −
    replaced) / (zero − intact)."""
    device = model_device(model)
    generator = torch.Generator().manual_seed(seed)
    masked = [masked_copy(e, tokenizer.mask_id, mask_fraction, generator) for e in corpus.encodings]
    sums, agree, positions = {"intact": 0.0}, {}, 0
    for batch in batches(corpus.encodings, batch_size):
        encodings = [masked[i] for i in batch]
        input_ids, token_type_ids, attention_mask = pad(encodings, tokenizer.pad_id, device)
        labels, _, _ = pad([corpus.encodings[i] for i in batch], tokenizer.pad_id, device)
        where = input_ids == tokenizer.mask_id
        intact_top = None
        for name, interventions in {"intact": None, **runs(encodings, attention_mask)}.items():
            logits, _ = model.run_with_cache(input_ids, token_type_ids, attention_mask, names=[], interventions=interventions,
                                             logit_mask=where)
            sums[name] = sums.get(name, 0.0) + float(F.cross_entropy(logits.float(), labels[where], reduction="sum"))
            top = logits.argmax(-1)
            if intact_top is None:
                intact_top = top
            else:
                agree[name] = agree.get(name, 0) + int((top == intact_top).sum())
        positions += int(where.sum())
    losses = {name: value / positions for name, value in sums.items()}
    replaced, zeroed = list(losses)[1:]
    recovered = (losses[zeroed] - losses[replaced]) / (losses[zeroed] - losses["intact"])
    return {"masked_positions": positions, "mlm_loss": losses, "loss_recovered": recovered,
            "top1_agreement": {name: value / positions for name, value in agree.items()}}


def _trained_positions(encodings: list[Encoding], attention_mask: torch.Tensor, special_tokens: bool) -> torch.Tensor:
    """bool [batch, seq]: the tokens the SAE reads (real tokens; [CLS]/[SEP] only when it was trained on them)."""
    keep = attention_mask.bool()
    if not special_tokens:
        longest = attention_mask.shape[1]
        special = torch.tensor([e.special + [True] * (longest - len(e)) for e in encodings], device=keep.device)
        keep &= ~special
    return keep


def masked_copy(encoding: Encoding, mask_id: int, fraction: float, generator: torch.Generator) -> Encoding:
    """The encoding with a seeded `fraction` of its word pieces (at least one) replaced by [MASK]."""
    candidates = [i for i, special in enumerate(encoding.special) if not special]
    count = max(1, round(fraction * len(candidates)))
    chosen = torch.randperm(len(candidates), generator=generator)[:count].tolist()
    return encoding.with_masks([candidates[i] for i in chosen], mask_id)
