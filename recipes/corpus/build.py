"""The build: extract and clean each chosen source (cached per source), then de-duplicate across sources, leave
out evaluation sentences, split off ~1% held out, and write train.txt, heldout.txt and SOURCES.md."""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path

from .clean import acceptable, dedup_key, normalise
from .exclude import DEFAULT_EXCLUDE, EXTERNAL_VARIABLE, Excluder, external_sentences
from .fetch import Fetcher, log
from .source import Source
from .sources import SOURCES

HELDOUT_PER_MILLE = 10  # 1%
SHUFFLE_SEED = 1234
# Cached source text is tied to the code that made it: a hash of this folder's Python files.
CODE_HASH = hashlib.sha1(b"".join(p.read_bytes() for p in sorted(Path(__file__).parent.rglob("*.py")))).hexdigest()[:12]
def build_source(src: Source, fetch: Fetcher, cache: str, force: bool) -> dict | None:
    txt = os.path.join(cache, "sources", src.name + ".txt")
    meta_path = os.path.join(cache, "sources", src.name + ".json")
    if not force and os.path.exists(txt) and os.path.exists(meta_path):
        meta = json.load(open(meta_path))
        if meta.get("code") == CODE_HASH:
            return meta
        log(f"source {src.name}: cached text came from another version of this code; rebuilding")
    os.makedirs(os.path.dirname(txt), exist_ok=True)
    t0 = time.time()
    try:
        ver, lines = src.extract(fetch)
        n = 0
        with open(txt + ".tmp", "w", encoding="utf-8") as f:
            for ln in lines:
                ln = normalise(ln)
                if acceptable(ln):
                    f.write(ln + "\n")
                    n += 1
    except Exception as e:  # a missing source must not break the others
        log(f"source {src.name} FAILED: {e}")
        return None
    os.replace(txt + ".tmp", txt)
    meta = {"name": src.name, "package": src.package, "version": ver, "licence": src.licence,
            "note": src.note, "raw_lines": n, "code": CODE_HASH}
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    log(f"source {src.name}: {n} lines in {time.time() - t0:.1f}s")
    return meta


def heldout(key: str) -> bool:
    h = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16)
    return h % 1000 < HELDOUT_PER_MILLE


def merge(metas: list[dict], out: str, cache: str, excluder: Excluder) -> None:
    seen: set[bytes] = set()
    stats = []
    train_lines: list[str] = []
    tr_tmp = os.path.join(out, "train.txt.tmp")
    ho_tmp = os.path.join(out, "heldout.txt.tmp")
    tot_lines = tot_words = ho_lines = ho_words = 0
    with open(tr_tmp, "w", encoding="utf-8") as tr, open(ho_tmp, "w", encoding="utf-8") as ho:
        for meta in metas:
            lines = words = dups = excluded = 0
            with open(os.path.join(cache, "sources", meta["name"] + ".txt"), encoding="utf-8") as f:
                for ln in f:
                    ln = ln.rstrip("\n")
                    key = dedup_key(ln)
                    hk = hashlib.md5(key.encode()).digest()
                    if hk in seen:
                        dups += 1
                        continue
                    seen.add(hk)
                    if excluder.hit(key):
                        excluded += 1
                        continue
                    w = len(ln.split())
                    if heldout(key):
                        ho.write(ln + "\n")
                        ho_lines += 1
                        ho_words += w
                    else:
                        train_lines.append(ln)
                    lines += 1
                    words += w
            stats.append(dict(meta, lines=lines, words=words, dups=dups, excluded=excluded))
            tot_lines += lines
            tot_words += words
        # Sources are mixed so that any prefix of train.txt is a fair sample.
        random.Random(SHUFFLE_SEED).shuffle(train_lines)
        tr.write("\n".join(train_lines) + "\n")
    os.replace(tr_tmp, os.path.join(out, "train.txt"))
    os.replace(ho_tmp, os.path.join(out, "heldout.txt"))

    md = ["# Corpus sources", "",
          "Built by `recipes/build_corpus.py` (code in `recipes/corpus/`). Lines are de-duplicated across the whole corpus "
          "(case- and punctuation-insensitive, first source wins); a line is held out when "
          f"sha1(normalised line) mod 1000 < {HELDOUT_PER_MILLE}. train.txt is shuffled "
          f"(seed {SHUFFLE_SEED}); heldout.txt keeps source order.", "",
          f"Total: {tot_lines:,} lines, {tot_words:,} words "
          f"(train {tot_lines - ho_lines:,} lines / {tot_words - ho_words:,} words; "
          f"heldout {ho_lines:,} lines / {ho_words:,} words).", "",
          "| source | package | version | licence | lines | words | notes |",
          "| --- | --- | --- | --- | ---: | ---: | --- |"]
    for s in stats:
        md.append(f"| {s['name']} | {s['package']} | {s['version']} | {s['licence']} | "
                  f"{s['lines']:,} | {s['words']:,} | {s['note']} |")
    n_ex = sum(s["excluded"] for s in stats)
    md += ["", f"Left out as copies of {excluder.count:,} evaluation/probe sentences: {n_ex:,} lines "
           "(per source: " + ", ".join(f"{s['name']} {s['excluded']}" for s in stats if s["excluded"]) + ").",
           ""]
    with open(os.path.join(out, "SOURCES.md.tmp"), "w") as f:
        f.write("\n".join(md))
    os.replace(os.path.join(out, "SOURCES.md.tmp"), os.path.join(out, "SOURCES.md"))
    log(f"wrote {out}: {tot_lines:,} lines, {tot_words:,} words ({ho_lines:,} held out)")


