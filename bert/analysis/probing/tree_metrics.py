"""Dependency trees as numbers, and the scores of Hewitt & Manning (2019), "A Structural Probe for Finding Syntax
in Word Representations", following the definitions of their code (github.com/john-hewitt/structural-probes):

- tree distance: the number of arcs between two words in the undirected tree; tree depth: arcs to the root.
- UUAS: the minimum spanning tree of the predicted distances against the one of the gold distances, both over the
  words that are not punctuation, as the share of gold edges found (summed over sentences). Punctuation is UPOS
  PUNCT (their code drops the Penn Treebank punctuation tags '' , . : `` -LRB- -RRB-, which UD tags PUNCT; like
  theirs, symbols such as $ and # stay).
- distance Spearman: per sentence, per word, Spearman's rho between its predicted and gold distances to every word;
  averaged within each sentence length, then over the lengths 5 to 50.
- root accuracy: the share of sentences whose least deep non-punctuation word (predicted depths) is the root;
  norm (depth) Spearman: per sentence rho of predicted and gold depths, averaged as above.
- linear baseline: UUAS of the chain that joins each non-punctuation word to the next one.

Heads are 1-based with 0 for the root, as in CoNLL-U. Everything here is numpy/scipy on one sentence or a list.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import minimum_spanning_tree

PUNCTUATION_UPOS = ("PUNCT",)
SPEARMAN_LENGTHS = range(5, 51)  # sentence lengths the Spearman scores are averaged over


def ancestors(heads: Sequence[int]) -> np.ndarray:
    """bool [word, word]: A[i, k] is True when word k is word i or one of its ancestors."""
    n = len(heads)
    table = np.zeros((n, n), dtype=bool)
    for i in range(n):
        word = i
        while True:
            table[i, word] = True
            if heads[word] == 0:
                break
            word = heads[word] - 1
    return table


def tree_depths(heads: Sequence[int]) -> np.ndarray:
    """[word]: arcs from each word to the root (the root has depth 0)."""
    return ancestors(heads).sum(1) - 1


def tree_distances(heads: Sequence[int]) -> np.ndarray:
    """[word, word]: arcs between two words in the undirected tree, depth(i) + depth(j) - 2 depth(their lowest
    common ancestor)."""
    table = ancestors(heads).astype(np.int64)
    depth = table.sum(1) - 1
    common = table @ table.T - 1  # depth of the lowest common ancestor
    return depth[:, None] + depth[None, :] - 2 * common


def spanning_tree_edges(distances: np.ndarray, keep: np.ndarray | None = None) -> set[tuple[int, int]]:
    """Edges (i < j, 0-based in the whole sentence) of the minimum spanning tree of `distances` over the words
    where `keep` is True (all by default), by scipy's minimum_spanning_tree."""
    return spanning_tree_edges_of([distances], [np.ones(len(distances), bool) if keep is None else keep])[0]


def spanning_tree_edges_of(distances: Sequence[np.ndarray], keeps: Sequence[np.ndarray]) -> list[set[tuple[int, int]]]:
    """`spanning_tree_edges` of many sentences in one call of scipy: the sentences' graphs side by side in one
    sparse matrix have, as their minimum spanning forest, each sentence's spanning tree. Each sentence's distances
    are made symmetric and shifted so that the smallest is 1 (scipy reads a 0 as no edge; shifting every weight
    alike leaves a spanning tree unchanged)."""
    rows, columns, weights, offsets, words_of = [], [], [], [0], []
    for matrix, keep in zip(distances, keeps):
        words = np.flatnonzero(keep)
        words_of.append(words)
        sub = np.asarray(matrix, dtype=np.float64)[np.ix_(words, words)]
        if len(words) > 1:
            sub = (sub + sub.T) / 2
            i, j = np.triu_indices(len(words), 1)
            rows.append(i + offsets[-1])
            columns.append(j + offsets[-1])
            weights.append(sub[i, j] - sub[i, j].min() + 1)
        offsets.append(offsets[-1] + len(words))
    edges: list[set[tuple[int, int]]] = [set() for _ in words_of]
    if not rows:
        return edges
    size = offsets[-1]
    graph = coo_matrix((np.concatenate(weights), (np.concatenate(rows), np.concatenate(columns))), shape=(size, size))
    forest = minimum_spanning_tree(graph.tocsr()).tocoo()
    sentence_of = np.searchsorted(offsets, forest.row, side="right") - 1
    for sentence, i, j in zip(sentence_of.tolist(), forest.row.tolist(), forest.col.tolist()):
        words, start = words_of[sentence], offsets[sentence]
        a, b = int(words[i - start]), int(words[j - start])
        edges[sentence].add((min(a, b), max(a, b)))
    return edges


