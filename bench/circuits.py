"""Circuits: exact edge patching batched against one pass per edge at BERT-base shape, and on the built-in MiniLM
the agreement of EAP and EAP-IG with exact edge patching and the faithfulness of their circuits.

    OMP_NUM_THREADS=1 nice -n 10 python -m bench.circuits [--edges 256] [--pairs 1] [--steps 5] [--tiny-seeds 0]
        [--skip-speed] [--skip-agreement] [--reach-stride 16 --reach-loop-edges 16 --reach-repeats 3] [--json out/circuits.json]

- speed: a random BERT-base (bench/make_random_bert.py; speed does not depend on the values), a 12-token pair;
  `--edges` edges (from the middle of the graph) scored exactly, batched (64 rows per pass) and one pass per edge;
  edges per second of each and their ratio. EAP and EAP-IG's time for every edge at once.
- reach (`--reach-stride n`): exact patching as `edge_scores` runs it, from each edge's receiver on (edge_reach.py,
  64 rows a pass), on every edge into every n-th receiver and into the output (`reach_subset`: each layer's share),
  against one whole patched pass per edge on `--reach-loop-edges` of those edges (seed 0), alternating
  `--reach-repeats` times: edges a second of each, their ratio (median and spread), the largest score difference.
- agreement: the first `--pairs` pairs of each agreement task (agreement-simple, -pp, -rc in
  bert/data/circuit_pairs.tsv) on MiniLM; exact scores of every edge (`--exact-cache`: kept for a rerun), EAP,
  EAP-IG and EAP-IG-activations (`--steps`); Spearman's rho of each with exact over the 500 edges of largest
  |exact| (also over those joined with the method's own 500 strongest, over every edge, and pair by pair);
  EAP-IG-activations pooled as MIB's code pools it; rho of the gradient taken at single points of the input path
  (why EAP and EAP-IG differ); CPR and CMD of exact, each method and a random ranking (seed 0) at MIB's circuit
  sizes, for edge-level and node-level circuits.
- tiny random (`--tiny-seeds`): the same rho on tiny random post-LN BERT and pre-norm ModernBERT models.
Prints the load average beside the figures: the machine may be shared.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

import bert  # noqa: E402
from bench.make_random_bert import make_random_bert  # noqa: E402
from bert.analysis.causal.patching import prepare_contrast  # noqa: E402
from bert.analysis.circuits.edge_scores import (  # noqa: E402
    activation_groups, edge_scores, exact_edge_metrics, mask_gradient, pair_runs, patched_metrics,
)
from bert.analysis.circuits.encoder_parts import EncoderParts  # noqa: E402
from bert.analysis.circuits.faithfulness import faithfulness_curve, random_ranking  # noqa: E402
from bert.analysis.circuits.graph import CircuitGraph  # noqa: E402
from bert.analysis.circuits.tasks import builtin_pairs, contrasts  # noqa: E402


def random_base() -> tuple:
    """A random BERT-base (bench/make_random_bert.py) and a 12-token pair."""
    with tempfile.TemporaryDirectory() as folder:
        make_random_bert(Path(folder))
        model, tokenizer = bert.load_pretrained(folder)
    contrast = prepare_contrast(tokenizer, "the keys to the cabinet [MASK] on the table .", "the key to the cabinet [MASK] on the table .", "are", "is")
    return model, contrast


def reach_subset(graph: CircuitGraph, stride: int) -> list[int]:
    """Every edge into every `stride`-th receiver and into the output: each layer's heads and MLPs in their share."""
    receivers, _ = graph.edge_cells
    chosen = set(range(0, len(graph.receivers), stride)) | {len(graph.receivers) - 1}
    return [edge for edge in range(len(graph)) if int(receivers[edge]) in chosen]


