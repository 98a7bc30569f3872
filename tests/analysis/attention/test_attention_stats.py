"""Per-head attention statistics against patterns small enough to work out by hand."""
import numpy as np
import pytest

from bert.analysis.attention.attention_stats import KeyRoles, combine, entropy_bits, head_statistics, is_punctuation

TOKENS = ["[CLS]", "the", "dog", ".", "[SEP]"]


def one_hot_rows(targets: list[int], seq: int) -> np.ndarray:
    pattern = np.zeros((seq, seq))
    pattern[np.arange(seq), targets] = 1.0
    return pattern


def test_punctuation_tokens():
    assert [is_punctuation(t) for t in [".", ",", "##!", "...", "dog", "[SEP]", "[CLS]", "", "5", "##s", "Ġ(", "▁\"", "Ġ"]] == [
        True, True, True, True, False, False, False, False, False, False, True, True, False,
    ]


def test_key_roles_from_tokens():
    roles = KeyRoles.from_tokens(TOKENS)
    assert roles.cls.tolist() == [True, False, False, False, False]
    assert roles.sep.tolist() == [False, False, False, False, True]
    assert roles.punctuation.tolist() == [False, False, False, True, False]


def test_key_roles_from_special_positions_in_every_family():
    bert_roles = KeyRoles.from_special(TOKENS, [True, False, False, False, True])
    expected = KeyRoles.from_tokens(TOKENS)
    assert all((getattr(bert_roles, r) == getattr(expected, r)).all() for r in ("cls", "sep", "punctuation"))
    roberta = ["<s>", "The", "Ġdog", "Ġ(", "!", "</s>", "</s>", "It", "</s>"]  # <s> A </s></s> B </s>
    roles = KeyRoles.from_special(roberta, [True, False, False, False, False, True, True, False, True])
    assert roles.cls.tolist() == [True] + [False] * 8
    assert roles.sep.tolist() == [False] * 5 + [True, True, False, True]
    assert roles.punctuation.tolist() == [False, False, False, True, True, False, False, False, False]


def test_entropy_uniform_and_one_hot():
    uniform = np.full((1, 4), 0.25)
    assert entropy_bits(uniform) == pytest.approx([2.0])  # log2(4)
    assert entropy_bits(one_hot_rows([0, 1, 2], 3)) == pytest.approx([0.0, 0.0, 0.0])
    # H(0.5, 0.25, 0.25) = 0.5*1 + 2*0.25*2 = 1.5 bits
    assert entropy_bits(np.array([[0.5, 0.25, 0.25]])) == pytest.approx([1.5])


def test_head_that_looks_at_the_previous_token():
    seq = len(TOKENS)
    previous = one_hot_rows([0, 0, 1, 2, 3], seq)  # query 0 ([CLS]) looks at itself
    stats = head_statistics(previous[None, None], KeyRoles.from_tokens(TOKENS))
    assert stats.shape == (1, 1)
    assert stats["previous"][0, 0] == pytest.approx(1.0)  # queries 1..4 all look one back
    assert stats.counts["previous"] == 4
    assert stats["next"][0, 0] == pytest.approx(0.0)
    assert stats["cls"][0, 0] == pytest.approx(2 / 5)  # queries 0 and 1 land on [CLS]
    assert stats["sep"][0, 0] == pytest.approx(0.0)
    assert stats["punctuation"][0, 0] == pytest.approx(1 / 5)  # query 4 looks at "."
    assert stats["self"][0, 0] == pytest.approx(1 / 5)  # only [CLS] looks at itself
    assert stats["entropy"][0, 0] == pytest.approx(0.0)


def test_two_layers_two_heads_by_hand():
    seq = len(TOKENS)
    roles = KeyRoles.from_tokens(TOKENS)
    to_sep = one_hot_rows([4] * seq, seq)
    nxt = one_hot_rows([1, 2, 3, 4, 4], seq)
    uniform = np.full((seq, seq), 1 / seq)
    half = 0.5 * one_hot_rows([0] * seq, seq) + 0.5 * one_hot_rows([4] * seq, seq)
    pattern = np.stack([np.stack([to_sep, nxt]), np.stack([uniform, half])])  # [layer, head, query, key]
    stats = head_statistics(pattern, roles)
    assert stats.shape == (2, 2)
    np.testing.assert_allclose(stats["sep"], [[1.0, 0.4], [0.2, 0.5]])  # queries 3 and 4 of "next" land on [SEP]
    np.testing.assert_allclose(stats["cls"], [[0.0, 0.0], [0.2, 0.5]])
    np.testing.assert_allclose(stats["next"], [[0.25, 1.0], [0.2, 0.125]])  # next exists for queries 0..3; "half" gets 0.5 of it at query 3
    np.testing.assert_allclose(stats["entropy"], [[0.0, 0.0], [np.log2(5), 1.0]])
    rows = stats.rows()
    assert [(r["layer"], r["head"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert rows[3]["sep"] == pytest.approx(0.5)


def test_query_mask_leaves_queries_out():
    roles = KeyRoles.from_tokens(TOKENS)
    pattern = one_hot_rows([0, 0, 0, 4, 4], 5)[None]  # [head, query, key]
    stats = head_statistics(pattern, roles, query_mask=np.array([False, True, True, True, False]))
    assert stats["cls"][0] == pytest.approx(2 / 3)
    assert stats.counts["cls"] == 3
    assert stats.counts["previous"] == 3 and stats.counts["next"] == 3


def test_combine_equals_the_mean_over_all_queries():
    """Averaging two inputs with combine = one mean over every query of both (what a corpus version needs)."""
    rng = np.random.default_rng(0)
    short_tokens, long_tokens = ["[CLS]", "hi", "[SEP]"], ["[CLS]", "a", ",", "b", "c", "[SEP]"]
    inputs = []
    for tokens in (short_tokens, long_tokens):
        logits = rng.standard_normal((2, 3, len(tokens), len(tokens)))
        inputs.append((np.exp(logits) / np.exp(logits).sum(-1, keepdims=True), KeyRoles.from_tokens(tokens)))
    merged = combine(head_statistics(p, r) for p, r in inputs)
    # independent reference: pool every query's value by hand
    for name, pick in {
        "cls": lambda p, r: p[..., r.cls].sum(-1),
        "punctuation": lambda p, r: p[..., r.punctuation].sum(-1),
        "previous": lambda p, r: np.stack([p[..., i, i - 1] for i in range(1, p.shape[-1])], -1),
        "entropy": lambda p, r: -(p * np.log2(p)).sum(-1),
    }.items():
        pooled = np.concatenate([pick(p, r) for p, r in inputs], axis=-1).mean(-1)
        np.testing.assert_allclose(merged[name], pooled, rtol=1e-12)
    assert merged.counts["cls"] == 3 + 6 and merged.counts["previous"] == 2 + 5


def test_one_token_input_has_no_neighbours():
    stats = head_statistics(np.ones((1, 1, 1)), KeyRoles.from_tokens(["[CLS]"]))
    assert stats.counts["previous"] == 0 and np.isnan(stats["previous"][0])
    assert stats["cls"][0] == pytest.approx(1.0)


def test_shape_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="query == key"):
        head_statistics(np.ones((1, 2, 3)), KeyRoles.from_tokens(["a", "b", "c"]))
    with pytest.raises(ValueError, match="roles.cls"):
        head_statistics(np.ones((1, 2, 2)) / 2, KeyRoles.from_tokens(["a", "b", "c"]))
