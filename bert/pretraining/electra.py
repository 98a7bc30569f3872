"""ELECTRA's pre-training (Clark et al. 2020, section 2): replaced-token detection.

A small generator, a masked LM, fills the masked positions with tokens sampled from its own output; the
discriminator reads the result and says, for every token, whether it is the original or a replacement:

    loss = L_MLM(generator) + λ · L_Disc,   λ = 50

L_MLM is the generator's cross-entropy at the masked positions; L_Disc the binary cross-entropy over every token
that is not padding, with label 1 where the sampled token differs from the original (a sample that happens to
be the original token counts as original, section 2). No gradient flows through the sampling: the generator
learns from its own masked-LM loss only (section 2, "we do not back-propagate the discriminator loss through
the generator"). The two share their token and position embeddings (section 3.2), so the generator is narrower
inside but reads and writes the discriminator's embedding width (its own projection to its hidden size). The
masked positions show [MASK] only (section 2; TrainConfig(mask_share=1.0)). After pre-training the discriminator
is the model one fine-tunes.
"""
from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from ..config import BertConfig
from ..errors import InvalidInputError
from ..families.registry import family_of
from ..model import Bert
from .data import Batch
from .masking import IGNORE

DISCRIMINATOR_WEIGHT = 50.0  # λ (Clark et al. 2020, section 2 and appendix A)
GENERATOR_FRACTION = 0.25  # the generator's width against the discriminator's (best at 1/4 to 1/2, section 3.2)


class Electra(nn.Module):
    """The generator (a Bert with a masked-LM head) and the discriminator (a Bert with ELECTRA's replaced-token
    head), their token and position embeddings one and the same tensors. forward returns the losses."""

    def __init__(self, generator: Bert, discriminator: Bert, discriminator_weight: float = DISCRIMINATOR_WEIGHT):
        super().__init__()
        if generator.lm_head is None or discriminator.discriminator is None:
            raise InvalidInputError("ELECTRA needs a generator with a masked-LM head and a discriminator with a replaced-token head")
        shared = discriminator.embedding
        if generator.embedding.token_embedding.weight.shape != shared.token_embedding.weight.shape or \
                generator.embedding.position_embedding.weight.shape != shared.position_embedding.weight.shape:
            raise InvalidInputError("the generator's embeddings must be the discriminator's shape (vocabulary, positions, "
                                    "embedding width) to be shared: give it the discriminator's embedding_size")
        generator.embedding.token_embedding = shared.token_embedding  # section 3.2: one embedding for both
        generator.embedding.position_embedding = shared.position_embedding
        generator.lm_head.unembedding.weight = shared.token_embedding.weight  # the generator's output stays tied
        self.generator, self.discriminator, self.discriminator_weight = generator, discriminator, discriminator_weight

    @classmethod
    def from_config(cls, config: BertConfig, generator_fraction: float = GENERATOR_FRACTION,
                    discriminator_weight: float = DISCRIMINATOR_WEIGHT) -> "Electra":
        """A fresh pair from the discriminator's config (family "electra"): the generator as deep, `generator_fraction`
        as wide (hidden size, heads, MLP), reading the discriminator's embedding width."""
        if not family_of(config).discriminator:
            raise InvalidInputError(f"ELECTRA's pre-training needs an electra config (a family with a replaced-token head), not {config.family!r}")
        return cls.around(Bert(config, mlm_head=False, discriminator=True), generator_fraction, discriminator_weight)

    @classmethod
    def around(cls, discriminator: Bert, generator_fraction: float = GENERATOR_FRACTION,
               discriminator_weight: float = DISCRIMINATOR_WEIGHT) -> "Electra":
        """A fresh generator beside an existing discriminator (a loaded ELECTRA checkpoint, which holds no generator;
        a replaced-token head is added if it has none), sharing its embeddings from then on."""
        config = discriminator.config
        if not family_of(config).discriminator:
            raise InvalidInputError(f"ELECTRA's pre-training needs an electra model (a family with a replaced-token head), not {config.family!r}")
        heads = max(1, round(config.num_heads * generator_fraction))
        head_size = max(1, round(config.hidden_size * generator_fraction / heads))
        generator_config = replace(config, hidden_size=heads * head_size, num_heads=heads, embedding_size=config.embedding_width,
                                   intermediate_size=max(1, round(config.intermediate_size * generator_fraction)))
        discriminator.add_output_heads(discriminator=True)
        return cls(Bert(generator_config, mlm_head=True), discriminator, discriminator_weight)

    def forward(self, batch: Batch, corrupted: torch.Tensor, labels: torch.Tensor, totals: tuple[int, int] | None = None,
                sampler: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        return electra_losses(self, batch, corrupted, labels, totals, sampler)[0]


def electra_losses(
    electra: Electra, batch: Batch, corrupted: torch.Tensor, labels: torch.Tensor, totals: tuple[int, int] | None = None,
    sampler: torch.Generator | None = None,
) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """({"mlm", "replaced", "loss"}, the discriminator's input [batch, seq], its labels [batch, seq] float: 1 replaced).

    corrupted, labels: the masked batch (masking.corrupt with mask_share=1.0); labels IGNORE where not masked.
    sampler: a generator for the samples, on the CPU (None: the global generator, on the model's device).
    totals: (masked tokens, non-padding tokens) of a global batch this batch is a share of (as trainer.pretraining_loss).
    """
    chosen, real = labels != IGNORE, batch.attention_mask.bool()
    total_chosen, total_tokens = totals or (int(chosen.sum()), int(real.sum()))
    generator_logits = electra.generator.mlm_logits(electra.generator.encode(corrupted, batch.token_type_ids, batch.attention_mask), chosen)
    summed = F.cross_entropy(generator_logits.float(), labels[chosen], reduction="sum") if chosen.any() else generator_logits.sum() * 0.0
    with torch.no_grad():  # no gradient through the sampling
        probabilities = generator_logits.detach().float().softmax(-1)
        if sampler is None:
            sampled = torch.multinomial(probabilities, 1).squeeze(-1) if chosen.any() else labels[chosen]
        else:
            sampled = torch.multinomial(probabilities.cpu(), 1, generator=sampler).squeeze(-1).to(labels.device) if chosen.any() else labels[chosen]
    replaced = batch.input_ids.masked_scatter(chosen, sampled)
    is_replaced = (replaced != batch.input_ids).float()
    logits = electra.discriminator.replaced_logits(electra.discriminator.encode(replaced, batch.token_type_ids, batch.attention_mask))
    detection = F.binary_cross_entropy_with_logits(logits.float()[real], is_replaced[real], reduction="sum")
    losses = {"mlm": summed / max(total_chosen, 1), "replaced": detection / max(total_tokens, 1)}
    losses["loss"] = losses["mlm"] + electra.discriminator_weight * losses["replaced"]
    return losses, replaced, is_replaced
