"""What the context-mixing page computes beside the library (bert/analysis/attention/mixing.py): one method's
matrices for a prepared input and the shares the lesson reads (what each costs: the library's mixing_cost). Plain Python:
the page runs it through viz_app/cache.py, the lessons directly."""
from __future__ import annotations

import numpy as np

from bert.analysis.attention.decompx import default_output
from bert.analysis.attention.mixing import METHODS, ContextMixing, context_mixing, record_for_mixing
from bert.devices import model_device
from viz_app.app.forward import PreparedInput
from viz_app.app.models import LoadedModel

NO_SECOND = "none"
METHOD_TITLES = {name: f"{info.title} ({info.paper})" for name, info in METHODS.items()}


def compute(loaded: LoadedModel, prepared: PreparedInput, method: str) -> ContextMixing:
    """The method's matrices for the input the model reads (its masks applied). A watcher (bert/stopping.py) may
    stop the heavy methods between their batched passes."""
    output = default_output(loaded.model) if method == "decompx" else "mlm"
    input_ids, token_type_ids = prepared.masked.tensors(model_device(loaded.model))
    _, cache = record_for_mixing(loaded.model, input_ids, token_type_ids)
    return context_mixing(loaded.model, cache, method, decompx_output=output)


def middle_layers(num_layers: int) -> range:
    """The middle half of the layers (BERT-base: 3 to 8), where Kobayashi et al. 2020 compare weights and norms."""
    return range(num_layers // 4, num_layers - num_layers // 4)


def is_special(token: str, special: bool, position: int) -> bool:
    """[SEP] (a special token past the first: </s> in a RoBERTa-style vocabulary) and punctuation: the tokens
    Clark et al. 2019 found heads resting on."""
    return (special and position > 0) or (len(token) == 1 and not token.isalnum())


def shares_to(matrices: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Per layer, the mean over the rows of each row's share (rows normalised to sum to 1) in `columns`: [layer]."""
    shares = matrices / matrices.sum(-1, keepdims=True)
    return shares[..., columns].sum(-1).mean(-1)


def own_share(matrices: np.ndarray) -> np.ndarray:
    """Per layer, the mean share of each row on its own token (the diagonal, rows normalised): [layer]."""
    shares = matrices / matrices.sum(-1, keepdims=True)
    return np.diagonal(shares, axis1=-2, axis2=-1).mean(-1)
