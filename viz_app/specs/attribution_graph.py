"""The page "How did it get to that guess?" (address `attribution_graph`): the attribution graph of the sentence's one
[MASK] (bert/analysis/tracing/: every MLP replaced by its transcoder, attention frozen and LayerNorms linearised at the run,
every edge an exact additive contribution; Ameisen et al. 2025), pruned by influence with the page's two
thresholds, drawn with layers as rows and token positions as columns; a feature clicked is switched off in the real
model (the transcoders spliced in) and the measured change of the target is shown beside the graph's prediction;
features picked together are drawn as one named supernode (bert/analysis/tracing/supernodes.py), and the graph
goes out as circuit-tracer's JSON with each feature's label and the supernode. Its spec (viz_app/specs/base.py). Plain Python."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import torch

from bert.analysis.tracing.ablation import ablation_logits, predicted_ablation
from bert.analysis.tracing.attribution_graph import AttributionGraph, graph_cost, graph_of_encoding, target_for
from bert.analysis.tracing.graph_json import graph_json
from bert.analysis.tracing.graph_pruning import graph_scores, prune
from bert.analysis.tracing.replacement import freeze, read_target
from bert.analysis.tracing.shipped import OWN_FOLDER, transcoders_for
from bert.analysis.tracing.supernodes import Supernode, merge_nodes
from bert.analysis.tracing.transcoder import Transcoders, load_transcoders, read_config
from bert.analysis.tracing.transcoder_labels import read_feature_labels
from bert.costs import Cost
from bert.devices import model_device
from bert.errors import InvalidInputError
from viz_app.charts.attribution_graph import graph_chart
from viz_app.charts.base import Chart
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting, within

NAME = "attribution_graph"
LESSON_CHARTS = ("graph",)
CAPS = (50, 100, 200, 400, 800)  # the most active features a graph keeps (the rest go into the error nodes)
THRESHOLDS = tuple(range(50, 100)) + (100,)  # the pruning thresholds offered, in percent of the influence
MOST_EDGES = 300  # edges drawn at most, the largest |weight| of those pruning keeps
PROMOTED = 3  # words a feature's hover names
MAX_NAME = 60  # characters of a supernode's name
TOP_WORDS = 5
SUM_NOTE = ("Why the biases can hold most of the score: LayerNorm rescales what enters it to a fixed size, so growing "
            "everything that enters it together changes nothing. The graph replaces each LayerNorm by the straight "
            "line that touches it at your sentence, and that line's starting point, the LayerNorm's output in this "
            "very run, counts as a bias. Each edge then says how much its source's push changes the score, up or "
            "down: switching a feature off beside the graph measures the same change in the real model.")


def refusal(loaded) -> str | None:
    """Why this model gets no graph here, in one line, else None."""
    config = loaded.model.config
    if config.relative_attention:
        return "attribution graphs do not read DeBERTa's disentangled attention yet: choose another model"
    if not loaded.summary.has_mlm_head:
        return "an attribution graph explains a masked-LM guess: load a model with a masked-LM head"
    if transcoders_for(loaded.key.source, loaded.key.folder) is None:
        return ("No transcoders for this model. The shipped ones cover the built-in model (minilm) only; train a set for "
                f"this one with: python -m bert transcoders train --model MODEL --data TEXT --features 1024 --k 32 --out "
                f"MODEL/{OWN_FOLDER} (MODEL: the model's folder), then reload the page")
    return None


def transcoders_of(loaded) -> Transcoders:
    """The model's transcoders (the shipped ones, or its folder's); a BertError when they are for other weights."""
    return load_transcoders(transcoders_for(loaded.key.source, loaded.key.folder), loaded.model)


@dataclass(frozen=True)
class GraphWork:
    target: str  # the word whose logit at the [MASK] is explained; "": the model's top guess there
    foil: str  # "": none; else logit(target) − logit(foil)
    max_features: int  # the cap on active features (feature_cap.py)


@dataclass(frozen=True)
class GraphResult:
    graph: AttributionGraph
    answer: str  # the target word (the top guess when none was typed)
    promoted: dict  # feature node -> the words its decoder direction raises most (the masked-LM head read directly)
    labels: dict  # (layer, feature) -> its label (transcoder_labels.py: the word pieces it fires on most); {} without
    replacement_score: float
    completeness_score: float
    features: int  # features per layer of the transcoders
    k: int


def _tokens(inputs) -> int:
    return len(inputs.prepared.masked)


def graph_cost_of(inputs, work: GraphWork) -> Cost:
    """The top guess (one pass), then the graph: one pass, the batched backward passes of its receivers."""
    config = read_config(transcoders_for(inputs.loaded.key.source, inputs.loaded.key.folder))
    tokens = _tokens(inputs)
    return Cost(1, tokens) + graph_cost(inputs.loaded.model.config, tokens, config.k, max_features=work.max_features)


def top_guess(model, tokenizer, encoding) -> str:
    """The model's most likely word at the input's one [MASK] (one forward pass)."""
    masks = tokenizer.mask_positions(encoding)
    if len(masks) != 1:
        raise InvalidInputError(f"the sentence has {len(masks)} [MASK]; it needs exactly one, where the guess goes")
    position = masks[0]
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    mask = torch.zeros_like(input_ids, dtype=torch.bool)
    mask[0, position] = True
    with torch.no_grad():
        logits = model(input_ids, token_type_ids, logit_mask=mask, output="mlm")
    return tokenizer.id_to_token(int(logits[0].argmax()))


def compute_graph(inputs: Inputs, work: GraphWork) -> GraphResult:
    loaded = inputs.loaded
    model, tokenizer, encoding = loaded.model, loaded.tokenizer, inputs.prepared.masked
    transcoders = transcoders_of(loaded)
    answer = work.target or top_guess(model, tokenizer, encoding)
    graph = graph_of_encoding(model, tokenizer, transcoders, encoding, answer, work.foil or None,
                              max_features=work.max_features)
    graph.text = inputs.prepared.text
    replacement_score, completeness_score = graph_scores(graph)
    labels = read_feature_labels(transcoders_for(loaded.key.source, loaded.key.folder), transcoders.config)
    kept = {(int(layer), int(feature)) for layer, _, feature in graph.features.tolist()}
    return GraphResult(graph, answer, promoted_words(model, tokenizer, transcoders, graph),
                       {key: label for key, label in labels.items() if key in kept}, replacement_score,
                       completeness_score, transcoders.config.features, transcoders.config.k)


@torch.no_grad()
def promoted_words(model, tokenizer, transcoders: Transcoders, graph: AttributionGraph) -> dict:
    """feature node -> the PROMOTED words whose masked-LM logits its decoder direction raises most, read by the
    head directly from the transcoder's bias (the logit lens; nostalgebraist 2020), skipping the later layers."""
    device = model_device(model)
    words = {}
    for start in range(0, graph.num_features, 64):
        rows = graph.features[start : start + 64]
        base = torch.stack([transcoders.b_dec[layer] / transcoders.output_scale[layer] for layer in rows[:, 0].tolist()])
        directions = torch.stack([transcoders.feature_direction(layer, feature) for layer, _, feature in rows.tolist()])
        before = model.lm_head(model.final_hidden(base.to(device)))
        after = model.lm_head(model.final_hidden((base + directions).to(device)))
        for offset, ids in enumerate((after - before).topk(PROMOTED, dim=-1).indices.tolist()):
            words[start + offset] = [tokenizer.id_to_token(i) for i in ids]
    return words


