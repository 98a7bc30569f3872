"""The page "Which connections carry the answer?" (address `circuits`): the circuit graph of a clean/counterfactual
pair (bert/analysis/circuits/: exact edge patching, EAP or EAP-IG), its strongest edges drawn with layers as
columns, the faithfulness curve against a random circuit (CPR, CMD; Mueller et al. 2025), and one edge or node
patched live to watch the [MASK]'s prediction change. Its spec (viz_app/specs/base.py). Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

from bert.analysis.causal.patching import Contrast, prepare_contrast
from bert.analysis.circuits.edge_scores import edge_scores, edge_scores_cost, pair_runs, read_metric
from bert.analysis.circuits.encoder_parts import EncoderParts
from bert.analysis.circuits.faithfulness import faithfulness_cost, faithfulness_curve, random_ranking
from bert.analysis.circuits.graph import CircuitGraph
from bert.analysis.circuits.graph_run import run_graph
from bert.analysis.circuits.tasks import PairText, builtin_pairs
from bert.costs import Cost
from bert.errors import BertError
from viz_app.app.models import LoadedModel
from viz_app.charts.base import Chart
from viz_app.charts.circuits import circuit_graph, faithfulness_chart, node_title, possessive, reader_title
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting, within

NAME = "circuits"
PAIRS = builtin_pairs()  # bert/data/circuit_pairs.tsv
OWN = -1  # the pair index of the visitor's own pair
# The methods the page offers; EAP-IG-activations (1 + 2 x layers times EAP-IG's passes) is the library's and the CLI's.
METHOD_TITLES = {"exact": "exact edge patching", "eap": "EAP (Syed et al. 2023)",
                 "eap-ig": "EAP-IG (Hanna et al. 2024)"}
MAX_STEPS, MAX_SHOWN = 50, 200
SPLIT = ("eap", "eap-ig")  # the methods whose scores the page splits over the sender's positions (per_position)
LESSON_CHARTS = ("graph", "faithfulness")
TOP_WORDS = 5


def pair_label(index: int) -> str:
    return "your own pair" if index == OWN else f"{PAIRS[index].task}: {PAIRS[index].clean}"


def refusal(loaded: LoadedModel) -> str | None:
    """Why this model's circuits cannot be read (DeBERTa's relative positions, no masked-LM head), else None."""
    try:
        EncoderParts.check(loaded.model)
    except BertError as problem:
        return str(problem)
    return None


def contrast_of(loaded: LoadedModel, pair: PairText) -> Contrast:
    """The pair checked and encoded by the model's tokenizer; a bad pair raises a BertError saying what to change."""
    return prepare_contrast(loaded.tokenizer, pair.clean, pair.corrupted, pair.answer, pair.foil,
                            loaded.model.config.max_position_embeddings)


@dataclass(frozen=True)
class ScoreWork:
    pair: PairText
    method: str  # a key of METHOD_TITLES
    steps: int  # EAP-IG's integration steps


@dataclass(frozen=True)
class CircuitResult:
    scores: Any  # bert.analysis.circuits.edge_scores.EdgeScores
    curve: Any  # FaithfulnessCurve of the method's ranking
    random: Any  # FaithfulnessCurve of a seeded random ranking (seed 0)


def _tokens(inputs: Inputs, pair: PairText) -> int:
    return len(contrast_of(inputs.loaded, pair).clean)


def scores_cost(inputs: Inputs, work: ScoreWork) -> Cost:
    """The edge scores, then two faithfulness curves (the method's circuits and the random ones)."""
    config, tokens = inputs.loaded.model.config, _tokens(inputs, work.pair)
    curve = faithfulness_cost(config, tokens)
    return edge_scores_cost(config, tokens, work.method, work.steps, per_position=work.method in SPLIT) + curve + curve


def compute_scores(inputs: Inputs, work: ScoreWork) -> CircuitResult:
    model, contrast = inputs.loaded.model, contrast_of(inputs.loaded, work.pair)
    scores = edge_scores(model, [contrast], work.method, steps=work.steps, per_position=work.method in SPLIT)
    curve = faithfulness_curve(model, [contrast], scores.scores, label=work.method)
    random = faithfulness_curve(model, [contrast], random_ranking(len(scores.graph)), label="random (seed 0)")
    return CircuitResult(scores, curve, random)


@dataclass(frozen=True)
class AblationWork:
    pair: PairText
    part: str  # "edge:<sender>-><receiver>" or "node:<sender>"


@dataclass(frozen=True)
class Ablation:
    metric: tuple[float, float]  # logit(answer) - logit(foil) at the [MASK]: clean run, with the part patched
    top: tuple[list[tuple[str, float]], list[tuple[str, float]]]  # the top words and probabilities, before and after


