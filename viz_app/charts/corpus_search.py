"""Charts of the Corpus search page: which words the matches are, and how the matches change with the layer."""
from __future__ import annotations

from typing import TYPE_CHECKING

import html

import pandas as pd
import plotly.graph_objects as go

if TYPE_CHECKING:  # the analyses' results, read here, never imported at run time
    from bert.analysis.corpus.corpus_search import Hit

from viz_app.charts.base import HIGHLIGHT_COLOUR, WORD_COLOUR, Chart, layout, legend_on_top

MOST_WORDS = 15  # bars in the words chart


def match_words_chart(words: dict[str, int], query_word: str) -> Chart:
    """How many of the matches are each word, the query's own word in red."""
    ranked = sorted(words.items(), key=lambda item: (-item[1], item[0]))[:MOST_WORDS]
    same = [word == query_word.lower() for word, _ in ranked]
    figure = go.Figure(go.Bar(
        x=[html.escape(word, quote=False) for word, _ in ranked], y=[count for _, count in ranked],
        marker_color=[HIGHLIGHT_COLOUR if s else WORD_COLOUR for s in same],
        hovertemplate="%{x}: %{y} match(es)<extra></extra>",
    ))
    layout(figure, f"Which words the matches are (red: '{query_word}' itself)", height=340,
           yaxis=dict(title="matches", dtick=1), xaxis=dict(tickangle=-45))
    data = pd.DataFrame({"word": [w for w, _ in ranked], "matches": [c for _, c in ranked], "same_as_query": same})
    return Chart(figure, data, "corpus_search_words")


def by_layer_chart(by_layer: dict[int, list[Hit]], names: dict[int, str], query_word: str, across: str = "layer by layer") -> Chart:
    """Per layer (or per head: `names` and `across` say which): the share of the matches that are the query's
    word, and their mean cosine similarity."""
    layers = list(by_layer)
    x = [names[layer] for layer in layers]
    same = [sum(h.word.lower() == query_word.lower() for h in hits) / max(len(hits), 1) for hits in by_layer.values()]
    mean = [sum(h.cosine for h in hits) / max(len(hits), 1) for hits in by_layer.values()]
    figure = go.Figure()
    figure.add_scatter(x=x, y=same, name=f"share that are '{query_word}'", mode="lines+markers", line=dict(color=HIGHLIGHT_COLOUR))
    figure.add_scatter(x=x, y=mean, name="mean cosine similarity", mode="lines+markers", line=dict(color=WORD_COLOUR))
    layout(figure, f"The matches of '{query_word}', {across}", height=380,
           yaxis=dict(range=[0, 1.02], title="share / cosine"), **legend_on_top())
    data = pd.DataFrame({across.split()[0]: x, "share_same_word": same, "mean_cosine": mean})
    heads = not across.startswith("layer")
    return Chart(figure, data, "corpus_search_by_head" if heads else "corpus_search_by_layer",
                 "Red: how many of the matches are the same word as the one you clicked. Blue: how close they are. "
                 + ("A head that passes on the word itself finds the same word; one that gathers other words' meaning "
                    "finds tokens in similar company." if heads else
                    "Near the embeddings a token mostly finds itself; higher up, words used in similar contexts."))
