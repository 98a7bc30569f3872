"""Corpus search figures: indexing throughput against transformers' forward, and search latency.

    OMP_NUM_THREADS=1 python -m bench.corpus_search [--sentences 992] [--rows 1000000] [--json out/corpus_search.json]

1. Indexing: `build_index` over the built-in sentences with MiniLM (all 7 layers, tokenization, normalising and
   copying included) against `transformers`' BertModel from the same minilm-encoder folder, forward only with
   output_hidden_states=True, on the same length-sorted batches, in the same run.
2. Search at `--rows` random unit vectors of dimension 384 (one layer): exact (matrix product, float32 and float16)
   and approximate (faiss inverted file), milliseconds per query, and the approximate top-10's recall of the exact
   top-10. Random vectors have no clusters, the hard case for an inverted file: recall on real token vectors is
   higher (the script also measures it on the MiniLM index of step 1, last layer).
The machine's other load changes wall times: the load average is printed beside them.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import bert  # noqa: E402
from bert.analysis.corpus.batching import batches, pad  # noqa: E402
from bert.analysis.corpus.corpus_search import CorpusIndex, Entries, build_index  # noqa: E402
from bert.data import builtin_sentences  # noqa: E402
from bert.pretrained import minilm_folder  # noqa: E402


def indexing(sentences: int, batch_size: int, repeats: int) -> tuple[dict, CorpusIndex]:
    from transformers import BertModel

    model, tokenizer = bert.load_pretrained("minilm-encoder", pack_for_cpu=True)
    reference = BertModel.from_pretrained(minilm_folder()).eval()  # its default attention (sdpa)
    texts = [s.text for s in builtin_sentences(sentences)]
    encodings = [tokenizer.encode(t) for t in texts]
    tokens = sum(len(e) for e in encodings)

    @torch.no_grad()
    def theirs():
        for batch in batches(encodings, batch_size):
            input_ids, token_type_ids, attention_mask = pad([encodings[i] for i in batch], tokenizer.pad_id)
            reference(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                      output_hidden_states=True)

    runs = {"build_index": [], "transformers": []}
    for _ in range(repeats):  # alternating, so that both see the same changes in the machine's load
        runs["build_index"].append(timed(lambda: build_index(model, tokenizer, texts, batch_size=batch_size)))
        runs["transformers"].append(timed(theirs))
    index = runs["build_index"][-1][2]
    result = {"sentences": len(texts), "tokens": tokens, "layers": len(index.layers), "batch_size": batch_size,
              "repeats": repeats, "load_average": round(os.getloadavg()[0], 2)}
    for name, times in runs.items():
        wall, cpu = statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)
        result[name] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "tokens_per_wall_s": round(tokens / wall),
                        "tokens_per_cpu_s": round(tokens / cpu)}
    return result, index


def timed(fn) -> tuple[float, float, object]:
    """(wall seconds, this process's CPU seconds, fn's value)."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, value


def search(index: CorpusIndex, layer: int, queries: torch.Tensor, probes: list[int]) -> dict:
    """Median wall and CPU ms per query, exact and approximate; the approximate top-10's recall of the exact one."""
    def run(method: str) -> tuple[float, float, list[set[int]]]:
        times = [timed(lambda: index.search(layer, query, 10, method=method)) for query in queries]
        found = [{(h.sentence_index, h.position) for h in hits} for _, _, hits in times]
        return 1000 * statistics.median(t[0] for t in times), 1000 * statistics.median(t[1] for t in times), found

    exact_ms, exact_cpu_ms, exact = run("exact")
    build = timed(lambda: index.search(layer, queries[0], 10, method="approximate"))  # builds the faiss index
    result = {"rows": len(index), "exact_ms": round(exact_ms, 2), "exact_cpu_ms": round(exact_cpu_ms, 2),
              "faiss_build_s": round(build[0], 1), "faiss_build_cpu_s": round(build[1], 1)}
    for count in probes:
        index.probes = count
        wall_ms, cpu_ms, approximate = run("approximate")
        recall = sum(len(a & e) for a, e in zip(approximate, exact)) / sum(len(e) for e in exact)
        result[f"probes_{count}"] = {"ms": round(wall_ms, 2), "cpu_ms": round(cpu_ms, 2), "recall_at_10": round(recall, 3)}
    return result


