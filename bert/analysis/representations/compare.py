"""What changed between two models with the same vocabulary (pre-trained vs fine-tuned, say), over many sentences:

- layer by layer, how similar their token representations are: linear CKA (centred kernel alignment,
  Kornblith et al. 2019), 1 for representations that differ only by a rotation and a uniform scale, near 0 for
  unrelated ones;
- head by head, how much each attention pattern moved: the Jensen-Shannon distance between the two models'
  attention rows (base 2: 0 for the same pattern, 1 for patterns with no key in common), averaged over queries.

Merchant et al. 2020 ("What happens to BERT embeddings during fine-tuning?") found that fine-tuning changes the
top layers most and the lower ones little: CKA against the base model stays near 1 low down and falls near the top.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ...costs import Cost
from ...devices import model_device
from ...errors import InvalidInputError
from ...hooks import hook_name
from ...model import Bert
from ...tokenizer import BertTokenizer
from ..corpus.batching import batches, batches_cost, residual_names, pad, record_encoder


def linear_cka(x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor) -> float:
    """Linear CKA of two representations of the same n examples, x: [n, p] and y: [n, q].

    With column-centred x and y: ||yᵀx||²_F / (||xᵀx||_F · ||yᵀy||_F). Works in the feature space (p × q
    products), so thousands of tokens cost little.
    """
    x, y = (np.asarray(a.detach().cpu() if isinstance(a, torch.Tensor) else a, dtype=np.float64) for a in (x, y))
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise InvalidInputError(f"CKA needs two [examples, features] arrays with the same examples; got {x.shape} and {y.shape}")
    if x.shape[0] < 2:
        raise InvalidInputError("CKA needs at least two examples")
    x, y = x - x.mean(0), y - y.mean(0)
    norms = np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)
    if norms == 0:
        raise InvalidInputError("CKA is undefined for a representation that is the same for every example")
    return float(np.linalg.norm(y.T @ x) ** 2 / norms)


def js_distance(p: np.ndarray | torch.Tensor, q: np.ndarray | torch.Tensor) -> np.ndarray:
    """Jensen-Shannon distance (base 2, in [0, 1]) between distributions along the last axis: [...] per row.

    sqrt(½ KL(p ‖ m) + ½ KL(q ‖ m)) with m = ½ (p + q), by scipy.
    """
    from scipy.spatial.distance import jensenshannon

    p, q = (np.asarray(a.detach().cpu() if isinstance(a, torch.Tensor) else a, dtype=np.float64) for a in (p, q))
    if p.shape != q.shape:
        raise InvalidInputError(f"the two distributions must have one shape; got {p.shape} and {q.shape}")
    return np.nan_to_num(jensenshannon(p, q, base=2, axis=-1))  # two all-zero rows (none here) would give NaN


@dataclass(frozen=True)
class Comparison:
    layers_a: list[str]  # "embeddings", "layer 1", ... of model A
    layers_b: list[str]
    cka: np.ndarray  # [layer of A, layer of B]: linear CKA over every token of every sentence
    attention_js: np.ndarray | None  # [layer, head] mean JS distance of the attention rows; None if shapes differ
    num_sentences: int
    num_tokens: int

    @property
    def same_depth(self) -> bool:
        return len(self.layers_a) == len(self.layers_b)

    @property
    def layer_cka(self) -> np.ndarray | None:
        """CKA of each layer with the same layer of the other model: [layer + 1] (entry 0 = embeddings)."""
        return np.diag(self.cka).copy() if self.same_depth else None

    def lower_and_upper(self) -> tuple[float, float] | None:
        """Mean same-layer CKA of the lower half of the layers and of the upper half (embeddings left out).
        Merchant et al. 2020 would predict lower > upper after fine-tuning."""
        per_layer = self.layer_cka
        if per_layer is None or len(per_layer) < 3:
            return None
        layers = per_layer[1:]
        half = len(layers) // 2
        return float(layers[:half].mean()), float(layers[-half:].mean())


def same_vocabulary(tokenizer_a: BertTokenizer, tokenizer_b: BertTokenizer) -> bool:
    if tokenizer_a.vocab_size != tokenizer_b.vocab_size:
        return False
    return all(tokenizer_a.id_to_token(i) == tokenizer_b.id_to_token(i) for i in range(tokenizer_a.vocab_size))


def check_comparable(model_a: Bert, model_b: Bert, tokenizer_a: BertTokenizer, tokenizer_b: BertTokenizer | None = None) -> None:
    """Raise InvalidInputError, saying why, unless the two models read the same token ids."""
    tokenizer_b = tokenizer_b or tokenizer_a
    sizes = (model_a.config.vocab_size, model_b.config.vocab_size)
    if sizes[0] != sizes[1] or not same_vocabulary(tokenizer_a, tokenizer_b):
        raise InvalidInputError(
            f"the two models have different vocabularies ({sizes[0]:,} and {sizes[1]:,} token ids, or the same ids "
            "for different word pieces), so the same sentence is not the same input to both: compare a model "
            "with one fine-tuned from it, or two models built on the same vocabulary"
        )


def _inputs(model_a: Bert, model_b: Bert, tokenizer: BertTokenizer, sentences: Sequence[str]) -> list:
    """The sentences as both models read them: cut to the shorter of the two models' positions."""
    max_length = min(model_a.config.max_position_embeddings, model_b.config.max_position_embeddings)
    return [tokenizer.encode(s, max_length=max_length, truncate=True) for s in sentences]