@dataclass(frozen=True)
class AblationWork:
    graph: GraphWork
    answer: str  # the target word the graph explains
    node: str  # "layer:position:feature"


@dataclass(frozen=True)
class Ablation:
    frozen_change: float  # the target's change measured with attention frozen at the run
    live_change: float  # ... with attention live
    before: list  # the top words and probabilities at the [MASK]: the run
    after: list  # ... with the feature switched off (attention live)


def parse_node(node: str) -> tuple[int, int, int]:
    """"3:5:117" -> (layer 3, position 5, feature 117); InvalidInputError for anything else."""
    parts = node.split(":")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise InvalidInputError(f"not a feature node: {node!r}")
    layer, position, feature = map(int, parts)
    return layer, position, feature


def node_name(graph: AttributionGraph, index: int) -> str:
    layer, position, feature = graph.features[index].tolist()
    return f"{layer}:{position}:{feature}"


@torch.no_grad()
def compute_ablation(inputs: Inputs, work: AblationWork) -> Ablation:
    """The real model with every MLP replaced by its transcoder plus the run's error, the feature switched off:
    every later feature chosen afresh, LayerNorms live; attention frozen at the run, then live (ablation.py)."""
    loaded = inputs.loaded
    model, tokenizer, encoding = loaded.model, loaded.tokenizer, inputs.prepared.masked
    transcoders = transcoders_of(loaded)
    target = target_for(tokenizer, encoding, work.answer, work.graph.foil or None)
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    frozen = freeze(model, transcoders, input_ids, token_type_ids, target)
    layer, position, feature = parse_node(work.node)
    active = frozen.features[layer] if 0 <= layer < frozen.num_layers else torch.zeros(0, 2, dtype=torch.long)
    match = ((active[:, 0] == position) & (active[:, 1] == feature)).nonzero()
    if len(match) == 0:
        raise InvalidInputError(f"feature {feature} of layer {layer} is not active at position {position}")
    index = int(match[0, 0])
    changes, tops = [], []
    for frozen_attention in (True, False):
        run, ablated = ablation_logits(model, transcoders, frozen, input_ids, token_type_ids, layer, index, frozen_attention)
        changes.append(float(read_target(ablated, target) - read_target(run, target)))
    for logits in (run, ablated):
        values, ids = logits.softmax(-1).topk(TOP_WORDS)
        tops.append([(tokenizer.id_to_token(i), float(v)) for v, i in zip(values, ids.tolist())])
    return Ablation(changes[0], changes[1], tops[0], tops[1])


