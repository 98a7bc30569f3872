"""ELECTRA's replaced-token detection (bert/replaced_tokens.py) against `transformers` on the same tiny random
weights: the probabilities are torch.sigmoid of ElectraForPreTraining's logits, the generator's words are
ElectraForMaskedLM's argmax (or a draw from its softmax with the same seed), and the errors come before any pass."""
from __future__ import annotations

import pytest
import torch

import bert
from bert.errors import InvalidInputError, MissingHeadError
from bert.replaced_tokens import fill_and_detect, fill_masks, replaced_token_scores, replaced_tokens_cost
from bert_test_support import small_bert
from family_support import TOLERANCE, build_hf, write_tiny_tokenizer

TEXT = "the dog [MASK] at the [MASK] . her cat went to the park"


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_vocab_file):
    """The discriminator and a smaller generator (hidden 16: ELECTRA's generators are narrower than their
    discriminators), saved by transformers with the tiny vocabulary; the transformers models, for reference."""
    made = {}
    for name, architecture, fields, seed in (("discriminator", "ElectraForPreTraining", {}, 3),
                                             ("generator", "ElectraForMaskedLM", {"hidden_size": 16, "intermediate_size": 24}, 5)):
        folder = tmp_path_factory.mktemp(name)
        theirs = build_hf("electra", architecture, seed=seed, **fields).eval()
        theirs.save_pretrained(folder)
        write_tiny_tokenizer(folder, tiny_vocab_file)
        made[name] = (folder, theirs)
    return made


@pytest.fixture(scope="module")
def ours(folders):
    return {name: bert.load_pretrained(str(folder)) for name, (folder, _) in folders.items()}


def their_probabilities(theirs, encoding) -> torch.Tensor:
    with torch.no_grad():
        logits = theirs(input_ids=torch.tensor([encoding.input_ids]), token_type_ids=torch.tensor([encoding.token_type_ids])).logits
    return torch.sigmoid(logits)[0]


def their_mask_logits(theirs, encoding, positions) -> torch.Tensor:
    with torch.no_grad():
        logits = theirs(input_ids=torch.tensor([encoding.input_ids]), token_type_ids=torch.tensor([encoding.token_type_ids])).logits
    return logits[0, positions]  # [masks, vocab]


@pytest.mark.parametrize("text", ["the dog barked at the mailman .", "the cat", ("the dog barked", "her cat went to the park")])
def test_the_probabilities_are_sigmoid_of_transformers_discriminator_logits(folders, ours, text):
    model, tokenizer = ours["discriminator"]
    encoding = tokenizer.encode(*text) if isinstance(text, tuple) else tokenizer.encode(text)
    probabilities = replaced_token_scores(model, encoding)
    assert probabilities.shape == (len(encoding),) and probabilities.dtype == torch.float32
    torch.testing.assert_close(probabilities, their_probabilities(folders["discriminator"][1], encoding), **TOLERANCE)


def test_the_generator_fills_each_mask_with_transformers_argmax(folders, ours):
    generator, tokenizer = ours["generator"]
    encoding = tokenizer.encode(TEXT)
    positions = tokenizer.mask_positions(encoding)
    assert len(positions) == 2
    filled, where = fill_masks(generator, tokenizer, encoding)
    expected = their_mask_logits(folders["generator"][1], encoding, positions).argmax(-1).tolist()
    assert where == tuple(positions)
    assert [filled.input_ids[p] for p in positions] == expected
    assert [filled.tokens[p] for p in positions] == [tokenizer.id_to_token(i) for i in expected]
    unchanged = [i for i in range(len(encoding)) if i not in positions]
    assert [filled.input_ids[i] for i in unchanged] == [encoding.input_ids[i] for i in unchanged]


def test_a_sample_is_drawn_from_transformers_softmax_with_the_seed(folders, ours):
    generator, tokenizer = ours["generator"]
    encoding = tokenizer.encode(TEXT)
    positions = tokenizer.mask_positions(encoding)
    probabilities = their_mask_logits(folders["generator"][1], encoding, positions).softmax(-1)
    for seed in (0, 1, 2):
        filled, _ = fill_masks(generator, tokenizer, encoding, sample=True, seed=seed)
        expected = torch.multinomial(probabilities, 1, generator=torch.Generator().manual_seed(seed))[:, 0].tolist()
        assert [filled.input_ids[p] for p in positions] == expected


