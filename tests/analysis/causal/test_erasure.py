"""Amnesic probing with LEACE: on synthetic data a linearly encoded label is gone for a scikit-learn probe while a
random erasure of the same rank leaves it; the erased forward pass, the masked-LM accuracy, bad input."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import bert
from bert.analysis.causal.erasure import (
    amnesic_probing, erase_intervention, eraser_rank, fit_leace, masked_words, mlm_accuracy, random_eraser,
)
from bert.analysis.probing.treebank import read_treebank
from bert.errors import InvalidInputError
from bert.predict import predict_masks
from bert_test_support import synthetic_conllu


def synthetic(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Three classes (shares 0.5, 0.3, 0.2), each shifting a 12-dimensional Gaussian along its own direction."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.multinomial(torch.tensor([0.5, 0.3, 0.2]), n, replacement=True, generator=generator)
    shifts = torch.zeros(3, 12)
    shifts[1, 0], shifts[2, 1], shifts[2, 0] = 3.0, 3.0, -1.5
    return torch.randn(n, 12, generator=generator) + shifts[labels], labels


def sklearn_accuracy(train_x, train_y, test_x, test_y) -> float:
    from sklearn.linear_model import LogisticRegression  # here: every test worker collects this module, and it takes a second

    return LogisticRegression(max_iter=1000).fit(train_x.numpy(), train_y.numpy()).score(test_x.numpy(), test_y.numpy())


def test_leace_leaves_the_majority_baseline_and_random_erasure_of_the_same_rank_does_not():
    train_x, train_y = synthetic(4000, seed=0)
    test_x, test_y = synthetic(2000, seed=1)
    majority = float((test_y == 0).float().mean())
    assert sklearn_accuracy(train_x, train_y, test_x, test_y) > 0.9  # the label is linearly encoded
    eraser = fit_leace(train_x, train_y, 3)
    assert eraser_rank(eraser) == 2  # at most classes - 1 directions
    erased = sklearn_accuracy(eraser(train_x), train_y, eraser(test_x), test_y)
    assert erased <= majority + 0.02, (erased, majority)
    # linear guardedness: every class has the same mean after erasure
    class_means = torch.stack([eraser(train_x)[train_y == c].mean(0) for c in range(3)])
    torch.testing.assert_close(class_means, class_means.mean(0).expand(3, -1), atol=2e-2, rtol=0)
    control = random_eraser(train_x.mean(0), 2, seed=3)
    assert eraser_rank(control) == 2
    assert sklearn_accuracy(control(train_x), train_y, control(test_x), test_y) > majority + 0.2


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    return bert.load_pretrained(str(tiny_mlm_folder))


@pytest.fixture(scope="module")
def treebank():
    return read_treebank(synthetic_conllu(60, seed=2).encode(), name="synthetic.conllu").split(0.25, seed=0)


def test_the_erased_layer_is_hidden_states_of_that_number(tiny, tiny_mlm_folder, treebank):
    """transformers' hidden_states[1] through the eraser, against our run with the intervention on layer 1."""
    from transformers import BertForMaskedLM

    model, tokenizer = tiny
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    x, y = synthetic(500, seed=5)
    eraser = fit_leace(torch.randn(500, 64), y, 3)
    encoding = tokenizer.encode("the dog barked at the park .")
    input_ids, token_type_ids = encoding.tensors()
    hook, erase = erase_intervention(1, eraser, torch.device("cpu"))
    with torch.no_grad():
        _, cache = model.run_with_cache(input_ids, token_type_ids, names=[hook], interventions=[(hook, erase)])
        expected = eraser(reference(input_ids=input_ids, output_hidden_states=True).hidden_states[1])
    torch.testing.assert_close(cache[hook], expected, atol=1e-5, rtol=1e-5)


