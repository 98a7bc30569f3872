"""The recipe behind the built-in `minilm` model: MiniLM's encoder fine-tuned with a new masked-LM head.

    python recipes/train_minilm_mlm.py all        # corpus, then training (resumable), then export
    python recipes/train_minilm_mlm.py export     # write bert/weights/minilm_mlm.safetensors from the checkpoint

Runs on CPU (2 cores: hours); a rerun resumes from data/minilm_mlm/checkpoint. Every number is fixed here.
"""
from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from pathlib import Path

from bert.checkpoint import read_state_dict
from bert.pretrained import MINILM_HEAD_FILE, load_pretrained, minilm_folder
from bert.pretraining.data import DataConfig, batches
from bert.pretraining.export import save_changed
from bert.pretraining.trainer import TrainConfig, complete_checkpoint, evaluate, load_checkpoint_weights, train

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "corpus"
RUN = ROOT / "data" / "minilm_mlm"
DATA = DataConfig(max_length=128, batch_size=64)
TRAIN = TrainConfig(
    steps=6000, learning_rate=1e-4, warmup_steps=400, weight_decay=0.01, clip_norm=1.0, seed=1234,
    train="all", freeze_token_embedding=True,  # the tied token embedding stays MiniLM's: small shipped weights
    whole_word=True, bf16=True, eval_every=500, eval_batches=40, checkpoint_every=200,
)


def build_corpus() -> None:
    subprocess.run([sys.executable, str(ROOT / "recipes" / "build_corpus.py"), "--out", str(CORPUS)], check=True)


def start_model():
    model, tokenizer = load_pretrained("minilm-encoder")
    return model.add_heads(mlm_head=True), tokenizer


def run_training() -> dict:
    model, tokenizer = start_model()
    return train(model, tokenizer, CORPUS / "train.txt", CORPUS / "heldout.txt", RUN, TRAIN, DATA)


def export() -> dict:
    model, tokenizer = start_model()
    checkpoint = complete_checkpoint(RUN / "checkpoint")
    if checkpoint is None:
        raise SystemExit(f"no checkpoint in {RUN}: run the train phase first")
    step = load_checkpoint_weights(checkpoint, model)
    model.eval()
    base = read_state_dict(minilm_folder() / "model.safetensors")
    changed = save_changed(model, base, MINILM_HEAD_FILE, {"step": str(step), "recipe": "recipes/train_minilm_mlm.py"})
    shipped, _ = load_pretrained("minilm")  # what users get: fp16 weights, read back
    heldout = list(batches(CORPUS / "heldout.txt", tokenizer, DATA, TRAIN.seed, 0))
    metrics = {"step": step, **evaluate(shipped, tokenizer, heldout, TRAIN), "tensors": len(changed),
               "megabytes": round(MINILM_HEAD_FILE.stat().st_size / 2**20, 1)}
    (RUN / "export.json").write_text(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["corpus", "train", "export", "all"])
    phase = parser.parse_args().phase
    if phase in ("corpus", "all"):
        build_corpus()
    if phase in ("train", "all"):
        print(run_training())
    if phase in ("export", "all"):
        print(export())
