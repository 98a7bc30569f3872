"""The text a layer scan reads: sentences, each encoded alone, and (for a treebank) every token's word tags.

    corpus = load_corpus("ud-ewt", tokenizer)         # UD English EWT dev + test, with UPOS and deprel per token
    corpus = load_corpus("builtin", tokenizer)        # the 992 WordNet example sentences
    corpus = load_corpus("notes.txt", tokenizer)      # one sentence per line; a .conllu file is read as a treebank
    corpus = load_corpus("out/index", tokenizer, model)  # the sentences of a `python -m bert index` folder
    corpus.locate(row)                                # (sentence index, token position) of a flat token row

Rows number every token of the corpus, [CLS] and [SEP] included, sentence after sentence: the layout every scan's
[row, unit] activations follow.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ...errors import InputTooLongError, InvalidInputError
from ...tokenizer import BertTokenizer, Encoding

BUILTIN_CORPORA = ("builtin", "ud-ewt", "ud-ewt-dev", "ud-ewt-test")  # what --data accepts besides a path
TAG_COLUMNS = ("upos", "deprel")  # the treebank columns a corpus keeps per token


@dataclass(frozen=True)
class Corpus:
    name: str  # "UD English EWT (dev + test)", a file name, ...
    sentences: tuple[str, ...]
    encodings: tuple[Encoding, ...]  # one per sentence, [CLS] sentence [SEP]
    tags: dict[str, tuple[tuple[str | None, ...], ...]] = field(default_factory=dict)
    # column -> per sentence, per token: the tag of the word the token belongs to (None for [CLS] and [SEP])

    def __post_init__(self):
        if len(self.sentences) != len(self.encodings):
            raise InvalidInputError(f"{len(self.sentences)} sentences but {len(self.encodings)} encodings")
        if not self.sentences:
            raise InvalidInputError(f"{self.name} holds no sentence: give at least one")

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def offsets(self) -> np.ndarray:
        """[sentence + 1]: the first row of each sentence, then the number of rows."""
        return np.concatenate([[0], np.cumsum([len(e) for e in self.encodings])])

    @property
    def num_tokens(self) -> int:
        return int(self.offsets[-1])

    def locate(self, rows: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """(sentence index, token position) of flat rows."""
        offsets = self.offsets
        sentence = np.searchsorted(offsets, rows, side="right") - 1
        return sentence, np.asarray(rows) - offsets[sentence]

    def token(self, row: int) -> str:
        sentence, position = self.locate(row)
        return self.encodings[int(sentence)].tokens[int(position)]

    def tag_rows(self, column: str) -> np.ndarray:
        """[row] of strings: every token's tag in `column` ("" for [CLS] and [SEP])."""
        return np.array([tag or "" for sentence in self.tags[column] for tag in sentence], dtype=object)


def load_corpus(source: str | Path, tokenizer: BertTokenizer, model=None, max_length: int = 512) -> Corpus:
    """A corpus by name ("builtin", "ud-ewt" = EWT dev + test, "ud-ewt-dev", "ud-ewt-test"), a .conllu or other
    treebank file, a corpus-index folder (give `model`: the index must be its own), or a UTF-8 text file with one
    sentence per line."""
    from ..probing.treebank import builtin_treebank, read_treebank

    if source == "builtin":
        from ...data import builtin_sentences

        return corpus_from_texts("built-in sentences", [s.text for s in builtin_sentences()], tokenizer, max_length)
    if source == "ud-ewt":
        dev, test = builtin_treebank("dev"), builtin_treebank("test")
        return corpus_from_treebank("UD English EWT (dev + test)", dev.sentences + test.sentences, tokenizer, max_length)
    if source in ("ud-ewt-dev", "ud-ewt-test"):
        treebank = builtin_treebank(str(source).removeprefix("ud-ewt-"))
        return corpus_from_treebank(treebank.name, treebank.sentences, tokenizer, max_length)
    path = Path(source).expanduser()
    if path.is_dir():
        return _corpus_from_index(path, tokenizer, model, max_length)
    if not path.is_file():
        raise InvalidInputError(f"{source} is neither a file nor a folder; give a text file (one sentence per line), "
                                f"a .conllu treebank, an index folder or one of {', '.join(BUILTIN_CORPORA)}")
    if path.suffix == ".conllu":
        treebank = read_treebank(path)
        return corpus_from_treebank(treebank.name, treebank.sentences, tokenizer, max_length)
    from ..corpus.index_cli import read_lines

    return corpus_from_texts(path.name, read_lines(path), tokenizer, max_length)


def corpus_from_texts(name: str, texts: Sequence[str], tokenizer: BertTokenizer, max_length: int = 512) -> Corpus:
    """Plain sentences; one too long for the model is an error that names it (nothing is cut)."""
    encodings = []
    for number, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError(f"sentence {number + 1} of {name} is empty: give text")
        try:
            encodings.append(tokenizer.encode(text, max_length=max_length))
        except InputTooLongError as error:
            raise InvalidInputError(f"sentence {number + 1} of {name} is too long: {error}") from error
    return Corpus(name, tuple(texts), tuple(encodings))


def corpus_from_treebank(name: str, sentences, tokenizer: BertTokenizer, max_length: int = 512) -> Corpus:
    """Treebank sentences (bert.analysis.probing.treebank): words encoded as given, UPOS and deprel per token."""
    encodings, tags = [], {column: [] for column in TAG_COLUMNS}
    for sentence in sentences:
        try:
            encoding = tokenizer.encode_words(list(sentence.words), max_length)
        except InputTooLongError as error:
            raise InvalidInputError(f"the sentence on line {sentence.line} of {name} is too long: {error}") from error
        encodings.append(encoding)
        for column in TAG_COLUMNS:
            labels = sentence.labels.get(column)
            tags[column].append(tuple(None if w is None or labels is None else labels[w] for w in encoding.word_ids))
    kept = {column: tuple(rows) for column, rows in tags.items() if any(tag for row in rows for tag in row)}
    return Corpus(name, tuple(s.text for s in sentences), tuple(encodings), kept)


def _corpus_from_index(folder: Path, tokenizer: BertTokenizer, model, max_length: int) -> Corpus:
    """The sentences of a saved corpus index; its part-of-speech column, where it has one, as the "pos" tags."""
    from ..corpus.corpus_search import CorpusIndex

    if model is None:
        raise InvalidInputError("reading a corpus index needs the model it was built with")
    index = CorpusIndex.load(folder, model)
    corpus = corpus_from_texts(folder.name, index.sentences, tokenizer, max_length)
    pos, offsets = index.entries.part_of_speech, corpus.offsets
    if not any(pos) or len(pos) != corpus.num_tokens:
        return corpus
    tags = {"pos": tuple(tuple(pos[offsets[i] : offsets[i + 1]]) for i in range(len(corpus)))}
    return Corpus(corpus.name, corpus.sentences, corpus.encodings, tags)
