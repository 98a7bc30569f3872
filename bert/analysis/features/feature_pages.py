"""What a feature page shows (as Bricken et al. 2023 and Neuronpedia): a sparse-autoencoder feature's top examples
over a corpus and its activation histogram (every feature from one pass), and the tokens it promotes.

    scan = scan_features(model, sae, corpus, tokenizer.pad_id)       # UnitScan over every feature
    top_examples(scan, corpus, feature)                               # neurons.top_examples works on it too
    promoted(sae, model, tokenizer, feature)                          # [(token, logit rise), ...]
    mask_guess_change(model, tokenizer, encoding, sae, feature, 0.0)  # the [MASK] guess with the feature off
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...devices import model_device
from ...model import Bert
from ...tokenizer import BertTokenizer
from ..corpus.batching import ProgressCallback, batches, pad
from .corpora import Corpus
from .residuals import logits_above, residual_at
from ...errors import InvalidInputError
from ...predict import at_positions
from ...tokenizer import Encoding
from .sae import TopKSae, promoted_tokens, steer
from .top_activations import TopTracker, UnitScan

FEATURE_BINS = np.linspace(0.0, 12.0, 49)  # feature activations are >= 0; the histogram counts where it fires


@torch.no_grad()
def scan_features(model: Bert, sae: TopKSae, corpus: Corpus, pad_id: int = 0, k: int = 20, batch_size: int = 32,
                  progress: ProgressCallback | None = None, bin_edges=FEATURE_BINS) -> UnitScan:
    """Top-k tokens and histogram (of the tokens where it fires) of every feature, from one pass as far as the
    SAE's layer. Tokens the SAE was not trained on ([CLS]/[SEP] without special_tokens) are left out."""
    device = model_device(model)
    tracker = TopTracker(sae.config.features, k, bin_edges, active_only=True)
    offsets = torch.as_tensor(corpus.offsets)
    done = 0
    for batch in batches(corpus.encodings, batch_size):
        encodings = [corpus.encodings[i] for i in batch]
        input_ids, token_type_ids, attention_mask = pad(encodings, pad_id, device)
        keep = attention_mask.bool().cpu()
        if not sae.config.special_tokens:
            keep &= torch.tensor([e.special + [True] * (keep.shape[1] - len(e)) for e in encodings]).logical_not()
        rows = (offsets[batch][:, None] + torch.arange(keep.shape[1])[None, :])[keep]
        x = residual_at(model, sae.config.layer, input_ids, token_type_ids, attention_mask)
        tracker.add(rows, sae.encode(x[keep.to(device)].float()))
        done += len(batch)
        if progress is not None:
            progress(done, len(corpus))
    return tracker.result()


def promoted(sae: TopKSae, model: Bert, tokenizer: BertTokenizer, feature: int, count: int = 15,
             strength: float | None = None) -> list[tuple[str, float]]:
    """The `count` tokens whose masked-LM logits rise most along the feature's decoder direction (special tokens
    and [unused] slots left out), largest first."""
    rises = promoted_tokens(sae, model, feature, strength)
    order = torch.argsort(rises, descending=True).tolist()
    special = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id, tokenizer.pad_id, tokenizer.unk_id}
    out = []
    for token_id in order:
        token = tokenizer.id_to_token(token_id)
        if token_id in special or token.startswith("[unused"):
            continue
        out.append((token, float(rises[token_id])))
        if len(out) == count:
            break
    return out


@dataclass(frozen=True)
class GuessChange:
    position: int  # the [MASK]'s position
    tokens: list[str]  # the top candidates before and after, best before first
    before: list[float]  # their probabilities with the model as it is
    after: list[float]  # and with the feature scaled


@torch.no_grad()
def mask_guess_change(model: Bert, tokenizer: BertTokenizer, encoding: Encoding, sae: TopKSae, feature: int, factor: float,
                      top_k: int = 5, hidden: torch.Tensor | None = None) -> GuessChange:
    """The first [MASK]'s top candidates with the feature as it is and multiplied by `factor` (0: off). The pass
    runs once as far as the SAE's layer (or starts from `hidden`, that layer's [1, seq, hidden] for this encoding),
    then through the layers above it as a batch of two: as it is, and changed by `steer`."""
    positions = tokenizer.mask_positions(encoding)
    if not positions:
        raise InvalidInputError("the sentence has no [MASK]: type [MASK] where a word should be guessed")
    if not model.has_mlm_head:
        raise InvalidInputError("this model has no masked-LM head, so it cannot guess the [MASK]")
    device = model_device(model)
    if hidden is None:
        hidden = residual_at(model, sae.config.layer, *encoding.tensors(device))
    where = at_positions(positions[:1], len(encoding), device)
    keep = None if sae.config.special_tokens else torch.tensor([encoding.special], device=device)
    changed = steer(sae, feature, factor, keep)(hidden, sae.hook)
    both = torch.cat([hidden, changed])  # one batch of two: the layers above run once for both
    before, after = logits_above(model, sae.config.layer, both, logit_mask=where.expand(2, -1)).float().softmax(-1).cpu()
    ids = list(dict.fromkeys(before.topk(top_k).indices.tolist() + after.topk(top_k).indices.tolist()))
    return GuessChange(positions[0], [tokenizer.id_to_token(i) for i in ids], [float(before[i]) for i in ids],
                       [float(after[i]) for i in ids])
