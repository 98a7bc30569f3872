"""What the head ablation page computes beside the library (no Streamlit here): every head's mean output over the
built-in sentences, which "mean" ablation puts in an ablated head's place, and every head ranked by what ablating
it alone does to a prediction. viz_app/cache.py caches both per model and input; lesson steps call them too."""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from bert.analysis.causal import ablation
from bert.data import builtin_sentences
from bert.devices import as_numpy
from viz_app.app.forward import PreparedInput
from viz_app.app.models import LoadedModel

MEAN_SENTENCES = 200  # the built-in sentences averaged over for "mean" ablation


def mean_head_outputs(loaded: LoadedModel) -> np.ndarray:
    """[layer, head, head_dim] every head's output averaged over the real tokens of the built-in sentences."""
    return as_numpy(ablation.mean_head_outputs(loaded.model, loaded.tokenizer, builtin_sentences(MEAN_SENTENCES)))


def head_ranking(loaded: LoadedModel, prepared: PreparedInput, position: int, mode: str,
                 mean_outputs: Callable[[], np.ndarray]) -> ablation.HeadRanking:
    """Every head ablated alone (`mode`: "zero" or "mean") and ranked by the change in log-probability of the
    intact model's top guess at `position`. mean_outputs gives `mean_head_outputs(loaded)`, called in "mean" mode
    only (the app passes its cached one)."""
    mean_z = torch.from_numpy(mean_outputs()) if mode == "mean" else None
    return ablation.rank_heads(loaded.model, loaded.tokenizer, prepared.masked, position=position, mode=mode,
                               mean_z=mean_z)