def reach_speed(stride: int, loop_edges: int, repeats: int) -> dict:
    """Exact patching from each edge's receiver on (edge_reach.py, 64 rows a pass) against one whole patched pass
    per edge, on the same edges, alternating, `repeats` times: edges a second, their ratio, median and spread, and
    the largest difference between the two scores of the looped edges."""
    model, contrast = random_base()
    parts, graph = EncoderParts.of(model), CircuitGraph.of(model.config)
    runs = pair_runs(parts, graph, contrast, "logit-difference")
    subset = reach_subset(graph, stride)
    looped = sorted(torch.randperm(len(subset), generator=torch.Generator().manual_seed(0))[:loop_edges].tolist())
    looped = [subset[index] for index in looped]
    clocks = {"wall": time.perf_counter, "cpu": time.process_time}  # cpu: this process's time, less moved by load
    reach_rates, loop_rates, difference = {clock: [] for clock in clocks}, {clock: [] for clock in clocks}, 0.0
    rows = torch.zeros(len(looped), len(graph), dtype=torch.bool)
    rows[torch.arange(len(looped)), torch.tensor(looped)] = True
    for _ in range(repeats):
        start = {clock: read() for clock, read in clocks.items()}
        reach = exact_edge_metrics(parts, graph, runs, "logit-difference", "noise", subset, batch_size=64)
        middle = {clock: read() for clock, read in clocks.items()}
        loop = patched_metrics(parts, graph, runs, "logit-difference", "noise", rows, batch_size=1)
        for clock, read in clocks.items():
            reach_rates[clock].append(len(subset) / (middle[clock] - start[clock]))
            loop_rates[clock].append(len(looped) / (read() - middle[clock]))
        difference = max(difference, float((reach[[subset.index(edge) for edge in looped]] - loop).abs().max()))
    result = {"graph_edges": len(graph), "tokens": len(contrast.clean), "edges_reached": len(subset), "receiver_stride": stride,
              "edges_looped": len(looped), "repeats": repeats, "largest_score_difference": difference,
              "every_edge_minutes_at_reach_median_wall": len(graph) / statistics.median(reach_rates["wall"]) / 60}
    for clock in clocks:
        result[clock] = {"reach_edges_per_second": spread(reach_rates[clock]), "one_pass_per_edge_edges_per_second": spread(loop_rates[clock]),
                         "ratio": spread([reach / loop for reach, loop in zip(reach_rates[clock], loop_rates[clock])])}
    return result


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def speed(edges: int) -> dict:
    model, contrast = random_base()
    parts, graph = EncoderParts.of(model), CircuitGraph.of(model.config)
    runs = pair_runs(parts, graph, contrast, "logit-difference")
    middle = len(graph) // 2
    rows = torch.zeros(edges, len(graph), dtype=torch.bool)
    rows[torch.arange(edges), torch.arange(middle, middle + edges)] = True
    start = time.perf_counter()
    patched_metrics(parts, graph, runs, "logit-difference", "noise", rows, batch_size=64)
    batched = time.perf_counter() - start
    single = rows[: max(8, edges // 16)]
    start = time.perf_counter()
    patched_metrics(parts, graph, runs, "logit-difference", "noise", single, batch_size=1)
    one_each = (time.perf_counter() - start) / len(single) * edges
    timings = {}
    for method in ("eap", "eap-ig", "eap-ig-activations"):
        start = time.perf_counter()
        edge_scores(model, [contrast], method, steps=5)
        timings[method] = time.perf_counter() - start
    return {"graph_edges": len(graph), "tokens": len(contrast.clean), "edges_timed": edges,
            "batched_edges_per_second": edges / batched, "one_pass_per_edge_edges_per_second": edges / one_each,
            "ratio": one_each / batched, "eap_seconds_all_edges": timings["eap"], "eap_ig5_seconds_all_edges": timings["eap-ig"],
            "eap_ig_activations5_seconds_all_edges": timings["eap-ig-activations"]}


SELECTIONS = ("top500_exact", "top500_union", "all")  # which edges Spearman's rho is taken over
GRADIENT_POINTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # fractions of the input path from the clean run to the counterfactual


def spearman(scores: torch.Tensor, exact: torch.Tensor, selection: str = "top500_exact") -> float:
    """Spearman's rho with exact patching over the 500 edges of largest |exact| (the reference's strongest: the
    figure the docs report), over those joined with the 500 of largest |scores|, or over every edge."""
    chosen = exact.abs().argsort(descending=True)[:500]
    if selection == "top500_union":
        chosen = torch.unique(torch.cat([chosen, scores.abs().argsort(descending=True)[:500]]))
    elif selection == "all":
        chosen = torch.arange(len(exact))
    return float(spearmanr(scores[chosen].numpy(), exact[chosen].numpy()).correlation)


def agreement_pairs(pairs: int) -> list:
    """The first `pairs` built-in pairs of each agreement task."""
    return [pair for task in ("agreement-simple", "agreement-pp", "agreement-rc") for pair in builtin_pairs(task)[:pairs]]


def gradient_points(model, checked, exact: torch.Tensor) -> dict:
    """Why EAP and EAP-IG differ: rho of the EAP product with the gradient taken at one point of the input path
    (0: the clean run, EAP itself; 1: the counterfactual), averaged over the pairs."""
    parts, graph = EncoderParts.of(model), CircuitGraph.of(model.config)
    runs = [pair_runs(parts, graph, contrast, "logit-difference") for contrast in checked]
    rhos = {}
    for fraction in GRADIENT_POINTS:
        scores = sum(graph.edge_values(mask_gradient(parts, graph, run, "logit-difference", "noise", fraction)[None])[0]
                     for run in runs) / len(runs)
        rhos[str(fraction)] = spearman(scores, exact)
    return rhos


def mib_pooled(model, checked, steps: int) -> torch.Tensor:
    """EAP-IG-activations pooled as MIB's code pools it: every group's runs averaged into every edge's score (the
    gradient through the moved group is not cut, as MIB's hook cuts it)."""
    parts, graph = EncoderParts.of(model), CircuitGraph.of(model.config)
    total, groups = torch.zeros(len(graph)), activation_groups(graph)
    for contrast in checked:
        runs = pair_runs(parts, graph, contrast, "logit-difference")
        for group in groups:
            for k in range(steps):
                at = torch.zeros(len(graph.receivers), len(graph.senders))
                at[:, group] = k / steps
                total += graph.edge_values(mask_gradient(parts, graph, runs, "logit-difference", "noise", 0.0, at=at)[None])[0]
    return total / (len(checked) * len(groups) * steps)


def exact_scores(model, contrast, cache: Path | None) -> SimpleNamespace:
    """One pair's exact scores (edges and nodes), kept in `cache` (a folder) by the pair's text, so that a rerun
    of the cheap methods does not redo the long exact patching."""
    key = hashlib.sha256(repr((contrast.clean.tokens, contrast.corrupted.tokens, contrast.answer_id, contrast.foil_id)).encode()).hexdigest()[:16]
    path = None if cache is None else cache / f"minilm_exact_{key}.pt"
    if path is not None and path.exists():
        kept = torch.load(path)
        return SimpleNamespace(graph=CircuitGraph.of(model.config), scores=kept["scores"], nodes=kept["nodes"])
    scores = edge_scores(model, [contrast], "exact", batch_size=64)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"scores": scores.scores, "nodes": scores.nodes}, path)
    return scores


