"""Saliency for one output (bert.analysis.attribution.target): which input tokens it depends on, through Captum.

Gradient methods split each token's attribution by embedding part (token, position, segment):
- gradient x input: ∂f/∂x · x, summed over hidden dimensions. The LayerNorm right after the sum ignores the sum's
  scale, so for every token the three parts' gradient x input add up to (almost exactly) zero: the split says
  which part pushes which way, not how much a token matters.
- integrated gradients (Sundararajan et al. 2017): (x - b) · mean over α of ∂f/∂x at b + α(x - b), midpoint rule
  (Captum's "riemann_middle") with `steps` points, all parts moved together. Completeness: the attributions add up
  to f(x) - f(b), up to the integration error, which the result reports.
Perturbation methods swap whole tokens for [MASK] (the token part; position and segment stay), so they give one
value per token:
- occlusion (Zeiler and Fergus 2014): f(x) - f(x with a window of `window` tokens masked), averaged over the
  windows that cover a token; with window 1 it is exactly how much masking that token changes f.
- Shapley value sampling (Castro et al. 2009): each token's mean marginal contribution over `samples` random orders
  in which tokens go from [MASK] to themselves.
[CLS], [SEP] and [MASK] tokens are never swapped: they keep their own embedding in every baseline.

Integrated gradients' baseline b: token part = the [PAD] embedding for every word token (as in Captum's BERT
tutorial); position part = the mean of this input's position embeddings, at every position (order removed, typical
size kept; position 0's embedding everywhere, Captum's choice, makes the path cross so sharp a change in MiniLM
that 32 steps miss most of the integral); segment part = segment A's embedding everywhere. So with a single
sentence every segment attribution is 0 (it equals the baseline); a pair shows what B carries.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...costs import Cost
from ...devices import as_numpy, model_device
from ...errors import InvalidInputError
from ...model import Bert
from ...predict import Candidate
from ...tokenizer import BertTokenizer, Encoding
from .target import HOOKS, NEXT_SENTENCE_LABELS, OUTPUTS, PARTS, Target, TargetFunction, choose_target, describe, parts_of

__all__ = ["METHODS", "GRADIENT_METHODS", "PARTS", "OUTPUTS", "NEXT_SENTENCE_LABELS", "Saliency", "saliency",
           "embedding_parts", "baseline_parts", "swappable", "saliency_cost"]

GRADIENT_METHODS = ("gradient_x_input", "integrated_gradients")
METHODS = (*GRADIENT_METHODS, "occlusion", "shapley_value_sampling")
PREPARATION_PASSES = 3  # before any method: the target's top output, the embedding parts, f(x)


def saliency_cost(method: str, tokens: int, swappable_tokens: int, steps: int = 32, samples: int = 25, window: int = 1) -> Cost:
    """The passes `saliency` makes, before it starts. swappable_tokens: how many tokens the perturbation methods
    swap (`sum(swappable(tokenizer, encoding))`). Batching changes nothing: a pass is one row."""
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {METHODS}, not {method!r}")
    shorter = "a shorter text"
    if method == "gradient_x_input":  # one pass with its gradient
        return Cost(PREPARATION_PASSES + 1, tokens, (shorter,), backward_passes=1)
    if method == "integrated_gradients":  # a pass with its gradient per step, and f(baseline)
        return Cost(PREPARATION_PASSES + steps + 1, tokens, ("integration steps", "the method", shorter), backward_passes=steps)
    if method == "occlusion":  # the input itself, then one pass per window position
        return Cost(PREPARATION_PASSES + 1 + max(tokens - window + 1, 0), tokens, ("the method", shorter))
    # Shapley value sampling: every [MASK]ed, then per order one pass per feature (each swappable token, and the
    # others together, never changed)
    features = swappable_tokens + (tokens > swappable_tokens)
    return Cost(PREPARATION_PASSES + 1 + samples * features, tokens, ("Shapley orders", "the method", shorter))


@dataclass(frozen=True)
class Saliency:
    method: str
    tokens: list[str]
    explained: Target  # output, position, answer, foil, score
    target: Candidate  # the answer as shown: its word or label, index and probability
    foil: Candidate | None  # the foil, for a contrastive target
    parts: tuple[str, ...]  # PARTS for gradient methods (no "segment" without one: DistilBERT), ("token",) for perturbation methods
    attributions: np.ndarray  # [part, token]
    score: float  # f(x)
    baseline_score: float | None = None  # f(b), integrated gradients only
    samples: int | None = None  # integration steps, occlusion windows or Shapley orders
    evaluations: int = 0  # rows the model was run on (forward passes of one input)

    @property
    def position(self) -> int:
        return self.explained.position

    @property
    def total(self) -> float:
        return float(self.attributions.sum())

    @property
    def token_attributions(self) -> np.ndarray:
        """[token]: the token part's row, what swapping a token for [MASK] removes (the deletion curve's order)."""
        return self.attributions[self.parts.index("token")]

    @property
    def completeness_gap(self) -> float | None:
        """sum of attributions - (f(x) - f(b)): 0 for exact integrated gradients."""
        return None if self.baseline_score is None else self.total - (self.score - self.baseline_score)


def saliency(
    model: Bert, tokenizer: BertTokenizer, encoding: Encoding, method: str = "integrated_gradients",
    position: int | None = None, target_id: int | str | None = None, steps: int = 32, batch_size: int = 32,
    output: str = "mlm", foil_id: int | str | None = None, samples: int = 25, window: int = 1,
    score: str = "log_probability", seed: int = 0,
) -> Saliency:
    """Attributions of f (log p(target), p(target), or logit(target) - logit(foil)) to the input tokens.

    output "mlm": the word `target_id` at `position` (default: the first [MASK]; target default: the model's top
    prediction there); "tagger": the label `target_id` of the token at `position`; "nsp" or "classifier": the
    class `target_id` (default: the top class). target_id and foil_id take an id or, alike, a word ("he") or a
    label's name. steps: integrated gradients' points; samples: Shapley value
    sampling's random orders (seeded by `seed`); window: occlusion's width in tokens; batch_size: rows per pass.
    """
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {METHODS}, not {method!r}")
    for name, value, least in (("steps", steps, 2), ("samples", samples, 1), ("window", window, 1), ("batch_size", batch_size, 1)):
        if value < least:
            raise InvalidInputError(f"{name} must be at least {least}, not {value}")
    target = choose_target(model, tokenizer, encoding, output, position, target_id, foil_id, score)
    function = TargetFunction(model, encoding, target)
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    parts = embedding_parts(model, input_ids, token_type_ids)
    inputs = tuple(parts[part] for part in function.parts)
    with torch.no_grad():
        logits = function.logits_of_parts(*inputs)
        value = float(function.score(logits)[0])
        probabilities = logits.float().softmax(-1)[0]
    function.rows_evaluated = 0
    with torch.device(model_device(model)):  # Captum makes some tensors without a device (its integration points)
        rows, counts, baseline_score = _attribute(method, function, tokenizer, encoding, parts, steps, samples, window,
                                                  batch_size, seed)
    answer = describe(model, tokenizer, target.output, target.answer_id, float(probabilities[target.answer_id]))
    foil = None if foil_id is None else describe(model, tokenizer, target.output, target.foil_id, float(probabilities[target.foil_id]))
    return Saliency(method, encoding.tokens, target, answer, foil, function.parts if method in GRADIENT_METHODS else ("token",),
                    rows, value, baseline_score, counts, function.rows_evaluated)


def _attribute(method, function: TargetFunction, tokenizer, encoding, parts, steps, samples, window, batch_size, seed):
    """(attributions [part, token], sample count, f(baseline) or None) of one method."""
    from captum.attr import InputXGradient, IntegratedGradients  # imported when an attribution runs: 2 s to import

    if method not in GRADIENT_METHODS:
        counts, token_row = _perturbed(method, function, tokenizer, encoding, parts, samples, window, batch_size, seed)
        return token_row[None], counts, None
    inputs = tuple(parts[part].clone().requires_grad_(True) for part in function.parts)
    if method == "gradient_x_input":
        attributed, counts, baseline_score = InputXGradient(function).attribute(inputs), None, None
    else:
        base = baseline_parts(function.model, tokenizer, encoding, parts)
        baselines = tuple(base[part] for part in function.parts)
        attributed = IntegratedGradients(function).attribute(
            inputs, baselines, n_steps=steps, method="riemann_middle", internal_batch_size=batch_size)
        with torch.no_grad():
            baseline_score = float(function(*baselines)[0])
        counts = steps
    return as_numpy(torch.stack([a.sum(-1)[0] for a in attributed])), counts, baseline_score


def swappable(tokenizer: BertTokenizer, encoding: Encoding) -> list[bool]:
    """Which tokens the perturbation methods and deletion curves swap for [MASK]: all but [CLS], [SEP], [MASK]."""
    return [not special and token_id != tokenizer.mask_id for special, token_id in zip(encoding.special, encoding.input_ids)]


@torch.no_grad()
def embedding_parts(model: Bert, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """{part: [1, seq, hidden]} the embeddings that the model sums (parts_of: no segment for DistilBERT)."""
    parts = parts_of(model)
    _, cache = model.run_with_cache(input_ids, token_type_ids, names=[HOOKS[part] for part in parts],
                                    logit_mask=torch.zeros_like(input_ids, dtype=torch.bool))
    return {part: cache[HOOKS[part]] for part in parts}


@torch.no_grad()
def baseline_parts(model: Bert, tokenizer: BertTokenizer, encoding: Encoding, parts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Integrated gradients' baseline b of each part, [1, seq, hidden] (see the module docstring)."""
    embedding = model.embedding
    keep = ~torch.tensor(swappable(tokenizer, encoding), device=parts["token"].device)  # [seq]
    pad = embedding.token_embedding.weight[tokenizer.pad_id].detach()
    token = torch.where(keep[:, None], parts["token"][0], pad)
    base = {"token": token[None]}
    if "position" in parts:
        base["position"] = parts["position"][0].mean(dim=0).expand_as(parts["position"][0])[None]
    if "segment" in parts:
        base["segment"] = embedding.token_type_embedding.weight[0].detach().expand_as(parts["segment"][0])[None]
    return base


