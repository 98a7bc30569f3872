"""Causal tracing (Meng et al. 2022): zero noise restores everything; restoring the one corrupted embedding restores
the clean run; one cell against transformers (noisy inputs_embeds, a forward hook restoring a hidden state)."""
from __future__ import annotations

import pytest
import torch

import bert
from bert.analysis.causal.tracing import causal_trace
from bert.errors import InvalidInputError

TEXT = "the dog [MASK] at the park ."


@pytest.fixture(scope="module")
def models(tiny_mlm_folder):
    from transformers import BertForMaskedLM

    ours, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    return ours, reference, tokenizer


def test_zero_noise_restores_everything(models):
    ours, _, tokenizer = models
    trace = causal_trace(ours, tokenizer, tokenizer.encode(TEXT), corrupt=[1, 2], sites=("residual", "attention", "mlp"), noise_scale=0, samples=2)
    assert trace.corrupted_probability == pytest.approx(trace.clean_probability, abs=1e-6)
    for site, grid in trace.restored.items():
        torch.testing.assert_close(grid, torch.full_like(grid, trace.clean_probability), atol=1e-6, rtol=0, msg=site)
    assert trace.restored["residual"].shape == (3, 9) and trace.restored["mlp"].shape == (2, 9)


def test_restoring_the_one_noisy_embedding_restores_the_clean_run(models):
    ours, _, tokenizer = models
    trace = causal_trace(ours, tokenizer, tokenizer.encode(TEXT), corrupt=[2], samples=3, seed=4)
    assert abs(trace.corrupted_probability - trace.clean_probability) > 1e-4, "the noise must change the answer's probability"
    assert float(trace.restored["residual"][0, 2]) == pytest.approx(trace.clean_probability, abs=1e-6)
    others = torch.cat([trace.restored["residual"][0, :2], trace.restored["residual"][0, 3:]])  # restoring what was never noised
    torch.testing.assert_close(others, torch.full_like(others, trace.corrupted_probability), atol=1e-6, rtol=0)
    again = causal_trace(ours, tokenizer, tokenizer.encode(TEXT), corrupt=[2], samples=3, seed=4)
    assert torch.equal(again.restored["residual"], trace.restored["residual"]), "the same seed must give the same trace"
    other_seed = causal_trace(ours, tokenizer, tokenizer.encode(TEXT), corrupt=[2], samples=3, seed=5)
    assert not torch.equal(other_seed.restored["residual"], trace.restored["residual"])


def test_a_traced_cell_equals_transformers_with_noisy_embeddings(models):
    """Each draw: inputs_embeds = word embeddings + noise at the corrupted positions; a forward hook on layer 0 puts
    the clean output back at one position; p(answer) at the [MASK], averaged over the draws."""
    ours, reference, tokenizer = models
    encoding = tokenizer.encode(TEXT)
    corrupt, samples, seed, scale = [1, 2], 2, 7, 3.0
    trace = causal_trace(ours, tokenizer, encoding, corrupt=corrupt, samples=samples, seed=seed, noise_scale=scale)
    ids = torch.tensor([encoding.input_ids])
    words = reference.bert.embeddings.word_embeddings
    std = scale * float(words.weight.detach().std())
    assert trace.noise_std == pytest.approx(std, rel=1e-5)
    noise = torch.randn(samples, len(corrupt), words.weight.shape[1], generator=torch.Generator().manual_seed(seed)) * std
    with torch.no_grad():
        clean_layer0 = reference(input_ids=ids, output_hidden_states=True).hidden_states[1]
    layer0 = reference.bert.encoder.layer[0]
    for position in (2, 5):
        def restore(module, args, output, position=position):
            output = (output[0] if isinstance(output, tuple) else output).clone()
            output[:, position] = clean_layer0[:, position]
            return output

        probabilities = []
        handle = layer0.register_forward_hook(restore)
        try:
            for sample in range(samples):
                with torch.no_grad():
                    embeds = words(ids).clone()
                    embeds[0, corrupt] += noise[sample]
                    logits = reference(inputs_embeds=embeds, token_type_ids=torch.zeros_like(ids)).logits
                probabilities.append(float(logits[0, trace.mask_position].softmax(-1)[trace.answer_id]))
        finally:
            handle.remove()
        assert float(trace.restored["residual"][1, position]) == pytest.approx(sum(probabilities) / samples, abs=1e-5)


@pytest.mark.parametrize(
    "text, options, message",
    [
        ("the dog barked at the park .", {}, r"has 0 \[MASK\]; causal tracing needs exactly one"),
        ("the [MASK] [MASK] at the park .", {}, r"has 2 \[MASK\]"),
        (TEXT, {"corrupt": []}, "choose at least one token to corrupt"),
        (TEXT, {"corrupt": [1, 40]}, r"positions \[40\] are outside this 9-token input"),
        (TEXT, {"corrupt": [1, 1]}, "a position is repeated"),
        (TEXT, {"sites": ("heads",)}, "sites must be some of residual, attention, mlp"),
        (TEXT, {"noise_scale": -1}, "noise_scale must be 0 or more"),
        (TEXT, {"samples": 0}, "samples must be at least 1"),
        (TEXT, {"answer": 10_000}, r"answer id 10000 is not in the vocabulary"),
        (TEXT, {"answer": "kroxldyphivc"}, r"answer .kroxldyphivc. is not one vocabulary token"),
    ],
)
def test_bad_tracing_input_says_what_is_wrong(models, text, options, message):
    ours, _, tokenizer = models
    with pytest.raises(InvalidInputError, match=message):
        causal_trace(ours, tokenizer, tokenizer.encode(text), **({"corrupt": [1]} | options))
