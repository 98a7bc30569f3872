"""What an attribution explains: one output of the model, written as a function of the three embedding parts.

output "mlm": a word at a [MASK]; "tagger": the label of one token (a token-classification head); "nsp"
(B follows A, or not) and "classifier" (a fine-tuned classifier's labels): a class read from [CLS].

The explained score f is log p(answer) (score "log_probability"), or p(answer) (score "probability"). With a
foil it is contrastive, f = logit(answer) - logit(foil) ("why *she* rather than *he*"; Yin and Neubig 2022):
what pushes the model from the foil towards the answer, whatever the other outputs do.

BERT's input vector is a sum, token + position + segment (before the embedding LayerNorm); `TargetFunction`
replaces those three hooks' activations by tensors the attribution methods vary ([rows, seq, hidden] each).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...devices import model_device
from ...errors import InvalidInputError
from ...hooks import EMBEDDING_PARTS
from ...model import Bert
from ...predict import Candidate, make_candidate
from ...tokenizer import BertTokenizer, Encoding

PARTS = ("token", "position", "segment")
HOOKS = EMBEDDING_PARTS
OUTPUTS = ("mlm", "nsp", "classifier", "tagger")  # a masked word, a class read from [CLS], a token's label
SCORES = ("log_probability", "probability")
NEXT_SENTENCE_LABELS = ("B follows A", "B does not follow A")  # the NSP head's two classes, in index order


def parts_of(model: Bert) -> tuple[str, ...]:
    """The embedding parts the model sums: PARTS, without "segment" where it has no segment embedding (DistilBERT),
    without "position" where positions turn q and k instead (ModernBERT's rotary positions)."""
    has = {"token": True, "position": model.embedding.position_embedding is not None,
           "segment": model.embedding.token_type_embedding is not None}
    return tuple(part for part in PARTS if has[part])


@dataclass(frozen=True)
class Target:
    output: str  # one of OUTPUTS
    position: int  # the token whose output is explained: a [MASK], a tagged token, or 0 ([CLS]) for a class
    answer_id: int  # the word (vocabulary id) or class (label index)
    foil_id: int | None = None  # contrastive: f = logit(answer) - logit(foil)
    score: str = "log_probability"  # without a foil: f = log p(answer) or p(answer)

    @property
    def contrastive(self) -> bool:
        return self.foil_id is not None


def choose_target(
    model: Bert, tokenizer: BertTokenizer, encoding: Encoding, output: str = "mlm", position: int | None = None,
    answer_id: int | str | None = None, foil_id: int | str | None = None, score: str = "log_probability",
) -> Target:
    """Check the request and fill in the defaults: the first [MASK] (mlm) or the first word token (tagger); [CLS] for
    a class; the model's top output there as the answer. answer_id and foil_id take an id or, alike, a word (mlm)
    or a label's name (the other outputs)."""
    if output not in OUTPUTS:
        raise InvalidInputError(f"output must be one of {OUTPUTS}, not {output!r}")
    if score not in SCORES:
        raise InvalidInputError(f"score must be one of {SCORES}, not {score!r}")
    _check_output(model, output)
    if output in ("nsp", "classifier"):
        position = 0  # sentence-level heads read [CLS]
    elif position is None and output == "mlm":
        masks = tokenizer.mask_positions(encoding)
        if not masks:
            raise InvalidInputError("the text has no [MASK]: add one to explain its prediction")
        position = masks[0]
    elif position is None:
        position = next((i for i, special in enumerate(encoding.special) if not special), 0)
    if not 0 <= position < len(encoding):
        raise InvalidInputError(f"position {position} is outside this {len(encoding)}-token input")
    target = Target(output, position, 0, None, score)
    with torch.no_grad():
        logits = TargetFunction(model, encoding, target).logits_of_ids(_ids(model, encoding))[0]
    answer_id, foil_id = (_output_id(model, tokenizer, output, choice, role) for choice, role in ((answer_id, "target"), (foil_id, "foil")))
    if answer_id is None:
        answer_id = int(logits.argmax())
    for name, choice in (("target", answer_id), ("foil", foil_id)):
        if choice is not None and not 0 <= choice < len(logits):
            raise InvalidInputError(f"{name} {choice} is not one of the {len(logits)} outputs of the {output} head")
    if foil_id is not None and foil_id == answer_id:
        raise InvalidInputError("the foil must differ from the target: a contrast of a word with itself is 0")
    return Target(output, position, answer_id, foil_id, score)


def describe(model: Bert, tokenizer: BertTokenizer, output: str, output_id: int, probability: float) -> Candidate:
    """An answer or foil as the app shows it: its word or label, its index and its probability."""
    if output == "mlm":
        return make_candidate(tokenizer, output_id, probability)
    labels = NEXT_SENTENCE_LABELS if output == "nsp" else (model.labels or [])
    label = labels[output_id] if output_id < len(labels) else f"class {output_id}"
    return Candidate(label, output_id, probability, is_continuation=False)


class TargetFunction:
    """The model as the function f of its embedding parts (for the attribution methods) or of token ids
    (for perturbations that swap tokens). Counts the rows it evaluates."""

    def __init__(self, model: Bert, encoding: Encoding, target: Target):
        self.model, self.target = model, target
        self.parts = parts_of(model)  # what __call__ takes, in this order
        self.input_ids, self.token_type_ids = _ids(model, encoding), encoding.tensors(model_device(model))[1]
        self.at_position = torch.zeros_like(self.input_ids, dtype=torch.bool)
        self.at_position[0, target.position] = True
        self.rows_evaluated = 0

    def __call__(self, *parts: torch.Tensor) -> torch.Tensor:
        """f per row, [rows], for the parts of `self.parts` (token, position, segment), each [rows or 1, seq, hidden]
        (Captum's forward function)."""
        return self.score(self.logits_of_parts(*parts))

    def logits_of_parts(self, *parts: torch.Tensor) -> torch.Tensor:
        values = dict(zip(self.parts, parts, strict=True))
        rows = max(value.shape[0] for value in parts)
        shape = (rows, *parts[0].shape[1:])
        interventions = [(HOOKS[part], lambda activation, name, value=values[part]: value.expand(shape)) for part in self.parts]
        return self._logits(self.input_ids.expand(rows, -1), interventions)

    def logits_of_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        """[rows, outputs] at the target's position, for token ids [rows, seq] (the segments stay this input's)."""
        return self._logits(input_ids, None)

    def score(self, logits: torch.Tensor) -> torch.Tensor:
        """f per row from [rows, outputs] logits."""
        logits = logits.float()  # float32 whatever the model's dtype
        target = self.target
        if target.contrastive:
            return logits[:, target.answer_id] - logits[:, target.foil_id]
        log_probs = logits.log_softmax(-1)[:, target.answer_id]
        return log_probs if target.score == "log_probability" else log_probs.exp()

    def measured(self, logits: torch.Tensor) -> torch.Tensor:
        """What a deletion curve follows, per row: p(answer), or the logit difference with a foil."""
        if self.target.contrastive:
            return self.score(logits)
        return logits.float().softmax(-1)[:, self.target.answer_id]

    def _logits(self, input_ids: torch.Tensor, interventions) -> torch.Tensor:
        rows, output = input_ids.shape[0], self.target.output
        self.rows_evaluated += rows
        types = self.token_type_ids.expand(rows, -1)
        detach = not torch.is_grad_enabled()
        if output == "mlm":
            logits, _ = self.model.run_with_cache(input_ids, types, names=[], interventions=interventions,
                                                  logit_mask=self.at_position.expand(rows, -1), detach=detach)
            return logits  # [rows, vocab]: only the target's position
        logits, _ = self.model.run_with_cache(input_ids, types, names=[], interventions=interventions, detach=detach, output=output)
        return logits[:, self.target.position] if output == "tagger" else logits  # [rows, labels]


def _output_id(model: Bert, tokenizer: BertTokenizer, output: str, choice: int | str | None, role: str) -> int | None:
    """An output's index from an id, a word (mlm) or a label's name."""
    if not isinstance(choice, str):
        return choice
    if output == "mlm":
        return tokenizer.one_token_id(choice, role)
    labels = list(NEXT_SENTENCE_LABELS if output == "nsp" else (model.labels or []))
    if choice not in labels:
        raise InvalidInputError(f"the {role} {choice!r} is not one of the {output} head's labels {labels}")
    return labels.index(choice)


def _check_output(model: Bert, output: str) -> None:
    if output == "mlm" and not model.has_mlm_head:
        raise InvalidInputError("saliency of a masked prediction needs a model with a masked-LM head")
    if output == "nsp" and not model.has_nsp_head:
        raise InvalidInputError("this model has no next-sentence head; the built-in minilm and bert-base-uncased have one")
    if output == "classifier" and not model.has_classifier:
        raise InvalidInputError("this model has no classifier head: load a fine-tuned sequence classifier")
    if output == "tagger" and not model.has_tagger:
        raise InvalidInputError("this model has no token-classification head: load a fine-tuned tagger")


def _ids(model: Bert, encoding: Encoding) -> torch.Tensor:
    return encoding.tensors(model_device(model))[0]
