"""Interchange interventions and distributed alignment search (bert/analysis/causal/interchange.py, alignment.py):
the swap against hand-computed cases and against activation patching, the baselines against numpy and scikit-learn
on planted data, IIA and log-odds by hand, the split and the control, the cost against the passes made, stopping."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bert
from bert.analysis.causal.alignment import (AlignmentSettings, align, alignment_cost, alignment_sweep, control_values,
                                            expects_source, fitted_basis, planned_pairs, split_pairs)
from bert.analysis.causal.interchange import (interchange, interchange_accuracy, log_odds, prepare_pairs, record_pairs)
from bert.data.variable_pairs import VariablePair
from bert.errors import DataFileError, InvalidInputError, StoppedError
from bert.hooks import hook_name
from bert.interventions import patch
from bert.stopping import watching

TEMPLATES = ["the {w} [MASK] at the park .", "her {w} [MASK] to the mail .", "the {w} went [MASK] the dog .",
             "the cat and {w} [MASK] to the park ."]
WORDS = {"x": list("abcdef"), "y": list("ghijkl")}  # one letter, one word piece each in the tiny vocabulary


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    return bert.load_pretrained(str(tiny_mlm_folder))


def oriented_pairs(model, tokenizer, candidates=("is", "of")) -> list[VariablePair]:
    """Every pair of the templates (a word of value x against one of value y, both orders), its answers the two
    candidates, the base's answer the one the model prefers in the base sentence: no pair is dropped."""
    ids = [tokenizer.token_to_id(c) for c in candidates]
    pairs = []
    for t, template in enumerate(TEMPLATES):
        words = WORDS["x"] + WORDS["y"]
        encodings = [tokenizer.encode(template.format(w=w)) for w in words]  # one length: one batch
        at = tokenizer.mask_positions(encodings[0])[0]
        with torch.no_grad():
            logits = model(torch.tensor([e.input_ids for e in encodings]))[:, at][:, ids]
        prefers = {w: candidates[int(row.argmax())] for w, row in zip(words, logits)}
        for a in WORDS["x"]:
            for b in WORDS["y"]:
                for (w1, v1), (w2, v2) in (((a, "x"), (b, "y")), ((b, "y"), (a, "x"))):
                    first = prefers[w1]
                    other = candidates[1 - candidates.index(first)]
                    pairs.append(VariablePair(template.format(w=w1), template.format(w=w2), first, other, w1, w2, v1, v2,
                                              f"t{t}", w1, w2))
    return pairs


@pytest.fixture(scope="module")
def pairs(tiny):
    return oriented_pairs(*tiny)


def test_the_swap_is_the_rotated_interchange_computed_by_hand():
    """pyvene's RotatedSpaceIntervention written out in float64: rotate base and source by R, take coordinates
    0..k-1 from the source, rotate back; only the chosen position of each row changes."""
    generator = torch.Generator().manual_seed(0)
    activation = torch.randn(2, 4, 6, generator=generator, dtype=torch.float64)
    source = torch.randn(2, 6, generator=generator, dtype=torch.float64)
    rotation = torch.linalg.qr(torch.randn(6, 6, generator=generator, dtype=torch.float64)).Q
    positions = torch.tensor([1, 3])
    out = interchange(positions, source, rotation[:, :2])(activation, "h")
    for row, position in enumerate(positions.tolist()):
        rotated_base, rotated_source = activation[row, position] @ rotation, source[row] @ rotation
        expected = torch.cat([rotated_source[:2], rotated_base[2:]]) @ rotation.T
        torch.testing.assert_close(out[row, position], expected, rtol=0, atol=1e-12)
        others = [p for p in range(4) if p != position]
        assert torch.equal(out[row, others], activation[row, others])
    torch.testing.assert_close(interchange(positions, source, rotation)(activation, "h")[[0, 1], positions], source, rtol=0, atol=1e-12)
    assert torch.equal(interchange(positions, source, None)(activation, "h")[[0, 1], positions], source)
    weights = torch.tensor([1.0, 0.5, 0, 0, 0, 0], dtype=torch.float64)  # a soft boundary: half of coordinate 1
    soft = interchange(positions, source, rotation, weights)(activation, "h")[0, 1] @ rotation
    base_rotated, source_rotated = activation[0, 1] @ rotation, source[0] @ rotation
    torch.testing.assert_close(soft[:2], torch.stack([source_rotated[0], (base_rotated[1] + source_rotated[1]) / 2]), rtol=0, atol=1e-12)


