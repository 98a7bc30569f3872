"""One sentence seen through a variable's directions (bert/analysis/causal/alignment.py): where along each token the
direction points, and the variable swapped live from a second sentence.

    tokens, values = projections(model, tokenizer, "The dogs near the car [MASK] old .", {hook: basis})
    swap = live_swap(model, tokenizer, "The dog near the cars [MASK] old .", "The dogs near the cars [MASK] old .",
                     hook, "differs", basis)
    swap.before, swap.after        # the [MASK]'s top words, as run and with the source's coordinates swapped in

A projection is each token's vector at the hook dotted with the basis's first column (a unit vector): where the
direction is the variable's, its sign reads the variable's value (the number of the subject) off each token. The
live swap is one interchange intervention (bert/analysis/causal/interchange.py) on a pair the visitor typed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import torch

from ...devices import model_device
from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer
from ...data.variable_pairs import first_differing_word
from .interchange import Position, interchange, last_piece, line_up

TOP_WORDS = 5


@torch.no_grad()
def projections(model: Bert, tokenizer: BertTokenizer, text: str, bases: Mapping[str, torch.Tensor]
                ) -> tuple[list[str], np.ndarray]:
    """(the sentence's word pieces, [hook, token] each token's vector at the hook dotted with that hook's basis's
    first column), in one forward pass that records the hooks."""
    encoding = tokenizer.encode(text, max_length=model.config.max_position_embeddings)
    device = model_device(model)
    input_ids = torch.tensor([encoding.input_ids], device=device)
    token_type_ids = torch.tensor([encoding.token_type_ids], device=device)
    hooks = list(bases)
    _, cache = model.run_with_cache(input_ids, token_type_ids, None, names=hooks, output="mlm",
                                    logit_mask=torch.zeros_like(input_ids, dtype=torch.bool))
    rows = [cache[hook][0].float().cpu() @ bases[hook][:, 0].float() for hook in hooks]
    return list(encoding.tokens), torch.stack(rows).numpy() if rows else np.zeros((0, len(encoding)))


@dataclass(frozen=True)
class LiveSwap:
    tokens: list[str]  # the base sentence's word pieces
    position: int  # the token index whose vector was changed
    before: list[tuple[str, float]]  # the base run's top words at the [MASK], with their probabilities
    after: list[tuple[str, float]]  # the base run with the source's coordinates along the basis swapped in
    source: list[tuple[str, float]]  # the source run's own top words


@torch.no_grad()
def live_swap(model: Bert, tokenizer: BertTokenizer, base: str, source: str, hook: str, position: Position,
              basis: torch.Tensor | None, top: int = TOP_WORDS) -> LiveSwap:
    """Three forward passes: the source (its vector at the hook recorded), the base, and the base with the
    source's coordinates along `basis` swapped in at the position (a token index, "mask", "differs" or "subject",
    the last word piece of the first word that differs; basis None:
    the whole vector). InvalidInputError when the two sentences do not line up or the model has no masked-LM head."""
    if not model.has_mlm_head:
        raise InvalidInputError("a live swap reads the masked-word logits: load a model with a masked-LM head")
    base_encoding, source_encoding, mask, differs = line_up(tokenizer, base, source, model.config.max_position_embeddings)
    if position == "subject":  # typed sentences name no subject: the first word that differs stands for it
        at = last_piece(base_encoding, base, first_differing_word(base, source))
    else:
        at = {"mask": mask, "differs": differs}.get(position, position)
    if not isinstance(at, int) or not 0 <= at < len(base_encoding):
        raise InvalidInputError(f"position must be a token index of the sentence, mask, differs or subject, not {position!r}")
    device = model_device(model)

    def run(encoding, names=(), interventions=None):
        input_ids = torch.tensor([encoding.input_ids], device=device)
        token_type_ids = torch.tensor([encoding.token_type_ids], device=device)
        at_mask = torch.zeros_like(input_ids, dtype=torch.bool)
        at_mask[0, mask] = True
        logits, cache = model.run_with_cache(input_ids, token_type_ids, None, names=list(names),
                                             interventions=interventions, logit_mask=at_mask, output="mlm")
        return logits[0].float().softmax(-1), cache

    source_probabilities, cache = run(source_encoding, [hook])
    wanted = cache[hook][:, at]  # [1, hidden]
    before, _ = run(base_encoding)
    swap = interchange(torch.tensor([at], device=device), wanted, None if basis is None else basis.to(device))
    after, _ = run(base_encoding, interventions={hook: swap})
    return LiveSwap(list(base_encoding.tokens), at, _top(tokenizer, before, top), _top(tokenizer, after, top),
                    _top(tokenizer, source_probabilities, top))


def _top(tokenizer: BertTokenizer, probabilities: torch.Tensor, count: int) -> list[tuple[str, float]]:
    values, ids = probabilities.topk(count)
    return [(tokenizer.id_to_token(i), float(v)) for v, i in zip(values.tolist(), ids.tolist())]