def patched_edges(graph: CircuitGraph, part: str) -> torch.Tensor:
    """bool [edge]: the edge named, or every outgoing edge of the node named; BertError for a name the graph lacks."""
    kind, _, name = part.partition(":")
    if kind == "edge":
        index = next((edge.index for edge in graph.edges if edge.name == name), None)
        if index is not None:
            return torch.nn.functional.one_hot(torch.tensor(index), len(graph)).bool()
    elif kind == "node" and any(node.name == name for node in graph.senders[1:]):
        return graph.outgoing()[graph.sender_index(name)]
    raise BertError(f"this model's graph has no {kind or 'part'} {name!r}")


@torch.no_grad()
def compute_ablation(inputs: Inputs, work: AblationWork) -> Ablation:
    """The clean run and the clean run with the part carrying the counterfactual's value (graph_run.py's exact
    patching: what the exact edge score measures)."""
    loaded = inputs.loaded
    parts, graph = EncoderParts.of(loaded.model), CircuitGraph.of(loaded.model.config)
    contrast = contrast_of(loaded, work.pair)
    runs = pair_runs(parts, graph, contrast, "logit-difference")
    mask = graph.mask(patched_edges(graph, work.part)[None].float())
    patched = run_graph(parts, graph, runs.embeddings["clean"], None, mask, runs.outputs["corrupted"])
    clean = run_graph(parts, graph, runs.embeddings["clean"], None)
    finals = (clean.final, patched.final)
    metrics = tuple(float(read_metric(parts, final, contrast, "logit-difference")[0]) for final in finals)
    tops = []
    for final in finals:
        probabilities = parts.logits(final[:, contrast.mask_position]).float().softmax(-1)[0]
        values, ids = probabilities.topk(TOP_WORDS)
        tops.append([(loaded.tokenizer.id_to_token(i), float(v)) for v, i in zip(values, ids.tolist())])
    return Ablation(metrics, tuple(tops))


SCORES = Computation("circuits.scores", lambda work: f"the edge scores by {METHOD_TITLES[work.method]}",
                     cost=scores_cost, compute=compute_scores, per_model=True, work=ScoreWork)
ABLATION = Computation("circuits.ablation", lambda work: f"the prediction with {work.part.partition(':')[2]} patched",
                       cost=lambda inputs, work: Cost(4, _tokens(inputs, work.pair)), compute=compute_ablation, per_model=True, work=AblationWork)


@dataclass(frozen=True)
class Settings:
    pair: PairText
    method: str
    steps: int
    shown: int  # edges drawn: the top `shown` by |score|
    part: str | None = None  # the edge or node patched live ("edge:..." / "node:..."), None: none

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        index = setting(state, "circuit_pair")
        if index == OWN:
            pair = PairText(*(str(setting(state, key) or "") for key in
                              ("circuit_clean", "circuit_corrupt", "circuit_answer", "circuit_foil")))
        else:
            pair = PAIRS[within(index, len(PAIRS), 0)]
        method = setting(state, "circuit_method")
        steps, shown = setting(state, "circuit_steps"), setting(state, "circuit_shown")
        return cls(pair, method if method in METHOD_TITLES else "eap-ig", min(MAX_STEPS, max(1, steps or 1)),
                   min(MAX_SHOWN, max(1, shown or 1)), setting(state, "circuit_part") or None)


def computations(settings: Settings) -> Planned:
    """"scores" always; "ablation" when a part is chosen."""
    planned: Planned = {"scores": (SCORES, ScoreWork(settings.pair, settings.method, settings.steps))}
    if settings.part:
        planned["ablation"] = (ABLATION, AblationWork(settings.pair, settings.part))
    return planned


POSITIONS_NAMED = 3  # an edge's sender positions named in its words, largest part of its score first
POSITION_SHARE = 0.05  # ... those that carry at least this share of its |parts| (the largest always)


def shown_edges(result: CircuitResult, count: int) -> list[dict]:
    """The `count` strongest edges as the graph draws them; "positions": the sender's positions that carry the
    largest parts of the score, [(position, token, part)], where the scores are split over positions (EAP, EAP-IG)."""
    scores = result.scores
    edges = []
    for edge, score in scores.top(count):
        drawn = {"from": edge.sender.name, "to": edge.receiver.node.name, "input": edge.receiver.input, "score": score,
                 "name": edge.name}
        if scores.positions is not None:
            parts = scores.positions[edge.index]
            order = parts.abs().argsort(descending=True, stable=True)[:POSITIONS_NAMED].tolist()
            least = POSITION_SHARE * float(parts.abs().sum())
            drawn["positions"] = [(position, scores.tokens[position], float(parts[position])) for number, position
                                  in enumerate(order) if number == 0 or abs(float(parts[position])) >= least]
        edges.append(drawn)
    return edges


def metric_words(pair: PairText) -> str:
    """"logit(are) − logit(is)": the metric the scores change, in words."""
    return f"logit({pair.answer}) − logit({pair.foil})"


def colour_scale(result: CircuitResult) -> float:
    """The graph's colour scale, ± this: the whole change from the clean run to the counterfactual one, a fact of
    the pair (and the model), whatever the method, its steps or the edges drawn."""
    return abs(result.scores.clean_metric - result.scores.corrupted_metric)


