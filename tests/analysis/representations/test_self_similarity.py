"""One word, many contexts: self-similarity and the anisotropy baseline on cases known by construction, and the
word vectors against transformers' hidden states on the same weights."""
import math

import numpy as np
import pytest
import torch

import bert
from bert.analysis.representations.self_similarity import (
    WordNotFoundError, anisotropy_baseline, mean_pairwise_cosine, pair_cosines, random_pairs, word_contexts,
    word_self_similarity,
)
from bert.errors import InvalidInputError


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    """(our model, tokenizer, the transformers model) on the same random weights."""
    from transformers import BertModel

    model, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    return model, tokenizer, BertModel.from_pretrained(tiny_mlm_folder).eval()


def test_hand_computed_cosines_on_tiny_vectors():
    vectors = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    # pairs: (a, b) 0, (a, c) 1/sqrt 2, (b, c) 1/sqrt 2
    assert mean_pairwise_cosine(vectors).item() == pytest.approx(math.sqrt(2) / 3, abs=1e-6)
    flipped = torch.tensor([[5.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])  # the same pairs' cosines: 0, -1/sqrt 2, -1/sqrt 2
    stacked = torch.stack([vectors, flipped])  # [layer, vector, hidden]
    assert mean_pairwise_cosine(stacked).tolist() == pytest.approx([math.sqrt(2) / 3, -math.sqrt(2) / 3], abs=1e-6)
    pairs = torch.tensor([[0, 1], [0, 2], [0, 2]])
    assert pair_cosines(vectors[None], pairs).tolist() == pytest.approx([(0 + 2 / math.sqrt(2)) / 3], abs=1e-6)
    with pytest.raises(InvalidInputError, match="at least 2"):
        mean_pairwise_cosine(vectors[:1])


def test_identical_sentences_give_self_similarity_one_at_every_layer(tiny):
    model, tokenizer, _ = tiny
    for word in ("dog", "mailman"):  # one piece; two pieces (mail ##man), averaged
        similarity = word_self_similarity(model, tokenizer, word, ["the dog barked at the mailman."] * 3)
        assert similarity.shape == (model.config.num_layers + 1,)
        assert torch.allclose(similarity, torch.ones_like(similarity), atol=1e-5)


def test_word_vectors_match_transformers_hidden_states(tiny):
    model, tokenizer, reference = tiny
    sentences = ["the Mailman went to the park.", "her cat is at the park and the mailman barked."]
    contexts = word_contexts(model, tokenizer, "mailman", sentences)
    assert contexts.pieces == [["mail", "##man"], ["mail", "##man"]]
    expected = []
    for sentence in sentences:
        encoding = tokenizer.encode(sentence)
        with torch.no_grad():
            hidden = reference(torch.tensor([encoding.input_ids]), output_hidden_states=True).hidden_states
        position = encoding.tokens.index("mail")  # the first occurrence, the one we use
        expected.append(torch.stack([h[0, position : position + 2].mean(dim=0) for h in hidden]))
    expected = torch.stack(expected, dim=1)  # [layer, sentence, hidden]
    torch.testing.assert_close(contexts.vectors, expected, atol=1e-5, rtol=1e-5)
    cosine = torch.nn.functional.cosine_similarity(expected[:, 0], expected[:, 1], dim=-1)
    torch.testing.assert_close(contexts.self_similarity(), cosine, atol=1e-5, rtol=1e-5)  # one pair: its cosine
    torch.testing.assert_close(contexts.cosines()[:, 0, 1], cosine, atol=1e-5, rtol=1e-5)


def test_a_word_missing_from_a_sentence_names_that_sentence(tiny):
    model, tokenizer, _ = tiny
    with pytest.raises(WordNotFoundError, match="sentence 2: “the dogs went to the park.”") as caught:
        word_self_similarity(model, tokenizer, "dog", ["the dog barked.", "the dogs went to the park."])
    assert caught.value.sentence_index == 1
    with pytest.raises(InvalidInputError, match="at least 2"):
        word_self_similarity(model, tokenizer, "dog", ["the dog barked."])
    with pytest.raises(InvalidInputError, match="type a word"):
        word_self_similarity(model, tokenizer, "  ", ["the dog barked.", "a dog."])


def test_baseline_of_a_corpus_of_one_repeated_token_is_one(tiny):
    model, tokenizer, _ = tiny
    baseline = anisotropy_baseline(model, tokenizer, ["dog"] * 6, samples=50, seed=0)
    assert torch.allclose(baseline, torch.ones(model.config.num_layers + 1), atol=1e-5)


def test_baseline_matches_random_pairs_of_transformers_vectors(tiny):
    model, tokenizer, reference = tiny
    sentences = ["the dog barked at the mailman.", "her cat went to the park.", "a dog is of the park."]
    baseline = anisotropy_baseline(model, tokenizer, sentences, samples=40, seed=3)
    rows = []  # every non-special token's hidden states, in sentence order: [token, layer, hidden]
    for sentence in sentences:
        encoding = tokenizer.encode(sentence)
        with torch.no_grad():
            hidden = torch.stack(reference(torch.tensor([encoding.input_ids]), output_hidden_states=True).hidden_states)
        rows += [hidden[:, 0, p] for p, special in enumerate(encoding.special) if not special]
    vectors = torch.stack(rows, dim=1).numpy()  # [layer, token, hidden]
    pairs = random_pairs(len(rows), 40, seed=3).numpy()
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    expected = (unit[:, pairs[:, 0]] * unit[:, pairs[:, 1]]).sum(-1).mean(-1)
    np.testing.assert_allclose(baseline.numpy(), expected, atol=1e-5)
    assert torch.equal(baseline, anisotropy_baseline(model, tokenizer, sentences, samples=40, seed=3))


def test_random_pairs_are_distinct_seeded_and_cover_the_range():
    pairs = random_pairs(5, 2000, seed=1)
    assert (pairs[:, 0] != pairs[:, 1]).all()
    assert set(pairs.flatten().tolist()) == set(range(5))
    assert torch.equal(pairs, random_pairs(5, 2000, seed=1)) and not torch.equal(pairs, random_pairs(5, 2000, seed=2))
    with pytest.raises(InvalidInputError):
        random_pairs(1, 10, seed=0)


@pytest.mark.slow
def test_the_finding_stated_on_the_page_holds_for_the_built_in_model(minilm_path):
    """The page and the README say, for the built-in minilm over EXAMPLES: self-similarity is lowest at layer 3
    and rises again above it; the baseline peaks at layer 4 and is lower at layer 6 than at layer 1."""
    from bert.analysis.representations.self_similarity import EXAMPLES
    from bert.data import builtin_sentences

    model, tokenizer = bert.load_pretrained("minilm")
    mean = torch.stack([word_self_similarity(model, tokenizer, w, s) for w, s in EXAMPLES.items()]).mean(dim=0)
    assert int(mean[1:].argmin()) + 1 == 3 and mean[6] > mean[3] + 0.02
    baseline = anisotropy_baseline(model, tokenizer, [s.text for s in builtin_sentences(200)], samples=2000, seed=0)
    assert int(baseline.argmax()) == 4 and baseline[6] < baseline[1]
