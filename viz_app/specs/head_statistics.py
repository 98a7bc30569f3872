"""The page "Head statistics" (address `head_statistics`): for every head, its average share of attention to
[CLS], [SEP], punctuation, the previous and next token and itself, and its entropy, over a sentence set, as in
Clark et al. (2019), with the paper's findings beside ours for BERT-base (bert/analysis/attention/head_stats.py).
Its spec (viz_app/specs/base.py): `Settings`, `computations`, `view`. Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from bert.analysis.attention.attention_stats import STATISTICS
from bert.analysis.attention import head_stats
from bert.data import LabelledSentence, builtin_sentences
from viz_app.charts.base import Chart
from viz_app.charts.head_statistics import statistic_by_layer_chart
from viz_app.charts.published import with_published_values
from viz_app.specs.base import Computation, HasInputs, Planned, setting

NAME = "head_statistics"
LESSON_CHARTS = ("by_layer",)
COUNTS = range(20, 1001, 10)  # the built-in sentence count's slider (at most the sentences there are)


@dataclass(frozen=True)
class StatisticsWork:
    sentences: tuple[LabelledSentence, ...]
    pairs: bool  # consecutive sentences fed as A and B, as Clark et al. did; else each alone


STATISTICS_OVER_SENTENCES = Computation(
    "head_statistics.statistics", lambda work: "Every head's attention averaged over the sentences",
    cost=lambda inputs, work: head_stats.head_statistics_cost(inputs.loaded.tokenizer, work.sentences,
                                                              inputs.loaded.model.config.max_position_embeddings,
                                                              pairs=work.pairs),
    compute=lambda inputs, work: head_stats.corpus_head_statistics(inputs.loaded.model, inputs.loaded.tokenizer,
                                                        list(work.sentences), pairs=work.pairs),
    per_model=True, work=StatisticsWork)


@dataclass(frozen=True)
class Settings:
    work: StatisticsWork
    statistic: str  # a key of STATISTICS

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """The built-in sentences a link or a lesson step names (an uploaded file is the page's alone), made valid
        as the widgets would."""
        count, statistic = setting(state, "stats_count"), setting(state, "stats_statistic")
        offered = range(COUNTS[0], min(COUNTS[-1], len(builtin_sentences())) + 1, COUNTS.step)
        count = count if count in offered else setting({}, "stats_count")
        return cls(StatisticsWork(tuple(builtin_sentences(count)), bool(setting(state, "stats_pairs"))),
                   statistic if statistic in STATISTICS else setting({}, "stats_statistic"))


def computations(settings: Settings) -> Planned:
    """"statistics": every head's, over the sentences."""
    return {"statistics": (STATISTICS_OVER_SENTENCES, settings.work)}


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"by_layer": the statistic of every head by layer, with Clark et al.'s findings and published values drawn
    beside them when the model has BERT-base's shape."""
    statistics = results.get("statistics")
    if statistics is None:
        return {}
    statistic, bert_base = settings.statistic, head_stats.is_bert_base(inputs.loaded.model)
    findings = [finding for finding in head_stats.CLARK_2019 if finding.statistic == statistic] if bert_base else []
    chart = statistic_by_layer_chart(statistics[statistic], statistic, findings)
    published = head_stats.clark_2019_reference().get(statistic)
    return {"by_layer": with_published_values(chart, published) if bert_base and published else chart}
