"""The page "Embeddings" (address `embeddings`): do token, position and segment embeddings split the hidden space
like a concatenation, or overlap? This sentence's three parts (from the recorded pass, viz_app/specs/recorded.py),
the embedding tables, and their top-k subspaces (bert/analysis/representations/embedding_subspaces.py). Its spec
(viz_app/specs/base.py). Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from bert.analysis.representations.embedding_subspaces import PAIRS, PARTS, SubspaceReport, decompose
from bert.costs import Cost
from bert.errors import InvalidInputError
from viz_app.app.forward import ForwardResult
from viz_app.app.models import POSITIONS_RELATIVE, POSITIONS_ROTATED, POSITIONS_ROTATED_SEGMENTS, ModelSummary
from viz_app.app.text import Markdown, joined, markdown
from viz_app.app.tables import EmbeddingTables, model_tables, project_tokens, table_subspaces
from viz_app.charts import embeddings as charts
from viz_app.charts.base import Chart
from viz_app.specs import recorded
from viz_app.specs.base import Computation, HasInputs, Planned, setting

NAME = "embeddings"
LESSON_CHARTS = ("norms", "cosines", "position_cosines", "angles", "surviving")


@dataclass(frozen=True)
class TablesWork:
    k: int  # directions per table's subspace


@dataclass(frozen=True)
class TableAnalysis:
    tables: EmbeddingTables  # PCA, cosines and singular directions of the three tables (once per model)
    report: SubspaceReport  # how their top-k subspaces sit to one another


NO_SEGMENTS = ("This model has no segment embeddings (DistilBERT adds only token and position embeddings), so this "
               "page's three-part comparison does not apply: pick a BERT, RoBERTa, ALBERT or ELECTRA model.")


def refusal(config) -> str | None:
    """Why the three tables cannot be compared for a model with this config (no position or no segment table), or
    None."""
    if config.rotary or not config.absolute_positions:
        return POSITIONS_RELATIVE if not config.rotary else POSITIONS_ROTATED_SEGMENTS if config.type_vocab_size \
            else POSITIONS_ROTATED
    return None if config.type_vocab_size else NO_SEGMENTS


def analyse_tables(loaded, k: int) -> TableAnalysis:
    """The three tables compared; InvalidInputError (saying why, `refusal`) for a model without all three."""
    if (why := refusal(loaded.model.config)) is not None:
        raise InvalidInputError(why)
    tables = model_tables(loaded.model, loaded.tokenizer, loaded.summary.vocab)
    return TableAnalysis(tables, table_subspaces(loaded.model, tables, k))


TABLES = Computation(  # the weight tables only: no forward pass, one result a model whatever the sentence
    "embeddings.tables", lambda work: "The embedding tables",
    cost=lambda inputs, work: Cost(0, 0), compute=lambda inputs, work: analyse_tables(inputs.loaded, work.k),
    per_model=True, work=TablesWork)


def largest_k(summary: ModelSummary) -> int:
    """The slider's top: directions per table."""
    return min(64, summary.hidden)


@dataclass(frozen=True)
class Settings:
    k: int = 16  # directions per table's subspace

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        summary, k = inputs.loaded.summary, setting(state, "k")
        return cls(k if isinstance(k, int) and 1 <= k <= largest_k(summary) else min(16, summary.hidden))


def computations(settings: Settings) -> Planned:
    """"recorded" (this sentence's parts) and "tables" (the tables and their k-dimensional subspaces)."""
    return {"recorded": recorded.FULL, "tables": (TABLES, TablesWork(settings.k))}


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"norms", "cosines" (this sentence), "variance", "position_curve", "position_cosines", "token_scatter" (the
    tables), "angles", "surviving" (their subspaces at the settings' k); none for a model that adds no position or
    no segment embedding at its input (rotary or relative positions, DistilBERT): nothing to compare."""
    result: ForwardResult = results["recorded"]
    if set(result.embeddings) != set(PARTS):
        return {}
    tables, report = results["tables"].tables, results["tables"].report
    tokens, embeddings = list(result.tokens), result.embeddings
    parts = decompose(embeddings["token"], embeddings["position"], embeddings["segment"])
    coords = project_tokens(tables, embeddings["token"])
    return {
        "norms": charts.part_norms(parts, tokens),
        "cosines": charts.part_cosines(parts, tokens),
        "variance": charts.explained_variance(tables.token_variance, tables.position_variance, tables.hidden),
        "position_curve": charts.position_curve(tables.position_coords, len(tokens)),
        "position_cosines": charts.position_cosines(tables.position_cosines),
        "token_scatter": charts.token_scatter(tables.sample_tokens, tables.sample_coords, tokens, coords),
        "angles": charts.angle_curves(report),
        "surviving": charts.surviving_matrix(report),
    }


def mean_cosines(result: ForwardResult) -> dict[tuple[str, str], float]:
    """Each pair of parts: the mean |cosine| over this sentence's tokens."""
    embeddings = result.embeddings
    parts = decompose(embeddings["token"], embeddings["position"], embeddings["segment"])
    return {pair: float(np.abs(parts.cosines[pair]).mean()) for pair in PAIRS}


def subspace_reading(report: SubspaceReport) -> Markdown:
    """Markdown that reads the surviving fractions against the random baseline: one line per table, a verdict."""
    lines, shared = [], 0
    for part in PARTS:
        clauses = []
        for onto in PARTS:
            if onto == part or report.dims[onto] == 0:
                continue
            measured, random = report.surviving[(part, onto)], report.random_surviving[onto]
            ratio = measured / random if random else 0.0
            shared += ratio >= 0.5
            word = "avoids it" if ratio < 0.5 else ("as random" if ratio <= 1.5 else "leans in")
            clauses.append(f"{measured:.0%} in the {onto} subspace (random {random:.0%}: {word})")
        lines.append(markdown("- **{}** vectors keep {}", part, ", ".join(clauses)))
    verdict = (
        markdown("At this k the three parts sit in nearly separate subspaces: close to a concatenation, in a rotated "
                 "basis.")
        if shared == 0
        else markdown("At this k the parts are **not** kept apart as a concatenation would keep them: they share "
                      "directions at least as much as random vectors would.")
    )
    return joined("\n", [markdown("**Reading it** (share of length |Px|/|x|):"), *lines, markdown(""), verdict])
