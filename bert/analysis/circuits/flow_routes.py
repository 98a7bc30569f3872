"""Information flow routes (Ferrando & Voita 2024): from one forward pass, the paths along which the prediction at
a position is built, a cheap first look before edge patching.

    routes = information_flow_routes(model, tokenizer, encoding, threshold=0.04)   # from the [MASK], by ALTI
    routes.edges   # [(layer, from position, to position, share)]: in layer `layer`, position `to` takes `share`
                   # of its output from position `from` (hidden_states[layer] -> hidden_states[layer + 1])

The nodes are the residual stream at each layer and position; an edge's importance is a per-token contribution
the project already computes (bert/analysis/attention/mixing.py: ALTI by default, Ferrando et al. 2022, the
measure Ferrando & Voita use; rows made shares). Built top-down: from the target position after the last layer,
every edge whose share is at least `threshold` into a node already on a route is kept, and its source joins the
routes, layer by layer down to the embeddings. Token to token only: the heads and MLPs within a layer are inside
each share (edge_scores.py scores those).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...costs import Cost
from ...devices import model_device
from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from ..attention.mixing import context_mixing, mixing_cost, record_for_mixing


@dataclass(frozen=True)
class FlowRoutes:
    tokens: list[str]
    method: str
    threshold: float
    target: int  # the position the routes end at (after the last layer)
    num_layers: int
    edges: list[tuple[int, int, int, float]]  # (layer, from position, to position, share)

    def nodes(self) -> set[tuple[int, int]]:
        """(hidden_states index, position) of every node on a route (0: the embeddings)."""
        return {(self.num_layers, self.target)} | {(layer, source) for layer, source, _, _ in self.edges} | {(layer + 1, to) for layer, _, to, _ in self.edges}

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "method": self.method, "threshold": self.threshold, "target": self.target,
                "edges": [{"layer": layer, "from": source, "to": to, "share": share} for layer, source, to, share in self.edges]}


def routes_from_mixing(layers: np.ndarray, target: int, threshold: float) -> list[tuple[int, int, int, float]]:
    """The routes in [layer, query, key] contributions (rows made shares): edges (layer, key, query, share), top
    layer first."""
    shares = np.abs(layers) / np.maximum(np.abs(layers).sum(axis=-1, keepdims=True), np.finfo(float).tiny)
    edges, frontier = [], {target}
    for layer in range(shares.shape[0] - 1, -1, -1):
        sources = set()
        for query in sorted(frontier):
            for key in np.flatnonzero(shares[layer, query] >= threshold):
                edges.append((layer, int(key), query, float(shares[layer, query, key])))
                sources.add(int(key))
        frontier = sources
    return edges


def information_flow_routes(model: Bert, tokenizer: BertTokenizer, encoding: Encoding, target: int | None = None,
                            threshold: float = 0.04, method: str = "alti") -> FlowRoutes:
    """The routes into `target` (None: the [MASK], which must be one) of one sentence, by `method`'s contributions."""
    if not 0 < threshold <= 1:
        raise InvalidInputError(f"the threshold is a share between 0 and 1 (Ferrando & Voita use 0.04), not {threshold}")
    if target is None:
        masks = tokenizer.mask_positions(encoding)
        if len(masks) != 1:
            raise InvalidInputError(f"the sentence has {len(masks)} [MASK]; give one, or the target position")
        target = masks[0]
    if not 0 <= target < len(encoding):
        raise InvalidInputError(f"the target position must be from 0 to {len(encoding) - 1}, not {target}")
    _, cache = record_for_mixing(model, *encoding.tensors(model_device(model)))
    mixing = context_mixing(model, cache, method)
    return FlowRoutes(list(encoding.tokens), method, threshold, target, model.config.num_layers, routes_from_mixing(mixing.layers, target, threshold))


def flow_routes_cost(tokens: int, method: str = "alti") -> Cost:
    """One recorded pass and the method's arithmetic (mixing_cost)."""
    return mixing_cost(method, tokens)
