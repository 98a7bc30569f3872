"""Which neurons of a layer carry a property, and does removing them matter? (NeuroX, Dalvi et al. 2019)

    train, test = load_corpus("ud-ewt-dev", tokenizer), load_corpus("ud-ewt-test", tokenizer)
    ranking = rank_neurons(model, train, layer=3, column="upos")          # elastic-net probe, neurons by weight
    result = ablate_ranked(model, tokenizer, ranking, test, share=0.01, mode="zero")

The probe is scikit-learn's logistic regression with an elastic-net penalty (L1 + L2, solver saga) on a word's
first word piece's MLP neurons (standardised); a neuron's rank is the sum over classes of its weights' absolute
values. Ablating sets the chosen neurons to zero ("zero") or to their mean over the training words ("mean"): in the
probe's input (probe accuracy, the probe kept as trained) and in the model's forward pass at
`hook_name("mlp_post", layer)` for every token (masked-LM top-1 accuracy on a seeded 15% of word pieces masked).
The top `share` of neurons against random draws of as many.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

from ...devices import model_device
from ...errors import InvalidInputError
from ...hooks import Intervention, hook_name
from ...model import Bert
from ...tokenizer import BertTokenizer
from ..corpus.batching import batches, pad
from .corpora import Corpus
from .neurons import check_layer, hook_rows
from .sae_measures import masked_copy

MODES = ("zero", "mean")


@dataclass(frozen=True)
class NeuronRanking:
    layer: int
    column: str  # the tag task, e.g. "upos"
    order: np.ndarray  # [neuron] best first
    importance: np.ndarray  # [neuron] sum over classes of |weight|
    probe: object  # the fitted scikit-learn pipeline (scaler + logistic regression)
    means: np.ndarray  # [neuron] mean activation over the training words (for mean ablation)
    train_words: int


@dataclass(frozen=True)
class AblationResult:
    mode: str  # "zero" or "mean"
    neurons: int  # how many were ablated in each condition
    top: list[int]  # the ablated top neurons
    probe_accuracy: dict  # {"intact", "top", "random"} ("random": the mean over draws), on the test words
    mlm_accuracy: dict  # {"intact", "top", "random"}: masked-LM top-1 on the test sentences
    random_spread: dict  # {"probe", "mlm"}: the standard deviation over the random draws
    draws: int
    test_words: int
    masked_positions: int


def word_activations(model: Bert, corpus: Corpus, layer: int, column: str, pad_id: int = 0,
                     max_words: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(X [word, neuron] at each word's first word piece, y [word] its tag), one pass; a seeded sample of
    `max_words` words when given."""
    layer = check_layer(model, layer)
    if column not in corpus.tags:
        raise InvalidInputError(f"{corpus.name} has no {column!r} tags; it has {sorted(corpus.tags) or 'none'}")
    first = np.array([w is not None and (p == 0 or e.word_ids[p - 1] != w)
                      for e in corpus.encodings for p, w in enumerate(e.word_ids)])
    rows = np.flatnonzero(first)
    if max_words is not None and len(rows) > max_words:
        rows = np.sort(np.random.default_rng(seed).choice(rows, max_words, replace=False))
    wanted = np.zeros(corpus.num_tokens, dtype=bool)
    wanted[rows] = True
    parts, part_rows = [], []
    for batch_rows, activations in hook_rows(model, corpus, hook_name("mlp_post", layer), pad_id):
        keep = torch.as_tensor(wanted[batch_rows.numpy()])
        parts.append(activations[keep.to(activations.device)].float().cpu().numpy())
        part_rows.append(batch_rows[keep].numpy())
    order = np.argsort(np.concatenate(part_rows))
    return np.concatenate(parts)[order], corpus.tag_rows(column)[rows].astype(str)


def elastic_net_probe(l1_ratio: float = 0.5, strength: float = 0.1, seed: int = 0, max_iter: int = 200):
    """An unfitted scikit-learn pipeline: standardise, then logistic regression with the elastic-net penalty
    (solver saga; l1_ratio 1 is the lasso, 0 ridge; strength is C, the inverse of the penalty's weight).

    scikit-learn before 1.8 ignores l1_ratio unless penalty="elasticnet" is given too (the probe is then a plain L2
    one); from 1.8 on l1_ratio alone sets the penalty and `penalty` is deprecated. The arguments are chosen here."""
    import sklearn
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    major, minor = (int(part) for part in re.findall(r"\d+", sklearn.__version__)[:2])
    penalty = {} if (major, minor) >= (1, 8) else {"penalty": "elasticnet"}
    return make_pipeline(StandardScaler(), LogisticRegression(solver="saga", l1_ratio=l1_ratio, C=strength, max_iter=max_iter,
                                                              tol=1e-3, random_state=seed, **penalty))


