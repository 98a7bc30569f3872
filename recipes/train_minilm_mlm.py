"""The recipe behind the built-in `minilm` model: MiniLM's encoder fine-tuned with a new masked-LM head.

    python recipes/train_minilm_mlm.py all        # corpus, both training phases (resumable), then export
    python recipes/train_minilm_mlm.py export     # write bert/weights/minilm_mlm.safetensors from the checkpoint

Phase 1 trains on the whole corpus (data/minilm_mlm). Phase 2 goes on from phase 1's weights, with a fresh
schedule, on a mix that repeats the everyday sources (conversation, example sentences, quotations, questions)
and keeps a share of the rest (data/minilm_mlm_everyday). Runs on CPU (2 cores: hours); a rerun resumes from
the checkpoints. Every number is fixed here.
"""
from __future__ import annotations

import argparse
import json
import logging
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from bert.checkpoint import read_state_dict
from bert.pretraining.cloze_eval import EVERYDAY_CLOZE
from bert.pretrained import MINILM_HEAD_FILE, load_pretrained, minilm_folder
from bert.pretraining.data import DataConfig, batches
from bert.pretraining.export import save_changed
from bert.pretraining.trainer import TrainConfig, complete_checkpoint, evaluate, load_checkpoint_weights, train

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "corpus"
RUN = ROOT / "data" / "minilm_mlm"
RUN_EVERYDAY = ROOT / "data" / "minilm_mlm_everyday"
EVERYDAY_MIX = CORPUS / "everyday_mix.txt"
DATA = DataConfig(max_length=128, batch_size=64)
TRAIN = TrainConfig(
    steps=6000, learning_rate=1e-4, warmup_steps=400, weight_decay=0.01, clip_norm=1.0, seed=1234,
    train="all", freeze_token_embedding=True,  # the tied token embedding stays MiniLM's: small shipped weights
    whole_word=True, bf16=True, eval_every=500, eval_batches=40, checkpoint_every=200,
)
TRAIN_EVERYDAY = replace(TRAIN, steps=6000, warmup_steps=300, seed=4321)
# Phase 2's mix: each train.txt line of these sources this many times; other sources' lines with OTHERS_KEPT odds.
EVERYDAY_REPEATS = {
    "movie-dialog": 2, "chatterbot-corpus": 3, "harvard-sentences": 3, "wordnet-examples": 3, "wordnet-glosses": 1,
    "fortunes": 2, "fortunes-min": 2, "trec-questions": 2, "klavaro": 3, "vader-snippets": 2,
    "gensim-polarity": 2, "gensim-imdb": 2,
}
OTHERS_KEPT = 0.35


def build_corpus() -> None:
    subprocess.run([sys.executable, str(ROOT / "recipes" / "build_corpus.py"), "--out", str(CORPUS)], check=True)


def build_everyday_mix(corpus: Path = CORPUS, out: Path = EVERYDAY_MIX, cloze: Path = EVERYDAY_CLOZE) -> dict[str, int]:
    """Phase 2's training text, from train.txt only (held-out lines stay out), without copies of the everyday
    cloze sentences. A line's source is the first source holding it, as in build_corpus's de-duplication."""
    sys.path.insert(0, str(ROOT / "recipes"))
    from corpus import SOURCES, Excluder, dedup_key

    copies_of_cloze = Excluder([str(cloze)])
    source_of: dict[str, str] = {}
    for source in SOURCES:
        cached = corpus / ".cache" / "sources" / f"{source.name}.txt"
        for line in cached.open(encoding="utf-8") if cached.is_file() else ():
            source_of.setdefault(dedup_key(line), source.name)
    rng, mix, counts = random.Random(TRAIN_EVERYDAY.seed), [], {"cloze copies left out": 0}
    for line in (corpus / "train.txt").open(encoding="utf-8"):
        key = dedup_key(line)
        if copies_of_cloze.hit(key):
            counts["cloze copies left out"] += 1
            continue
        source = source_of.get(key, "unknown")
        copies = EVERYDAY_REPEATS.get(source, int(rng.random() < OTHERS_KEPT))
        mix += [line] * copies
        counts[source] = counts.get(source, 0) + copies  # lines written to the mix
    rng.shuffle(mix)
    partial = out.with_name(out.name + ".tmp")
    partial.write_text("".join(mix), encoding="utf-8")
    partial.replace(out)  # a run reading the old file keeps reading it
    return counts


def start_model():
    model, tokenizer = load_pretrained("minilm-encoder")
    return model.add_output_heads(mlm_head=True), tokenizer


def trained_model(run: Path):
    """The model as `run`'s checkpoint left it, and the step it got to."""
    model, tokenizer = start_model()
    checkpoint = complete_checkpoint(run / "checkpoint")
    if checkpoint is None:
        raise SystemExit(f"no checkpoint in {run}: run the training phase that writes it first")
    return model, tokenizer, load_checkpoint_weights(checkpoint, model)


def run_training() -> dict:
    model, tokenizer = start_model()
    return train(model, tokenizer, CORPUS / "train.txt", CORPUS / "heldout.txt", RUN, TRAIN, DATA)


def run_everyday_training() -> dict:
    if not EVERYDAY_MIX.is_file():
        print(build_everyday_mix())
    model, tokenizer, _ = trained_model(RUN)  # phase 1's end; phase 2's own checkpoint replaces it on a resume
    return train(model, tokenizer, EVERYDAY_MIX, CORPUS / "heldout.txt", RUN_EVERYDAY, TRAIN_EVERYDAY, DATA)


def export() -> dict:
    model, tokenizer, step = trained_model(RUN_EVERYDAY)
    model.eval()
    base = read_state_dict(minilm_folder() / "model.safetensors")
    changed = save_changed(model, base, MINILM_HEAD_FILE, {"step": str(step), "recipe": "recipes/train_minilm_mlm.py"})
    shipped, _ = load_pretrained("minilm")  # what users get: fp16 weights, read back
    heldout = list(batches(CORPUS / "heldout.txt", tokenizer, DATA, TRAIN.seed, 0))
    metrics = {"step": step, **evaluate(shipped, tokenizer, heldout, TRAIN), "tensors": len(changed),
               "megabytes": round(MINILM_HEAD_FILE.stat().st_size / 2**20, 1)}
    (RUN_EVERYDAY / "export.json").write_text(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["corpus", "train", "mix", "train2", "export", "all"])
    phase = parser.parse_args().phase
    if phase in ("corpus", "all"):
        build_corpus()
    if phase in ("train", "all"):
        print(run_training())
    if phase in ("mix", "all"):
        print(build_everyday_mix())
    if phase in ("train2", "all"):
        print(run_everyday_training())
    if phase in ("export", "all"):
        print(export())
