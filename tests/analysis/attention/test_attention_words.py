"""Word-level attention (Clark et al. 2019): a hand-worked case, a real tokenizer's words, a real model's maps."""
import numpy as np
import pytest

from bert.analysis.attention.words import merge_attention, merge_scores, word_groups
from bert.errors import InvalidInputError
from bert.tokenizer import BertTokenizer, Encoding

# [CLS] play ##ing dogs [SEP]: four words, "playing" in two pieces
PLAYING_DOGS = Encoding(
    input_ids=[0, 1, 2, 3, 4], token_type_ids=[0] * 5, tokens=["[CLS]", "play", "##ing", "dogs", "[SEP]"],
    offsets=[(0, 0), (0, 4), (4, 7), (8, 12), (0, 0)], special=[True, False, False, False, True],
    word_ids=[None, 0, 0, 1, None],
)
TOKEN_ATTENTION = np.array([  # rows sum to 1
    [0.10, 0.20, 0.30, 0.20, 0.20],
    [0.00, 0.50, 0.30, 0.10, 0.10],
    [0.20, 0.40, 0.20, 0.00, 0.20],
    [0.10, 0.10, 0.10, 0.60, 0.10],
    [0.25, 0.25, 0.25, 0.00, 0.25],
])
# Worked by hand: the "playing" column is play + ##ing; the "playing" row is the mean of the play and ##ing rows
# after that, ([0, .8, .1, .1] + [.2, .6, 0, .2]) / 2.
WORD_ATTENTION = np.array([
    [0.10, 0.50, 0.20, 0.20],
    [0.10, 0.70, 0.05, 0.15],
    [0.10, 0.20, 0.60, 0.10],
    [0.25, 0.50, 0.00, 0.25],
])


def test_hand_worked_case():
    groups = word_groups(PLAYING_DOGS)
    assert groups.positions == ((0,), (1, 2), (3,), (4,))
    assert groups.labels == ("[CLS]", "playing", "dogs", "[SEP]")
    merged = merge_attention(TOKEN_ATTENTION, groups)
    np.testing.assert_allclose(merged, WORD_ATTENTION, atol=1e-12)
    np.testing.assert_allclose(merged.sum(-1), 1.0)


def test_leading_axes_are_kept():
    stacked = np.stack([TOKEN_ATTENTION, np.eye(5)])[None]  # [layer 1, head 2, query, key]
    merged = merge_attention(stacked, word_groups(PLAYING_DOGS))
    assert merged.shape == (1, 2, 4, 4)
    np.testing.assert_allclose(merged[0, 0], WORD_ATTENTION, atol=1e-12)
    # the identity: a word attends to itself; the two pieces of "playing" each put 1 on it
    np.testing.assert_allclose(merged[0, 1], np.eye(4), atol=1e-12)


def test_scores_summed_or_averaged_over_pieces():
    groups = word_groups(PLAYING_DOGS)
    scores = np.array([0.0, 0.3, 0.1, 0.5, 0.1])
    np.testing.assert_allclose(merge_scores(scores, groups), [0.0, 0.4, 0.5, 0.1])
    np.testing.assert_allclose(merge_scores(scores, groups, how="mean"), [0.0, 0.2, 0.5, 0.1])
    activations = np.array([[1.0, 2.0, 4.0, 8.0, 16.0], [0.0, -1.0, 1.0, 2.0, 3.0]])  # [neuron, token]
    np.testing.assert_allclose(merge_scores(activations, groups, how="mean"), [[1, 3, 8, 16], [0, 0, 2, 3]])


def test_a_pair_words_restart_in_sentence_b(tiny_vocab_file):
    tokenizer = BertTokenizer.from_folder(tiny_vocab_file.parent)
    encoding = tokenizer.encode("the mailman barked", "the dog")
    groups = word_groups(encoding)
    assert groups.labels == ("[CLS]", "the", "mailman", "barked", "[SEP]", "the", "dog", "[SEP]")
    assert groups.positions[2] == (2, 3)  # mail ##man
    assert groups.word_of(3) == 2 and groups.word_of(6) == 5


def loop_merge(attention: np.ndarray, positions) -> np.ndarray:
    """Clark et al.'s merge written out word by word, as their paper states it."""
    words = np.zeros((len(positions), len(positions)))
    for row, queries in enumerate(positions):
        for column, keys in enumerate(positions):
            words[row, column] = np.mean([sum(attention[q, k] for k in keys) for q in queries])
    return words


@pytest.mark.slow
def test_real_model_rows_sum_to_one_and_match_the_loop(minilm):
    model, tokenizer = minilm
    encoding = tokenizer.encode("The unbelievably tall giraffe nibbled eucalyptus leaves.")
    groups = word_groups(encoding)
    assert len(groups) < len(encoding)  # some word is in pieces
    attention = model.run_with_cache(*encoding.tensors())[1]["pattern", 3][0].numpy()  # [head, query, key]
    merged = merge_attention(attention, groups)
    np.testing.assert_allclose(merged.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(merged[7], loop_merge(attention[7], groups.positions), atol=1e-6)


def test_shapes_that_do_not_fit_are_refused():
    groups = word_groups(PLAYING_DOGS)
    with pytest.raises(InvalidInputError, match="5 tokens"):
        merge_attention(np.eye(4), groups)
    with pytest.raises(InvalidInputError, match="how must be"):
        merge_scores(np.ones(5), groups, how="max")
