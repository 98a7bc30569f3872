"""Corpus search figures (issue 12): indexing throughput against transformers' forward, and search latency.

    OMP_NUM_THREADS=1 python bench/corpus_search.py [--sentences 992] [--rows 1000000] [--json out/corpus_search.json]

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
from bert.analysis.corpus import batches, pad  # noqa: E402
from bert.analysis.corpus_search import CorpusIndex, Entries, build_index  # noqa: E402
from bert.data import builtin_sentences  # noqa: E402
from bert.pretrained import minilm_folder  # noqa: E402


def indexing(sentences: int, batch_size: int) -> dict:
    from transformers import BertModel

    model, tokenizer = bert.load_pretrained("minilm-encoder")
    reference = BertModel.from_pretrained(minilm_folder()).eval()
    texts = [s.text for s in builtin_sentences(sentences)]
    encodings = [tokenizer.encode(t) for t in texts]
    tokens = sum(len(e) for e in encodings)
    build_index(model, tokenizer, texts[:batch_size], batch_size=batch_size)  # warm-up
    start = time.perf_counter()
    index = build_index(model, tokenizer, texts, batch_size=batch_size)
    ours = time.perf_counter() - start
    with torch.no_grad():
        start = time.perf_counter()
        for batch in batches(encodings, batch_size):
            input_ids, token_type_ids, attention_mask = pad([encodings[i] for i in batch], tokenizer.pad_id)
            reference(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                      output_hidden_states=True)
        theirs = time.perf_counter() - start
    return {"sentences": len(texts), "tokens": tokens, "layers": len(index.layers), "batch_size": batch_size,
            "build_index_s": round(ours, 2), "build_index_tokens_per_s": round(tokens / ours),
            "transformers_forward_s": round(theirs, 2), "transformers_tokens_per_s": round(tokens / theirs),
            "load_average": round(os.getloadavg()[0], 2), "index": index}


def search(index: CorpusIndex, layer: int, queries: torch.Tensor, probes: list[int]) -> dict:
    """ms per query for exact and approximate search, and the approximate top-10's recall of the exact top-10."""
    def timed(method: str) -> tuple[float, list[set[int]]]:
        found, times = [], []
        for query in queries:
            start = time.perf_counter()
            hits = index.search(layer, query, 10, method=method)
            times.append(time.perf_counter() - start)
            found.append({(h.sentence_index, h.position) for h in hits})
        return 1000 * statistics.median(times), found

    exact_ms, exact = timed("exact")
    start = time.perf_counter()
    index.search(layer, queries[0], 10, method="approximate")  # builds the faiss index
    result = {"rows": len(index), "exact_ms": round(exact_ms, 2), "faiss_build_s": round(time.perf_counter() - start, 1)}
    for count in probes:
        index.probes = count
        approximate_ms, approximate = timed("approximate")
        recall = sum(len(a & e) for a, e in zip(approximate, exact)) / sum(len(e) for e in exact)
        result[f"approximate_ms_probes_{count}"] = round(approximate_ms, 2)
        result[f"recall_at_10_probes_{count}"] = round(recall, 3)
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
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    results = {"threads": torch.get_num_threads()}

    results["indexing"] = found = indexing(args.sentences, args.batch_size)
    index = found.pop("index")
    last = index.layers[-1]
    held_out = index.vectors[last][torch.randperm(len(index), generator=torch.Generator().manual_seed(1))[: args.queries]]
    results["minilm_index_last_layer"] = search(index, last, held_out + 0.05 * torch.randn_like(held_out), args.probes)

    queries = F.normalize(torch.randn(args.queries, 384, generator=torch.Generator().manual_seed(2)), dim=1)
    random32 = random_index(args.rows, 384, torch.float32)
    results["random_float32"] = search(random32, 0, queries, args.probes)
    del random32
    half = random_index(args.rows, 384, torch.float16)
    results["random_float16_exact_ms"] = round(1000 * min(_time(lambda q=q: half.search(0, q, 10, "exact")) for q in queries[:10]), 2)
    del half
    results["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(results, indent=1))
    print_table(results, args)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(results, file, indent=1)


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def print_table(r: dict, args) -> None:
    i = r["indexing"]
    print(f"\nIndexing {i['sentences']} built-in sentences ({i['tokens']:,} tokens, {i['layers']} layers), "
          f"batch {i['batch_size']}, {r['threads']} thread(s):\n")
    print("| | tokens/s | seconds |\n| --- | --- | --- |")
    print(f"| `build_index` (ours, end to end) | {i['build_index_tokens_per_s']:,} | {i['build_index_s']} |")
    print(f"| `transformers` BertModel forward, output_hidden_states | {i['transformers_tokens_per_s']:,} | {i['transformers_forward_s']} |")
    print(f"\nSearch, top-10, median ms per query over {args.queries} queries:\n")
    print("| index | exact | " + " | ".join(f"faiss, {p} probes (recall)" for p in args.probes) + " | faiss build |")
    print("| --- " * (len(args.probes) + 3) + "|")
    for name, key in ((f"{r['minilm_index_last_layer']['rows']:,} MiniLM tokens, last layer", "minilm_index_last_layer"),
                      (f"{args.rows:,} random unit vectors, dim 384", "random_float32")):
        s = r[key]
        cells = " | ".join(f"{s[f'approximate_ms_probes_{p}']} ms ({s[f'recall_at_10_probes_{p}']:.1%})" for p in args.probes)
        print(f"| {name} | {s['exact_ms']} ms | {cells} | {s['faiss_build_s']} s |")
    print(f"\nExact search on the same {args.rows:,} vectors stored as float16: {r['random_float16_exact_ms']} ms per query.")
    print(f"Load average: {i['load_average']} during indexing, {r['load_average_end']} at the end.")


if __name__ == "__main__":
    main()
