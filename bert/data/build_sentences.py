"""Build `sentences.tsv`, the built-in sentence set, from the example sentences quoted in WordNet 3.0 glosses.

Each WordNet synset (a word sense) may quote examples of its words in use; the synset's part of speech is
therefore a free, expert-made label for the headword in each example. We keep examples that read as whole
sentences (capital first letter, 5 to 20 words) whose headword occurs exactly once, and choose them
deterministically (by a hash of the text) with at most one sentence per (headword, part of speech).

Run once on a machine with Debian's wordnet-base installed (`apt-get install wordnet-base`):

    python -m bert.data.build_sentences            # writes bert/data/sentences.tsv

The shipped file is what this printed; the app and the tests never need WordNet itself.
"""
from __future__ import annotations

import argparse
import hashlib
import re
from pathlib import Path

WORDNET = Path("/usr/share/wordnet")
OUT = Path(__file__).with_name("sentences.tsv")
# How many sentences of each part of speech to keep (n noun, v verb, a adjective, r adverb): 1,000 in all.
QUOTAS = {"n": 370, "v": 370, "a": 160, "r": 100}
FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")


def synsets(pos: str):
    """(lemmas, examples) of every synset in data.<pos>."""
    for line in (WORDNET / f"data.{FILES[pos]}").read_text(encoding="latin-1").splitlines():
        if line.startswith("  ") or "|" not in line:
            continue  # the licence header
        fields, gloss = line.split("|", 1)
        parts = fields.split()
        count = int(parts[3], 16)
        lemmas = {re.sub(r"\(.*\)$", "", parts[4 + 2 * i]).lower() for i in range(count)}
        yield {lemma for lemma in lemmas if lemma.isalpha()}, re.findall(r'"([^"]+)"', gloss)


def exceptions(pos: str) -> dict[str, set[str]]:
    """lemma -> irregular forms ("go" -> {"went", "gone"}), from <pos>.exc."""
    forms: dict[str, set[str]] = {}
    for line in (WORDNET / f"{FILES[pos]}.exc").read_text(encoding="latin-1").splitlines():
        inflected, *lemmas = line.split()
        for lemma in lemmas:
            forms.setdefault(lemma, set()).add(inflected)
    return forms


def inflections(lemma: str, pos: str, irregular: dict[str, set[str]]) -> set[str]:
    forms = {lemma} | irregular.get(lemma, set())
    stem = lemma[:-1] if lemma.endswith("e") else lemma
    if pos == "n":
        forms |= {lemma + "s", lemma + "es"}
    elif pos == "v":
        forms |= {lemma + "s", lemma + "es", stem + "ed", stem + "ing", lemma + lemma[-1] + "ed", lemma + lemma[-1] + "ing"}
    elif pos == "a":
        forms |= {stem + "er", stem + "est"}
    return forms


def as_sentence(example: str) -> str | None:
    text = " ".join(example.split())
    words = _WORD.findall(text)
    if not 5 <= len(words) <= 20 or not text[0].isupper() or any(c in text for c in "\t;[]{}<>_"):
        return None
    return text if text[-1] in ".!?" else text + "."


def candidates():
    for pos in QUOTAS:
        irregular = exceptions(pos)
        for lemmas, examples in synsets(pos):
            for example in examples:
                sentence = as_sentence(example)
                if sentence is None:
                    continue
                words = [(m.group().lower(), m.start()) for m in _WORD.finditer(sentence)]
                for lemma in sorted(lemmas):
                    forms = inflections(lemma, pos, irregular)
                    hits = [start for word, start in words if word in forms]
                    if len(hits) == 1:
                        yield sentence, lemma, pos, hits[0]
                        break


def build() -> list[tuple[str, str, str, int]]:
    chosen, seen_sentences, seen_heads = [], set(), set()
    count = dict.fromkeys(QUOTAS, 0)
    ordered = sorted(candidates(), key=lambda c: hashlib.sha1(c[0].encode()).hexdigest())
    for sentence, lemma, pos, start in ordered:
        key = sentence.lower()
        if count[pos] >= QUOTAS[pos] or key in seen_sentences or (lemma, pos) in seen_heads:
            continue
        chosen.append((sentence, lemma, pos, start))
        seen_sentences.add(key)
        seen_heads.add((lemma, pos))
        count[pos] += 1
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = build()
    lines = ["sentence\theadword\tpos\tstart"] + [f"{s}\t{h}\t{p}\t{i}" for s, h, p, i in rows]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} sentences to {args.out}")


if __name__ == "__main__":
    main()
