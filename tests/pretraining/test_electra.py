"""ELECTRA's objective (Clark et al. 2020, sections 2 and 3.2) against the loss written out with
torch.nn.functional on the same logits, its labels against the sampled tokens, and its shared embeddings."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from bert import Bert, BertConfig
from bert.errors import InvalidInputError
from bert.pretraining.data import Batch
from bert.pretraining.electra import DISCRIMINATOR_WEIGHT, Electra, electra_losses
from bert.pretraining.masking import IGNORE
from bert.pretraining.trainer import TrainConfig, make_optimizer, make_scheduler, load_checkpoint, save_checkpoint

VOCAB, PAD, CLS, SEP, MASK = 40, 0, 1, 2, 3


def tiny_electra(seed: int = 0) -> Electra:
    torch.manual_seed(seed)
    config = BertConfig.of_family("electra", vocab_size=VOCAB, hidden_size=16, num_layers=2, num_heads=4, intermediate_size=32,
                                  max_position_embeddings=16, embedding_size=8, pad_token_id=PAD)
    return Electra.from_config(config)


def masked_batch() -> tuple[Batch, torch.Tensor, torch.Tensor]:
    """Two rows, the second padded; positions 2, 4 and 5 of row 0 and 3 of row 1 masked."""
    ids = torch.tensor([[CLS, 10, 11, 12, 13, 14, 15, SEP], [CLS, 20, 21, 22, 23, SEP, PAD, PAD]])
    attention = (ids != PAD).long()
    maskable = (ids != PAD) & (ids != CLS) & (ids != SEP)
    chosen = torch.zeros_like(maskable)
    chosen[0, [2, 4, 5]] = chosen[1, 3] = True
    batch = Batch(ids, torch.zeros_like(ids), attention, maskable, None)
    return batch, torch.where(chosen, MASK, ids), torch.where(chosen, ids, IGNORE)


def test_the_loss_is_the_generators_cross_entropy_plus_fifty_times_the_discriminators():
    electra = tiny_electra().eval()
    batch, corrupted, labels = masked_batch()
    losses, replaced, is_replaced = electra_losses(electra, batch, corrupted, labels, sampler=torch.Generator().manual_seed(0))
    chosen = labels != IGNORE
    with torch.no_grad():
        generator_logits = electra.generator(corrupted, batch.token_type_ids, batch.attention_mask)  # [batch, seq, vocab]
        discriminator_logits = electra.discriminator(replaced, batch.token_type_ids, batch.attention_mask, output="replaced")
    mlm = F.cross_entropy(generator_logits[chosen], labels[chosen])
    real = batch.attention_mask.bool()  # every token but padding: [CLS] and [SEP] too
    detection = F.binary_cross_entropy_with_logits(discriminator_logits[real], (replaced != batch.input_ids)[real].float())
    torch.testing.assert_close(losses["mlm"], mlm)
    torch.testing.assert_close(losses["replaced"], detection)
    torch.testing.assert_close(losses["loss"], mlm + 50.0 * detection)
    assert DISCRIMINATOR_WEIGHT == 50.0
    assert torch.equal(replaced[~chosen], batch.input_ids[~chosen]), "only masked positions are replaced"
    assert (generator_logits[chosen].softmax(-1).gather(-1, replaced[chosen][:, None]) > 0).all()


def sure_generator(electra: Electra, tokens: torch.Tensor) -> None:
    """Make the generator's LM head certain of `tokens` (one per masked position, in order)."""
    electra.generator.lm_head.forward = lambda selected: F.one_hot(tokens, VOCAB).float() * 1e4


def test_labels_are_exactly_where_the_sample_differs_from_the_original():
    electra = tiny_electra().eval()
    batch, corrupted, labels = masked_batch()
    chosen = labels != IGNORE
    samples = labels[chosen].clone()
    samples[[0, 3]] = 30  # two masked positions get another token, two their own
    sure_generator(electra, samples)
    _, replaced, is_replaced = electra_losses(electra, batch, corrupted, labels, sampler=torch.Generator().manual_seed(1))
    assert torch.equal(replaced[chosen], samples) and torch.equal(replaced[~chosen], batch.input_ids[~chosen])
    expected = torch.zeros_like(chosen)
    expected[0, 2] = expected[1, 3] = True  # the first and the last masked position
    assert torch.equal(is_replaced.bool(), expected), "a sample equal to the original counts as original"


def test_a_generator_that_is_always_right_replaces_nothing():
    electra = tiny_electra().eval()
    batch, corrupted, labels = masked_batch()
    sure_generator(electra, labels[labels != IGNORE])
    losses, replaced, is_replaced = electra_losses(electra, batch, corrupted, labels, sampler=torch.Generator().manual_seed(2))
    assert torch.equal(replaced, batch.input_ids) and not is_replaced.any()
    assert float(losses["mlm"]) == pytest.approx(0.0, abs=1e-6)


def test_generator_and_discriminator_share_their_embeddings():
    electra = tiny_electra()
    shared = electra.discriminator.embedding
    assert electra.generator.embedding.token_embedding.weight is shared.token_embedding.weight
    assert electra.generator.embedding.position_embedding.weight is shared.position_embedding.weight
    assert electra.generator.lm_head.unembedding.weight is shared.token_embedding.weight
    assert electra.generator.config.hidden_size == 4 and electra.discriminator.config.hidden_size == 16  # a quarter as wide
    with pytest.raises(InvalidInputError, match="electra config"):
        Electra.from_config(BertConfig(vocab_size=VOCAB, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32))


def test_no_gradient_reaches_the_generator_through_the_sampling():
    electra = tiny_electra()
    batch, corrupted, labels = masked_batch()
    losses, _, _ = electra_losses(electra, batch, corrupted, labels, sampler=torch.Generator().manual_seed(3))
    losses["replaced"].backward()
    generator_only = [p for name, p in electra.generator.named_parameters() if "embedding.token" not in name and "embedding.position" not in name]
    assert all(p.grad is None or not p.grad.any() for p in generator_only)
    assert electra.discriminator.discriminator.prediction.weight.grad.abs().sum() > 0


def test_a_checkpoint_keeps_the_shared_tensors_shared(tmp_path):
    electra = tiny_electra(seed=1)
    config = TrainConfig(steps=1, warmup_steps=0)
    optimizer = make_optimizer(electra, config)
    save_checkpoint(tmp_path / "checkpoint", electra, optimizer, make_scheduler(optimizer, 0, 1), 1, config)
    fresh = tiny_electra(seed=2)
    optimizer = make_optimizer(fresh, config)
    assert load_checkpoint(tmp_path / "checkpoint", fresh, optimizer, make_scheduler(optimizer, 0, 1)) == 1
    for (name, a), b in zip(electra.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), name
    assert fresh.generator.embedding.token_embedding.weight is fresh.discriminator.embedding.token_embedding.weight
