"""Logit lens: the last layer's lens is the model's own prediction; every layer is the LM head on its output."""
import pytest
import torch

from bert import Bert
from bert.analysis.representations.logit_lens import logit_lens
from bert.errors import InvalidInputError
from bert.predict import predict_masks


def test_last_layer_lens_is_the_prediction(tiny_model, tokenizer):
    encoding = tokenizer.encode("the dog [MASK] at the cat [MASK]")
    lenses = logit_lens(tiny_model, tokenizer, encoding, top_k=3)
    predictions = predict_masks(tiny_model, tokenizer, encoding, top_k=3)
    assert [lens.position for lens in lenses] == [p.position for p in predictions]
    for lens, prediction in zip(lenses, predictions):
        assert len(lens.layers) == tiny_model.config.num_layers + 1
        last = lens.layers[-1]
        assert [c.token_id for c in last.top] == [c.token_id for c in prediction.candidates]
        assert last.top[0].probability == pytest.approx(prediction.candidates[0].probability, abs=1e-6)
        assert last.final_rank == 1 and lens.final.token_id == prediction.candidates[0].token_id


def test_each_layer_reads_that_layer_through_the_lm_head(tiny_model, tokenizer):
    """An independent route to layer 1's lens: run only the embedding and the first layer by hand."""
    encoding = tokenizer.encode("her dog went to the [MASK]")
    (lens,) = logit_lens(tiny_model, tokenizer, encoding, top_k=2)
    input_ids, token_type_ids = encoding.tensors()
    with torch.no_grad():
        hidden = tiny_model.transformer[0](tiny_model.embedding(input_ids, token_type_ids), None)
        probabilities = tiny_model.lm_head(hidden[0, lens.position]).softmax(-1)
    assert lens.layers[1].name == "after layer 0"  # hidden_states[1] (bert/layers.py)
    assert lens.layers[1].top[0].token_id == int(probabilities.argmax())
    final_probability = float(probabilities[lens.final.token_id])
    assert lens.layers[1].final_probability == pytest.approx(final_probability, abs=1e-6)
    assert lens.layers[1].final_rank == 1 + int((probabilities > final_probability).sum())


def test_no_mask_gives_nothing_and_an_encoder_is_refused(tiny_model, tokenizer):
    assert logit_lens(tiny_model, tokenizer, tokenizer.encode("the dog")) == []
    encoder = Bert(tiny_model.config, mlm_head=False).eval()
    with pytest.raises(InvalidInputError, match="masked-LM head"):
        logit_lens(encoder, tokenizer, tokenizer.encode("the [MASK]"))
