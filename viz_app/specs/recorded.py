"""The recorded pass several page specs read (viz_app/specs/base.py): one forward pass of the page's input that
keeps the predictions at each [MASK] and every head's q and k (`PREDICTIONS`: the prediction and attention pages),
or those and the MLP activations and the three embeddings too (`FULL`: the MLP and embeddings pages). Each is a
`shared` computation: kept once per model and input, read-only, for every session (viz_app/cache.py). Plain Python."""
from __future__ import annotations

from dataclasses import dataclass

from bert.costs import Cost
from viz_app.app.forward import record
from viz_app.specs.base import Computation, Inputs


@dataclass(frozen=True)
class Pass:
    activations: bool  # the MLP activations and the embeddings recorded too


def _cost(inputs: Inputs, work: Pass) -> Cost:
    return Cost(1, len(inputs.prepared.masked))


def _record(inputs: Inputs, work: Pass):
    return record(inputs.loaded.model, inputs.loaded.tokenizer, inputs.prepared, activations=work.activations)


RECORDED = Computation("recorded.pass", lambda work: "The model's pass over the sentence", cost=_cost,
                       compute=_record, shared=True, work=Pass)
PREDICTIONS = (RECORDED, Pass(activations=False))  # (computation, work), as a spec's `computations` lists it
FULL = (RECORDED, Pass(activations=True))
