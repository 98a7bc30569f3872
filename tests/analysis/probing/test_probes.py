"""Layer-wise probes on sentences read from text (the WordNet set, plain text) through the one probing pipeline:
known-by-construction cases on tiny models; seeded, reproducible, split by sentence; scikit-learn's probe against
torch.optim.LBFGS on the same objective."""
import numpy as np
import pytest
import torch

from bert import Bert, BertConfig
from bert.analysis.probing.examples import task_examples
from bert.analysis.probing.linear_probes import control_labels, standardise, train_probes
from bert.analysis.probing.pipeline import ProbeSettings, extract_features, run_probes
from bert.analysis.probing.sentence_sets import read_text, sentence_set
from bert.analysis.probing.task_table import TEXT_TASKS
from bert.data import LabelledSentence, builtin_sentences
from bert.errors import InvalidInputError

WORDS = ["the", "dog", "cat", "barked", "at", "mail", "park", "and", "her", "went", "to", "a", "is", "of"]


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


def tiny_sentences(count: int, seed: int):
    """Unlabelled sentences of random words, read as labelled sentences (words, no label column)."""
    rng = np.random.default_rng(seed)
    sentences = [LabelledSentence(" ".join(rng.choice(WORDS, rng.integers(4, 10))) + rng.choice([".", "!", "?"]))
                 for _ in range(count)]
    return sentence_set(sentences, "tiny sentences")


def test_position_probe_is_near_perfect_at_the_embedding_layer(position_model, tokenizer):
    report = run_probes(position_model, tokenizer, tiny_sentences(80, seed=0), tasks=["position"])
    result = report.tasks["position"]
    assert report.residual_names[0] == "embeddings" and len(result.layers) == 3
    assert result.measure("accuracy")[0] > 0.97
    assert result.measure("accuracy")[0] > result.majority_accuracy + 0.5


def test_probes_are_reproducible_for_a_seed(position_model, tokenizer):
    sentences = tiny_sentences(30, seed=1)
    settings = ProbeSettings(seed=3, max_iter=10)
    first = run_probes(position_model, tokenizer, sentences, tasks=["punctuation", "segment"], settings=settings)
    second = run_probes(position_model, tokenizer, sentences, tasks=["punctuation", "segment"], settings=settings)
    assert first.tasks == second.tasks


def test_every_task_runs_on_the_builtin_set(position_model, tokenizer):
    progress = []
    data = sentence_set(builtin_sentences(40), "the first 40 built-in sentences")
    assert data.tasks == [*TEXT_TASKS, "pos"]
    report = run_probes(position_model, tokenizer, data, settings=ProbeSettings(max_iter=5),
                        progress=lambda done, what: progress.append(done))
    assert set(report.tasks) | set(report.skipped_tasks) == set(TEXT_TASKS) | {"pos"}
    assert "pos" in report.tasks  # the built-in set carries WordNet parts of speech
    assert progress[-1] == 1.0
    for result in report.tasks.values():
        assert all(0 <= a <= 1 for a in result.measure("accuracy") + result.measure("control_accuracy"))


def test_pos_is_refused_for_unlabelled_text(position_model, tokenizer):
    text = read_text("\n".join(" ".join(WORDS[i : i + 5]) + "." for i in range(9)) + "\nThe dog barked. The cat went.", "mine.txt")
    assert len(text) == 11 and text.label_columns == () and "pos" not in text.tasks
    with pytest.raises(InvalidInputError, match="part-of-speech"):
        run_probes(position_model, tokenizer, text, tasks=["pos"], settings=ProbeSettings(max_iter=5))


def test_split_keeps_each_sentence_on_one_side():
    data = tiny_sentences(14, seed=4)
    train, test = data.split(0.3, seed=0)
    lines = lambda part: [s.line for s in part.sentences]  # noqa: E731  (a sentence's number in the set)
    assert sorted(lines(train) + lines(test)) == list(range(1, 15)) and len(lines(test)) == 4
    again = data.split(0.3, seed=0)
    assert (lines(again[0]), lines(again[1])) == (lines(train), lines(test))


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
    features = extract_features(model, tokenizer, sentence_set(builtin_sentences(120), "built-in"), tasks=["pos"],
                                settings=ProbeSettings(test_fraction=0.25))
    train, test = task_examples("pos", features.train, features.test)
    classes = sorted(set(train.labels + test.labels))
    train_y, test_y = (torch.tensor([classes.index(label) for label in part.labels]) for part in (train, test))
    ours = train_probes(train.features, train_y, test.features, test_y, max_iter=1000, tolerance=1e-8)
    reference = torch_lbfgs_probes(train.features, train_y, test.features, test_y)
    assert len(ours) == model.config.num_layers + 1 and len(test_y) == 30  # a headword per held-out sentence
    torch.testing.assert_close(ours, reference.float(), atol=1 / len(test_y) + 1e-6, rtol=0)  # one test word