def test_fill_and_detect_scores_the_filled_sentence(folders, ours):
    (generator, _), (discriminator, tokenizer) = ours["generator"], ours["discriminator"]
    report = fill_and_detect(generator, discriminator, tokenizer, TEXT)
    encoding = tokenizer.encode(TEXT)
    positions = tokenizer.mask_positions(encoding)
    ids = list(encoding.input_ids)
    for position, token_id in zip(positions, their_mask_logits(folders["generator"][1], encoding, positions).argmax(-1).tolist()):
        ids[position] = token_id
    assert report.encoding.input_ids == ids and report.filled == tuple(positions)
    assert tokenizer.mask_id not in report.encoding.input_ids
    torch.testing.assert_close(report.probabilities, their_probabilities(folders["discriminator"][1], report.encoding),
                               **TOLERANCE)


def test_without_a_mask_the_discriminator_reads_the_sentence_as_it_is(ours):
    (generator, _), (discriminator, tokenizer) = ours["generator"], ours["discriminator"]
    encoding = tokenizer.encode("the dog barked at the cat")
    report = fill_and_detect(generator, discriminator, tokenizer, encoding)
    assert report.encoding == encoding and report.filled == ()
    torch.testing.assert_close(report.probabilities, replaced_token_scores(discriminator, encoding))


@pytest.mark.parametrize("text, passes", [(TEXT, 2), ("the dog barked at the cat", 1)])
def test_the_cost_counts_the_passes_made(ours, text, passes):
    (generator, _), (discriminator, tokenizer) = ours["generator"], ours["discriminator"]
    rows = []
    handles = [model.embedding.register_forward_pre_hook(lambda module, args: rows.append(args[0].shape[0]))
               for model in (generator, discriminator)]
    try:
        encoding = tokenizer.encode(text)
        fill_and_detect(generator, discriminator, tokenizer, encoding)
    finally:
        for handle in handles:
            handle.remove()
    cost = replaced_tokens_cost(len(encoding), generator=bool(tokenizer.mask_positions(encoding)))
    assert (sum(rows), cost.forward_passes, cost.tokens) == (passes, passes, len(encoding))


def test_a_model_without_the_replaced_token_head_is_refused(ours):
    (generator, _), (discriminator, tokenizer) = ours["generator"], ours["discriminator"]
    for model in (generator, small_bert(tokenizer.vocab_size, seed=0)):  # a masked LM of each kind
        with pytest.raises(MissingHeadError, match="no replaced-token head"):
            replaced_token_scores(model, tokenizer.encode("the dog"))
    with pytest.raises(MissingHeadError, match="no replaced-token head"):
        fill_and_detect(generator, generator, tokenizer, TEXT)
    with pytest.raises(MissingHeadError, match="no masked-LM head"):
        fill_and_detect(discriminator, discriminator, tokenizer, TEXT)
    with pytest.raises(MissingHeadError, match="no masked-LM head"):
        fill_masks(discriminator, tokenizer, tokenizer.encode(TEXT))


def test_a_generator_with_another_vocabulary_is_refused(ours, folders, tmp_path):
    (generator, _), (discriminator, tokenizer) = ours["generator"], ours["discriminator"]
    vocab = (folders["generator"][0] / "vocab.txt").read_text().splitlines()
    dog, cat = vocab.index("dog"), vocab.index("cat")
    vocab[dog], vocab[cat] = vocab[cat], vocab[dog]  # same size, two pieces swapped
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    swapped = bert.BertTokenizer.from_vocab(tmp_path / "vocab.txt")
    with pytest.raises(InvalidInputError, match="different vocabularies"):
        fill_and_detect(generator, discriminator, tokenizer, TEXT, generator_tokenizer=swapped)
    fill_and_detect(generator, discriminator, tokenizer, TEXT, generator_tokenizer=ours["generator"][1])  # the same: fine


def test_calling_a_discriminator_gives_its_own_head_as_transformers_does(folders, ours):
    """`model(ids)` of an ELECTRA discriminator (no masked-LM head) is ElectraForPreTraining(...).logits; the
    generator's is its masked-LM logits, ElectraForMaskedLM(...).logits; a bare encoder's, None."""
    input_ids = torch.tensor([[2, 10, 11, 12, 13, 14, 3], [2, 15, 16, 17, 3, 0, 0]])
    attention_mask = (input_ids != 0).long()
    for name in ("discriminator", "generator"):
        model = ours[name][0]
        with torch.no_grad():
            expected = folders[name][1](input_ids=input_ids, attention_mask=attention_mask).logits
            got = model(input_ids, attention_mask=attention_mask)
            recorded, _ = model.run_with_cache(input_ids, attention_mask=attention_mask, names=[])
        assert model.own_output == {"discriminator": "replaced", "generator": "mlm"}[name]
        keep = attention_mask.bool()
        torch.testing.assert_close(got[keep], expected[keep], **TOLERANCE)
        torch.testing.assert_close(recorded, got)
    encoder = small_bert(30, seed=0, mlm_head=False)
    assert encoder.own_output is None and encoder(input_ids[:1, :5] % 30) is None
