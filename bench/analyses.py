"""Timing of the analyses on MiniLM: probes over 1,000 sentences, the all-heads ablation ranking,
integrated gradients with 32 steps; also the logit lens, rollout, attention flow and corpus head statistics.

    OMP_NUM_THREADS=1 python -m bench.analyses [--sentences 1000] [--json out/analyses.json]

Each analysis runs once after a warm-up of the model (the probes are minutes long; one run is the figure). Wall
time depends on what else the machine runs, so the process's CPU time and the load average are printed beside it.
"""
from __future__ import annotations

import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")


import bert  # noqa: E402
from bert.hooks import every_layer, stack_layers  # noqa: E402
from bert.analysis.causal import ablation
from bert.analysis.attention import head_stats, rollout
from bert.analysis.representations import logit_lens
from bert.analysis.probing.pipeline import run_probes
from bert.analysis.probing.sentence_sets import sentence_set
from bert.analysis.attribution import saliency  # noqa: E402
from bert.data import builtin_sentences  # noqa: E402
from bench.common import bench_parser, machine_line, use_omp_threads  # noqa: E402

SENTENCE = "The [MASK] barked at the mailman because he came to the door every morning."


def timed(name: str, fn, results: dict) -> object:
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    results[name] = {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2),
                     "load_average_1min": round(os.getloadavg()[0], 2)}
    print(f"{name:<40} wall {results[name]['wall_s']:>8.2f} s   cpu {results[name]['cpu_s']:>8.2f} s   "
          f"load {results[name]['load_average_1min']:.1f}", flush=True)
    return value


def head_averaged_attention(model, encoding):
    _, cache = model.run_with_cache(*encoding.tensors(), names=every_layer("pattern", model.config.num_layers))
    return rollout.head_average(stack_layers(cache, "pattern")[:, 0].numpy())


def main() -> None:
    parser = bench_parser(__doc__, "also write the figures here")
    parser.add_argument("--sentences", type=int, default=1000, help="built-in sentences for the probes (at most 992)")
    args = parser.parse_args()
    use_omp_threads()
    model, tokenizer = bert.load_pretrained("minilm", pack_for_cpu=True)
    encoding = tokenizer.encode(SENTENCE)
    model(*encoding.tensors())  # warm-up
    print(f"{machine_line()}; MiniLM ({model.config.num_layers} layers x {model.config.num_heads} heads); {len(encoding)}-token sentence")
    results: dict = {}
    sentences = builtin_sentences(args.sentences)
    data = sentence_set(sentences, "the built-in sentences")
    report = timed(f"probes, 7 tasks, {len(sentences)} sentences", lambda: run_probes(model, tokenizer, data), results)
    timed("ablation ranking, all 72 heads (zero)", lambda: ablation.rank_heads(model, tokenizer, encoding), results)
    mean_z = timed("mean head outputs, 200 sentences", lambda: ablation.mean_head_outputs(model, tokenizer, builtin_sentences(200)), results)
    timed("ablation ranking, all 72 heads (mean)", lambda: ablation.rank_heads(model, tokenizer, encoding, mode="mean", mean_z=mean_z), results)
    timed("integrated gradients, 32 steps", lambda: saliency.saliency(model, tokenizer, encoding, steps=32), results)
    timed("gradient x input", lambda: saliency.saliency(model, tokenizer, encoding, "gradient_x_input"), results)
    timed("logit lens", lambda: logit_lens.logit_lens(model, tokenizer, encoding), results)
    attention = head_averaged_attention(model, encoding)
    timed("attention rollout", lambda: rollout.attention_rollout(attention), results)
    timed(f"attention flow, {len(encoding)} tokens", lambda: rollout.attention_flow(attention), results)
    long_encoding = tokenizer.encode(" ".join([SENTENCE.replace("[MASK]", "dog")] * 5), max_length=rollout.FLOW_TOKEN_LIMIT, truncate=True)
    long_attention = head_averaged_attention(model, long_encoding)
    timed(f"attention flow, {len(long_encoding)} tokens", lambda: rollout.attention_flow(long_attention), results)
    timed("corpus head statistics, 992 sentences", lambda: head_stats.corpus_head_statistics(model, tokenizer, builtin_sentences()), results)
    for task, result in report.tasks.items():
        best = result.layers[result.best_hidden_states_index]
        print(f"  probe {task:<16} best {report.residual_names[result.best_hidden_states_index]:<10} accuracy {best['accuracy']:.3f} "
              f"(control {best['control_accuracy']:.3f}); embeddings {result.layers[0]['accuracy']:.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