GRAPH = Computation("attribution_graph.graph", lambda work: "the attribution graph", cost=graph_cost_of,
                    compute=compute_graph, work=GraphWork)
ABLATION = Computation("attribution_graph.ablation", lambda work: "the guess with one feature switched off",
                       cost=lambda inputs, work: Cost(5, _tokens(inputs)), compute=compute_ablation, work=AblationWork)


@dataclass(frozen=True)
class Settings:
    target: str
    foil: str
    max_features: int
    node_threshold: int  # percent
    edge_threshold: int  # percent
    node: str = ""  # the feature switched off, "layer:position:feature"; "": none
    merged: tuple = ()  # features drawn as one supernode, each "layer:position:feature"; fewer than two: none
    merged_name: str = ""  # the supernode's name ("": "supernode")

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        cap = setting(state, "graph_max_features")
        nodes, edges = setting(state, "graph_node_threshold"), setting(state, "graph_edge_threshold")
        return cls(str(setting(state, "graph_target") or "").strip(), str(setting(state, "graph_foil") or "").strip(),
                   cap if cap in CAPS else 200, nodes if nodes in THRESHOLDS else 80, edges if edges in THRESHOLDS else 98,
                   str(setting(state, "graph_node") or ""), tuple(str(n) for n in setting(state, "graph_merged") or ()),
                   str(setting(state, "graph_merged_name") or "").strip()[:MAX_NAME])

    @property
    def graph_work(self) -> GraphWork:
        return GraphWork(self.target, self.foil, self.max_features)


