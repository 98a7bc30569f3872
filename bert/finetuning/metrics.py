"""Dev-set scores: accuracy and macro-F1 (scikit-learn), entity-level F1 for BIO tags (seqeval), and for
regression the mean squared error and Pearson's r (scipy)."""
from __future__ import annotations

import numpy as np

# The score early stopping watches, per task (higher is better).
MAIN_METRIC = {"classify": "accuracy", "regression": "pearson", "tokens": "entity_f1"}


def classification_scores(predicted: list[int], gold: list[int], num_labels: int) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, f1_score

    labels = list(range(num_labels))
    return {
        "accuracy": float(accuracy_score(gold, predicted)),
        "macro_f1": float(f1_score(gold, predicted, labels=labels, average="macro", zero_division=0)),
    }


def regression_scores(predicted: list[float], gold: list[float]) -> dict[str, float]:
    from scipy.stats import pearsonr

    predicted_array, gold_array = np.asarray(predicted, dtype=float), np.asarray(gold, dtype=float)
    constant = np.ptp(predicted_array) == 0 or np.ptp(gold_array) == 0  # r is undefined: report 0
    return {
        "mse": float(np.mean((predicted_array - gold_array) ** 2)),
        "pearson": 0.0 if constant else float(pearsonr(predicted_array, gold_array).statistic),
    }


def is_bio(labels: list[str]) -> bool:
    """Labels that name entities (O, B-X, I-X): entity-level F1 applies."""
    return all(label == "O" or label[:2] in ("B-", "I-") for label in labels)


def token_scores(predicted: list[list[str]], gold: list[list[str]]) -> dict[str, float]:
    """Per-word accuracy and macro-F1 over labels; entity-level F1 (seqeval, exact spans) when the labels are BIO."""
    from sklearn.metrics import accuracy_score, f1_score

    flat_predicted = [label for sentence in predicted for label in sentence]
    flat_gold = [label for sentence in gold for label in sentence]
    scores = {
        "accuracy": float(accuracy_score(flat_gold, flat_predicted)),
        "macro_f1": float(f1_score(flat_gold, flat_predicted, average="macro", zero_division=0)),
    }
    if is_bio(sorted(set(flat_gold) | set(flat_predicted))):
        from seqeval.metrics import f1_score as entity_f1

        scores["entity_f1"] = float(entity_f1(gold, predicted, zero_division=0))
    return scores


def main_metric(task: str, scores: dict[str, float]) -> float:
    """The score early stopping compares; token tasks without BIO labels fall back to accuracy."""
    return scores.get(MAIN_METRIC[task], scores.get("accuracy", 0.0))
