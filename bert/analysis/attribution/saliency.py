"""Saliency for a prediction, split by embedding part: token, position and segment.

BERT's input vector is a sum, token + position + segment, before the embedding LayerNorm. We make each part of
each token a separate input (replacing its hook's activation by a tensor we differentiate) and attribute the
score f = log p(target) to each (part, token). The target is a word at a [MASK] (output "mlm"), or a class of a
sentence-level head read from [CLS]: "next_sentence" (B follows A, or not) or "classify" (a fine-tuned
classifier's labels); for a class, f = log p(class) = the class logit minus the log-sum-exp of all class logits.

- gradient x input: ∂f/∂x · x, summed over hidden dimensions. Note: the LayerNorm right after the sum ignores the
  sum's scale, so for every token the three parts' gradient x input add up to (almost exactly) zero; the split
  says which part pushes which way, not how much a token matters.
- integrated gradients (Sundararajan et al. 2017): (x - b) · mean over α of ∂f/∂x at b + α(x - b), midpoint rule
  with `steps` points, all parts moved together. Completeness: the attributions add up to f(x) - f(b), up to the
  integration error, which the result reports.

Baseline b: token part = the [PAD] embedding for every word token ([CLS], [SEP] and [MASK] keep their own, as in
Captum's BERT tutorial); position part = the mean of this input's position embeddings, at every position (order
removed, typical size kept; position 0's embedding everywhere, Captum's choice, makes the path cross so sharp a
change in MiniLM that 32 steps miss most of the integral); segment part = segment A's embedding everywhere. So
with a single sentence every segment attribution is 0 (it equals the baseline); a pair shows what B carries.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...devices import as_numpy, model_device
from ...errors import InvalidInputError
from ...hooks import EMBEDDING_PARTS
from ...model import Bert
from ...predict import Candidate, make_candidate
from ...tokenizer import BertTokenizer, Encoding

PARTS = ("token", "position", "segment")
HOOKS = EMBEDDING_PARTS
METHODS = ("gradient_x_input", "integrated_gradients")
OUTPUTS = ("mlm", "next_sentence", "classify")  # what is explained: a masked word, or a class read from [CLS]
NEXT_SENTENCE_LABELS = ("B follows A", "B does not follow A")  # the NSP head's two classes, in index order


@dataclass(frozen=True)
class Saliency:
    method: str
    tokens: list[str]
    position: int  # the [MASK] whose prediction is explained; 0 ([CLS]) for a class
    target: Candidate  # the explained token (or class: its label and index) and its probability
    attributions: np.ndarray  # [part, token], parts in PARTS order
    score: float  # f(x) = log p(target)
    baseline_score: float | None = None  # f(b), integrated gradients only

    @property
    def total(self) -> float:
        return float(self.attributions.sum())

    @property
    def completeness_gap(self) -> float | None:
        """sum of attributions - (f(x) - f(b)): 0 for exact integrated gradients."""
        return None if self.baseline_score is None else self.total - (self.score - self.baseline_score)


def saliency(
    model: Bert, tokenizer: BertTokenizer, encoding: Encoding, method: str = "integrated_gradients",
    position: int | None = None, target_id: int | None = None, steps: int = 32, batch_size: int = 32, output: str = "mlm",
) -> Saliency:
    """Attributions of log p(target) to each token's token, position and segment embeddings.

    output "mlm": the word `target_id` at `position` (default: the first [MASK]; target default: the model's top
    prediction there). output "next_sentence" or "classify": the class `target_id` (default: the top class).
    """
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {METHODS}, not {method!r}")
    if output not in OUTPUTS:
        raise InvalidInputError(f"output must be one of {OUTPUTS}, not {output!r}")
    _check_output(model, output)
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    if output != "mlm":
        position = 0  # sentence-level heads read [CLS]
    elif position is None:
        masks = tokenizer.mask_positions(encoding)
        if not masks:
            raise InvalidInputError("the text has no [MASK]: add one to explain its prediction")
        position = masks[0]
    if not 0 <= position < input_ids.shape[1]:
        raise InvalidInputError(f"position {position} is outside this {input_ids.shape[1]}-token input")
    parts = embedding_parts(model, input_ids, token_type_ids)
    score_fn = _Score(model, input_ids, token_type_ids, position, output)
    with torch.no_grad():
        choices = score_fn.log_probs(parts)[0]
    if target_id is None:
        target_id = int(choices.argmax())
    if not 0 <= target_id < len(choices):
        raise InvalidInputError(f"target {target_id} is not one of the {len(choices)} outputs of the {output} head")
    score, gradients = score_fn.gradients(parts, target_id)
    target = _target(model, tokenizer, output, target_id, float(np.exp(score[0])))
    if method == "gradient_x_input":
        attributions = torch.stack([(gradients[p] * parts[p]).sum(-1)[0] for p in PARTS])
        return Saliency(method, encoding.tokens, position, target, as_numpy(attributions), float(score[0]))
    base = baseline_parts(model, tokenizer, encoding, parts)
    attributions, baseline_score = _integrated(score_fn, parts, base, target_id, steps, batch_size)
    return Saliency(method, encoding.tokens, position, target, as_numpy(attributions), float(score[0]), baseline_score)


@torch.no_grad()
def embedding_parts(model: Bert, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """{part: [1, seq, hidden]} the three embeddings that the model sums."""
    _, cache = model.run_with_cache(input_ids, token_type_ids, names=list(HOOKS.values()), logit_mask=torch.zeros_like(input_ids, dtype=torch.bool))
    return {part: cache[HOOKS[part]] for part in PARTS}


@torch.no_grad()
def baseline_parts(model: Bert, tokenizer: BertTokenizer, encoding: Encoding, parts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The baseline b of each part, [1, seq, hidden] (see the module docstring)."""
    embedding = model.embedding
    keep = torch.tensor([s or i == tokenizer.mask_id for s, i in zip(encoding.special, encoding.input_ids)], device=parts["token"].device)  # [seq]
    pad = embedding.token_embedding.weight[tokenizer.pad_id].detach()
    token = torch.where(keep[:, None], parts["token"][0], pad)
    position = parts["position"][0].mean(dim=0).expand_as(parts["position"][0])
    segment = embedding.token_type_embedding.weight[0].detach().expand_as(parts["segment"][0])
    return {"token": token[None], "position": position[None], "segment": segment[None]}


