"""The recorded pass several page specs read (viz_app/specs/base.py): one forward pass of the page's input that
keeps the predictions at each [MASK] and every head's q and k (`PREDICTIONS`: the prediction and attention pages),
or those and the MLP activations and the three embeddings too (`FULL`: the MLP and embeddings pages). Each is a
`shared` computation: kept once per model and input, read-only, for every session (viz_app/cache.py). Plain Python."""
from __future__ import annotations

from dataclasses import dataclass

from bert.config import BertConfig
from bert.costs import FLOAT_BYTES, Cost
from viz_app.app.forward import TOP_K_STORED, record
from viz_app.specs.base import Computation, Inputs


@dataclass(frozen=True)
class Pass:
    activations: bool  # the MLP activations and the embeddings recorded too


def _cost(inputs: Inputs, work: Pass) -> Cost:
    """One pass, keeping `recorded_bytes`."""
    tokens, masks = len(inputs.prepared.masked), len(inputs.prepared.all_masks)
    kept = recorded_bytes(inputs.loaded.model.config, tokens, work.activations) + masks * TOP_K_STORED * FLOAT_BYTES
    return Cost(1, tokens, ("a shorter text",), kept_bytes=kept)


def recorded_bytes(config: BertConfig, tokens: int, activations: bool) -> int:
    """What a recorded pass of T = `tokens` tokens keeps (viz_app/app/forward.py's ForwardResult, float32): every
    head's queries and keys, 2·layers·T·hidden; the patterns, computed once a page reads them (or recorded, for
    relative attention), layers·heads·T²; with `activations`, every layer's MLP activations, layers·T·intermediate,
    and the three embeddings, 3·T·hidden (the guesses at the [MASK]s, TOP_K_STORED numbers each, come beside)."""
    layers, hidden = config.num_layers, config.hidden_size
    numbers = 2 * layers * tokens * hidden + layers * config.num_heads * tokens * tokens
    if activations:
        numbers += layers * tokens * config.intermediate_size + 3 * tokens * hidden
    return numbers * FLOAT_BYTES


def _record(inputs: Inputs, work: Pass):
    return record(inputs.loaded.model, inputs.loaded.tokenizer, inputs.prepared, activations=work.activations)


RECORDED = Computation("recorded.pass", lambda work: "The model's pass over the sentence", cost=_cost,
                       compute=_record, shared=True, work=Pass)
PREDICTIONS = (RECORDED, Pass(activations=False))  # (computation, work), as a spec's `computations` lists it
FULL = (RECORDED, Pass(activations=True))
