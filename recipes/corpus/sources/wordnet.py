"""WordNet 3.0 (Debian wordnet-base): the example sentences quoted in its glosses, and its definitions as sentences."""
from __future__ import annotations

import os
import re
from typing import Iterable, Iterator

from ..fetch import Fetcher
from ..source import Source


def _wordnet(fetch: Fetcher, want_examples: bool) -> tuple[str, Iterable[str]]:
    root, ver = fetch.deb("wordnet-base")
    base = os.path.join(root, "usr/share/wordnet")

    def gen() -> Iterator[str]:
        for pos in ("noun", "verb", "adj", "adv"):
            with open(os.path.join(base, "data." + pos), encoding="latin-1") as f:
                for raw in f:
                    if raw.startswith("  "):
                        continue  # licence header
                    head, _, gloss = raw.partition(" | ")
                    fields = head.split()
                    nwords = int(fields[3], 16)
                    lemmas = [fields[4 + 2 * i] for i in range(nwords)]
                    lemma = re.sub(r"\(\w+\)$", "", lemmas[0]).replace("_", " ")
                    gloss = gloss.strip()
                    examples = re.findall(r'"([^"]+)"', gloss)
                    definition = gloss.split(";")[0].strip()
                    if '"' in definition:
                        definition = ""
                    if want_examples:
                        for ex in examples:
                            ex = ex.strip().rstrip(";").strip()
                            if not ex:
                                continue
                            ex = ex[0].upper() + ex[1:]
                            if ex[-1] not in ".!?":
                                ex += "."
                            yield ex
                    elif definition and not re.search(r"[()]", definition):
                        if pos == "noun":
                            if re.match(r"(a|an|the|any|one|someone|something|person)\b", definition):
                                s = f"{lemma} is {definition}."
                            else:
                                continue
                        elif pos == "verb":
                            s = f"to {lemma} is to {definition}."
                        else:
                            s = f"{lemma} means {definition}."
                        yield s[0].upper() + s[1:]
    return ver, gen()


SOURCES = [
    Source("wordnet-examples", "Debian wordnet-base", "WordNet 3.0 licence (permissive, BSD-like)",
           "Example sentences quoted in WordNet 3.0 glosses.",
           lambda f: _wordnet(f, True)),
    Source("wordnet-glosses", "Debian wordnet-base", "WordNet 3.0 licence (permissive, BSD-like)",
           "WordNet definitions rendered as '<word> is <gloss>.' / 'To <verb> is to <gloss>.' / "
           "'<adj> means <gloss>.' sentences (nouns only where the gloss starts with an article).",
           lambda f: _wordnet(f, False)),
]