def make_excluder(files: list[str], external: str | None) -> Excluder:
    """The sentences to leave out: those of `files` and of the evaluation data under `external` (None: none)."""
    excluder = Excluder(files)
    log(f"excluding copies of {excluder.count} sentences from {len(files)} file(s)")
    if external is None:
        log(f"not leaving out the published evaluation sets' sentences: name their folder with --exclude-external DIR "
            f"or {EXTERNAL_VARIABLE}")
    else:
        if not os.path.isdir(external):
            sys.exit(f"--exclude-external (or {EXTERNAL_VARIABLE}): {external} is not a folder")
        before = excluder.count
        found = external_sentences(external)
        for sentences in found.values():
            for sentence in sentences:
                excluder.add(sentence)
        log(f"excluding copies of {excluder.count - before} more sentences from {external} "
            f"({', '.join(f'{what} {len(sentences)}' for what, sentences in found.items())})")
    return excluder


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Build an English plain-text corpus for masked-language-model fine-tuning.")
    ap.add_argument("--out", default="data/corpus")
    ap.add_argument("--cache", default=None, help="download/extract cache (default OUT/.cache)")
    ap.add_argument("--only", nargs="*", default=None, help="build only these sources")
    ap.add_argument("--skip", nargs="*", default=[], help="leave these sources out")
    ap.add_argument("--all", action="store_true", help="include sources that are off by default")
    ap.add_argument("--force", action="store_true", help="rebuild the cached per-source text")
    ap.add_argument("--list", action="store_true", help="list the sources and exit")
    ap.add_argument("--exclude", nargs="*", default=DEFAULT_EXCLUDE,
                    help="files of sentences (one a line, or a .tsv whose first column is the sentence; "
                         "[MASK] matches any word) whose copies are left out of the corpus "
                         "(default: bert/data/sentences.tsv and everyday_cloze.tsv)")
    ap.add_argument("--exclude-external", metavar="DIR",
                    default=os.environ.get(EXTERNAL_VARIABLE) or None,
                    help="the folder of published evaluation data whose sentences are left out too: those the "
                         "cloze benchmarks score (bert.evaluation) and LAMA's "
                         f"(default: ${EXTERNAL_VARIABLE}; without either, they stay in)")
    args = ap.parse_args(argv)

    if args.list:
        for s in SOURCES:
            print(f"{s.name:22s} {'on ' if s.default else 'off'} {s.package}: {s.note}")
        return
    out = args.out
    cache = args.cache or os.path.join(out, ".cache")
    os.makedirs(out, exist_ok=True)
    fetch = Fetcher(cache)
    chosen = [s for s in SOURCES
              if (s.name in args.only if args.only is not None else (s.default or args.all))
              and s.name not in args.skip]
    metas = []
    for src in chosen:
        m = build_source(src, fetch, cache, args.force)
        if m is not None:
            metas.append(m)
    if not metas:
        sys.exit("no source could be built")
    merge(metas, out, cache, make_excluder(args.exclude, args.exclude_external))