def rank_neurons(model: Bert, corpus: Corpus, layer: int, column: str = "upos", pad_id: int = 0, l1_ratio: float = 0.5,
                 strength: float = 0.1, max_words: int | None = 5000, seed: int = 0) -> NeuronRanking:
    """Fit the elastic-net probe on `corpus`'s words and order the neurons by its weights."""
    features, labels = word_activations(model, corpus, layer, column, pad_id, max_words, seed)
    if len(set(labels)) < 2:
        raise InvalidInputError(f"the {column} task needs at least two different tags; {corpus.name} has {sorted(set(labels))}")
    probe = elastic_net_probe(l1_ratio, strength, seed)
    probe.fit(features, labels)
    importance = np.abs(probe[-1].coef_).sum(0)
    return NeuronRanking(layer, column, np.argsort(-importance, kind="stable"), importance, probe, features.mean(0), len(labels))


def ablate_ranked(model: Bert, tokenizer: BertTokenizer, ranking: NeuronRanking, test: Corpus, share: float = 0.01,
                  mode: str = "zero", draws: int = 5, seed: int = 0, max_words: int | None = 5000,
                  mask_fraction: float = 0.15, batch_size: int = 32) -> AblationResult:
    """Probe and masked-LM accuracy with nothing, the top `share` of neurons, or a random `share` ablated."""
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {MODES}, not {mode!r}")
    units = len(ranking.order)
    count = max(1, round(share * units))
    rng = np.random.default_rng(seed)
    top = ranking.order[:count]
    randoms = [rng.choice(units, count, replace=False) for _ in range(draws)]
    features, labels = word_activations(model, test, ranking.layer, ranking.column, tokenizer.pad_id, max_words, seed)
    fill = np.zeros(units) if mode == "zero" else ranking.means

    def probe_accuracy(neurons) -> float:
        changed = features.copy()
        changed[:, neurons] = fill[neurons]
        return float((ranking.probe.predict(changed) == labels).mean())

    masked = [masked_copy(e, tokenizer.mask_id, mask_fraction, torch.Generator().manual_seed(seed + i))
              for i, e in enumerate(test.encodings)]
    mlm = {name: _mlm_accuracy(model, tokenizer, test, masked, ranking.layer, neurons, fill, batch_size)
           for name, neurons in (("intact", None), ("top", top))}
    random_mlm = [_mlm_accuracy(model, tokenizer, test, masked, ranking.layer, r, fill, batch_size)[0] for r in randoms]
    random_probe = [probe_accuracy(r) for r in randoms]
    return AblationResult(
        mode, count, [int(n) for n in top],
        {"intact": probe_accuracy([]), "top": probe_accuracy(top), "random": float(np.mean(random_probe))},
        {"intact": mlm["intact"][0], "top": mlm["top"][0], "random": float(np.mean(random_mlm))},
        {"probe": float(np.std(random_probe)), "mlm": float(np.std(random_mlm))},
        draws, len(labels), mlm["intact"][1],
    )


def set_neurons(neurons, values: torch.Tensor) -> Intervention:
    """mlp_post's chosen neurons set to `values` ([neuron] for every neuron; only the chosen ones are used)."""
    index = torch.as_tensor(np.asarray(neurons, dtype=np.int64))

    def ablate(post: torch.Tensor, name: str) -> torch.Tensor:
        post = post.clone()
        post[..., index] = values[index].to(post.device, post.dtype)
        return post

    return ablate


@torch.no_grad()
def _mlm_accuracy(model, tokenizer, corpus: Corpus, masked, layer: int, neurons, fill, batch_size: int) -> tuple[float, int]:
    """(top-1 accuracy at the masked pieces, how many) with `neurons` of the layer set to `fill` (None: intact)."""
    device = model_device(model)
    interventions = None if neurons is None else {hook_name("mlp_post", layer): set_neurons(neurons, torch.as_tensor(fill))}
    right = total = 0
    for batch in batches(corpus.encodings, batch_size):
        input_ids, token_type_ids, attention_mask = pad([masked[i] for i in batch], tokenizer.pad_id, device)
        labels, _, _ = pad([corpus.encodings[i] for i in batch], tokenizer.pad_id, device)
        where = input_ids == tokenizer.mask_id
        logits, _ = model.run_with_cache(input_ids, token_type_ids, attention_mask, names=[], interventions=interventions,
                                         logit_mask=where)
        right += int((logits.argmax(-1) == labels[where]).sum())
        total += int(where.sum())
    return right / max(total, 1), total
