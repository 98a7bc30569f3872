"""Our BERT against transformers', same BERT-base weights, configurations timed in turn in one process.

    python -m bench.forward [--parts recorded plain training] [--repeats 9] [--no-memory] [--no-packing]
    python -m bench.forward --family roberta      # or distilbert, albert, electra, modernbert, deberta-v2,
                                                  # xlm-roberta, camembert, esm, eurobert, gte
    python -m bench.forward --family modernbert --parts recorded plain --shapes 1x128 1x512 --threads 1

With --family, the same tables for that family's base-size model (bench/make_random_bert.py's BASE_CONFIGS),
against transformers' classes of the family (Auto classes: its masked-LM model eager, its bare model with sdpa,
its sequence classifier); ELECTRA's masked-LM head is the generator's, on the base-size encoder. ModernBERT-base
(Warner et al. 2024): 22 layers, two in three of them attending within a 128-token window. deberta-v3-base (He
et al. 2021, 2023): transformers' DeBERTa-v2 has eager attention only, so its "plain" reference
(transformers_sdpa) is its bare model eager, said again under the tables; ours on the app's path records every
layer's pattern too (its q and k miss the relative-position terms). Neither is given token_type_ids (ModernBERT's
forward takes none; deberta-v3 has no segment embedding), nor is DistilBERT.

Three comparisons, each a table:
- recorded (1 x 16, 128, 512 tokens): ours keeping every hook (`run_with_cache`, names=None, logits at every
  position); ours on the app's path (viz_app.app.forward.record's hooks: patterns, MLP activations, embeddings, the
  LM head at the [MASK]s only); transformers' BertForMaskedLM, eager attention, output_attentions and
  output_hidden_states.
- plain (1 x 16, 128, 512 and 8 x 128 tokens, the 8 rows padded to 64..128 real tokens): the encoder's final
  hidden states, no recording. Ours step by step (the attention path a recording call takes, forced here by an
  identity intervention on every pattern), ours through scaled_dot_product_attention (what a plain call takes),
  and transformers' BertModel with its default attention (sdpa).
- training (16 x 128 tokens): one fine-tuning step, forward, backward and AdamW step, of a sequence classifier
  (2 labels, dropout on) over the encoder: ours (`add_output_heads(classifier_labels=2)`, the fused attention) against
  transformers' BertForSequenceClassification (sdpa).
Per row: the median time of each configuration over `--repeats` alternating runs after a warm-up (so drift in
the machine's load hits all alike), the spread (min–max), the ratio of the medians to transformers' (below
1.0: ours is faster), and the peak extra resident memory of one call: each (configuration, shape) runs once
more in a fresh subprocess (glibc's mmap threshold fixed, so freed blocks go back to the kernel), which resets
the kernel's high-water mark (/proc/self/clear_refs) just before the call and reads VmHWM after it, outputs
included (torch's own allocations and everything else; tracemalloc would not see torch). The weights are a
random BERT-base (bench/make_random_bert.py; speed does not depend on the values). For a training step
ours reads about 400 MB higher than transformers because our loader keeps the checkpoint's own tensors
(`load_state_dict(assign=True)`), whose pages count towards the resident set only as they are written: with
the parameters copied into fresh memory first, ours reads the same as transformers, and the process's absolute
peak is the same either way (2.17 GB at 4 x 128, measured once). transformers is a
benchmark-only reference. `--no-packing`: ours inference with nn.Linear instead of oneDNN-packed weights
(bert/packed_linear.py). Ends with the tables and the load average.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

from bench.make_random_bert import BASE_CONFIGS, make_random_bert
from bert import hook_name, load_pretrained
from viz_app.app.forward import recorded_hooks

ROOT = Path(__file__).resolve().parents[1]

PARTS = {  # part -> (configurations, the reference last; shapes as "BATCHxTOKENS")
    "recorded": (("ours_full", "ours_app", "transformers_eager"), ("1x16", "1x128", "1x512")),
    "plain": (("ours_eager", "ours_sdpa", "transformers_sdpa"), ("1x16", "1x128", "1x512", "8x128")),
    "training": (("ours_step", "transformers_step"), ("16x128",)),
}

# their transformers forward takes no token_type_ids (DistilBERT, ModernBERT) or has no segment embedding to add
# them to (deberta-v3: type_vocab_size 0)
NO_SEGMENTS = ("distilbert", "modernbert", "deberta-v2", "esm", "eurobert")
EAGER_ONLY = ("deberta-v2",)  # transformers' DeBERTa-v2 has no sdpa: its "plain" reference is eager attention


class Models:
    """Each model loaded once, when a configuration first needs it (a memory subprocess loads only its own)."""

    def __init__(self, folder: Path, packing: bool, family: str = "bert"):
        self.folder, self.packing, self.family = folder, packing, family

    @cache
    def ours(self):
        return load_pretrained(str(self.folder), pack_for_cpu=self.packing, cpu_kernels=self.packing)[0]  # --no-packing: nn.Linear

    @cache
    def transformers(self, kind: str):
        import transformers

        if kind == "eager_mlm":
            return transformers.AutoModelForMaskedLM.from_pretrained(self.folder, attn_implementation="eager").eval()
        if kind == "sdpa_encoder":
            pooler = {"add_pooling_layer": False} if self.family in ("bert", "roberta", "albert", "xlm-roberta", "camembert", "esm") else {}
            return transformers.AutoModel.from_pretrained(self.folder, **pooler).eval()
        torch.manual_seed(0)
        return transformers.AutoModelForSequenceClassification.from_pretrained(self.folder, num_labels=2).train()

    def vocab_size(self) -> int:
        return json.loads((self.folder / "config.json").read_text())["vocab_size"]

    def ours_classifier(self):
        torch.manual_seed(0)
        return load_pretrained(str(self.folder), pack_for_cpu=False)[0].add_output_heads(classifier_labels=2).train()


def inputs(shape: str, vocab_size: int = 30522):
    """(input_ids, token_type_ids, attention_mask, mask positions): rows after the first padded to 50-100%; ids
    past the special tokens (ESM-2's 33 tokens: its amino acids)."""
    batch, length = map(int, shape.split("x"))
    generator = torch.Generator().manual_seed(batch * 1000 + length)
    low, high = (1000, 30000) if vocab_size > 30000 else (4, vocab_size - 1)
    ids = torch.randint(low, high, (batch, length), generator=generator)
    attention_mask = torch.ones_like(ids)
    for row in range(1, batch):
        attention_mask[row, int(torch.randint(length // 2, length + 1, (), generator=generator)):] = 0
    masks = torch.rand(ids.shape, generator=generator) < 0.15
    masks[:, length // 2] = True
    return ids, torch.zeros_like(ids), attention_mask, masks


def runner(name: str, models: Models, shape: str) -> Callable[[], object]:
    ids, types, attention_mask, masks = inputs(shape, models.vocab_size())
    segments = {} if models.family in NO_SEGMENTS else {"token_type_ids": types}
    if name.endswith("_step"):
        return training_step(name, models, ids, types, attention_mask)
    if name == "ours_full":
        call = lambda: models.ours().run_with_cache(ids, types)  # noqa: E731
    elif name == "ours_app":
        names = recorded_hooks(models.ours())  # the app's own list (DeBERTa: its patterns too)
        call = lambda: models.ours().run_with_cache(ids, types, names=names, logit_mask=masks)  # noqa: E731
    elif name == "transformers_eager":
        reference = models.transformers("eager_mlm")
        call = lambda: reference(input_ids=ids, **segments, output_attentions=True, output_hidden_states=True)  # noqa: E731
    elif name == "ours_eager":
        step_by_step = [(hook_name("pattern", layer), lambda pattern, _: pattern) for layer in range(models.ours().config.num_layers)]
        call = lambda: models.ours().run_with_cache(ids, types, attention_mask, names=[], interventions=step_by_step, output="mlm", logit_mask=torch.zeros_like(masks))  # noqa: E731
    elif name == "ours_sdpa":
        call = lambda: models.ours().encode(ids, types, attention_mask)  # noqa: E731
    else:
        reference = models.transformers("sdpa_encoder")
        call = lambda: reference(input_ids=ids, **segments, attention_mask=attention_mask).last_hidden_state  # noqa: E731

    def inference():
        with torch.inference_mode():
            return call()

    return inference


def training_step(name: str, models: Models, ids, types, attention_mask) -> Callable[[], object]:
    labels = torch.arange(len(ids)) % 2
    model = models.ours_classifier() if name == "ours_step" else models.transformers("classifier")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)

    def step():
        if name == "ours_step":
            loss = F.cross_entropy(model(ids, types, attention_mask, output="classifier"), labels)
        else:
            segments = {} if models.family in NO_SEGMENTS else {"token_type_ids": types}
            loss = model(input_ids=ids, **segments, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    return step


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def compare(models: Models, names: tuple[str, ...], shape: str, repeats: int) -> dict[str, list[float]]:
    runs = {name: runner(name, models, shape) for name in names}
    for run in runs.values():  # warm-up
        run()
    times = {name: [] for name in runs}
    for _ in range(repeats):  # alternate
        for name, run in runs.items():
            times[name].append(timed(run))
    return times


def resident_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_memory(models: Models, name: str, shape: str) -> float:
    """MB: the peak extra resident memory of one call (run in a fresh process by main). Forward passes warm up on
    a tiny input (to initialise the libraries); a training step on its own shape (AdamW's state is allocated then)."""
    runner(name, models, shape if name.endswith("_step") else "1x8")()
    run = runner(name, models, shape)
    gc.collect()
    before = resident_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark to the current resident set
    outputs = run()  # kept alive until VmHWM is read
    peak = resident_kb("VmHWM")
    del outputs
    return (peak - before) / 1024


def measure_memory(folder: Path, name: str, shape: str, packing: bool, family: str = "bert") -> float:
    command = [sys.executable, "-m", "bench.forward", "--memory-of", name, shape, "--folder", str(folder), "--threads", str(torch.get_num_threads()),
               "--family", family]
    command += [] if packing else ["--no-packing"]
    # a fixed mmap threshold: big blocks come from the kernel and go back to it when freed, so the resident set
    # before the call holds nothing freed that the call could reuse unseen
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env, cwd=ROOT)
    return float(done.stdout.strip().splitlines()[-1])


def table(part: str, rows: dict[str, dict]) -> list[str]:
    names, _ = PARTS[part]
    reference = names[-1]
    lines = [f"| {part} | " + " | ".join(f"{n} (s)" for n in names) + " | " + " | ".join(f"ratio {n}" for n in names[:-1])
             + " | peak MB: " + " / ".join(names) + " |"]
    lines.append("| ---: " * (2 * len(names)) + "| ---: |")
    for shape, result in rows.items():
        times, memory = result["times"], result["peak_mb"]
        median = {n: statistics.median(times[n]) for n in names}
        cells = [f"{median[n]:.3f} ({min(times[n]):.3f}–{max(times[n]):.3f})" for n in names]
        ratios = [f"{median[n] / median[reference]:.2f}" for n in names[:-1]]
        peaks = " / ".join(f"{memory[n]:.0f}" for n in names) if memory else "-"
        lines.append(f"| {shape} | {' | '.join(cells)} | {' | '.join(ratios)} | {peaks} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--shapes", nargs="+", help="only these shapes (e.g. 1x128 8x128) of the parts chosen")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's); 1 steadies ratios on a busy machine")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    parser.add_argument("--no-packing", action="store_true", help="ours inference with nn.Linear, not oneDNN-packed weights")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--family", choices=list(BASE_CONFIGS), default="bert", help="which family, at base size")
    parser.add_argument("--memory-of", nargs=2, metavar=("CONFIG", "SHAPE"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # smoke tests: tiny_fields' sizes
    args = parser.parse_args()
    packing = not args.no_packing
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.memory_of:
        print(peak_memory(Models(args.folder, packing, args.family), *args.memory_of))
        return

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / f"random-{args.family}-base"
        make_random_bert(folder, family=args.family, tiny=args.tiny)
        models = Models(folder, packing, args.family)
        for part in args.parts:
            names, shapes = PARTS[part]
            results[part] = {}
            for shape in (s for s in shapes if not args.shapes or s in args.shapes):
                times = compare(models, names, shape, args.repeats)
                memory = {} if args.no_memory else {name: measure_memory(folder, name, shape, packing, args.family) for name in names}
                results[part][shape] = {"times": times, "peak_mb": memory}
                print(f"{part} {shape}: " + ", ".join(f"{n} {statistics.median(times[n]):.3f} s" for n in names), flush=True)

    load = os.getloadavg()
    linear = "oneDNN-packed weights" if packing else "nn.Linear (no packing)"
    print(f"\n{args.family}-base; torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, ours' inference with {linear}; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; median of {args.repeats} alternating runs, spread min–max; "
          "ratio = ours / transformers (last column); peak = extra resident memory during one call (VmHWM)"
          + (f"; transformers' {args.family} has no sdpa: its plain reference (transformers_sdpa) is eager attention"
             if args.family in EAGER_ONLY else "") + ("; TINY model (a smoke test, not a measurement)" if args.tiny else "") + "\n")
    for part, rows in results.items():
        print("\n".join(table(part, rows)) + "\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"load_average": load, "results": results}, indent=2))


if __name__ == "__main__":
    main()
