"""The attention page's view: one head's pattern, one token's attention, query against key, every head at a
glance and the per-head statistics."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from bert.analysis.attention.attention_stats import STATISTICS, HeadStatistics, KeyRoles
from bert.analysis.attention.attention_stats import head_statistics as statistics_of
from bert.analysis.attention.query_key import QueryKeyProduct, query_key_product
from bert.analysis.attention.score_terms import ScoreTerms
from bert.analysis.attention.words import WordGroups, merge_attention
from bert.attention import window_band
from bert.config import BertConfig
from viz_app.charts.attention import attention_bars, heads_overview, pattern_heatmap, statistic_heatmap
from viz_app.charts.base import Chart
from viz_app.charts.query_key import query_key_terms, query_scores
from viz_app.charts.score_terms import score_terms_heatmaps
from viz_app.app.forward import ForwardResult
from viz_app.app.models import ModelSummary
from viz_app.views import setting, within


def shown_positions(result: ForwardResult, hide_special: bool) -> list[int]:
    """The tokens the charts show: all, or all but [CLS] and [SEP]."""
    return [i for i, special in enumerate(result.special) if not (hide_special and special)]


def default_focus(positions: list[int]) -> int:
    """The token whose attention the page shows first: the first after [CLS]."""
    return 1 if 1 in positions else positions[0]


def strongest_key(result: ForwardResult, layer: int, head: int, focus: int, positions: list[int]) -> int:
    """The token the focus token attends to most in this head (the key the page compares first)."""
    return max(positions, key=lambda position: result.attention[layer, head, focus, position])


@dataclass(frozen=True)
class AttentionSettings:
    layer: int = 0
    head: int = 0
    hide_special: bool = False
    focus: int = 1  # the token (query) whose attention is shown as bars
    key: int | None = None  # the key token of the query-key view; None: the one `focus` attends to most
    statistic: str = "entropy"  # one of STATISTICS

    @classmethod
    def from_state(cls, state: Mapping[str, Any], summary: ModelSummary, result: ForwardResult) -> AttentionSettings:
        """The step's settings, each made valid as the page's pickers would make it."""
        hide_special = bool(setting(state, "hide_special"))
        positions = shown_positions(result, hide_special)
        focus = setting(state, "focus")
        statistic = setting(state, "statistic")
        return cls(within(setting(state, "layer"), summary.layers, 0), within(setting(state, "head"), summary.heads, 0),
                   hide_special, focus if focus in positions else default_focus(positions),
                   statistic=statistic if statistic in STATISTICS else "entropy")


def head_statistics(result: ForwardResult) -> HeadStatistics:
    """Per-head statistics [layer, head] of this input's attention (read-only arrays)."""
    stats = statistics_of(result.attention, KeyRoles.from_special(result.tokens, result.special))
    for values in stats.means.values():
        values.flags.writeable = False
    return stats


def query_key(settings: AttentionSettings, result: ForwardResult) -> QueryKeyProduct:
    """The focus token's query against the key token's key, term by term, in the chosen head."""
    layer, head = settings.layer, settings.head
    key = settings.key
    if key is None:
        key = strongest_key(result, layer, head, settings.focus, shown_positions(result, settings.hide_special))
    return query_key_product(result.queries[layer, head], result.keys[layer, head], settings.focus, key,
                             result.score_scale, None if result.attention is None else result.attention[layer, head, settings.focus])


def score_terms_chart(settings: AttentionSettings, terms: Mapping[tuple[int, int], ScoreTerms], result: ForwardResult) -> Chart:
    """DeBERTa's section: the chosen head's three score terms (bert/analysis/attention/score_terms.py) side by side,
    over the word pieces shown (without [CLS] and [SEP] when they are hidden)."""
    return score_terms_heatmaps(terms[settings.layer, settings.head], shown_positions(result, settings.hide_special))


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


def attention_view(settings: AttentionSettings, result: ForwardResult, statistics: HeadStatistics | None = None,
                   words: WordGroups | None = None, config: BertConfig | None = None) -> dict[str, Chart]:
    """"pattern", "bars", "query_key", "query_scores", "overview", and "stat" when `statistics` are given. With
    `words`, the pattern, the bars and the overview are word by word (Clark et al. 2019's merge: attention to a word
    summed over its pieces, from a word averaged); the query-key view stays with the pieces the model computes.
    config: the model's; where the layer is local (config.window) the pattern greys the pairs outside its window
    (in word pieces) and says so in its caption."""
    layer, head = settings.layer, settings.head
    attention, tokens, positions, focus = _units(settings, result, words)
    pattern = attention[layer, head]
    terms = query_key(settings, result)
    window = None if config is None else config.window(layer)
    band = None if window is None or words is not None else window_band(len(result.tokens), window).numpy()
    heatmap = pattern_heatmap(pattern, tokens, positions, layer, head, band=band)
    if window is not None:
        heatmap = replace(heatmap, caption=window_caption(config, layer, words is not None))
    charts = {
        "pattern": heatmap,
        "bars": attention_bars(pattern[focus], tokens, positions, focus, layer, head),
        "query_key": query_key_terms(terms, list(result.tokens), layer, head),
        "query_scores": query_scores(terms, list(result.tokens), shown_positions(result, settings.hide_special),
                                     layer, head),
        "overview": heads_overview(attention, positions, (layer, head)),
    }
    if statistics is not None:
        charts["stat"] = statistic_heatmap(statistics[settings.statistic], settings.statistic,
                                           STATISTICS[settings.statistic], (layer, head))
    return charts


def _units(settings: AttentionSettings, result: ForwardResult, words: WordGroups | None):
    """(attention [layer, head, query, key], labels, shown positions, focus) in word pieces or in words."""
    if words is None:
        return result.attention, list(result.tokens), shown_positions(result, settings.hide_special), settings.focus
    special = [all(result.special[p] for p in pieces) for pieces in words.positions]  # [CLS], [SEP]: a word each
    shown = [word for word in range(len(words)) if not (settings.hide_special and special[word])]
    focus = words.word_of(settings.focus)
    return merge_attention(result.attention, words), list(words.labels), shown, focus if focus in shown else shown[0]