def random_index(rows: int, dim: int, dtype: torch.dtype) -> CorpusIndex:
    vectors = F.normalize(torch.randn(rows, dim, generator=torch.Generator().manual_seed(0)), dim=1).to(dtype)
    entries = Entries(list(range(rows)), [0] * rows, ["t"] * rows, ["w"] * rows, [None] * rows)
    return CorpusIndex([""] * rows, (0,), entries, {0: vectors}, fingerprint="random")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=992)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--probes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    results = {"threads": torch.get_num_threads()}

    results["indexing"], index = indexing(args.sentences, args.batch_size, args.repeats)
    last = index.layers[-1]
    held_out = index.vectors[last][torch.randperm(len(index), generator=torch.Generator().manual_seed(1))[: args.queries]]
    results["minilm_index_last_layer"] = search(index, last, held_out + 0.05 * torch.randn_like(held_out), args.probes)

    queries = F.normalize(torch.randn(args.queries, 384, generator=torch.Generator().manual_seed(2)), dim=1)
    random32 = random_index(args.rows, 384, torch.float32)
    results["random_float32"] = search(random32, 0, queries, args.probes)
    del random32
    half = random_index(args.rows, 384, torch.float16)
    times = [timed(lambda q=q: half.search(0, q, 10, "exact")) for q in queries]
    results["random_float16_exact"] = {"ms": round(1000 * statistics.median(t[0] for t in times), 2),
                                       "cpu_ms": round(1000 * statistics.median(t[1] for t in times), 2)}
    del half
    results["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(results, indent=1))
    print_table(results, args)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(results, file, indent=1)


def print_table(r: dict, args) -> None:
    i = r["indexing"]
    print(f"\nIndexing {i['sentences']} built-in sentences ({i['tokens']:,} tokens, {i['layers']} layers), batch "
          f"{i['batch_size']}, {r['threads']} thread(s), median of {i['repeats']} alternating runs:\n")
    print("| | tokens per CPU second | tokens per wall second |\n| --- | ---: | ---: |")
    for name, label in (("build_index", "`build_index` (ours: tokenize, forward, normalise, store)"),
                        ("transformers", "`transformers` BertModel forward, output_hidden_states")):
        print(f"| {label} | {i[name]['tokens_per_cpu_s']:,} | {i[name]['tokens_per_wall_s']:,} |")
    print(f"\nSearch, top-10, median ms per query (CPU / wall) over {args.queries} queries; recall of exact top-10:\n")
    print("| index | exact | " + " | ".join(f"faiss, {p} probes" for p in args.probes) + " | faiss build (CPU / wall) |")
    print("| --- " * (len(args.probes) + 3) + "|")
    for name, key in ((f"{r['minilm_index_last_layer']['rows']:,} MiniLM tokens, last layer", "minilm_index_last_layer"),
                      (f"{args.rows:,} random unit vectors, dim 384", "random_float32")):
        s = r[key]
        cells = " | ".join(f"{s[f'probes_{p}']['cpu_ms']} / {s[f'probes_{p}']['ms']} ms, recall {s[f'probes_{p}']['recall_at_10']:.1%}"
                           for p in args.probes)
        print(f"| {name} | {s['exact_cpu_ms']} / {s['exact_ms']} ms | {cells} | {s['faiss_build_cpu_s']} / {s['faiss_build_s']} s |")
    h = r["random_float16_exact"]
    print(f"\nExact search on the same {args.rows:,} vectors stored as float16: {h['cpu_ms']} / {h['ms']} ms per query.")
    print(f"Load average: {i['load_average']} after indexing, {r['load_average_end']} at the end.")


if __name__ == "__main__":
    main()
