#!/usr/bin/env python3
"""Build the English fine-tuning corpus (the code is in recipes/corpus/; its __init__ says what it fetches and
installs).

    python recipes/build_corpus.py [--out data/corpus] [--only NAME ...] [--skip NAME ...] [--force] [--list]
                                   [--exclude FILE ...] [--exclude-external DIR]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus.build import main  # noqa: E402

if __name__ == "__main__":
    main()