def computations(settings: Settings, answer: str | None = None) -> Planned:
    """"graph" always; "ablation" when a node is chosen and the graph's answer is known."""
    planned: Planned = {"graph": (GRAPH, settings.graph_work)}
    if settings.node and answer is not None:
        planned["ablation"] = (ABLATION, AblationWork(settings.graph_work, answer, settings.node))
    return planned


def pruned_view(result: GraphResult, settings: Settings):
    return prune(result.graph, settings.node_threshold / 100, settings.edge_threshold / 100)


def node_words(result: GraphResult, index: int) -> str:
    """A node in words, plain text: what it is, where, and (a feature) its label and what it raises."""
    graph = result.graph
    info = graph.describe(index)
    token = graph.tokens[info["position"]]
    if info["kind"] == "feature":
        words = ", ".join(result.promoted.get(index, []))
        label = result.labels.get((info["layer"], info["feature"]))
        fires = f"fires most on: {label}; " if label else ""
        return (f"feature {info['feature']} of layer {info['layer']}'s transcoder at “{token}” (position {info['position']}); "
                f"activation {float(graph.activations[index]):.2f}; {fires}raises the words {words}")
    if info["kind"] == "error":
        return f"layer {info['layer']}'s MLP error at “{token}”: what its transcoder misses"
    if info["kind"] == "embedding":
        return f"the input embedding of “{token}” (position {info['position']})"
    return f"the target: {graph.target_label} at the [MASK], {float(graph.inputs[index]):.3f}"


def supernode_of(result: GraphResult, settings: Settings) -> Supernode | None:
    """The features picked to merge that are in the graph, as one named supernode of graph nodes; None with fewer
    than two."""
    graph, members = result.graph, set()
    for name in settings.merged:
        try:
            members.add(graph.feature_index(*parse_node(name)))
        except InvalidInputError:  # a link may name a feature this graph does not have
            continue
    return Supernode(settings.merged_name or "supernode", tuple(sorted(members))) if len(members) >= 2 else None


def _drawn_node(result: GraphResult, pruned, index: int) -> dict:
    graph = result.graph
    info = graph.describe(index)
    return {"id": node_name(graph, index) if info["kind"] == "feature" else f"{info['kind']}:{index}",
            "kind": info["kind"], "layer": info["layer"], "position": info["position"],
            "influence": 1.0 if info["kind"] == "target" else float(pruned.influence[index]),
            "words": node_words(result, index), "index": index}


def _merged_node(result: GraphResult, supernode: Supernode, members: list[dict]) -> dict:
    """A supernode drawn: on the row and column nearest its members' mean, its influence their sum."""
    listed = "; ".join(node_label(result, member["id"]) for member in members)
    return {"id": f"supernode:{supernode.name}", "kind": "supernode",
            "layer": round(sum(m["layer"] for m in members) / len(members)),
            "position": round(sum(m["position"] for m in members) / len(members)),
            "influence": sum(m["influence"] for m in members), "index": -1,
            "words": f"supernode “{supernode.name}”, {len(members)} features: {listed}"}


def shown_nodes(result: GraphResult, settings: Settings) -> tuple[list[dict], list[dict]]:
    """(nodes, edges) the chart draws: the nodes pruning keeps, each {"id", "kind", "layer", "position", "influence",
    "words"}, the picked features that pruning keeps merged into one supernode (kind "supernode", its edges the sums
    of its members'; supernodes.merge_nodes); the edges pruning keeps among them, the MOST_EDGES largest |weight|,
    each {"from", "to", "weight"}."""
    graph = result.graph
    pruned = pruned_view(result, settings)
    kept = pruned.nodes.nonzero()[:, 0].tolist()
    place = {node: row for row, node in enumerate(kept)}
    weights = (graph.adjacency * pruned.edges)[kept][:, kept]  # [kept receiver, kept source]
    supernode = supernode_of(result, settings)
    local = [] if supernode is None else [place[member] for member in supernode.members if member in place]
    merged, groups = merge_nodes(weights, [Supernode(supernode.name, tuple(local))] if len(local) >= 2 else [])
    nodes = []
    for members in groups:
        drawn = [_drawn_node(result, pruned, kept[row]) for row in members]
        nodes.append(drawn[0] if len(drawn) == 1 else _merged_node(result, supernode, drawn))
    receivers, sources = merged.nonzero(as_tuple=True)
    values = merged[receivers, sources]
    order = values.abs().argsort(descending=True)[:MOST_EDGES].tolist()
    edges = [{"from": nodes[int(sources[i])]["id"], "to": nodes[int(receivers[i])]["id"], "weight": float(values[i])}
             for i in order]
    return nodes, edges