def agreement(pairs: int, steps: int, exact_cache: Path | None = None) -> dict:
    model, tokenizer = bert.load_pretrained("minilm")
    checked = contrasts(tokenizer, agreement_pairs(pairs))
    exact_each = [exact_scores(model, contrast, exact_cache) for contrast in checked]
    exact = edge_scores_mean(exact_each)
    result = {"pairs": len(checked), "steps": steps, "edges": len(exact.graph), "random_seed": 0}
    senders = len(exact.graph.senders)
    rankings = {"exact": (exact.scores, exact.nodes), "random": (random_ranking(len(exact.graph), seed=0), random_ranking(senders, seed=0))}
    for method in ("eap", "eap-ig", "eap-ig-activations"):
        each = [edge_scores(model, [contrast], method, steps=steps) for contrast in checked]
        scores = edge_scores_mean(each)
        result[f"spearman_{method}"] = spearman(scores.scores, exact.scores)
        result[f"spearman_{method}_selections"] = {selection: spearman(scores.scores, exact.scores, selection) for selection in SELECTIONS}
        result[f"spearman_{method}_per_pair"] = [spearman(one.scores, reference.scores) for one, reference in zip(each, exact_each)]
        rankings[method] = (scores.scores, scores.nodes)
    result["spearman_eap-ig-activations_mib_pooled"] = spearman(mib_pooled(model, checked, steps), exact.scores)
    result["spearman_gradient_at_fraction"] = gradient_points(model, checked, exact.scores)
    for name, (edges, nodes) in rankings.items():
        curve = faithfulness_curve(model, checked, edges, label=name)
        node_curve = faithfulness_curve(model, checked, nodes, nodes=True, label=name)
        result[f"cpr_{name}"], result[f"cmd_{name}"] = curve.cpr, curve.cmd
        result[f"node_cpr_{name}"], result[f"node_cmd_{name}"] = node_curve.cpr, node_curve.cmd
    return result


