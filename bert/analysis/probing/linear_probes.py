"""Linear probes, one per layer: a multinomial logistic regression (scikit-learn's) reads a label off each layer's
vectors, trained on some sentences and scored on others. Beside it, the same probe on a *control task* (Hewitt &
Liang 2019, "Designing and Interpreting Probes with Control Tasks"): every word type gets a random label, drawn
from the task's label distribution and fixed for that type. A probe can pass the control only by memorising word
types, so

    selectivity = task accuracy - control accuracy

tells how much of the accuracy the representation itself gives.

Axes: hidden_states index (0 = embeddings, i = after layer i-1; bert/layers.py), example (one probed word, word piece or arc), hidden, class.
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import torch
from threadpoolctl import threadpool_limits

if TYPE_CHECKING:
    from sklearn.linear_model import LogisticRegression


def control_labels(labels: torch.Tensor, word_types: torch.Tensor, num_classes: int, seed: int) -> torch.Tensor:
    """Hewitt & Liang's control task: one random label per word type, drawn from the labels' distribution."""
    generator = torch.Generator().manual_seed(seed + 1)
    types, type_index = word_types.unique(return_inverse=True)
    distribution = torch.bincount(labels, minlength=num_classes).float()
    per_type = torch.multinomial(distribution, len(types), replacement=True, generator=generator)
    return per_type[type_index]


def train_probes(
    train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
    weight_decay: float = 1e-3, max_iter: int = 50, tolerance: float = 1e-3,
) -> torch.Tensor:
    """One multinomial logistic regression per layer (scikit-learn's, L-BFGS) on standardised features, minimising
    mean cross-entropy + weight_decay·|W|² (the bias is not penalised). train_x, test_x: [layer, example, hidden].
    Returns the held-out accuracy by layer: [layer].

    Each layer's fit starts from the previous layer's weights (neighbouring layers' probes are alike), which
    saves iterations; max_iter and tolerance (on the gradient) bound the time (docs/probing.md says how little the
    defaults move the accuracies). With two classes scikit-learn fits one weight vector (binary logistic
    regression); its penalty is twice that of the equivalent two-way softmax.
    """
    scaled_train, scaled_test = standardise(train_x.numpy(), test_x.numpy())
    return fit_layers(scaled_train, train_y, scaled_test, test_y, weight_decay, max_iter, tolerance)


def fit_layers(
    train_x: np.ndarray, train_y: torch.Tensor, test_x: np.ndarray, test_y: torch.Tensor,
    weight_decay: float = 1e-3, max_iter: int = 50, tolerance: float = 1e-3,
) -> torch.Tensor:
    """train_probes on features already standardised ([layer, example, hidden] numpy arrays): the task's probes
    and its control probes share one standardisation."""
    if len(train_y.unique()) < 2:  # nothing to learn: the probe can only say the one label it saw
        return (test_y == train_y[0]).float().mean().expand(len(train_x)).clone()
    from sklearn.exceptions import ConvergenceWarning  # scikit-learn imported when a probe is fitted: 2 s to import

    probe = logistic_probe(len(train_y), weight_decay, max_iter, tolerance)
    accuracy = []
    # One BLAS thread: L-BFGS's many small products gain nothing from more, and beside PyTorch's own threads
    # they slowed the fits down (docs/benchmarks.md). It changes thread counts only (process-wide while it lasts).
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter bounds a probe's time: stopping there is expected
        for layer_train, layer_test in zip(train_x, test_x):
            probe.fit(layer_train, train_y.numpy())
            accuracy.append(probe.score(layer_test, test_y.numpy()))
    return torch.tensor(accuracy)


def logistic_probe(num_train: int, weight_decay: float = 1e-3, max_iter: int = 50, tolerance: float = 1e-3) -> LogisticRegression:
    """The probe: scikit-learn's multinomial logistic regression minimising mean cross-entropy +
    weight_decay·|W|² over `num_train` examples; each fit starts from the previous one's weights (warm start)."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1 / (2 * weight_decay * num_train), max_iter=max_iter, tol=tolerance, warm_start=True)


def standardise(train_x: np.ndarray, test_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every feature of every layer ([layer, example, hidden]) to zero mean and unit variance over the training
    examples: one scikit-learn StandardScaler over all layers' features side by side ([example, layer x hidden]),
    the same as a scaler per layer, in one pass."""
    from sklearn.preprocessing import StandardScaler

    layers, _, hidden = train_x.shape
    scaler = StandardScaler().fit(_side_by_side(train_x))

    def scaled(x: np.ndarray) -> np.ndarray:  # back to [layer, example, hidden]
        return scaler.transform(_side_by_side(x)).reshape(len(x[0]), layers, hidden).transpose(1, 0, 2).astype(x.dtype)

    return scaled(train_x), scaled(test_x)


def _side_by_side(x: np.ndarray) -> np.ndarray:
    """[layer, example, hidden] -> [example, layer x hidden]."""
    return x.transpose(1, 0, 2).reshape(x.shape[1], -1)