def test_bad_requests_get_clear_errors(position_model, tokenizer):
    with pytest.raises(InvalidInputError, match="at least 10"):
        run_probes(position_model, tokenizer, tiny_sentences(3, seed=0))
    with pytest.raises(InvalidInputError, match="unknown probe task 'colour'"):
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


# ---- sentences from text as labelled sentences, and the text tasks' examples -------------------------------------


@pytest.mark.slow
def test_sentences_from_text_are_split_as_the_tokenizer_reads_running_text(minilm):
    _, tokenizer = minilm
    sentences = builtin_sentences(200)
    data = sentence_set(sentences, "built-in")
    for original, sentence in zip(sentences, data.sentences):
        assert tokenizer.encode_words(list(sentence.words)).tokens == tokenizer.encode(original.text).tokens
        (headword,) = [word for word, label in zip(sentence.words, sentence.labels["pos"]) if label != "_"]
        assert headword == original.text[original.start : original.end]
    first = data.sentences[0]
    assert first.words == ("The", "cold", "hardened", "the", "butter", ".")
    assert first.labels["pos"] == ("_", "_", "verb", "_", "_", "_")


def test_text_task_examples_label_word_pieces_and_read_the_residual_stream(position_model, tokenizer):
    from bert.analysis.corpus.batching import residual_hooks

    texts = ["the mailman barked at the cat.", "her dog went to the park!"] * 6
    data = sentence_set([LabelledSentence(text) for text in texts], "hand-made")
    features = extract_features(position_model, tokenizer, data, tasks=["continuation", "punctuation", "position"],
                                settings=ProbeSettings(seed=0))
    train, _ = task_examples("continuation", features.train, features.test)
    sentence = features.train.sentences.index(next(s for s in features.train.sentences if s.words[1] == "mailman"))
    encoding = tokenizer.encode(texts[0])
    assert encoding.tokens == ["[CLS]", "the", "mail", "##man", "barked", "at", "the", "cat", ".", "[SEP]"]
    pieces = len(encoding) - 2  # the non-special pieces of each sentence are the examples, in order
    first = sum(len(features.train.encodings[i]) - 2 for i in range(sentence))
    assert train.labels[first : first + pieces] == ["word start", "word start", "continuation"] + ["word start"] * 5
    assert train.word_types[first : first + pieces] == encoding.tokens[1:-1]
    punctuation, _ = task_examples("punctuation", features.train, features.test)
    assert punctuation.labels[first : first + pieces] == ["other"] * 7 + ["punctuation"]
    position, _ = task_examples("position", features.train, features.test)
    first_length = len(features.train.encodings[0])  # [CLS] and [SEP] too: position reads every piece
    assert position.labels[:first_length] == [str(p) for p in range(first_length)]
    input_ids, token_type_ids = encoding.tensors()
    _, cache = position_model.run_with_cache(input_ids, token_type_ids, names=residual_hooks(position_model))
    stream = torch.stack([cache[h][0] for h in residual_hooks(position_model)])  # [layer, token, hidden]
    torch.testing.assert_close(train.features[:, first : first + pieces], stream[:, 1:-1], atol=1e-5, rtol=1e-5)


def test_segment_and_masked_identity_read_their_own_inputs(position_model, tokenizer):
    from collections import Counter

    data = tiny_sentences(24, seed=6)
    features = extract_features(position_model, tokenizer, data, tasks=["segment", "masked_identity"],
                                settings=ProbeSettings(seed=1))
    train = features.train
    pairs, _ = task_examples("segment", train, features.test)
    first = tokenizer.encode(train.sentences[0].text, train.sentences[1].text)
    assert train.pairs.encodings[0].tokens == first.tokens
    labels = ["AB"[t] for t, special in zip(first.token_type_ids, first.special) if not special]
    assert pairs.labels[: len(labels)] == labels and len(pairs.labels) == sum(len(e) - 3 for e in train.pairs.encodings)
    counts = Counter(e.input_ids[p] for part in (train, features.test) for e in part.encodings
                     for p, special in enumerate(e.special) if not special and e.tokens[p].isalpha())
    vocabulary = {token_id for token_id, _ in counts.most_common(10)}
    masked, _ = task_examples("masked_identity", train, features.test)
    with_a_frequent_word = [e for e in train.encodings if set(e.input_ids[1:-1]) & vocabulary]  # in order
    assert len(masked.labels) == len(train.masked.encodings) == len(with_a_frequent_word)
    for (index, position), label, original in zip(train.masked.rows, masked.labels, with_a_frequent_word):
        assert original.input_ids[position] in vocabulary and original.tokens[position] == label
        assert train.masked.encodings[index].input_ids == original.with_masks([position], tokenizer.mask_id).input_ids