def test_full_swap_at_a_position_is_activation_patching(tiny, pairs):
    """method full through interchange() equals bert.interventions.patch of the source run's activation there."""
    model, tokenizer = tiny
    prepared, _ = prepare_pairs(tokenizer, pairs[:3], 64)
    hook = hook_name("layer_out", 0)
    base_states, source_states, _, _ = record_pairs(model, tokenizer.pad_id, prepared, [(hook, "differs")])
    for i, pair in enumerate(prepared):
        base_ids, types = pair.base.tensors()
        _, cache = model.run_with_cache(*pair.source.tensors(), names=[hook])
        at = torch.zeros_like(base_ids, dtype=torch.bool)
        at[0, pair.mask] = True
        expected, _ = model.run_with_cache(base_ids, types, names=[], interventions={hook: patch(cache[hook], [pair.differs])}, logit_mask=at)
        swap = interchange(torch.tensor([pair.differs]), source_states[(hook, "differs")][i : i + 1], None)
        ours, _ = model.run_with_cache(base_ids, types, names=[], interventions={hook: swap}, logit_mask=at)
        torch.testing.assert_close(ours, expected, rtol=0, atol=1e-5)


def test_swapping_the_whole_embedding_output_gives_the_source_run(tiny, pairs):
    """Sentences that differ in one word piece: the source's embedding there makes the base run the source run,
    so `full` at embedding_out gives the source run's own answer logits."""
    model, tokenizer = tiny
    prepared, _ = prepare_pairs(tokenizer, pairs[:20], 64)
    hook = hook_name("embedding_out")
    _, source_states, _, source_logits = record_pairs(model, tokenizer.pad_id, prepared, [(hook, "differs")], batch_size=7)
    from bert.analysis.causal.interchange import evaluate

    intervened = evaluate(model, tokenizer.pad_id, prepared, hook, "differs", source_states[(hook, "differs")], None, batch_size=6)
    torch.testing.assert_close(intervened, source_logits, rtol=0, atol=1e-4)


def test_iia_and_log_odds_by_hand():
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 1.5], [4.0, 0.0]])  # (base answer, source answer)
    assert interchange_accuracy(logits, torch.tensor([True, True, True, True])) == 0.5
    assert interchange_accuracy(logits, torch.tensor([False, True, True, True])) == 0.75
    base_run = torch.tensor([[3.0, 0.0], [1.0, 0.0], [2.0, 0.0], [1.0, 1.0]])
    # (1 - 2 + 3) + (3 - -1) + (0.5 - -2) + (-4 - 0), over 4
    assert log_odds(logits, base_run) == pytest.approx(((-1 + 3) + (3 + 1) + (0.5 + 2) + (-4 - 0)) / 4)


def planted(seed=0, n=400, hidden=8):
    """Two classes that differ along one planted direction (and noise with more variance elsewhere)."""
    generator = np.random.default_rng(seed)
    direction = generator.normal(size=hidden)
    direction /= np.linalg.norm(direction)
    labels = ["x" if i % 2 else "y" for i in range(n)]
    scale = np.array([3.0] * 2 + [0.5] * (hidden - 2))
    x = generator.normal(size=(n, hidden)) * scale + np.outer([1.5 if label == "x" else -1.5 for label in labels], direction)
    return torch.tensor(x, dtype=torch.float32), labels, direction, scale


def test_baselines_against_numpy_and_scikit_learn():
    vectors, labels, direction, scale = planted()
    x, is_x = vectors.double().numpy(), np.array([label == "x" for label in labels])
    mean_diff, dims = fitted_basis("mean-diff", vectors, labels, 3, 0)
    expected = x[~is_x].mean(0) - x[is_x].mean(0)  # classes sorted: "x" is class 0, "y" class 1
    assert dims == 1 and np.allclose(mean_diff[:, 0].numpy(), expected / np.linalg.norm(expected), atol=1e-6)
    pca, dims = fitted_basis("pca", vectors, labels, 2, 0)
    centred = x - x.mean(0)
    top = np.linalg.svd(centred, full_matrices=False)[2][:2].T  # numpy's principal directions, up to sign
    assert dims == 2 and np.allclose(np.abs(np.sum(pca.numpy() * top, 0)), 1, atol=1e-5)
    lda, _ = fitted_basis("lda", vectors, labels, 1, 0)
    within = sum(np.cov(x[mask].T, bias=False) * (mask.sum() - 1) for mask in (is_x, ~is_x))
    fisher = np.linalg.solve(within, expected)  # Fisher's direction, up to scale and sign
    assert abs(np.dot(lda[:, 0].numpy(), fisher / np.linalg.norm(fisher))) == pytest.approx(1, abs=1e-5)
    probe, _ = fitted_basis("probe", vectors, labels, 1, 0)
    assert abs(np.dot(probe[:, 0].numpy(), fisher / np.linalg.norm(fisher))) > 0.95  # a logistic probe finds it too
    random_basis, dims = fitted_basis("random", vectors, labels, 3, 0)
    assert dims == 3 and torch.allclose(random_basis.T @ random_basis, torch.eye(3), atol=1e-5)
    assert torch.equal(random_basis, fitted_basis("random", vectors, labels, 3, 0)[0])
    assert fitted_basis("full", vectors, labels, 1, 0) == (None, 8)
    with pytest.raises(InvalidInputError, match="two values"):
        fitted_basis("probe", vectors, ["a", "b", "c", "d"] * 100, 1, 0)