def edge_scores_mean(each: list) -> SimpleNamespace:
    """The pairs' scores averaged (what edge_scores returns for them together)."""
    return SimpleNamespace(graph=each[0].graph, scores=torch.stack([one.scores for one in each]).mean(0),
                           nodes=torch.stack([one.nodes for one in each]).mean(0))


def tiny_random(seeds: int, steps: int) -> dict:
    """EAP and EAP-IG against exact patching on tiny random models (bench/make_random_bert.py's tiny sizes:
    3 layers, 2 heads, transformers' own initialisation, seeds 0 .. seeds - 1) of a post-LN family (BERT) and a
    pre-norm one (ModernBERT), on the first pair of each agreement task; rho over every edge, per pair."""
    result = {}
    for family in ("bert", "modernbert"):
        for seed in range(seeds):
            with tempfile.TemporaryDirectory() as folder:
                make_random_bert(Path(folder), seed=seed, family=family, tiny=True)
                model, tokenizer = bert.load_pretrained(folder)
            for number, contrast in enumerate(contrasts(tokenizer, agreement_pairs(1))):
                exact = edge_scores(model, [contrast], "exact", batch_size=64).scores
                result[f"{family} seed {seed} pair {number}"] = {
                    method: spearman(edge_scores(model, [contrast], method, steps=steps).scores, exact, "all")
                    for method in ("eap", "eap-ig", "eap-ig-activations")}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edges", type=int, default=256)
    parser.add_argument("--pairs", type=int, default=1, help="pairs of each agreement task")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--skip-agreement", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--reach-stride", type=int, default=0,
                        help="also time exact patching from the receiver on against one pass per edge, on the edges into every n-th receiver")
    parser.add_argument("--reach-loop-edges", type=int, default=16, help="edges of that subset timed one pass each")
    parser.add_argument("--reach-repeats", type=int, default=3)
    parser.add_argument("--exact-cache", type=Path, help="a folder keeping each pair's exact scores for reruns")
    parser.add_argument("--tiny-seeds", type=int, default=0, help="also tiny random BERT and ModernBERT, this many seeds each")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = {"load_average": os.getloadavg()}
    if not args.skip_speed:
        figures["speed"] = speed(args.edges)
        print(json.dumps(figures, indent=1), flush=True)
    if args.reach_stride:
        figures["reach"] = reach_speed(args.reach_stride, args.reach_loop_edges, args.reach_repeats)
        print(json.dumps(figures["reach"], indent=1), flush=True)
    if args.tiny_seeds:
        figures["tiny_random"] = tiny_random(args.tiny_seeds, args.steps)
        print(json.dumps(figures["tiny_random"], indent=1), flush=True)
    if not args.skip_agreement:
        figures["agreement"] = agreement(args.pairs, args.steps, args.exact_cache)
        print(json.dumps(figures["agreement"], indent=1))
    figures["load_average_after"] = os.getloadavg()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
