"""Attribution graphs on the built-in model with trained transcoders, one thread:

1. for --sentences cloze items (bert/data/everyday_cloze.tsv; the target is the first acceptable answer's logit at
   the [MASK]): completeness (|target − Σ edges − biases| over the sum of the terms' sizes), the replacement and
   completeness scores, and over the --top most influential features the Spearman ρ between the graph's predicted
   ablation effect (later features following linearly) and the one measured in the real model with the
   transcoders spliced in (errors kept), attention frozen and live;
   (and the same for the prediction with every other node kept, "fixed");
2. the cost of one graph at --tokens word pieces (a sentence repeated to that length): seconds, nodes, the peak
   memory of the process (ru_maxrss), beside its price (graph_cost: passes, kept bytes, peak).

--max-features caps every graph's active features (feature_cap.py: the most influential kept, the others folded
into the error nodes; 0: no cap).

    OMP_NUM_THREADS=1 python -m bench.tracing --transcoders out/transcoders [--sentences 20] [--top 10] [--tokens 64] \
        [--max-features 500]

Wall time depends on what else the machine runs: the process's CPU time and the load average are printed beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

import bert  # noqa: E402
from bert.analysis.tracing.ablation import measured_ablation, predicted_ablation  # noqa: E402
from bert.analysis.tracing.attribution_graph import attribution_graph, graph_cost, target_for  # noqa: E402
from bert.analysis.tracing.graph_pruning import graph_scores, node_influence  # noqa: E402
from bert.analysis.tracing.replacement import freeze  # noqa: E402
from bert.analysis.tracing.transcoder import load_transcoders  # noqa: E402
from bert.pretraining.cloze_eval import read_cloze  # noqa: E402


def one_sentence(model, tokenizer, transcoders, sentence: str, answer: str, top: int, cap: int | None) -> dict:
    graph = attribution_graph(model, tokenizer, transcoders, sentence, answer, max_features=cap)
    target = graph.target_index
    terms = float(graph.adjacency[target].abs().sum() + graph.bias[target].abs())
    gap = abs(float(graph.inputs[target] - graph.adjacency[target].sum() - graph.bias[target]))
    encoding = tokenizer.encode(sentence)
    input_ids, token_type_ids = encoding.tensors()
    frozen = freeze(model, transcoders, input_ids, token_type_ids, target_for(tokenizer, encoding, answer))
    strongest = node_influence(graph)[: graph.num_features].argsort(descending=True)[:top].tolist()
    predicted, fixed, frozen_attention, live_attention = [], [], [], []
    for node in strongest:
        layer, position, feature = graph.features[node].tolist()
        index = int(((frozen.features[layer][:, 0] == position) & (frozen.features[layer][:, 1] == feature)).nonzero()[0, 0])
        predicted.append(predicted_ablation(graph, node, "linear"))
        fixed.append(predicted_ablation(graph, node, "fixed"))
        frozen_attention.append(measured_ablation(model, transcoders, frozen, input_ids, token_type_ids, layer, index, True))
        live_attention.append(measured_ablation(model, transcoders, frozen, input_ids, token_type_ids, layer, index, False))
    replacement, completeness = graph_scores(graph)
    return {"sentence": sentence, "answer": answer, "tokens": graph.seq, "features": graph.num_features, "folded": graph.folded,
            "completeness_gap": gap / max(terms, 1e-30), "replacement_score": replacement, "completeness_score": completeness,
            "rho_frozen_attention": float(spearmanr(predicted, frozen_attention).statistic),
            "rho_live_attention": float(spearmanr(predicted, live_attention).statistic),
            "rho_fixed_frozen_attention": float(spearmanr(fixed, frozen_attention).statistic),
            "rho_fixed_live_attention": float(spearmanr(fixed, live_attention).statistic)}


def graph_at(model, tokenizer, transcoders, tokens: int, cap: int | None) -> dict:
    words = "the children walked to the old school near the river and".split()
    text = " ".join((words * tokens)[: tokens - 3]) + " [MASK] ."
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started, cpu = time.monotonic(), time.process_time()
    graph = attribution_graph(model, tokenizer, transcoders, text, "the", max_features=cap)
    price = graph_cost(model.config, graph.seq, transcoders.config.k, max_features=cap)
    return {"tokens": graph.seq, "nodes": graph.num_nodes, "features": graph.num_features, "folded": graph.folded,
            "seconds": time.monotonic() - started, "cpu_seconds": time.process_time() - cpu,
            "peak_rss_mb_before": before, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "adjacency_mb": graph.adjacency.numel() * 4 / 1e6, "priced": price.describe(),
            "priced_kept_mb": price.kept_bytes / 1e6, "priced_peak_mb": price.peak(model.config) / 1e6,
            "priced_backward_passes": price.backward_passes,
            "uncapped_price": graph_cost(model.config, graph.seq, transcoders.config.k).describe()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transcoders", required=True)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--max-features", type=int, default=500, help="the cap on each graph's active features; 0: none")
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, tokenizer = bert.load_pretrained(args.model)
    model.eval()
    transcoders = load_transcoders(args.transcoders, model)
    cap = args.max_features or None
    rows = []
    for item in read_cloze()[: args.sentences]:
        rows.append(one_sentence(model, tokenizer, transcoders, item.sentence, item.answers[0], args.top, cap))
        print(json.dumps(rows[-1]))
    summary = {name: statistics.median(row[name] for row in rows) for name in
               ("completeness_gap", "replacement_score", "completeness_score", "rho_frozen_attention", "rho_live_attention",
                "rho_fixed_frozen_attention", "rho_fixed_live_attention")}
    summary["max_completeness_gap"] = max(row["completeness_gap"] for row in rows)
    summary["mean_rho_frozen_attention"] = statistics.mean(row["rho_frozen_attention"] for row in rows)
    summary["mean_rho_live_attention"] = statistics.mean(row["rho_live_attention"] for row in rows)
    summary["cost"] = graph_at(model, tokenizer, transcoders, args.tokens, cap)
    summary["load_average"] = os.getloadavg()
    print(json.dumps(summary, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump({"rows": rows, "summary": summary}, file, indent=1)


if __name__ == "__main__":
    main()
