"""Circuits: exact edge patching batched against one pass per edge at BERT-base shape, and on the built-in MiniLM
the agreement of EAP and EAP-IG with exact edge patching and the faithfulness of their circuits.

    OMP_NUM_THREADS=1 nice -n 10 python -m bench.circuits [--edges 256] [--pairs 1] [--steps 5] [--json out/circuits.json]

- speed: a random BERT-base (bench/make_random_bert.py; speed does not depend on the values), a 12-token pair;
  `--edges` edges (from the middle of the graph) scored exactly, batched (64 rows per pass) and one pass per edge;
  edges per second of each and their ratio. EAP and EAP-IG's time for every edge at once.
- agreement: the first `--pairs` pairs of each agreement task (agreement-simple, -pp, -rc in
  bert/data/circuit_pairs.tsv) on MiniLM; exact scores of every edge, EAP, EAP-IG(`--steps`); Spearman's rho of
  each with exact over the 500 edges of largest |exact|; CPR and CMD of exact, EAP-IG, EAP and a random ranking
  (seed 0) at MIB's circuit sizes, for edge-level and node-level circuits.
Prints the load average beside the figures: the machine may be shared.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

import bert  # noqa: E402
from bench.make_random_bert import make_random_bert  # noqa: E402
from bert.analysis.causal.patching import prepare_contrast  # noqa: E402
from bert.analysis.circuits.edge_scores import edge_scores, pair_runs, patched_metrics  # noqa: E402
from bert.analysis.circuits.encoder_parts import EncoderParts  # noqa: E402
from bert.analysis.circuits.faithfulness import faithfulness_curve, random_ranking  # noqa: E402
from bert.analysis.circuits.graph import CircuitGraph  # noqa: E402
from bert.analysis.circuits.tasks import builtin_pairs, contrasts  # noqa: E402


def speed(edges: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        make_random_bert(Path(folder))
        model, tokenizer = bert.load_pretrained(folder)
    contrast = prepare_contrast(tokenizer, "the keys to the cabinet [MASK] on the table .", "the key to the cabinet [MASK] on the table .", "are", "is")
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
    for method in ("eap", "eap-ig"):
        start = time.perf_counter()
        edge_scores(model, [contrast], method, steps=5)
        timings[method] = time.perf_counter() - start
    return {"graph_edges": len(graph), "tokens": len(contrast.clean), "edges_timed": edges,
            "batched_edges_per_second": edges / batched, "one_pass_per_edge_edges_per_second": edges / one_each,
            "ratio": one_each / batched, "eap_seconds_all_edges": timings["eap"], "eap_ig5_seconds_all_edges": timings["eap-ig"]}


def agreement(pairs: int, steps: int) -> dict:
    model, tokenizer = bert.load_pretrained("minilm")
    chosen = [pair for task in ("agreement-simple", "agreement-pp", "agreement-rc") for pair in builtin_pairs(task)[:pairs]]
    checked = contrasts(tokenizer, chosen)
    exact = edge_scores(model, checked, "exact", batch_size=64)
    top = exact.scores.abs().argsort(descending=True)[:500]
    result = {"pairs": len(checked), "steps": steps, "edges": len(exact.graph), "random_seed": 0}
    senders = len(exact.graph.senders)
    rankings = {"exact": (exact.scores, exact.nodes), "random": (random_ranking(len(exact.graph), seed=0), random_ranking(senders, seed=0))}
    for method in ("eap", "eap-ig"):
        scores = edge_scores(model, checked, method, steps=steps)
        result[f"spearman_{method}"] = float(spearmanr(scores.scores[top].numpy(), exact.scores[top].numpy()).correlation)
        rankings[method] = (scores.scores, scores.nodes)
    for name, (edges, nodes) in rankings.items():
        curve = faithfulness_curve(model, checked, edges, label=name)
        node_curve = faithfulness_curve(model, checked, nodes, nodes=True, label=name)
        result[f"cpr_{name}"], result[f"cmd_{name}"] = curve.cpr, curve.cmd
        result[f"node_cpr_{name}"], result[f"node_cmd_{name}"] = node_curve.cpr, node_curve.cmd
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edges", type=int, default=256)
    parser.add_argument("--pairs", type=int, default=1, help="pairs of each agreement task")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--skip-agreement", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = {"load_average": os.getloadavg(), "speed": speed(args.edges)}
    print(json.dumps(figures, indent=1), flush=True)
    if not args.skip_agreement:
        figures["agreement"] = agreement(args.pairs, args.steps)
        print(json.dumps(figures["agreement"], indent=1))
    figures["load_average_after"] = os.getloadavg()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
