"""The page "Masked prediction" (address `prediction`, the app's default page at `/`): the candidates at each
[MASK] from the recorded pass (viz_app/specs/recorded.py); for ELECTRA's discriminator, which has no masked-LM head,
which word pieces look replaced (Clark et al. 2020), its [MASK]s filled by a generator first
(bert/replaced_tokens.py). Its spec (viz_app/specs/base.py). Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from bert.costs import relative_size
from bert.replaced_tokens import ReplacedTokens, fill_and_detect, replaced_token_scores, replaced_tokens_cost
from viz_app.app.generators import replaced_view
from viz_app.app.models import ModelKey
from viz_app.charts.base import Chart
from viz_app.charts.prediction import prediction_bars
from viz_app.specs import recorded
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting

NAME = "prediction"
MASK_CHARTS = tuple(f"mask_{index}" for index in range(8192))  # every [MASK]'s chart, in order (ModernBERT: 8,192 positions)
LESSON_CHARTS = (*MASK_CHARTS, "replaced_tokens")


@dataclass(frozen=True)
class ReplacedWork:
    generator: ModelKey | None  # the generator that fills the [MASK]s first; None: the blanks stay as typed
    sample: bool = False  # the generator's words sampled, as in pre-training (else its most probable word)
    seed: int = 0  # the sample's seed


def _fills(inputs: Inputs, work: ReplacedWork) -> bool:
    return work.generator is not None and bool(inputs.prepared.all_masks)


def replaced_tokens(inputs: Inputs, work: ReplacedWork) -> ReplacedTokens:
    """The discriminator's scores on the input as the page masks it; with a generator, on the input once the
    generator has filled its [MASK]s (argmax, or a draw seeded by `seed` when `sample`)."""
    discriminator, masked = inputs.loaded, inputs.prepared.masked
    if not _fills(inputs, work):
        return ReplacedTokens(masked, replaced_token_scores(discriminator.model, masked))
    filler = inputs.load(work.generator)
    return fill_and_detect(filler.model, discriminator.model, discriminator.tokenizer, masked, filler.tokenizer,
                           sample=work.sample, seed=work.seed)


REPLACED = Computation(  # the discriminator's pass, and the generator's before it when it fills [MASK]s
    "prediction.replaced", lambda work: "Filling the blanks and scoring every word" if work.generator else "Scoring every word",
    cost=lambda inputs, work: replaced_tokens_cost(len(inputs.prepared.masked), _fills(inputs, work)),
    compute=replaced_tokens,
    counted_at=lambda inputs, work: (  # the larger model's size (the generator is usually the smaller)
        max(inputs.loaded.model.config, inputs.load(work.generator).model.config, key=relative_size)
        if _fills(inputs, work) else inputs.loaded.model.config), work=ReplacedWork)


@dataclass(frozen=True)
class Settings:
    top_k: int = 10  # candidates per [MASK]
    shown: tuple[int, ...] | None = None  # which masks (by their order in the input) get a chart; None: all
    replaced: ReplacedWork | None = None  # a discriminator (no masked-LM head): its replaced-token scores instead

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """A link's or a step's settings; a discriminator reads the blanks as typed (no generator is loaded here)."""
        model = inputs.loaded.model
        discriminator = not model.has_mlm_head and "replaced" in model.output_heads
        top_k = setting(state, "top_k")
        return cls(top_k if isinstance(top_k, int) and 1 <= top_k <= 30 else 10,
                   replaced=ReplacedWork(None) if discriminator else None)


def computations(settings: Settings) -> Planned:
    """"recorded" (the predictions), or "replaced" for a discriminator."""
    if settings.replaced is not None:
        return {"replaced": (REPLACED, settings.replaced)}
    return {"recorded": recorded.PREDICTIONS}


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"mask_<i>" -> the candidates at the i-th [MASK] (from 0), for the masks shown; "replaced_tokens" for a
    discriminator."""
    if results.get("replaced") is not None:
        return {"replaced_tokens": replaced_view(results["replaced"])}
    result = results.get("recorded")
    if result is None:
        return {}
    shown = range(len(result.masks)) if settings.shown is None else settings.shown
    return {f"mask_{index}": prediction_bars(result.masks[index], settings.top_k, index + 1, result.pieces)
            for index in shown}
