"""Head ablation: unused heads change nothing; the batched ranking equals ablating one head at a time."""
import pytest
import torch

from bert.analysis.causal.ablation import layer_heads, mean_head_outputs, predict_ablated, rank_heads
from bert.data import LabelledSentence
from bert.errors import InvalidInputError
from bert.hooks import hook_name
from bert.interventions import mean_heads, zero_heads


@pytest.fixture(scope="module")
def model_with_unused_head(tiny_model):
    """A copy of the tiny model whose layer 1, head 2 writes nothing: its columns of the output projection are 0."""
    import copy

    model = copy.deepcopy(tiny_model)
    size = model.config.head_size
    with torch.no_grad():
        model.transformer[1].attention.mlp.weight[:, 2 * size : 3 * size] = 0
    return model


@torch.no_grad()
def log_prob(model, encoding, position, target, interventions=None):
    input_ids, token_type_ids = encoding.tensors()
    logits, _ = model.run_with_cache(input_ids, token_type_ids, names=[], interventions=interventions)
    return float(logits[0, position].log_softmax(-1)[target])


def test_ablating_an_unused_head_changes_nothing(model_with_unused_head, tokenizer):
    encoding = tokenizer.encode("the dog [MASK] at the mail man")
    for mode, mean_z in (("zero", None), ("mean", torch.randn(3, 4, 8))):
        ranking = rank_heads(model_with_unused_head, tokenizer, encoding, mode=mode, mean_z=mean_z)
        assert ranking.effect[1, 2] == pytest.approx(0.0, abs=1e-5)
        intact = predict_ablated(model_with_unused_head, tokenizer, encoding)
        ablated = predict_ablated(model_with_unused_head, tokenizer, encoding, [(1, 2)], mode, mean_z)
        assert [c.token_id for c in intact[0].candidates] == [c.token_id for c in ablated[0].candidates]
        for a, b in zip(intact[0].candidates, ablated[0].candidates):
            assert a.probability == pytest.approx(b.probability, abs=1e-6)


def test_batched_ranking_equals_one_head_at_a_time(tiny_model, tokenizer):
    """Each head ablated in its own forward pass with bert.interventions, against the per-row batched ranking."""
    encoding = tokenizer.encode("her cat went to the [MASK] park")
    mean_z = torch.randn(3, 4, 8, generator=torch.Generator().manual_seed(0))
    for mode in ("zero", "mean"):
        ranking = rank_heads(tiny_model, tokenizer, encoding, mode=mode, mean_z=mean_z, batch_size=5)
        target, position = ranking.target.token_id, ranking.position
        clean = log_prob(tiny_model, encoding, position, target)
        assert ranking.target.probability == pytest.approx(torch.tensor(clean).exp().item(), abs=1e-6)
        for layer in range(3):
            for head in range(4):
                fn = zero_heads(head) if mode == "zero" else mean_heads(mean_z[layer], head)
                alone = log_prob(tiny_model, encoding, position, target, {hook_name("z", layer): fn})
                assert ranking.effect[layer, head] == pytest.approx(clean - alone, abs=1e-5)
        ranked = ranking.ranked()
        assert len(ranked) == 12 and abs(ranked[0][2]) == pytest.approx(float(ranking.effect.abs().max()))


def test_ablating_a_whole_layer_is_all_its_heads(tiny_model, tokenizer):
    encoding = tokenizer.encode("the [MASK] barked")
    heads = layer_heads(tiny_model, [0])
    assert heads == [(0, 0), (0, 1), (0, 2), (0, 3)]
    ablated = predict_ablated(tiny_model, tokenizer, encoding, heads)
    position = ablated[0].position
    expected = log_prob(tiny_model, encoding, position, ablated[0].candidates[0].token_id, {hook_name("z", 0): zero_heads(0, 1, 2, 3)})
    assert torch.tensor(expected).exp().item() == pytest.approx(ablated[0].candidates[0].probability, abs=1e-6)


def test_mean_head_outputs_average_over_real_tokens(tiny_model, tokenizer):
    sentences = [LabelledSentence("the dog barked"), LabelledSentence("a cat is at the park and her dog went")]
    mean_z = mean_head_outputs(tiny_model, tokenizer, sentences)
    assert mean_z.shape == (3, 4, 8)
    zs = []
    for sentence in sentences:  # one at a time: no padding involved
        _, cache = tiny_model.run_with_cache(*tokenizer.encode(sentence.text).tensors(), names=[hook_name("z", 2)])
        zs.append(cache[hook_name("z", 2)][0].transpose(0, 1))  # [query, head, head_dim]
    assert torch.allclose(mean_z[2], torch.cat(zs).mean(0), atol=1e-5)


def test_bad_requests_get_clear_errors(tiny_model, tokenizer):
    with pytest.raises(InvalidInputError, match="no \\[MASK\\]"):
        rank_heads(tiny_model, tokenizer, tokenizer.encode("the dog"))
    with pytest.raises(InvalidInputError, match="mean_z"):
        rank_heads(tiny_model, tokenizer, tokenizer.encode("the [MASK]"), mode="mean")
    with pytest.raises(InvalidInputError, match="no head"):
        predict_ablated(tiny_model, tokenizer, tokenizer.encode("the [MASK]"), [(7, 0)])
