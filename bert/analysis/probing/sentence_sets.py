"""Sentences from text read as labelled sentences, like a treebank's: the built-in WordNet examples and plain text.

    data = sentence_set(builtin_sentences(300), "the first 300 built-in sentences")   # or builtin_set(300)
    data.sentences[0].words           # ("the", "dog", "barked", ".") : split as BERT's tokenizer splits words
    data.sentences[0].labels["pos"]   # ("_", "noun", "_", "_"): the WordNet headword's part of speech, "_" elsewhere
    data.tasks                        # the text tasks (position, ..., masked_identity), then "pos"
    data = read_text(uploaded_text, "mine.txt")                  # one sentence per line, or running text

Words are split on white space and punctuation as BERT's own pre-tokenizer does (the `tokenizers` library's
BertPreTokenizer), so a word's pieces are the ones the model reads in the running sentence. The result is a
`Treebank` of format "text": one label column "pos" when some sentence has a WordNet headword, and no tree.
"""
from __future__ import annotations

from typing import Sequence

from tokenizers.pre_tokenizers import BertPreTokenizer

from ...data import PARTS_OF_SPEECH, LabelledSentence, builtin_sentences, split_sentences
from ...errors import InvalidInputError
from .task_table import TEXT_FORMAT
from .treebank import MISSING, Treebank, TreebankSentence

POS_COLUMN = "pos"  # the WordNet headword's part of speech
_SPLITTER = BertPreTokenizer()


def words_of(text: str) -> list[tuple[str, tuple[int, int]]]:
    """(word, (start, end) character span) for each word of `text`, split as BERT's tokenizer splits."""
    return _SPLITTER.pre_tokenize_str(text)


def sentence_set(sentences: Sequence[LabelledSentence], name: str) -> Treebank:
    """Labelled sentences (the built-in set's, or split_sentences' from text) as a Treebank of format "text"."""
    kept = []
    for line, sentence in enumerate(sentences, 1):
        spans = words_of(sentence.text)
        if not spans:
            continue
        words = tuple(word for word, _ in spans)
        labels = {}
        if sentence.pos is not None:
            labels[POS_COLUMN] = tuple(PARTS_OF_SPEECH[sentence.pos] if start == sentence.start else MISSING
                                       for _, (start, _end) in spans)
        kept.append(TreebankSentence(words, labels, None, line))
    if not kept:
        raise InvalidInputError(f"{name} has no words to probe")
    labelled = any(POS_COLUMN in s.labels for s in kept)
    if labelled:  # every sentence gets the column, "_" where it has no headword
        kept = [s if POS_COLUMN in s.labels else TreebankSentence(s.words, {POS_COLUMN: (MISSING,) * len(s)}, None, s.line)
                for s in kept]
    return Treebank(name, TEXT_FORMAT, tuple(kept), label_columns=(POS_COLUMN,) if labelled else ())


def builtin_set(count: int | None = None) -> Treebank:
    """The built-in WordNet example sentences (bert/data/sentences.tsv), all or the first `count`."""
    name = "the built-in WordNet sentences" if count is None else f"the first {count} built-in WordNet sentences"
    return sentence_set(builtin_sentences(count), name)


def read_text(text: str, name: str, max_sentences: int = 2000) -> Treebank:
    """Plain text (one sentence per line, or running text split after . ! ?) as unlabelled sentences."""
    return sentence_set(split_sentences(text, max_sentences=max_sentences), name)