def test_the_split_holds_out_templates_and_items_and_the_control_keeps_words(pairs):
    train, test, control_train, control_test = split_pairs(pairs, seed=3, test_share=0.34, max_pairs=10_000)
    assert train and test and control_train and control_test
    assert not {p.template for p in train} & {p.template for p in test}
    items = lambda ps: {p.base_item for p in ps} | {p.source_item for p in ps}
    assert not items(train) & items(test)
    assert {p.template for p in control_test} == {p.template for p in test}
    assert items(control_test) <= items(control_train)  # the control's words are seen in training
    assert split_pairs(pairs, 3, 0.34, 10_000) == (train, test, control_train, control_test)  # seeded
    assert [len(part) for part in split_pairs(pairs, 3, 0.34, 8)] == [8, 4, 8, 4]


def test_control_values_permute_the_values_over_words(pairs):
    values = control_values(pairs, seed=0)
    own = {p.base_word: p.base_value for p in pairs} | {p.source_word: p.source_value for p in pairs}
    assert set(values) == set(own) and sorted(values.values()) == sorted(own.values())
    assert values != own  # 12 words: a permutation that changes nothing has probability 1/924 (seed fixed)
    prepared = [type("P", (), {"pair": p})() for p in pairs[:40]]
    expected = [values[p.base_word] != values[p.source_word] for p in pairs[:40]]
    assert expects_source(prepared, values).tolist() == expected and expects_source(prepared).all()


class Counted:
    """Rows of every forward pass (a pre-hook on the embedding) and of every backward pass through the last layer."""

    def __init__(self, model):
        self.forward = self.backward = 0
        self.handles = [model.embedding.register_forward_pre_hook(self._forward),
                        model.transformer[-1].register_full_backward_hook(self._backward)]

    def _forward(self, module, args):
        self.forward += args[0].shape[0]

    def _backward(self, module, grad_input, grad_output):
        self.backward += grad_output[0].shape[0]

    def remove(self):
        for handle in self.handles:
            handle.remove()


@pytest.mark.parametrize("method", ["das", "mean-diff", "boundless"])
def test_align_makes_the_passes_its_cost_says(tiny, pairs, method):
    model, tokenizer = tiny
    settings = AlignmentSettings(method=method, dims=2, steps=3, batch_size=5, max_pairs=12, eval_batch_size=7)
    counts, tokens = planned_pairs(tokenizer, pairs, settings, 64)
    cost = alignment_cost(model.config, tokens, counts, settings)
    counted, random_state = Counted(model), torch.random.get_rng_state()
    try:
        result = align(model, tokenizer, pairs, hook_name("layer_out", 0), "differs", settings)
    finally:
        counted.remove()
    assert torch.equal(torch.random.get_rng_state(), random_state)  # seeded by its own generators only
    assert result.pairs["dropped"] == 0 and result.pairs["train"] == counts[0] == 12 and counts[1] == 6
    assert (counted.forward, counted.backward) == (cost.forward_passes, cost.backward_passes)
    assert 0 <= result.iia["test"] <= 1 and 0 <= result.control_iia["test"] <= 1
    assert result.selectivity == pytest.approx(result.iia["test"] - result.control_iia["test"])
    assert result.basis.shape[0] == 64 and torch.allclose(result.basis.T @ result.basis, torch.eye(result.dims), atol=1e-4)


def test_a_sweep_fills_its_grid_and_stops_when_asked(tiny, pairs):
    model, tokenizer = tiny
    settings = AlignmentSettings(method="pca", dims=2, max_pairs=8)
    sweep = alignment_sweep(model, tokenizer, pairs, [0, 1], ["mask", "differs", 1], settings=settings)
    assert [len(row) for row in sweep.grid("iia")] == [3, 3]
    assert sweep.results[1][2].hook == hook_name("layer_out", 1) and sweep.results[1][2].position == 1
    checks = []

    def stop(rows):
        checks.append(rows)
        if len(checks) == 3:
            raise StoppedError("the visitor left")

    with pytest.raises(StoppedError), watching(stop):
        align(model, tokenizer, pairs, hook_name("layer_out", 0), "mask", AlignmentSettings(method="das", steps=50, max_pairs=8))
    assert len(checks) == 3