def picker_parts(result: CircuitResult, shown: int) -> list[str]:
    """The picker's values: "" (nothing), each drawn edge ("edge:<name>"), each node but the embeddings
    ("node:<name>")."""
    return ["", *(f"edge:{edge['name']}" for edge in shown_edges(result, shown)),
            *(f"node:{node.name}" for node in result.scores.graph.senders[1:])]


def clicked_part(event: Mapping[str, Any], parts: Sequence[str]) -> str | None:
    """The picker's value for a click on the graph: Streamlit's selection event ({"selection": {"points": [{
    "customdata": ..., ...}]}}) names the clicked marker in its customdata (viz_app/charts/circuits.py); the
    last point that names one of `parts` wins. None: no point, or one the picker does not offer (the embeddings,
    the logits, a line)."""
    points = ((event or {}).get("selection") or {}).get("points") or []
    for point in reversed(points):
        name = point.get("customdata")
        if isinstance(name, (list, tuple)):
            name = name[0] if name else None
        if isinstance(name, str) and name and name in parts:
            return name
    return None


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"graph" (the top `settings.shown` edges) and "faithfulness" (the method's curve and the random one)."""
    result: CircuitResult = results["scores"]
    scores, graph = result.scores, result.scores.graph
    nodes = [node_fields(node) | {"score": float(scores.nodes[index]) if index < len(scores.nodes) else 0.0}
             for index, node in enumerate(graph.nodes)]
    method = METHOD_TITLES[scores.method] + (f", {scores.steps} steps" if scores.steps else "")
    charts = {"graph": circuit_graph(nodes, shown_edges(result, settings.shown), graph.num_layers, graph.num_heads,
                                     f"The {settings.shown} strongest edges of {len(graph):,} ({method})",
                                     f"circuit_{scores.method}_top_{settings.shown}", colour_scale(result),
                                     metric_words(settings.pair), settings.part)}
    curves = [(f"{scores.method}: CPR {result.curve.cpr:.3f}, CMD {result.curve.cmd:.3f}", result.curve.fractions,
               result.curve.kept),
              (f"random: CPR {result.random.cpr:.3f}, CMD {result.random.cmd:.3f}", result.random.fractions,
               result.random.kept)]
    charts["faithfulness"] = faithfulness_chart(curves, "How much of the behaviour the top edges keep",
                                                f"circuit_faithfulness_{scores.method}")
    return charts


def node_fields(node) -> dict:
    """A graph node (bert/analysis/circuits/graph.py) as the chart reads it."""
    return {"name": node.name, "kind": node.kind, "layer": node.layer, "head": node.head}


def part_words(graph, part: str) -> str:
    """"layer 3, head 7's output, read by layer 5, head 2's values" or "every output of layer 3, head 7"."""
    kind, sender, reader = _part_titles(graph, part)
    return f"{possessive(sender)} output, read by {reader}" if kind == "edge" else f"every output of {sender}"


def part_label(graph, part: str) -> str:
    """The picker's words for a part: "nothing", "edge: layer 3, head 7 → layer 5, head 2's values", "node: layer 3's MLP"."""
    kind, sender, reader = _part_titles(graph, part)
    return {"edge": f"edge: {sender} → {reader}", "node": f"node: {sender}"}.get(kind, "nothing")


def _part_titles(graph, part: str) -> tuple[str, str, str]:
    """(kind, the sender's title, the reader's title: "" for a node) of "edge:NAME" or "node:NAME"; ("", "", "") else."""
    kind, _, name = part.partition(":")
    if kind == "edge":
        edge = next(e for e in graph.edges if e.name == name)
        return kind, node_title(node_fields(edge.sender)), reader_title(node_fields(edge.receiver.node), edge.receiver.input)
    if kind == "node":
        return kind, node_title(node_fields(graph.senders[graph.sender_index(name)])), ""
    return "", "", ""


def ablation_text(scores, part: str, ablated: Ablation, metric: str) -> str:
    """What patching the part did, in plain text (the visitor's words are in it: shown with st.text)."""
    kind, _, name = part.partition(":")
    graph = scores.graph
    score = (float(scores.scores[next(e.index for e in graph.edges if e.name == name)]) if kind == "edge"
             else float(scores.nodes[graph.sender_index(name)]))
    before, after = ("\n".join(f"  {word} {p:.2f}" for word, p in top) for top in ablated.top)
    change = ablated.metric[1] - ablated.metric[0]
    return (f"Patched with the counterfactual's value: {part_words(graph, part)}.\n\n{metric}:\n"
            f"{ablated.metric[0]:.3f} → {ablated.metric[1]:.3f} with it patched ({change:+.3f});\n"
            f"its score by {METHOD_TITLES[scores.method]}: {score:+.3f}.\n\n"
            f"Top words before:\n{before}\nTop words after:\n{after}")