def graph_export(result: GraphResult, settings: Settings, vocab_size: int, model_name: str) -> str:
    """circuit-tracer's graph JSON of the pruned graph (graph_json.py): each feature's label as its "clerp", the
    supernode in qParams."""
    supernode = supernode_of(result, settings)
    graph = result.graph
    exported = graph_json(graph, pruned_view(result, settings), vocab_size, f"bert-{result.answer}", model_name,
                          settings.node_threshold / 100, result.labels, [] if supernode is None else [supernode])
    return json.dumps(exported, indent=1, ensure_ascii=False) + "\n"


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"graph": the pruned graph."""
    result: GraphResult = results["graph"]
    graph = result.graph
    nodes, edges = shown_nodes(result, settings)
    title = (f"How the model reaches {graph.target_label} at the [MASK]: {sum(n['kind'] == 'feature' for n in nodes)} "
             f"of {graph.num_features} features kept")
    return {"graph": graph_chart(nodes, edges, list(graph.tokens), graph.num_layers, title,
                                 f"attribution_graph_{settings.node_threshold}_{settings.edge_threshold}", settings.node)}


def feature_nodes(result: GraphResult, settings: Settings) -> list[str]:
    """The picker's values: "" (none), then each feature node pruning keeps, most influential first."""
    nodes, _ = shown_nodes(result, replace(settings, merged=()))
    features = sorted((n for n in nodes if n["kind"] == "feature"), key=lambda n: -n["influence"])
    return ["", *(n["id"] for n in features)]


def node_label(result: GraphResult, node: str) -> str:
    if not node:
        return "nothing"
    layer, position, feature = parse_node(node)
    return f"layer {layer}, feature {feature} at “{result.graph.tokens[position]}” ({position})"


def predicted(result: GraphResult, node: str) -> tuple[float, float]:
    """The graph's predicted change of the target when the feature is switched off: (every other node kept, later
    features following linearly)."""
    index = result.graph.feature_index(*parse_node(node))
    return predicted_ablation(result.graph, index, "fixed"), predicted_ablation(result.graph, index, "linear")


def ablation_text(result: GraphResult, node: str, ablation: Ablation) -> str:
    """The measured change beside the predicted one, plain text (shown with st.text)."""
    fixed, linear = predicted(result, node)
    before, after = ("\n".join(f"  {word} {p:.2f}" for word, p in top) for top in (ablation.before, ablation.after))
    return (f"{node_label(result, node)} switched off.\n\nChange of {result.graph.target_label}:\n"
            f"  the graph predicts {linear:+.3f} (later features following; {fixed:+.3f} with every other node kept)\n"
            f"  measured: {ablation.frozen_change:+.3f} with attention frozen, {ablation.live_change:+.3f} with it live\n\n"
            f"Top words before:\n{before}\nTop words after (attention live):\n{after}")


def clicked_node(event: Mapping[str, Any], offered: Sequence[str]) -> str | None:
    """The picker's value for a click on a feature node (its customdata), else None."""
    points = ((event or {}).get("selection") or {}).get("points") or []
    for point in reversed(points):
        name = point.get("customdata")
        if isinstance(name, (list, tuple)):
            name = name[0] if name else None
        if isinstance(name, str) and name and name in offered:
            return name
    return None