def test_mlm_accuracy_is_predict_masks_one_word_at_a_time(tiny, treebank):
    model, tokenizer = tiny
    masked = masked_words(tokenizer, treebank[1].sentences, None, seed=0)
    words = sum(len(s) for s in treebank[1].sentences)
    single = sum(1 for s in treebank[1].sentences for w in s.words if len(tokenizer.subwords(w)) == 1)
    assert len(masked) == single and single < words  # "mailman" is two pieces (mail ##man)
    hits = 0
    for encoding, position, target in masked:
        assert tokenizer.mask_positions(encoding) == [position]
        hits += predict_masks(model, tokenizer, encoding, top_k=1)[0].candidates[0].token_id == target
    assert mlm_accuracy(model, tokenizer, masked, batch_size=5) == pytest.approx(hits / len(masked))


def test_amnesic_probing_report(tiny, treebank):
    model, tokenizer = tiny
    train, test = treebank
    report = amnesic_probing(model, tokenizer, train.sentences, test.sentences, "upos", hidden_states_index=2, model_name="tiny")
    assert report.rank == 4  # five tags: DET NOUN VERB ADP PUNCT
    assert report.probe_before > report.probe_majority + 0.3
    assert report.probe_after <= report.probe_majority + 0.05
    assert report.probe_random > report.probe_majority + 0.3
    for value in (report.mlm_before, report.mlm_after, report.mlm_random):
        assert 0 <= value <= 1
    data = report.to_dict()
    assert list(data) == ["model", "task", "hidden_states_index", "rank", "probe", "mlm"]
    assert list(data["probe"]) == ["before", "after", "majority", "random_control"]
    assert list(data["mlm"]) == ["before", "after", "random_control"]
    again = amnesic_probing(model, tokenizer, train.sentences, test.sentences, "upos", hidden_states_index=2, model_name="tiny")
    assert again == report  # seeded


def test_bad_erasure_requests_say_what_to_change(tiny, treebank):
    model, tokenizer = tiny
    train, test = (t.sentences for t in treebank)
    with pytest.raises(InvalidInputError, match=r"hidden_states index must be 0 \(the embeddings\) to 2 \(after the last layer\), not 3"):
        amnesic_probing(model, tokenizer, train, test, "upos", hidden_states_index=3)
    with pytest.raises(InvalidInputError, match=r"has no 'ner' labels; its label columns are \['deprel', 'upos'\]"):
        amnesic_probing(model, tokenizer, train, test, "ner", hidden_states_index=1)
    with pytest.raises(InvalidInputError, match="no test sentences"):
        amnesic_probing(model, tokenizer, train, [], "upos", hidden_states_index=1)
    one_tag = [replace(s, labels={"upos": ("X",) * len(s)}) for s in train]
    with pytest.raises(InvalidInputError, match=r"the training words have 1 upos label\(s\); erasing needs at least two"):
        amnesic_probing(model, tokenizer, one_tag, test, "upos", hidden_states_index=1)
    encoder = bert.Bert(model.config, mlm_head=False).eval()
    with pytest.raises(InvalidInputError, match="load a model with a masked-LM head"):
        amnesic_probing(encoder, tokenizer, train, test, "upos", hidden_states_index=1)


@pytest.mark.slow  # BERT-base over the EWT treebank when the model is cached
def test_bert_base_upos_erasure_hurts_the_masked_lm_more_than_random_erasure():
    """Elazar et al. (2021): removing part of speech from BERT-base harms its word predictions more than removing
    as many random directions."""
    from bert import hub
    from bert.analysis.probing.treebank import builtin_treebank

    folder = hub.cached_snapshot("bert-base-uncased")
    if folder is None or not hub.has_weights(folder):
        pytest.skip("bert-base-uncased is not in the local Hugging Face cache (python -m bert download bert-base-uncased)")
    model, tokenizer = bert.load_pretrained("bert-base-uncased")
    report = amnesic_probing(model, tokenizer, builtin_treebank("dev").sentences, builtin_treebank("test").sentences, "upos",
                             hidden_states_index=6, max_mlm_words=1000)
    assert report.probe_after < report.probe_before - 0.3
    assert report.mlm_before - report.mlm_after > report.mlm_before - report.mlm_random, report
