"""Every probing task in one table: what it asks, what it reads (a word, a word piece, an arc, a tree) and what
the data must have for it.

- text tasks, which any sentences support, read word pieces: position, segment, continuation, punctuation,
  frequency, masked_identity.
- tag tasks: one per label column of the data (upos, xpos, deprel of a CoNLL-U file, the WordNet headwords' pos,
  an uploaded file's own columns), read from each word's vector.
- tree tasks, which need every sentence's heads: arcs (edge probing), distance and depth (structural probes).

`supported_tasks` says which tasks a set of sentences offers: sentences read from text (the built-in WordNet
set, a plain-text file) offer the text tasks and their label columns; treebanks their label columns and the tree
tasks. Any text task runs on any data when asked for by name.
"""
from __future__ import annotations

from dataclasses import dataclass

TEXT_FORMAT = "text"  # Treebank.format of sentences read from plain text (bert.analysis.probing.sentence_sets)


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # "text" (word pieces), "tag" (a label column, per word), "arcs", "distance" or "depth"
    description: str  # what it asks, for a table or a page
    inputs: str = "single"  # text tasks: "single" sentences, "pair"s of consecutive sentences, or "masked" sentences


TASKS = {
    task.name: task
    for task in [
        Task("position", "text", "the word piece's index in the input (0 = [CLS]), up to 31"),
        Task("segment", "text", "sentence A or B, in inputs made of two consecutive sentences", "pair"),
        Task("continuation", "text", "is the word piece a ## piece that continues a word?"),
        Task("punctuation", "text", "is the word piece punctuation?"),
        Task("frequency", "text", "the word piece's frequency band in these sentences (top, middle, bottom third of uses)"),
        Task("masked_identity", "text", "which of the 10 most frequent words was replaced by [MASK]", "masked"),
        Task("pos", "tag", "the part of speech (noun, verb, adjective, adverb) of the WordNet headword; the built-in "
                           "sentences carry it"),
        Task("upos", "tag", "the word's universal part of speech (17 tags: NOUN, VERB, ADJ, ...)"),
        Task("xpos", "tag", "the treebank's own, finer part-of-speech tag (for English, the Penn Treebank's tags)"),
        Task("deprel", "tag", "the label of the arc from the word to its head (nsubj, obj, det, ...)"),
        Task("arcs", "arcs", "the label of a (head, dependent) pair of words, read from both words' vectors side by "
                             "side (edge probing, Tenney et al. 2019)"),
        Task("distance", "distance", "how many arcs apart two words are in the tree, as the squared distance of B·h "
                                     "(structural probe, Hewitt & Manning 2019), scored by UUAS"),
        Task("depth", "depth", "how many arcs below the root a word is, as the squared norm of B·h (structural probe, "
                               "Hewitt & Manning 2019), scored by root accuracy"),
    ]
}
TEXT_TASKS = tuple(name for name, task in TASKS.items() if task.kind == "text")
TREE_TASKS = ("arcs", "distance", "depth")  # tasks that need heads
MAX_POSITION = 31  # the position task uses word pieces 0..31
MASKED_VOCABULARY = 10  # how many frequent words the masked_identity task tells apart


def task(name: str) -> Task:
    """The table's task, or a tag task for any other label column (an uploaded file's "ner", say)."""
    return TASKS.get(name) or Task(name, "tag", f"the labels of the data's column “{name}”, one per word")


def supported_tasks(format: str, label_columns, has_trees: bool) -> list[str]:
    """The tasks sentences offer: from text, the text tasks then the label columns; from a treebank, the label
    columns, then arcs (with a deprel column), distance and depth when there are trees."""
    if format == TEXT_FORMAT:
        return [*TEXT_TASKS, *label_columns]
    tree_tasks = [t for t in TREE_TASKS if t != "arcs" or "deprel" in label_columns] if has_trees else []
    return [*label_columns, *tree_tasks]


def can_run(name: str, label_columns, has_trees: bool) -> bool:
    """Whether sentences with these label columns (and trees, or not) can run a task: text tasks run on any."""
    kind = task(name).kind
    if kind == "text":
        return True
    if kind == "tag":
        return name in label_columns
    return has_trees and (kind != "arcs" or "deprel" in label_columns)


def needs(name: str) -> str:
    """What data a task needs, said to someone whose data lacks it."""
    if name == "pos":
        return "part-of-speech labels of WordNet headwords (the built-in sentences carry them)"
    if name in TREE_TASKS:
        return "a dependency tree for every sentence" + (" and a deprel column" if name == "arcs" else "")
    return f"a label column named {name!r}"
