"""The page "Attention" (address `attention`): where each token looks, head by head. One head's pattern and one
token's attention, query against key (the neuron view, Vig 2019), every head at a glance and the per-head statistics
(Clark et al. 2019), from the prediction page's recorded pass (viz_app/specs/recorded.py); for DeBERTa, a layer's
three score terms (He et al. 2021), one more pass. In word pieces or in words (Clark et al. 2019's merge). Its spec
(viz_app/specs/base.py). Plain Python."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from bert.analysis.attention.attention_stats import STATISTICS, HeadStatistics, KeyRoles
from bert.analysis.attention.attention_stats import head_statistics as statistics_of
from bert.analysis.attention.query_key import QueryKeyProduct, query_key_product
from bert.analysis.attention.score_terms import score_terms, score_terms_cost
from bert.analysis.attention.words import WordGroups, merge_attention, word_groups
from bert.attention import window_band
from bert.config import BertConfig
from viz_app.app.forward import ForwardResult
from viz_app.charts.attention import attention_bars, heads_overview, pattern_heatmap, statistic_heatmap
from viz_app.charts.base import Chart
from viz_app.charts.query_key import query_key_terms, query_scores
from viz_app.charts.score_terms import score_terms_heatmaps
from viz_app.specs import recorded
from viz_app.specs.base import Computation, HasInputs, Planned, setting, within

NAME = "attention"
LESSON_CHARTS = ("pattern", "bars", "overview")


@dataclass(frozen=True)
class LayerWork:
    layer: int  # the layer whose score terms are split


SCORE_TERMS = Computation(  # DeBERTa's "Where does this head's score come from?": one pass that keeps the terms
    "attention.score_terms", lambda work: "Splitting the scores",
    cost=lambda inputs, work: score_terms_cost(len(inputs.prepared.masked)),
    compute=lambda inputs, work: score_terms(inputs.loaded.model, inputs.prepared.masked, work.layer), work=LayerWork)


def shown_positions(read, hide_special: bool) -> list[int]:
    """The tokens the charts show: all, or all but [CLS] and [SEP] (`read`: the recorded pass, or the encoding)."""
    return [i for i, special in enumerate(read.special) if not (hide_special and special)]


def default_focus(positions: list[int]) -> int:
    """The token whose attention the page shows first: the first after [CLS]."""
    return 1 if 1 in positions else positions[0]


def strongest_key(result: ForwardResult, layer: int, head: int, focus: int, positions: list[int]) -> int:
    """The token the focus token attends to most in this head (the key the page compares first)."""
    return max(positions, key=lambda position: result.attention[layer, head, focus, position])


@dataclass(frozen=True)
class Settings:
    layer: int = 0
    head: int = 0
    hide_special: bool = False
    focus: int = 1  # the token (query) whose attention is shown as bars
    key: int | None = None  # the key token of the query-key view; None: the one `focus` attends to most
    statistic: str = "entropy"  # one of STATISTICS
    words: bool = False  # the pattern, the bars and the overview word by word (Clark et al. 2019's merge)
    score_terms: bool = False  # DeBERTa's three score terms of the layer (a lesson step draws none)

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """The step's settings, each made valid as the page's pickers would make it."""
        summary = inputs.loaded.summary
        hide_special = bool(setting(state, "hide_special"))
        positions = shown_positions(inputs.prepared.masked, hide_special)
        focus, statistic = setting(state, "focus"), setting(state, "statistic")
        return cls(within(setting(state, "layer"), summary.layers, 0), within(setting(state, "head"), summary.heads, 0),
                   hide_special, focus if focus in positions else default_focus(positions),
                   statistic=statistic if statistic in STATISTICS else "entropy",
                   words=setting(state, "units") == "words")


def computations(settings: Settings) -> Planned:
    """"recorded" (the prediction page's pass) and, when asked for, "score_terms" (the layer's)."""
    planned: Planned = {"recorded": recorded.PREDICTIONS}
    if settings.score_terms:
        planned["score_terms"] = (SCORE_TERMS, LayerWork(settings.layer))
    return planned


def head_statistics(result: ForwardResult) -> HeadStatistics:
    """Per-head statistics [layer, head] of this input's attention (read-only arrays)."""
    stats = statistics_of(result.attention, KeyRoles.from_special(result.tokens, result.special))
    for values in stats.means.values():
        values.flags.writeable = False
    return stats


