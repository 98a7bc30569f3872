"""Causal tracing on one cloze sentence (Meng et al. 2022, "Locating and Editing Factual Associations in GPT").

    trace = causal_trace(model, tokenizer, tokenizer.encode("The Eiffel Tower is in [MASK]."), corrupt=[1, 2, 3])
    trace.restored["residual"]   # [layer + 1, position]: p(answer) with that one state restored (hidden_states numbering)
    trace.clean_probability, trace.corrupted_probability

The token embeddings at the `corrupt` positions get Gaussian noise (`noise_scale` x the standard deviation of the
model's token-embedding matrix, 3 as in Meng et al.; seeded, `samples` draws). Then, in the noisy run, one state of
the clean run is put back at a time: a residual-stream state (hidden_states[layer] at one position) or what the
attention or MLP block of a layer adds at one position. The answer's probability at the [MASK], averaged over the
draws, says where the information that the noise destroyed still sits. No second sentence is needed, which makes
it the teaching version of activation patching (patching.py). The answer is the clean run's top guess unless given.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ...config import BertConfig
from ...costs import Cost
from ...devices import model_device
from ...errors import InvalidInputError
from ...hooks import hook_name
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from .patching import Progress, run_patched, site_hook, sweep_cells, sweep_patches

TRACE_SITES = ("residual", "attention", "mlp")


def trace_cost(config: BertConfig, tokens: int, samples: int = 10, sites: Sequence[str] = ("residual",)) -> Cost:
    """The passes `causal_trace` makes: the clean run, then per noise sample the noisy run and one run per
    restored state."""
    restored = sum(sweep_cells(config, site, tokens) for site in sites)
    return Cost(1 + samples * (1 + restored), tokens, ("noise samples", "the restored blocks", "a shorter sentence"))


@dataclass(frozen=True)
class TraceResult:
    tokens: list[str]
    mask_position: int
    corrupted_positions: list[int]
    answer: str
    answer_id: int
    noise_std: float  # the noise's standard deviation (noise_scale x the token embeddings' std)
    samples: int
    clean_probability: float  # p(answer) at the [MASK] in the clean run
    corrupted_probability: float  # in the noisy run, averaged over the draws
    restored: dict[str, torch.Tensor]  # site -> p(answer) with one state restored: residual [layer + 1, position], others [layer, position]


@torch.no_grad()
def causal_trace(
    model: Bert, tokenizer: BertTokenizer, encoding: Encoding, corrupt: Sequence[int], answer: str | int | None = None,
    sites: Sequence[str] = ("residual",), noise_scale: float = 3.0, samples: int = 10, seed: int = 0,
    batch_size: int = 64, progress: Progress | None = None,
) -> TraceResult:
    """Noise the token embeddings at `corrupt`, restore each clean state in turn (see the module docstring).
    answer: the word whose probability is traced ("Paris", or its vocabulary id); None: the clean run's top guess."""
    mask_position = _check(model, tokenizer, encoding, corrupt, sites, noise_scale, samples)
    hooks = sorted({site_hook(site, layer) for site in sites for layer in range(model.config.num_layers + (site == "residual"))})
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    at_mask = torch.zeros_like(input_ids, dtype=torch.bool)
    at_mask[0, mask_position] = True
    logits, clean = model.run_with_cache(input_ids, token_type_ids, names=hooks, logit_mask=at_mask)
    probabilities = logits[0].float().softmax(-1)
    answer_id = int(probabilities.argmax()) if answer is None else tokenizer.one_token_id(answer, "answer")
    embeddings = model.embedding.token_embedding.weight
    noise_std = noise_scale * float(embeddings.float().std())
    noise = torch.randn(samples, len(corrupt), embeddings.shape[1], generator=torch.Generator().manual_seed(seed)) * noise_std
    grids = {site: sweep_patches(model, site, len(encoding)) for site in sites}
    rows = [[]] + [[patch] for patches in grids.values() for patch in patches]  # row 0: the noisy run, nothing restored
    read = lambda logits: logits.float().softmax(-1)[:, answer_id]  # noqa: E731
    total = torch.zeros(len(rows))
    for sample in range(samples):
        add_noise = _noise_at(list(corrupt), noise[sample])
        total += run_patched(model, encoding, rows, dict(clean), mask_position, read, [(hook_name("token"), add_noise)], batch_size,
                             None if progress is None else lambda done, _, s=sample: progress(s * len(rows) + done, samples * len(rows)))
    mean = total / samples
    restored, start = {}, 1
    for site, patches in grids.items():
        layers = model.config.num_layers + (site == "residual")
        restored[site] = mean[start : start + len(patches)].reshape(layers, len(encoding))
        start += len(patches)
    return TraceResult(list(encoding.tokens), mask_position, list(corrupt), tokenizer.id_to_token(answer_id), answer_id, noise_std,
                       samples, float(probabilities[answer_id]), float(mean[0]), restored)


def _noise_at(positions: list[int], noise: torch.Tensor):
    """An intervention adding `noise` ([position, hidden]) to the token embeddings at `positions`, in every row."""

    def add(activation: torch.Tensor, name: str) -> torch.Tensor:
        activation = activation.clone()
        activation[:, positions] += noise.to(activation.device, activation.dtype)
        return activation

    return add


def _check(model, tokenizer, encoding, corrupt, sites, noise_scale, samples) -> int:
    if not model.has_mlm_head:
        raise InvalidInputError("causal tracing reads the masked-word probability: load a model with a masked-LM head")
    masks = tokenizer.mask_positions(encoding)
    if len(masks) != 1:
        raise InvalidInputError(f"the sentence has {len(masks)} [MASK]; causal tracing needs exactly one, where the answer goes")
    if not corrupt:
        raise InvalidInputError("choose at least one token to corrupt (e.g. the subject's word pieces)")
    bad = [p for p in corrupt if not 0 <= p < len(encoding)]
    if bad:
        raise InvalidInputError(f"positions {bad} are outside this {len(encoding)}-token input")
    if len(set(corrupt)) != len(corrupt):
        raise InvalidInputError(f"a position is repeated in {list(corrupt)}")
    unknown = [site for site in sites if site not in TRACE_SITES]
    if unknown or not sites:
        raise InvalidInputError(f"sites must be some of {', '.join(TRACE_SITES)}, not {list(sites)}")
    if noise_scale < 0:
        raise InvalidInputError(f"noise_scale must be 0 or more, not {noise_scale}")
    if samples < 1:
        raise InvalidInputError(f"samples must be at least 1, not {samples}")
    return masks[0]