def _perturbed(method, function: TargetFunction, tokenizer, encoding, parts, samples, window, batch_size, seed):
    """(windows or orders, attribution per token [seq]) of a perturbation method on the token part."""
    from captum.attr import Occlusion, ShapleyValueSampling

    token, others = parts["token"], [parts[part] for part in function.parts[1:]]  # position (and segment) stay
    swap = torch.tensor(swappable(tokenizer, encoding), device=token.device)
    mask_embedding = function.model.embedding.token_embedding.weight[tokenizer.mask_id].detach()
    masked = torch.where(swap[:, None], mask_embedding, token[0])[None]  # [1, seq, hidden]

    def of_token(token_part: torch.Tensor) -> torch.Tensor:
        return function(token_part, *others)

    seq, hidden = token.shape[1:]
    with torch.no_grad():
        if method == "occlusion":
            if window > seq:
                raise InvalidInputError(f"the occlusion window ({window} tokens) is wider than this {seq}-token input")
            attributed = Occlusion(of_token).attribute(token, sliding_window_shapes=(window, hidden), strides=(1, hidden),
                                                      baselines=masked, perturbations_per_eval=batch_size)
            counts = seq - window + 1
        else:
            # one feature per swappable token (1, 2, ...); every other token together is feature 0, never changed
            feature = torch.cumsum(swap.long(), 0) * swap.long()
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                attributed = ShapleyValueSampling(of_token).attribute(
                    token, baselines=masked, feature_mask=feature[None, :, None].expand(1, seq, hidden).contiguous(),
                    n_samples=samples, perturbations_per_eval=batch_size)
            counts = samples
    return counts, as_numpy(attributed[0, :, 0])