def non_punctuation(upos: Sequence[str] | None, n: int) -> np.ndarray:
    """bool [word]: True for words that count in UUAS and root accuracy (no UPOS column: every word counts)."""
    if upos is None:
        return np.ones(n, dtype=bool)
    return np.array([tag not in PUNCTUATION_UPOS for tag in upos], dtype=bool)


def uuas(predicted: Sequence[np.ndarray], gold: Sequence[np.ndarray], keep: Sequence[np.ndarray],
         gold_edges: Sequence[set] | None = None) -> float:
    """UUAS over sentences: gold edges found / gold edges, summed over all sentences. gold_edges: the gold
    spanning trees if already computed (`spanning_tree_edges_of(gold, keep)`)."""
    gold_edges = spanning_tree_edges_of(gold, keep) if gold_edges is None else gold_edges
    found = sum(len(g & p) for g, p in zip(gold_edges, spanning_tree_edges_of(predicted, keep)))
    total = sum(len(g) for g in gold_edges)
    return found / total if total else float("nan")


def chain_distances(n: int) -> np.ndarray:
    """[word, word]: |i - j|, whose spanning tree over any word subset joins each word to the next one kept."""
    positions = np.arange(n)
    return np.abs(positions[:, None] - positions[None, :]).astype(np.float64)


def linear_uuas(gold: Sequence[np.ndarray], keep: Sequence[np.ndarray]) -> float:
    """The linear-chain baseline: UUAS of joining each non-punctuation word to the next one."""
    return uuas([chain_distances(len(g)) for g in gold], gold, keep)


def _rowwise_spearman(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman's rho of matching rows along the last axis (ties get average ranks, as scipy's spearmanr);
    NaN where a row is constant."""
    from scipy.stats import rankdata  # imported when a probe is scored: scipy.stats takes 2 s to import

    a, b = rankdata(predicted, axis=-1), rankdata(gold, axis=-1)
    a, b = a - a.mean(-1, keepdims=True), b - b.mean(-1, keepdims=True)
    denominator = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(-1) / denominator


def _spearman_by_length(predicted: Sequence[np.ndarray], gold: Sequence[np.ndarray]) -> float:
    """Rows' Spearman averaged within each sentence length 5-50, then over those lengths; the sentences of one
    length go through rankdata together. NaN rows (constant predictions) are left out of the means."""
    by_length: dict[int, list[int]] = defaultdict(list)
    for index, g in enumerate(gold):
        length = np.shape(g)[-1]
        if length in SPEARMAN_LENGTHS:
            by_length[length].append(index)
    means = []
    for indices in by_length.values():
        rho = _rowwise_spearman(np.stack([np.asarray(predicted[i]) for i in indices]), np.stack([np.asarray(gold[i]) for i in indices]))
        if not np.all(np.isnan(rho)):
            means.append(np.nanmean(rho))
    return float(np.mean(means)) if means else float("nan")


def distance_spearman(predicted: Sequence[np.ndarray], gold: Sequence[np.ndarray]) -> float:
    """Hewitt & Manning's distance Spearman: per word, its predicted against its gold distances to every word;
    averaged within each sentence length 5-50, then over those lengths."""
    return _spearman_by_length(predicted, gold)


def depth_spearman(predicted: Sequence[np.ndarray], gold: Sequence[np.ndarray]) -> float:
    """Hewitt & Manning's norm Spearman: per sentence, predicted against gold depths; averaged within each sentence
    length 5-50, then over those lengths."""
    return _spearman_by_length([np.asarray(p)[None] for p in predicted], [np.asarray(g)[None] for g in gold])


def root_accuracy(predicted_depths: Sequence[np.ndarray], heads: Sequence[Sequence[int]], keep: Sequence[np.ndarray]) -> float:
    """Share of sentences whose least deep word among those kept (not punctuation) is the gold root."""
    hits = []
    for depths, sentence_heads, k in zip(predicted_depths, heads, keep):
        candidates = np.flatnonzero(k) if k.any() else np.arange(len(depths))
        guess = candidates[np.argmin(np.asarray(depths)[candidates])]
        hits.append(list(sentence_heads).index(0) == guess)
    return float(np.mean(hits)) if hits else float("nan")
