"""Reduced-precision inference against float32: the built-in MiniLM with its weights in bfloat16 or float16.

    OMP_NUM_THREADS=1 python -m bench.precision [--device cpu] [--model minilm] [--json out/precision.json]

Every word piece of the sample inputs (bert/data/sample_inputs.py: 20 sentences, 8 pairs) is masked in turn,
one batch per sentence; at each masked position the float32 and the reduced-precision logits are compared:
the largest and the mean absolute difference, whether the top-1 prediction agrees, and how many of the
float32 top-5 are in the reduced-precision top-5. A dtype the device cannot run is reported, not hidden.
Speed: the whole pass over the sample inputs (351 masked copies in 28 batches), timed `--repeats` times for
each dtype in turn (alternating, so that a busy moment hits all of them), median and spread, and the ratio
of medians to float32.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

import bert  # noqa: E402
from bert.data.sample_inputs import PAIRS, SENTENCES  # noqa: E402
from bert.devices import model_device  # noqa: E402
from bert.cli_arguments import add_model_argument


@torch.no_grad()
def masked_logits(model: bert.Bert, tokenizer: bert.BertTokenizer) -> torch.Tensor:
    """[every maskable token of the sample inputs, vocab]: the logits with that one token masked."""
    rows = []
    for text, pair in [(s, None) for s in SENTENCES] + PAIRS:
        encoding = tokenizer.encode(text, pair)
        positions = [i for i, special in enumerate(encoding.special) if not special]
        ids, types = encoding.tensors(model_device(model))
        ids = ids.repeat(len(positions), 1)
        ids[range(len(positions)), positions] = tokenizer.mask_id
        at_mask = ids == tokenizer.mask_id
        rows.append(model(ids, types.expand_as(ids), logit_mask=at_mask).float().cpu())
    return torch.cat(rows)


def compare(reference: torch.Tensor, other: torch.Tensor) -> dict[str, float]:
    difference = (reference - other).abs()
    top5 = reference.topk(5, dim=-1).indices
    other5 = other.topk(5, dim=-1).indices
    overlap = (top5[:, :, None] == other5[:, None, :]).any(-1).float().sum(-1)  # [position]
    return {
        "positions": len(reference),
        "max_abs_logit_difference": round(float(difference.max()), 4),
        "mean_abs_logit_difference": round(float(difference.mean()), 5),
        "logit_range": round(float(reference.abs().max()), 2),
        "top1_agreement": round(float((reference.argmax(-1) == other.argmax(-1)).float().mean()), 4),
        "top5_overlap": round(float(overlap.mean() / 5), 4),
    }


def timings(models: dict[str, bert.Bert], tokenizer: bert.BertTokenizer, repeats: int) -> dict[str, dict]:
    """{dtype: median, min, max seconds of one masked_logits pass, ratio of medians to float32}."""
    times = {name: [] for name in models}
    for _ in range(repeats):
        for name, model in models.items():
            start = time.perf_counter()
            masked_logits(model, tokenizer)
            if model_device(model).type == "cuda":
                torch.cuda.synchronize()
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["float32"])
    return {name: {"median": round(statistics.median(t), 3), "min": round(min(t), 3), "max": round(max(t), 3),
                   "ratio_to_float32": round(statistics.median(t) / base, 2)} for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(parser)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--repeats", type=int, default=5, help="timed passes per dtype (0: no timing)")
    args = parser.parse_args()
    model, tokenizer = bert.load_pretrained(args.model, device=args.device, pack_for_cpu=True)
    reference = masked_logits(model, tokenizer)
    results = {"model": args.model, "device": args.device, "torch": torch.__version__,
               "threads": torch.get_num_threads()}
    runnable = {"float32": model}
    for dtype in (torch.bfloat16, torch.float16):
        name = str(dtype).removeprefix("torch.")
        try:
            reduced, _ = bert.load_pretrained(args.model, device=args.device, dtype=dtype, pack_for_cpu=True)  # rounded once from the file
            results[name] = compare(reference, masked_logits(reduced, tokenizer))
            runnable[name] = reduced
        except (RuntimeError, NotImplementedError) as error:  # an operation without a kernel for this dtype here
            results[name] = {"error": str(error).splitlines()[0]}
        print(name, results[name], flush=True)
    if args.repeats > 0:
        results["seconds"] = timings(runnable, tokenizer, args.repeats)
        print("seconds", results["seconds"], flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
