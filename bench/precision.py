"""Reduced-precision inference against float32: the built-in MiniLM with its weights in bfloat16 or float16.

    OMP_NUM_THREADS=1 python bench/precision.py [--device cpu] [--model minilm] [--json out/precision.json]

Every word piece of the test sentences (tests/bert_test_support.py: 20 sentences, 8 pairs) is masked in turn,
one batch per sentence; at each masked position the float32 and the reduced-precision logits are compared:
the largest and the mean absolute difference, whether the top-1 prediction agrees, and how many of the
float32 top-5 are in the reduced-precision top-5. A dtype the device cannot run is reported, not hidden.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

import bert  # noqa: E402
from bert.devices import model_device  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bert_test_support import PAIRS, SENTENCES  # noqa: E402


@torch.no_grad()
def masked_logits(model: bert.Bert, tokenizer: bert.BertTokenizer) -> torch.Tensor:
    """[every maskable token of the test inputs, vocab]: the logits with that one token masked."""
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    model, tokenizer = bert.load_pretrained(args.model, device=args.device)
    reference = masked_logits(model, tokenizer)
    results = {"model": args.model, "device": args.device, "torch": torch.__version__}
    for dtype in (torch.bfloat16, torch.float16):
        name = str(dtype).removeprefix("torch.")
        try:
            reduced, _ = bert.load_pretrained(args.model, device=args.device, dtype=dtype)  # rounded once from the file
            results[name] = compare(reference, masked_logits(reduced, tokenizer))
        except (RuntimeError, NotImplementedError) as error:  # an operation without a kernel for this dtype here
            results[name] = {"error": str(error).splitlines()[0]}
        print(name, results[name], flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