def query_key(settings: Settings, result: ForwardResult) -> QueryKeyProduct:
    """The focus token's query against the key token's key, term by term, in the chosen head."""
    layer, head = settings.layer, settings.head
    key = settings.key
    if key is None:
        key = strongest_key(result, layer, head, settings.focus, shown_positions(result, settings.hide_special))
    return query_key_product(result.queries[layer, head], result.keys[layer, head], settings.focus, key,
                             result.score_scale, None if result.attention is None else result.attention[layer, head, settings.focus])


def window_caption(config: BertConfig, layer: int, words: bool = False) -> str:
    """One line on layer `layer`'s reach: empty for a global layer of a model without local layers; for a local
    layer (ModernBERT, Warner et al. 2024; sliding windows as in Beltagy et al. 2020) how far it sees and which
    layers see everything."""
    window = config.window(layer)
    if window is None:
        return ""
    every = config.global_attn_every_n_layers
    line = (f"Layer {layer} is local: each token sees only the {window} tokens on each side (grey: out of its reach); "
            f"layers 0, {every}, {2 * every}, … see the whole input.")
    return line + (" The grey band is drawn in word pieces: switch words off to see it." if words else "")


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"pattern", "bars", "query_key", "query_scores", "overview", "stat" and, when computed, "score_terms". In
    words, the pattern, the bars and the overview are word by word (attention to a word summed over its pieces, from
    a word averaged); the query-key view stays with the pieces the model computes. Where the layer is local
    (config.window) the pattern greys the pairs outside its window (in word pieces) and says so in its caption.
    results: "recorded", and "statistics" where they are already at hand (else computed here)."""
    result: ForwardResult = results["recorded"]
    config: BertConfig = inputs.loaded.model.config
    layer, head = settings.layer, settings.head
    words = word_groups(inputs.prepared.masked) if settings.words else None
    attention, tokens, positions, focus = _units(settings, result, words)
    pattern = attention[layer, head]
    terms = query_key(settings, result)
    window = config.window(layer)
    band = None if window is None or words is not None else window_band(len(result.tokens), window).numpy()
    heatmap = pattern_heatmap(pattern, tokens, positions, layer, head, band=band)
    if window is not None:
        heatmap = replace(heatmap, caption=window_caption(config, layer, words is not None))
    statistics = results.get("statistics")
    statistics = head_statistics(result) if statistics is None else statistics
    charts = {
        "pattern": heatmap,
        "bars": attention_bars(pattern[focus], tokens, positions, focus, layer, head),
        "query_key": query_key_terms(terms, list(result.tokens), layer, head),
        "query_scores": query_scores(terms, list(result.tokens), shown_positions(result, settings.hide_special),
                                     layer, head),
        "overview": heads_overview(attention, positions, (layer, head)),
        "stat": statistic_heatmap(statistics[settings.statistic], settings.statistic, STATISTICS[settings.statistic],
                                  (layer, head)),
    }
    if results.get("score_terms") is not None:  # the chosen head's three terms, over the word pieces shown
        charts["score_terms"] = score_terms_heatmaps(results["score_terms"][layer, head],
                                                     shown_positions(result, settings.hide_special))
    return charts


def _units(settings: Settings, result: ForwardResult, words: WordGroups | None):
    """(attention [layer, head, query, key], labels, shown positions, focus) in word pieces or in words."""
    if words is None:
        return result.attention, list(result.tokens), shown_positions(result, settings.hide_special), settings.focus
    special = [all(result.special[p] for p in pieces) for pieces in words.positions]  # [CLS], [SEP]: a word each
    shown = [word for word in range(len(words)) if not (settings.hide_special and special[word])]
    focus = words.word_of(settings.focus)
    return merge_attention(result.attention, words), list(words.labels), shown, focus if focus in shown else shown[0]
