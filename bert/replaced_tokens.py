"""ELECTRA's replaced-token detection (Clark et al. 2020, section 2): a small generator (a masked LM) fills each
[MASK] with a word of its own, and the discriminator reads the result and says, token by token, how likely the
token is to have been replaced: sigmoid of its one logit per token.

    probabilities = replaced_token_scores(discriminator, tokenizer.encode("the chef ate the meal ."))   # [seq]
    report = fill_and_detect(generator, discriminator, tokenizer, "the chef [MASK] the meal .")
    report.encoding.tokens, report.filled, report.probabilities

A generator and a discriminator must read the same token ids: the published pairs share one vocabulary.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from .analysis.representations.compare import same_vocabulary
from .costs import Cost
from .devices import model_device
from .errors import InvalidInputError, MissingHeadError
from .model import Bert
from .predict import at_positions
from .tokenizer import BertTokenizer, Encoding

NO_DISCRIMINATOR = ("this model has no replaced-token head, so it cannot say which words look replaced: load an "
                    "ELECTRA discriminator (ElectraForPreTraining)")
NO_GENERATOR = ("the generator has no masked-LM head, so it cannot fill the blanks: load an ELECTRA generator "
                "(ElectraForMaskedLM)")


@dataclass(frozen=True)
class ReplacedTokens:
    """What the discriminator says about one input."""

    encoding: Encoding  # the input it read: the generator's tokens in place of each [MASK] it filled
    probabilities: torch.Tensor  # float32 [seq] on the CPU: P(replaced) per token, sigmoid of the discriminator's logit
    filled: tuple[int, ...] = ()  # the positions the generator filled (the [MASK]s), in order; () without a generator


@torch.no_grad()
def replaced_token_scores(model: Bert, encoding: Encoding) -> torch.Tensor:
    """float32 [seq] on the CPU: the probability that each token of `encoding` was replaced, sigmoid of the
    discriminator's logit (ELECTRA's replaced-token head). One forward pass. Raises MissingHeadError without that
    head."""
    if not model.has_discriminator:
        raise MissingHeadError(NO_DISCRIMINATOR)
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    logits = model(input_ids, token_type_ids, output="replaced")  # [1, seq]
    return torch.sigmoid(logits.float())[0].cpu()


@torch.no_grad()
def fill_masks(generator: Bert, tokenizer: BertTokenizer, encoding: Encoding, sample: bool = False,
               seed: int = 0) -> tuple[Encoding, tuple[int, ...]]:
    """`encoding` with each [MASK] replaced by the generator's word, and the positions filled. The generator's most
    probable token by default; `sample=True` draws it from the generator's distribution, as ELECTRA's pre-training
    does (Clark et al. 2020, section 2), with a torch.Generator seeded by `seed`. All [MASK]s are filled at once,
    from one forward pass (none when the input has no [MASK])."""
    if not generator.has_mlm_head:
        raise MissingHeadError(NO_GENERATOR)
    positions = tokenizer.mask_positions(encoding)
    if not positions:
        return encoding, ()
    device = model_device(generator)
    input_ids, token_type_ids = encoding.tensors(device)
    logits = generator(input_ids, token_type_ids, logit_mask=at_positions(positions, len(encoding), device))  # [masks, vocab]
    if sample:
        draw = torch.Generator().manual_seed(seed)
        chosen = torch.multinomial(logits.float().softmax(-1).cpu(), 1, generator=draw)[:, 0]
    else:
        chosen = logits.argmax(-1).cpu()
    ids, tokens = list(encoding.input_ids), list(encoding.tokens)
    for position, token_id in zip(positions, chosen.tolist()):
        ids[position], tokens[position] = token_id, tokenizer.id_to_token(token_id)
    return dataclasses.replace(encoding, input_ids=ids, tokens=tokens), tuple(positions)


def check_pair(generator: Bert, discriminator: Bert, tokenizer: BertTokenizer,
               generator_tokenizer: BertTokenizer | None = None) -> None:
    """Raise a typed error, before any pass, unless `generator` can fill blanks that `discriminator` then reads:
    a masked-LM head, a replaced-token head, and one vocabulary (the same id for the same word piece)."""
    if not discriminator.has_discriminator:
        raise MissingHeadError(NO_DISCRIMINATOR)
    if not generator.has_mlm_head:
        raise MissingHeadError(NO_GENERATOR)
    sizes = (generator.config.vocab_size, discriminator.config.vocab_size)
    if sizes[0] != sizes[1] or not same_vocabulary(generator_tokenizer or tokenizer, tokenizer):
        raise InvalidInputError(
            f"the generator and the discriminator have different vocabularies ({sizes[0]:,} and {sizes[1]:,} token "
            "ids, or the same ids for different word pieces), so the generator's words mean nothing to the "
            "discriminator: use the generator released with this discriminator"
        )


def fill_and_detect(generator: Bert, discriminator: Bert, tokenizer: BertTokenizer, text: str | Encoding,
                    generator_tokenizer: BertTokenizer | None = None, sample: bool = False,
                    seed: int = 0) -> ReplacedTokens:
    """ELECTRA's two steps on one input: the generator fills each [MASK] of `text` (a string, encoded by the
    discriminator's `tokenizer`, or an Encoding) as in `fill_masks`, then the discriminator scores every token of
    the filled input (`replaced_token_scores`). Two forward passes (one without a [MASK]). `generator_tokenizer`:
    the generator's own, checked to be the same vocabulary (default: `tokenizer`)."""
    check_pair(generator, discriminator, tokenizer, generator_tokenizer)
    encoding = tokenizer.encode(text) if isinstance(text, str) else text
    filled, positions = fill_masks(generator, tokenizer, encoding, sample=sample, seed=seed)
    return ReplacedTokens(filled, replaced_token_scores(discriminator, filled), positions)


def replaced_tokens_cost(tokens: int, generator: bool) -> Cost:
    """The passes before they start: the discriminator's one, and the generator's one before it when it fills
    the blanks."""
    return Cost(2 if generator else 1, tokens, ("a shorter sentence",))