def comparison_cost(model_a: Bert, model_b: Bert, tokenizer: BertTokenizer, sentences: Sequence[str],
                    batch_size: int = 32) -> Cost:
    """The passes `compare_models` makes, before it starts: every sentence through model A, then through model B."""
    one_model = batches_cost([len(e) for e in _inputs(model_a, model_b, tokenizer, sentences)], batch_size,
                             ("the number of sentences",))
    return one_model + one_model


@torch.no_grad()
def compare_models(
    model_a: Bert, model_b: Bert, tokenizer: BertTokenizer, sentences: Sequence[str],
    tokenizer_b: BertTokenizer | None = None, batch_size: int = 32,
) -> Comparison:
    """Run every sentence through both models and compare them layer by layer (CKA) and head by head (JS).

    tokenizer_b: model B's tokenizer, checked to have the same vocabulary as `tokenizer` (which encodes the
    sentences for both). Sentences longer than either model's positions are cut to fit.
    """
    check_comparable(model_a, model_b, tokenizer, tokenizer_b)
    if len(sentences) < 2:
        raise InvalidInputError("compare over at least two sentences")
    encodings = _inputs(model_a, model_b, tokenizer, sentences)
    same_shape = (model_a.config.num_layers, model_a.config.num_heads) == (model_b.config.num_layers, model_b.config.num_heads)
    states_a, states_b, js_sum = [], [], None
    for batch in batches(encodings, batch_size):
        ids, types, mask = pad([encodings[i] for i in batch], tokenizer.pad_id, "cpu")
        real = mask.bool()  # [batch, seq]
        (residual_a, pattern_a), (residual_b, pattern_b) = (_record(m, ids, types, mask) for m in (model_a, model_b))
        states_a.append(residual_a[:, real])  # [layer, token, hidden]
        states_b.append(residual_b[:, real])
        if same_shape:
            distance = js_distance(pattern_a, pattern_b)  # [layer, batch, head, query]
            per_head = (distance * real.numpy()[None, :, None, :]).sum(axis=(1, 3))  # real queries only
            js_sum = per_head if js_sum is None else js_sum + per_head
    states_a, states_b = torch.cat(states_a, 1), torch.cat(states_b, 1)
    cka = np.array([[linear_cka(a, b) for b in states_b] for a in states_a])
    num_tokens = states_a.shape[1]
    return Comparison(
        residual_names(model_a), residual_names(model_b), cka,
        None if js_sum is None else js_sum / num_tokens, len(encodings), num_tokens,
    )


def _record(model: Bert, ids, types, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """([layer + 1, batch, seq, hidden] residual stream, [layer, batch, head, query, key] attention), float32 on
    the CPU, from a model on any device (the two models may live on different ones)."""
    device = model_device(model)
    ids, types, mask = ids.to(device), types.to(device), mask.to(device)
    cache = record_encoder(model, ids, types, mask, [hook_name("embedding_out")], stacked=("layer_out", "pattern"))
    return cache.residual_stream().float().cpu(), cache.stack("pattern").float().cpu()

