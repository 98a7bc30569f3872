"""Layer-wise probes: known-by-construction cases on tiny models; seeded, reproducible, split by sentence."""
import numpy as np
import pytest
import torch

from bert import Bert, BertConfig, BertTokenizer
from bert.analysis.probing.probes import TASKS, collect, control_labels, run_probes, split_groups, standardise, train_probes
from bert.data import LabelledSentence, builtin_sentences
from bert.errors import InvalidInputError

WORDS = ["the", "dog", "cat", "barked", "at", "mail", "park", "and", "her", "went", "to", "a", "is", "of"]


@pytest.fixture(scope="module")
def tokenizer(tiny_vocab_file):
    return BertTokenizer.from_vocab(tiny_vocab_file)


@pytest.fixture(scope="module")
def position_model(tokenizer):
    """Position embeddings far larger than token embeddings: the embedding output encodes position."""
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=64, num_layers=2, num_heads=2,
                        intermediate_size=64, max_position_embeddings=40)
    torch.manual_seed(0)
    model = Bert(config, mlm_head=False).eval()
    with torch.no_grad():
        model.embedding.position_embedding.weight.normal_(0, 1.0)  # token embeddings stay at std 0.02
    return model


def tiny_sentences(count: int, seed: int) -> list[LabelledSentence]:
    rng = np.random.default_rng(seed)
    return [LabelledSentence(" ".join(rng.choice(WORDS, rng.integers(4, 10))) + rng.choice([".", "!", "?"]))
            for _ in range(count)]


def test_position_probe_is_near_perfect_at_the_embedding_layer(position_model, tokenizer):
    report = run_probes(position_model, tokenizer, tiny_sentences(80, seed=0), tasks=["position"])
    result = report.results["position"]
    assert result.layer_names[0] == "embeddings" and len(result.accuracy) == 3
    assert result.accuracy[0] > 0.97
    assert result.accuracy[0] > result.majority_accuracy + 0.5


def test_probes_are_reproducible_for_a_seed(position_model, tokenizer):
    sentences = tiny_sentences(30, seed=1)
    first = run_probes(position_model, tokenizer, sentences, tasks=["punctuation", "segment"], seed=3, max_iter=10)
    second = run_probes(position_model, tokenizer, sentences, tasks=["punctuation", "segment"], seed=3, max_iter=10)
    assert first.results == second.results


def test_every_task_runs_on_the_builtin_set(position_model, tokenizer):
    progress = []
    report = run_probes(position_model, tokenizer, builtin_sentences(40), max_tokens=32, max_iter=5,
                        progress=lambda done, what: progress.append(done))
    assert set(report.results) | set(report.skipped) == set(TASKS)
    assert "pos" in report.results  # the built-in set carries WordNet parts of speech
    assert progress[-1] == 1.0
    for result in report.results.values():
        assert all(0 <= a <= 1 for a in result.accuracy + result.control_accuracy)


def test_pos_is_skipped_for_unlabelled_text(position_model, tokenizer):
    report = run_probes(position_model, tokenizer, tiny_sentences(12, seed=2), tasks=["pos"], max_iter=5)
    assert "part-of-speech" in report.skipped["pos"]


def test_split_keeps_each_sentence_on_one_side():
    groups = torch.tensor([0, 0, 1, 1, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9])
    test = split_groups(groups, 0.3, seed=0)
    for group in groups.unique():
        assert test[groups == group].all() or not test[groups == group].any()
    assert torch.equal(test, split_groups(groups, 0.3, seed=0))


def test_control_labels_are_fixed_per_word_type():
    labels = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    types = torch.tensor([5, 5, 9, 9, 7, 7, 5, 9])
    control = control_labels(labels, types, num_classes=3, seed=0)
    for word_type in types.unique():
        assert len(control[types == word_type].unique()) == 1


def test_logistic_regression_separates_separable_data():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 300, 8, generator=generator)  # [layer, example, hidden]
    y = (x[0, :, 0] > 0).long()  # layer 0 carries the label in dimension 0; layer 1 is noise
    x[1] = torch.randn(300, 8, generator=generator)
    accuracy = train_probes(x[:, :200], y[:200], x[:, 200:], y[200:])
    assert accuracy[0] > 0.9
    assert accuracy[1] < 0.75


