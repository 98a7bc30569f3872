"""Tree scores on hand-made trees (checked by hand and against scipy's spearmanr), and structural probes that
recover trees planted in synthetic vectors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bert.analysis.probing import tree_metrics
from bert.analysis.probing.structural_probe import StructuralProbeSettings, fit_structural_probes
from bert.analysis.probing.treebank import TreebankSentence
from bert.analysis.probing.word_features import WordFeatures
from bert.errors import InvalidInputError

# "The dog barked at the mailman ." : barked is the root; "." is punctuation.
WORDS = ("The", "dog", "barked", "at", "the", "mailman", ".")
HEADS = (2, 3, 0, 6, 6, 3, 3)
UPOS = ("DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT")


def test_distances_and_depths_of_a_hand_made_tree():
    distances = tree_metrics.tree_distances(HEADS)
    assert distances[0, 1] == 1 and distances[0, 2] == 2 and distances[0, 4] == 4 and distances[3, 4] == 2
    assert (distances == distances.T).all() and (np.diag(distances) == 0).all()
    assert tree_metrics.tree_depths(HEADS).tolist() == [2, 1, 0, 2, 2, 1, 1]


def test_uuas_of_gold_distances_is_one_and_the_chain_gives_the_linear_baseline():
    gold = tree_metrics.tree_distances(HEADS)
    keep = tree_metrics.non_punctuation(UPOS, len(WORDS))
    assert keep.tolist() == [True] * 6 + [False]
    # Gold edges without the punctuation: (0,1) (1,2) (2,5) (3,5) (4,5); the chain: (0,1) (1,2) (2,3) (3,4) (4,5).
    assert tree_metrics.spanning_tree_edges(gold, keep) == {(0, 1), (1, 2), (2, 5), (3, 5), (4, 5)}
    assert tree_metrics.uuas([gold], [gold], [keep]) == 1.0
    chain = tree_metrics.chain_distances(len(WORDS))
    assert tree_metrics.uuas([chain], [gold], [keep]) == tree_metrics.linear_uuas([gold], [keep]) == 3 / 5
    # Two sentences: edges are counted over both (3 + 1 found of 5 + 1).
    second = tree_metrics.tree_distances((0, 1))
    assert tree_metrics.linear_uuas([gold, second], [keep, np.ones(2, bool)]) == 4 / 6


def test_spearman_scores_match_scipy_per_row_and_per_sentence():
    gold = tree_metrics.tree_distances(HEADS)
    rng = np.random.default_rng(0)
    predicted = rng.random(gold.shape)
    predicted = predicted + predicted.T
    expected = np.mean([spearmanr(p, g).correlation for p, g in zip(predicted, gold)])
    assert tree_metrics.distance_spearman([predicted], [gold]) == pytest.approx(expected, abs=1e-12)
    assert tree_metrics.distance_spearman([gold ** 2], [gold]) == pytest.approx(1.0)  # only the order counts
    depths = tree_metrics.tree_depths(HEADS)
    guess = rng.random(len(depths))
    assert tree_metrics.depth_spearman([guess], [depths]) == pytest.approx(spearmanr(guess, depths).correlation)
    # Averaged within a length, then over lengths: two 7-word sentences, one 5-word sentence.
    short_heads = (0, 1, 1, 3, 3)
    short, short_guess = tree_metrics.tree_depths(short_heads), rng.random(5)
    both_sevens = np.mean([spearmanr(guess, depths).correlation, 1.0])
    expected = np.mean([both_sevens, spearmanr(short_guess, short).correlation])
    score = tree_metrics.depth_spearman([guess, depths, short_guess], [depths, depths, short])
    assert score == pytest.approx(expected)
    assert np.isnan(tree_metrics.depth_spearman([np.ones(3)], [np.arange(3)]))  # length 3 is outside 5-50


def test_root_accuracy_skips_punctuation():
    keep = tree_metrics.non_punctuation(UPOS, len(WORDS))
    root_first = np.array([3.0, 2, 0.5, 3, 3, 2, 1])
    punctuation_first = np.array([3.0, 2, 0.5, 3, 3, 2, 0.1])  # "." is least deep: skipped, then the root
    wrong = np.array([3.0, 0.2, 0.5, 3, 3, 2, 1])
    assert tree_metrics.root_accuracy([root_first, punctuation_first, wrong], [HEADS] * 3, [keep] * 3) == 2 / 3


def random_heads(n: int, rng: np.random.Generator) -> tuple[int, ...]:
    """A random tree: word 1..n-1 (0-based) attaches to an earlier word, then the words are shuffled."""
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    order = rng.permutation(n)  # position of tree node k in the sentence
    heads = [0] * n
    for node in range(n):
        heads[order[node]] = 0 if parent[node] < 0 else int(order[parent[node]]) + 1
    return tuple(heads)


def planted_tree(heads: tuple[int, ...], dimensions: int) -> np.ndarray:
    """[word, dimensions]: word i is the sum of one orthogonal unit vector per arc on its path to the root (the arc
    above word k is unit vector k), so |x_i - x_j|² is the tree distance and |x_i|² the depth."""
    n = len(heads)
    vectors = np.zeros((n, dimensions))
    vectors[:, :n] = tree_metrics.ancestors(heads)  # a unit vector per ancestor-or-self...
    vectors[:, heads.index(0)] = 0  # ...but the root's: there is no arc above the root
    return vectors


def planted_features(num_sentences: int, hidden: int, seed: int, longest: int = 10) -> WordFeatures:
    """Layer 0: noise. Layer 1: each sentence's planted tree, rotated into `hidden` dimensions at random (the same
    rotation for every sentence)."""
    mixing = np.linalg.qr(np.random.default_rng(0).normal(size=(hidden, hidden)))[0][:longest]  # orthonormal rows
    rng = np.random.default_rng(seed)  # the sentences
    sentences, vectors = [], []
    for _ in range(num_sentences):
        heads = random_heads(int(rng.integers(3, longest + 1)), rng)
        vectors.append(np.stack([rng.normal(size=(len(heads), hidden)), planted_tree(heads, longest) @ mixing]))
        sentences.append(TreebankSentence(tuple(f"w{i}" for i in range(len(heads))), {}, heads))
    starts = np.cumsum([0] + [len(s) for s in sentences]).tolist()
    stacked = torch.tensor(np.concatenate(vectors, axis=1), dtype=torch.float32)
    return WordFeatures(stacked, tuple(starts), tuple(sentences), ("embeddings", "after layer 0"), "first")


def test_planted_vectors_have_the_tree_distances_and_depths():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 12):
        heads = random_heads(n, rng)
        vectors = planted_tree(heads, 12)
        squared = ((vectors[:, None] - vectors[None]) ** 2).sum(-1)
        assert (squared == tree_metrics.tree_distances(heads)).all()
        assert ((vectors ** 2).sum(-1) == tree_metrics.tree_depths(heads)).all()


@pytest.fixture(scope="module")
def planted_probes():
    train, test = planted_features(300, 16, seed=1), planted_features(60, 16, seed=2)
    settings = StructuralProbeSettings(rank=10, epochs=40, batch_size=20, learning_rate=0.01)
    return fit_structural_probes(train, settings=settings, seed=0), test


def test_distance_probe_recovers_a_planted_tree(planted_probes):
    probes, test = planted_probes
    gold = [tree_metrics.tree_distances(s.heads) for s in test.sentences]
    keep = [np.ones(len(s), bool) for s in test.sentences]
    predicted = [probes.distances(test.sentence(i)).numpy() for i in range(len(test.sentences))]
    uuas_by_layer = [tree_metrics.uuas([p[layer] for p in predicted], gold, keep) for layer in range(2)]
    assert uuas_by_layer[1] == 1.0
    assert uuas_by_layer[0] < 0.8  # noise: no tree to find
    assert np.mean([np.abs(p[1] - g).mean() for p, g in zip(predicted, gold)]) < 0.1  # the distances themselves
    assert tree_metrics.distance_spearman([p[1] for p in predicted], gold) > 0.9


def test_depth_probe_recovers_a_planted_tree(planted_probes):
    probes, test = planted_probes
    depths = [probes.depths(test.sentence(i)).numpy() for i in range(len(test.sentences))]
    heads = [s.heads for s in test.sentences]
    keep = [np.ones(len(s), bool) for s in test.sentences]
    assert tree_metrics.root_accuracy([d[1] for d in depths], heads, keep) == 1.0
    assert tree_metrics.root_accuracy([d[0] for d in depths], heads, keep) < 0.7
    gold = [tree_metrics.tree_depths(h) for h in heads]
    assert np.mean([np.abs(d[1] - g).mean() for d, g in zip(depths, gold)]) < 0.1  # the depths themselves
    assert tree_metrics.depth_spearman([d[1] for d in depths], gold) > 0.9  # (below 1: the gold depths have ties)


def test_training_is_deterministic_for_a_seed_and_checks_its_input():
    features = planted_features(30, 12, seed=3)
    settings = StructuralProbeSettings(rank=4, epochs=2, batch_size=8)
    first = fit_structural_probes(features, settings=settings, seed=5)
    again = fit_structural_probes(features, settings=settings, seed=5)
    assert torch.equal(first.distance, again.distance) and torch.equal(first.depth, again.depth)
    assert not torch.equal(first.distance, fit_structural_probes(features, settings=settings, seed=6).distance)
    with pytest.raises(InvalidInputError, match="kinds"):
        fit_structural_probes(features, kinds=("height",))
    no_trees = WordFeatures(features.vectors, features.starts, tuple(TreebankSentence(s.words, {}) for s in features.sentences),
                            features.residual_names, "first")
    with pytest.raises(InvalidInputError, match="tree"):
        fit_structural_probes(no_trees)


def spearmanr(a, b):
    """scipy's Spearman correlation, the reference; scipy.stats imported here, where it runs (every test worker
    collects this module)."""
    from scipy.stats import spearmanr as scipys

    return scipys(a, b)
