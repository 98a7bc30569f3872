"""The page "Head ablation" (address `head_ablation`): remove heads or whole layers and watch the prediction at a
[MASK] change; rank every head by what ablating it alone does (bert/analysis/causal/ablation.py). "Mean" ablation
puts in an ablated head's place its mean output over the built-in sentences, made once per model. Its spec
(viz_app/specs/base.py): `Settings`, `computations` ("mean" once per model, "ranking"), `view`; plus the light
before/after table and `head_ranking`, which the lesson value "most_helpful_head" reads. Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import torch

from bert.analysis.causal import ablation
from bert.costs import Cost
from bert.data import builtin_sentences
from bert.devices import as_numpy
from viz_app.app.forward import PreparedInput
from viz_app.app.models import LoadedModel
from viz_app.charts.base import Chart
from viz_app.charts.head_ablation import head_effect_heatmap
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, chosen_mask, setting

NAME = "head_ablation"
LESSON_CHARTS = ("ranking",)
MEAN_SENTENCES = 200  # the built-in sentences averaged over for "mean" ablation
SHOWN = 10  # the guesses the before/after table lists


def mean_head_outputs(loaded: LoadedModel) -> np.ndarray:
    """[layer, head, head_dim] every head's output averaged over the real tokens of the built-in sentences."""
    return as_numpy(ablation.mean_head_outputs(loaded.model, loaded.tokenizer, builtin_sentences(MEAN_SENTENCES)))


def mean_cost(loaded: LoadedModel) -> Cost:
    """What `mean_head_outputs` costs (once per model)."""
    return ablation.mean_head_outputs_cost(loaded.tokenizer, builtin_sentences(MEAN_SENTENCES),
                                           loaded.model.config.max_position_embeddings)


def head_ranking(loaded: LoadedModel, prepared: PreparedInput, position: int, mode: str,
                 mean_outputs: Callable[[], np.ndarray]) -> ablation.HeadRanking:
    """Every head ablated alone (`mode`: "zero" or "mean") and ranked by the change in log-probability of the
    intact model's top guess at `position`. mean_outputs gives `mean_head_outputs(loaded)`, called in "mean" mode
    only (the app passes its cached one)."""
    mean_z = torch.from_numpy(mean_outputs()) if mode == "mean" else None
    return ablation.rank_heads(loaded.model, loaded.tokenizer, prepared.masked, position=position, mode=mode,
                               mean_z=mean_z)


@dataclass(frozen=True)
class MeanWork:
    """Nothing but the model: the mean is made once per model from the built-in sentences."""


@dataclass(frozen=True)
class RankingWork:
    position: int  # the [MASK] whose prediction is measured
    mode: str  # a key of ablation.MODES
    mean_priced: bool = True  # "mean" mode: the heads' mean (MEAN) is priced with the ranking (a lesson step);
    # False: the page ran MEAN first, and the ranking reads the kept mean


MEAN = Computation("head_ablation.mean", lambda work: "Every head's mean output over the built-in sentences",
                   cost=lambda inputs, work: mean_cost(inputs.loaded),
                   compute=lambda inputs, work: mean_head_outputs(inputs.loaded), per_model=True, work=MeanWork)


def _ranking_cost(inputs: Inputs, work: RankingWork) -> Cost:
    ranking = ablation.rank_heads_cost(inputs.loaded.model.config, len(inputs.prepared.masked))
    return ranking + (mean_cost(inputs.loaded) if work.mode == "mean" and work.mean_priced else Cost(0, 0))


RANKING = Computation(
    "head_ablation.ranking", lambda work: "Every head ablated alone", cost=_ranking_cost,
    compute=lambda inputs, work: head_ranking(inputs.loaded, inputs.prepared, work.position, work.mode,
                                              lambda: inputs.result_of(MEAN, MeanWork())), work=RankingWork)


@dataclass(frozen=True)
class Settings:
    position: int | None  # the [MASK] analysed; None: the input has none, or the model no masked-LM head
    mode: str  # a key of ablation.MODES
    heads: tuple[tuple[int, int], ...] = ()  # (layer, head) ablated for the before/after table
    rank: bool = False  # rank every head

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """The settings a link or a lesson step gives, made valid as the widgets would; a lesson step draws the
        ranking."""
        position = chosen_mask(setting(state, "ablation_mask"), inputs.prepared.all_masks)
        mode = setting(state, "ablation_mode")
        return cls(position if inputs.loaded.summary.has_mlm_head else None, mode if mode in ablation.MODES else "zero",
                   rank=True)


def computations(settings: Settings) -> Planned:
    """"ranking" when asked for (its mean made with it in "mean" mode); nothing without a [MASK]."""
    if settings.position is None or not settings.rank:
        return {}
    return {"ranking": (RANKING, RankingWork(settings.position, settings.mode))}


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"ranking": the effect of ablating each head alone, as a [layer, head] heatmap, when computed."""
    return {"ranking": head_effect_heatmap(results["ranking"])} if results.get("ranking") is not None else {}


@dataclass(frozen=True)
class BeforeAfterWork:
    position: int  # the [MASK] whose guesses are listed
    heads: tuple[tuple[int, int], ...]  # (layer, head) ablated
    mode: str  # a key of ablation.MODES; "mean" reads the heads' mean (MEAN), which the page ran first


def before_after(inputs: Inputs, work: BeforeAfterWork) -> list[dict[str, str]]:
    """The SHOWN top guesses at the position, intact and with the heads ablated: two light passes."""
    loaded, encoding = inputs.loaded, inputs.prepared.masked
    mean_z = torch.from_numpy(inputs.result_of(MEAN, MeanWork())) if work.mode == "mean" else None
    intact = {p.position: p for p in ablation.predict_ablated(loaded.model, loaded.tokenizer, encoding, top_k=SHOWN)}
    after = {p.position: p for p in ablation.predict_ablated(loaded.model, loaded.tokenizer, encoding, list(work.heads),
                                                             work.mode, mean_z, top_k=SHOWN)}
    return [{"rank": i + 1, "intact": f"{a.token} ({a.probability:.1%})", "ablated": f"{b.token} ({b.probability:.1%})"}
            for i, (a, b) in enumerate(zip(intact[work.position].candidates, after[work.position].candidates))]


BEFORE_AFTER = Computation(
    "head_ablation.before_after", lambda work: "The guesses with the heads ablated",
    cost=lambda inputs, work: Cost(2, len(inputs.prepared.masked)), compute=before_after, work=BeforeAfterWork)
