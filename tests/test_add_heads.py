"""add_output_heads gives a loaded encoder fresh heads to pre-train without touching what it loaded."""
import torch

from bert import Bert, BertConfig


def test_add_heads_keeps_the_tied_token_embedding_and_initialises_the_rest():
    torch.manual_seed(0)
    encoder = Bert(BertConfig(vocab_size=50, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32), mlm_head=False)
    with torch.no_grad():
        encoder.embedding.token_embedding.weight.fill_(0.5)  # a value init would never produce
    encoder.add_output_heads(mlm_head=True, nsp_head=True)
    assert torch.all(encoder.embedding.token_embedding.weight == 0.5)
    assert encoder.lm_head.unembedding.weight is encoder.embedding.token_embedding.weight
    assert torch.all(encoder.lm_head.unembedding.bias == 0)
    assert torch.all(encoder.lm_head.layer_norm.weight == 1)
    assert 0.01 < float(encoder.lm_head.mlp.weight.detach().std()) < 0.03  # normal(0, 0.02)
    assert "lm_head.hook_logits" in encoder.hook_names()
    ids = torch.tensor([[1, 2, 3]])
    assert encoder(ids, torch.zeros_like(ids)).shape == (1, 3, 50)
    assert encoder.nsp_logits(encoder.encode(ids, torch.zeros_like(ids))).shape == (1, 2)
