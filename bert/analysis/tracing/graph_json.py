"""An attribution graph as circuit-tracer's graph JSON (the format its local viewer and Neuronpedia's read; the
pydantic models of `circuit_tracer.frontend.graph_models`, circuit-tracer 0.5.0).

{"metadata": {"slug", "scan", "transcoder_list", "prompt_tokens", "prompt", "node_threshold", "schema_version"},
 "qParams": {"pinnedIds", "supernodes", "linkType", "clickedId", "sg_pos"},
 "nodes": [{"node_id", "feature", "layer", "ctx_idx", "feature_type", "token_prob", "is_target_logit", "run_idx",
            "reverse_ctx_idx", "jsNodeId", "clerp", "influence", "activation"}],
 "links": [{"source", "target", "weight"}]}

Node ids as circuit-tracer writes them: a feature "{layer}_{feature}_{position}" (its "feature" the Cantor pairing
of layer and feature), an error "0_{layer}_{position}", an embedding "E_{token id}_{position}", the target
"{layers + 1}_{token id}_{position}" (answer − foil: the virtual id vocab_size, as circuit-tracer numbers a target
that is not one token). "influence" is the node's cumulative share of influence (graph_pruning.prune), "clerp"
the feature's label when one is given (a feature without a label has ""; transcoder_labels.py). Only kept nodes
and edges are written; the embeddings and the target always. Supernodes (supernodes.py) go where circuit-tracer's
viewer reads them: `qParams.supernodes`, each [name, member node id, ...] (its members that are written), and
their members in `qParams.pinnedIds` (the viewer merges pinned nodes only).
"""
from __future__ import annotations

from typing import Sequence

from .attribution_graph import AttributionGraph
from .graph_pruning import PrunedGraph
from .supernodes import Supernode, groups_of


def _cantor(x: int, y: int) -> int:
    return (x + y) * (x + y + 1) // 2 + y


def node_id(graph: AttributionGraph, node: int, vocab_size: int) -> str:
    info = graph.describe(node)
    if info["kind"] == "feature":
        return f"{info['layer']}_{info['feature']}_{info['position']}"
    if info["kind"] == "error":
        return f"0_{info['layer']}_{info['position']}"
    if info["kind"] == "embedding":
        return f"E_{graph.input_ids[info['position']]}_{info['position']}"
    return f"{graph.num_layers + 1}_{_target_id(graph, vocab_size)}_{graph.target.position}"


def _target_id(graph: AttributionGraph, vocab_size: int) -> int:
    return graph.target.token if graph.target.foil is None else vocab_size


def _node(graph: AttributionGraph, pruned: PrunedGraph, node: int, vocab_size: int, labels: dict) -> dict:
    info, identifier = graph.describe(node), node_id(graph, node, vocab_size)
    common = {"node_id": identifier, "ctx_idx": info["position"], "run_idx": 0, "reverse_ctx_idx": 0,
              "influence": float(pruned.cumulative[node]), "token_prob": 0.0, "is_target_logit": False, "clerp": ""}
    kind = info["kind"]
    if kind == "feature":
        layer, feature = info["layer"], info["feature"]
        return common | {"feature": _cantor(layer, feature), "layer": str(layer), "feature_type": "cross layer transcoder",
                         "jsNodeId": f"{layer}_{feature}-0", "clerp": str(labels.get((layer, feature), "")),
                         "activation": float(graph.activations[node])}
    if kind == "error":
        return common | {"feature": -1, "layer": str(info["layer"]), "feature_type": "mlp reconstruction error",
                         "jsNodeId": f"{info['layer']}_{info['position']}-0", "activation": None}
    if kind == "embedding":
        token = graph.input_ids[info["position"]]
        return common | {"feature": info["position"], "layer": "E", "feature_type": "embedding",
                         "jsNodeId": f"E_{token}-{info['position']}", "activation": None}
    target = _target_id(graph, vocab_size)
    return common | {"feature": target, "layer": str(graph.num_layers + 1), "feature_type": "logit",
                     "jsNodeId": f"L_{target}-{graph.target.position}", "token_prob": graph.target_probability,
                     "is_target_logit": True, "activation": None,
                     "clerp": f'Output "{graph.target_label}" (p={graph.target_probability:.3f})', "influence": None}


def graph_json(graph: AttributionGraph, pruned: PrunedGraph, vocab_size: int, slug: str, scan: str,
               node_threshold: float, labels: dict | None = None, supernodes: Sequence[Supernode] = ()) -> dict:
    """The JSON-ready dict. labels: {(layer, feature): text} for the nodes' "clerp"; supernodes: groups of the
    graph's nodes, named."""
    labels = labels or {}
    kept = pruned.nodes.nonzero()[:, 0].tolist()
    nodes = [_node(graph, pruned, node, vocab_size, labels) for node in kept]
    ids = {node: entry["node_id"] for node, entry in zip(kept, nodes)}
    receivers, sources = pruned.edges.nonzero().unbind(1)
    links = [{"source": ids[source], "target": ids[receiver], "weight": float(graph.adjacency[receiver, source])}
             for receiver, source in zip(receivers.tolist(), sources.tolist()) if source in ids and receiver in ids]
    used = {link["source"] for link in links} | {link["target"] for link in links}
    nodes = [n for n in nodes if n["node_id"] in used or n["feature_type"] in ("embedding", "logit")]
    metadata = {"slug": slug, "scan": scan, "transcoder_list": [], "prompt_tokens": graph.tokens,
                "prompt": graph.text or " ".join(graph.tokens), "node_threshold": node_threshold, "schema_version": 1}
    groups_of(graph.num_nodes, supernodes)  # refuses an empty group, a node outside the graph or one in two groups
    written = {entry["node_id"] for entry in nodes}
    grouped = [[supernode.name, *(ids[m] for m in sorted(set(supernode.members)) if m in ids and ids[m] in written)]
               for supernode in supernodes]
    grouped = [group for group in grouped if len(group) > 1]
    query = {"pinnedIds": [member for group in grouped for member in group[1:]], "supernodes": grouped, "linkType": "both",
             "clickedId": "", "sg_pos": ""}
    return {"metadata": metadata, "qParams": query, "nodes": nodes, "links": links}
