"""Build `tiny_corpus.txt.gz`, the text the app's tiny BERTs learn from, from every example sentence quoted in
WordNet 3.0 glosses (the same source as sentences.tsv; see README.md here for its licence), and `tiny_vocab.txt`,
their vocabulary.

Kept: examples of 4 to 30 words without tabs, brackets or semicolons, first letter capitalised, a final period
added where there was no closing punctuation; duplicates and copies of the cloze sets' sentences left out;
ordered by the SHA-1 of their text. Run once on a machine with Debian's wordnet-base installed:

    python -m bert.data.build_tiny_corpus         # writes bert/data/tiny_corpus.txt.gz and tiny_vocab.txt

The vocabulary: BERT's five special tokens, every character of the corpus (alone and as a "##" piece, so that
any word of it can be spelled), then the word pieces the uncased BERT vocabulary cuts the corpus into, most
frequent first, up to VOCAB_SIZE. A quarter of BERT's 30,522 rows: a tiny model trains about 3 times faster.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
from collections import Counter
from pathlib import Path

from .build_sentences import FILES, _WORD, synsets

OUT = Path(__file__).with_name("tiny_corpus.txt.gz")
VOCAB_OUT = Path(__file__).with_name("tiny_vocab.txt")
VOCAB_SIZE = 8000
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # [PAD] first: id 0, BertConfig's pad_token_id
CLOZE_SETS = [Path(__file__).with_name(name) for name in ("everyday_cloze.tsv", "right_context_cloze.tsv")]


def as_line(example: str) -> str | None:
    text = " ".join(example.split())
    if not 4 <= len(_WORD.findall(text)) <= 30 or any(c in text for c in "\t;[]{}<>_"):
        return None
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def cloze_texts() -> set[str]:
    """The cloze sentences with their first answer filled in, lower case: kept out of the training text."""
    filled = set()
    for path in CLOZE_SETS:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                sentence, answer, *_ = line.split("\t")
                filled.add(sentence.replace("[MASK]", answer).lower())
    return filled


def build() -> list[str]:
    lines = {line for pos in FILES for _, examples in synsets(pos) for example in examples if (line := as_line(example))}
    cloze = cloze_texts()
    lines = {line for line in lines if line.lower() not in cloze}
    return sorted(lines, key=lambda line: hashlib.sha1(line.encode()).hexdigest())


def build_vocab(lines: list[str], size: int = VOCAB_SIZE) -> list[str]:
    from ..pretrained import minilm_folder
    from ..tokenizer import BertTokenizer

    uncased = BertTokenizer.from_vocab(minilm_folder() / "vocab.txt")
    counts = Counter(uncased.id_to_token(i) for ids in uncased.encode_plain(lines) for i in ids)
    characters = sorted({c for piece in counts for c in piece.removeprefix("##")})
    vocab = SPECIAL + characters + ["##" + c for c in characters]
    known = set(vocab)
    vocab += [piece for piece, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])) if piece not in known]
    return vocab[:size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    lines = build()
    with gzip.GzipFile(args.out, "wb", mtime=0) as out:  # mtime 0: the same bytes on every rebuild
        out.write(("\n".join(lines) + "\n").encode("utf-8"))
    print(f"wrote {len(lines)} sentences to {args.out}")
    vocab = build_vocab(lines)
    VOCAB_OUT.write_text("".join(piece + "\n" for piece in vocab), encoding="utf-8")
    print(f"wrote {len(vocab)} word pieces to {VOCAB_OUT}")


if __name__ == "__main__":
    main()
