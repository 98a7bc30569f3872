"""Arguments shared by the command lines (`python -m bert ...`, `python -m viz_app.export.lesson`, bench/ scripts)."""
from __future__ import annotations

import argparse

MODEL_HELP = "minilm (built in), minilm-encoder, minilm-trec, a Hugging Face folder, or a cached hub id such as bert-base-uncased"


def add_model_argument(parser: argparse.ArgumentParser, default: str = "minilm", help: str = MODEL_HELP) -> None:
    """`--model`: what `bert.load_pretrained` loads."""
    parser.add_argument("--model", default=default, help=f"{help} (default: {default})")