def test_pairs_the_model_gets_wrong_in_both_sentences_are_dropped_and_counted(tiny):
    """One template where the tiny model prefers "to" after some words and "at" after others: a pair whose answers
    are crossed (each sentence prefers the other's answer) is wrong in both sentences, the others right in both."""
    model, tokenizer = tiny
    template, ids = "her {w} [MASK] to the mail .", [tokenizer.token_to_id(c) for c in ("to", "at")]
    words = list("abcdefghijkl")
    encodings = [tokenizer.encode(template.format(w=w)) for w in words]
    with torch.no_grad():
        logits = model(torch.tensor([e.input_ids for e in encodings]))[:, tokenizer.mask_positions(encodings[0])[0]][:, ids]
    prefers = {w: ("to", "at")[int(row.argmax())] for w, row in zip(words, logits)}
    assert len(set(prefers.values())) == 2, "the tiny model's preferences no longer differ between words"
    pairs, crossed = [], set()
    for w1 in words:
        for w2 in words:
            if prefers[w1] != prefers[w2]:
                crossing = len(pairs) % 3 == 0
                answers = (prefers[w2], prefers[w1]) if crossing else (prefers[w1], prefers[w2])
                pairs.append(VariablePair(template.format(w=w1), template.format(w=w2), *answers, w1, w2, prefers[w1],
                                          prefers[w2], "t0", w1, w2))
                if crossing:
                    crossed.add(pairs[-1])
    settings = AlignmentSettings(method="mean-diff", max_pairs=10_000)
    train, test, _, _ = split_pairs(pairs, settings.seed, settings.test_share, settings.max_pairs)
    expected = sum(p in crossed for p in train + test)
    result = align(model, tokenizer, pairs, hook_name("layer_out", 0), "mask", settings)
    assert expected > 0 and result.pairs["dropped"] == expected
    assert result.pairs["train"] + result.pairs["test"] == len(train) + len(test) - expected


@pytest.mark.parametrize("case, message", [
    ("hook", "has no hook"), ("per head", "one vector per token"), ("position", "outside the shortest pair"),
    ("role", "one of mask, differs, subject"), ("dims", "dims must be from 1"), ("method", "unknown method"),
])
def test_bad_settings_say_what_to_change(tiny, pairs, case, message):
    model, tokenizer = tiny
    hook, position, settings = hook_name("layer_out", 0), "mask", AlignmentSettings(method="mean-diff", max_pairs=8)
    if case == "hook":
        hook = "transformer.9.hook_out"
    elif case == "per head":
        hook = hook_name("z", 0)
    elif case == "position":
        position = 40
    elif case == "role":
        position = "verb"
    elif case == "dims":
        settings = AlignmentSettings(method="das", dims=65)
    else:
        settings = AlignmentSettings(method="dasx")
    with pytest.raises(InvalidInputError, match=message):
        align(model, tokenizer, pairs, hook, position, settings)


def test_a_file_pair_the_tokenizer_cannot_line_up_names_its_line(tiny):
    _, tokenizer = tiny
    good = VariablePair("the dog [MASK] .", "the cat [MASK] .", "is", "of", line=2)
    longer = VariablePair("the dog [MASK] .", "the dogcat [MASK] .", "is", "of", line=3)
    assert len(prepare_pairs(tokenizer, [good], 64)[0]) == 1
    with pytest.raises(DataFileError, match="line 3: base and source must have the same number of word pieces"):
        prepare_pairs(tokenizer, [good, longer], 64)
    generated = VariablePair("the dog [MASK] .", "the dogcat [MASK] .", "is", "of")  # a generated one: counted
    assert prepare_pairs(tokenizer, [good, generated], 64)[1] == 1


def test_boundless_boundary_by_hand():
    """sigmoid((size - i - 1/2) / temperature): half at the boundary, nearly a step at Boundless DAS's last temperature."""
    from bert.analysis.causal.alignment import BOUNDLESS_TEMPERATURES, boundary_weights

    weights = boundary_weights(torch.tensor(2.5), 5, 1.0)
    expected = [1 / (1 + np.exp(-(2.5 - i - 0.5))) for i in range(5)]
    assert weights.tolist() == pytest.approx(expected, abs=1e-6) and weights[2] == pytest.approx(0.5)
    sharp = boundary_weights(torch.tensor(3.0), 6, BOUNDLESS_TEMPERATURES[1])
    assert ((sharp > 0.5).tolist(), float(sharp[2]), float(sharp[3])) == ([True] * 3 + [False] * 3, pytest.approx(1, abs=1e-2), pytest.approx(0, abs=1e-2))