def torch_lbfgs_probes(train_x, train_y, test_x, test_y, weight_decay=1e-3) -> torch.Tensor:
    """The reference: the same objective (mean cross-entropy + weight_decay·|W|², bias not penalised, standardised
    features, multinomial even for two classes) minimised by torch.optim.LBFGS with a strong-Wolfe line search."""
    accuracy = []
    num_classes = int(train_y.max()) + 1
    for layer_train, layer_test in zip(train_x.double(), test_x.double()):
        mean, std = layer_train.mean(0), layer_train.std(0, unbiased=False).clamp_min(1e-12)
        features, held_out = (layer_train - mean) / std, (layer_test - mean) / std
        weight = torch.zeros(features.shape[1], num_classes, dtype=torch.float64, requires_grad=True)
        bias = torch.zeros(num_classes, dtype=torch.float64, requires_grad=True)
        optimizer = torch.optim.LBFGS([weight, bias], max_iter=500, tolerance_grad=1e-9, tolerance_change=1e-12,
                                      line_search_fn="strong_wolfe")

        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(features @ weight + bias, train_y) + weight_decay * weight.square().sum()
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            accuracy.append(float(((held_out @ weight + bias).argmax(-1) == test_y).double().mean()))
    return torch.tensor(accuracy)


def test_probe_accuracies_match_torch_lbfgs_on_a_seeded_synthetic_set():
    """Four classes read off a noisy linear map, at three noise levels (one per 'layer'), so the accuracies differ."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 1500, 16, generator=generator)
    y = (x[0, :, :4] + 0.3 * torch.randn(1500, 4, generator=generator)).argmax(-1)
    x[1] = 0.5 * x[0] + torch.randn(1500, 16, generator=generator)
    x[2] = torch.randn(1500, 16, generator=generator)
    ours = train_probes(x[:, :1000], y[:1000], x[:, 1000:], y[1000:], max_iter=500, tolerance=1e-8)
    reference = torch_lbfgs_probes(x[:, :1000], y[:1000], x[:, 1000:], y[1000:])
    assert ours[0] > 0.8 and ours[2] < 0.4  # the set does tell layers apart
    torch.testing.assert_close(ours, reference.float(), atol=0.01, rtol=0)  # at most 5 of the 500 test points differ


@pytest.mark.slow
def test_probe_accuracies_match_torch_lbfgs_on_minilm_features(minilm):
    """Real probe features: MiniLM's residual stream at the headwords of 120 built-in sentences (part of speech)."""
    model, tokenizer = minilm
    data = collect(model, tokenizer, builtin_sentences(120), ["pos"])["pos"]
    test = split_groups(data.groups, 0.25, seed=0)
    train_x, test_x = data.features[:, ~test], data.features[:, test]
    ours = train_probes(train_x, data.labels[~test], test_x, data.labels[test], max_iter=1000, tolerance=1e-8)
    reference = torch_lbfgs_probes(train_x, data.labels[~test], test_x, data.labels[test])
    assert len(ours) == model.config.num_layers + 1
    torch.testing.assert_close(ours, reference.float(), atol=1 / int(test.sum()) + 1e-6, rtol=0)  # one test token


def test_bad_requests_get_clear_errors(position_model, tokenizer):
    with pytest.raises(InvalidInputError, match="at least 10"):
        run_probes(position_model, tokenizer, tiny_sentences(3, seed=0))
    with pytest.raises(InvalidInputError, match="unknown probe task"):
        run_probes(position_model, tokenizer, tiny_sentences(20, seed=0), tasks=["colour"])


def test_standardise_matches_scikit_learns_scaler_layer_by_layer():
    from sklearn.preprocessing import StandardScaler

    generator = np.random.default_rng(0)
    train = (generator.normal(size=(3, 50, 6)) * [1, 10, 0.1, 1, 1, 1] + 5).astype(np.float32)
    train[:, :, 4] = 2.5  # a constant feature: only centred
    test = generator.normal(size=(3, 20, 6)).astype(np.float32)
    ours_train, ours_test = standardise(train, test)
    for layer in range(3):
        scaler = StandardScaler().fit(train[layer])
        np.testing.assert_allclose(ours_train[layer], scaler.transform(train[layer]), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours_test[layer], scaler.transform(test[layer]), rtol=1e-5, atol=1e-5)
    assert ours_train.dtype == np.float32 and np.all(ours_train[:, :, 4] == 0)


def test_probes_fit_with_one_blas_thread_and_give_the_threads_back(monkeypatch):
    """L-BFGS beside PyTorch's OpenMP threads ran 3.5x slower on two cores with BLAS threads of its own."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_info

    def blas_threads() -> set[int]:
        return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}

    seen, real_fit = [], LogisticRegression.fit
    monkeypatch.setattr(LogisticRegression, "fit", lambda self, *a, **k: seen.append(blas_threads()) or real_fit(self, *a, **k))
    before = blas_threads()
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 60, 4, generator=generator)
    y = (x[0, :, 0] > 0).long()
    train_probes(x[:, :40], y[:40], x[:, 40:], y[40:])
    assert seen == [{1}, {1}] and blas_threads() == before