def _check_output(model: Bert, output: str) -> None:
    if output == "mlm" and not model.has_mlm_head:
        raise InvalidInputError("saliency of a masked prediction needs a model with a masked-LM head")
    if output == "next_sentence" and not model.has_nsp_head:
        raise InvalidInputError("this model has no next-sentence head; the built-in minilm and bert-base-uncased have one")
    if output == "classify" and not model.has_classifier:
        raise InvalidInputError("this model has no classifier head: load a fine-tuned sequence classifier")


def _target(model: Bert, tokenizer: BertTokenizer, output: str, target_id: int, probability: float) -> Candidate:
    if output == "mlm":
        return make_candidate(tokenizer, target_id, probability)
    labels = NEXT_SENTENCE_LABELS if output == "next_sentence" else (model.labels or [])
    label = labels[target_id] if target_id < len(labels) else f"class {target_id}"
    return Candidate(label, target_id, probability, is_continuation=False)


class _Score:
    """f = log p(target) at one position, or of a class, as a function of the three embedding parts (a batch of them)."""

    def __init__(self, model: Bert, input_ids: torch.Tensor, token_type_ids: torch.Tensor, position: int, output: str = "mlm"):
        self.model, self.input_ids, self.token_type_ids, self.output = model, input_ids, token_type_ids, output
        self.at_position = torch.zeros_like(input_ids, dtype=torch.bool)
        self.at_position[0, position] = True

    def log_probs(self, parts: dict[str, torch.Tensor], detach: bool = True) -> torch.Tensor:
        """[batch, vocab or classes] for parts of shape [batch, seq, hidden]."""
        rows = parts["token"].shape[0]
        interventions = [(HOOKS[p], lambda activation, name, value=parts[p]: value) for p in PARTS]
        ids, types = self.input_ids.expand(rows, -1), self.token_type_ids.expand(rows, -1)
        if self.output == "mlm":
            logits, _ = self.model.run_with_cache(
                ids, types, names=[], interventions=interventions, logit_mask=self.at_position.expand(rows, -1), detach=detach,
            )
        else:
            logits, _ = self.model.run_with_cache(ids, types, names=[], interventions=interventions, detach=detach, output=self.output)
        return logits.float().log_softmax(-1)  # float32 whatever the model's dtype

    def gradients(self, parts: dict[str, torch.Tensor], target_id: int) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
        """(f per row [batch], {part: ∂f/∂part [batch, seq, hidden]})."""
        with torch.enable_grad():
            leaves = {p: parts[p].detach().clone().requires_grad_(True) for p in PARTS}
            score = self.log_probs(leaves, detach=False)[:, target_id]
            grads = torch.autograd.grad(score.sum(), [leaves[p] for p in PARTS])  # rows are independent
        return as_numpy(score), dict(zip(PARTS, grads))


def _integrated(score_fn: _Score, parts, base, target_id: int, steps: int, batch_size: int) -> tuple[torch.Tensor, float]:
    if steps < 1:
        raise InvalidInputError("integrated gradients need at least 1 step")
    alphas = ((torch.arange(steps, device=parts["token"].device) + 0.5) / steps).to(parts["token"].dtype)  # midpoints of [0, 1]
    summed = {p: torch.zeros_like(parts[p][0]) for p in PARTS}  # [seq, hidden]
    for start in range(0, steps, batch_size):
        alpha = alphas[start : start + batch_size, None, None]  # [row, 1, 1]
        path = {p: base[p] + alpha * (parts[p] - base[p]) for p in PARTS}  # [row, seq, hidden]
        _, grads = score_fn.gradients(path, target_id)
        for p in PARTS:
            summed[p] += grads[p].sum(0)
    attributions = torch.stack([((parts[p][0] - base[p][0]) * summed[p] / steps).sum(-1) for p in PARTS])
    with torch.no_grad():
        baseline_score = float(score_fn.log_probs(base)[0, target_id])
    return attributions, baseline_score
