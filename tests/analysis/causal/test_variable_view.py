"""One sentence through a variable's directions (bert/analysis/causal/variable_view.py) against transformers'
BertForMaskedLM on the same tiny random weights: the projections are its hidden states dotted with the direction,
and the live swap's guesses are its own run with the source's coordinates put in by a forward hook."""
from __future__ import annotations

import pytest
import torch

import bert
from bert.analysis.causal.variable_view import live_swap, projections
from bert.errors import InvalidInputError
from bert.hooks import hook_name

BASE, SOURCE = "the a [MASK] at the park .", "the g [MASK] at the park ."


@pytest.fixture(scope="module")
def both(tiny_mlm_folder):
    from transformers import BertForMaskedLM

    ours = bert.load_pretrained(str(tiny_mlm_folder))
    theirs = BertForMaskedLM.from_pretrained(str(tiny_mlm_folder)).eval()
    return ours, theirs


def basis_of(hidden: int, k: int) -> torch.Tensor:
    return torch.linalg.qr(torch.randn(hidden, k, generator=torch.Generator().manual_seed(0))).Q


def test_projections_are_the_hidden_states_along_the_direction(both):
    (model, tokenizer), theirs = both
    basis = basis_of(model.config.hidden_size, 2)
    tokens, values = projections(model, tokenizer, BASE, {hook_name("layer_out", 0): basis, hook_name("layer_out", 1): basis})
    encoding = tokenizer.encode(BASE)
    with torch.no_grad():
        states = theirs(torch.tensor([encoding.input_ids]), output_hidden_states=True).hidden_states
    expected = torch.stack([states[1][0] @ basis[:, 0], states[2][0] @ basis[:, 0]])
    assert tokens == encoding.tokens
    torch.testing.assert_close(torch.from_numpy(values), expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("k", [3, None])  # three directions, or the whole vector
def test_the_live_swap_is_transformers_run_with_the_coordinates_put_in(both, k):
    (model, tokenizer), theirs = both
    layer, basis = 0, None if k is None else basis_of(model.config.hidden_size, k)
    swap = live_swap(model, tokenizer, BASE, SOURCE, hook_name("layer_out", layer), "differs", basis, top=4)
    base, source = (torch.tensor([tokenizer.encode(text).input_ids]) for text in (BASE, SOURCE))
    mask, position = tokenizer.mask_positions(tokenizer.encode(BASE))[0], swap.position
    assert swap.tokens[position] == "a"  # the first word piece that differs
    with torch.no_grad():
        wanted = theirs(source, output_hidden_states=True).hidden_states[layer + 1][0, position]

        def put_in(module, args, output):
            hidden = output[0] if isinstance(output, tuple) else output
            here = hidden[0, position]
            new = wanted if basis is None else here + (wanted - here) @ basis @ basis.T
            hidden = hidden.clone()
            hidden[0, position] = new
            return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

        handle = theirs.bert.encoder.layer[layer].register_forward_hook(put_in)
        try:
            after = theirs(base).logits[0, mask].softmax(-1)
        finally:
            handle.remove()
        before = theirs(base).logits[0, mask].softmax(-1)
    for ours, reference in ((swap.before, before), (swap.after, after)):
        values, ids = reference.topk(4)
        assert [word for word, _ in ours] == [tokenizer.id_to_token(i) for i in ids.tolist()]
        torch.testing.assert_close(torch.tensor([p for _, p in ours]), values, rtol=0, atol=1e-5)


def test_sentences_that_do_not_line_up_are_refused(both):
    (model, tokenizer), _ = both
    with pytest.raises(InvalidInputError, match="same number of word pieces"):
        live_swap(model, tokenizer, BASE, "the g g [MASK] .", hook_name("layer_out", 0), "differs", None)
