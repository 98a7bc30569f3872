"""Attention: where each token looks, head by head. The page lays out the widgets; what it computes and draws is
its spec, viz_app/specs/attention.py."""
import streamlit as st

from bert.analysis.attention.attention_stats import STATISTICS
from viz_app import cache
from viz_app import heavy
from viz_app.app import show, state, widgets
from viz_app.specs import attention as spec

widgets.page_header(
    "Attention",
    "Every layer has several heads; each head lets every token (a query, one row) take a weighted average of "
    "all tokens (the keys). A row of a pattern sums to 1. Pick a head to see its pattern, or scan all heads below.",
)
TERMS_NOTE = (
    "DeBERTa (He et al. 2021, *DeBERTa: Decoding-enhanced BERT with Disentangled Attention*) adds no position to the "
    "words at its input. Instead a head's score for a pair of tokens is the sum of three terms: content → content "
    "(the looking token's query against the looked-at token's key, BERT's whole score), content → position (the "
    "looking token's query against a key made from how far apart the two tokens are) and position → content (a "
    "query made from that distance against the looked-at token's key). Distances are relative (how many tokens "
    "apart, and on which side) and bucketed: exact for near tokens (up to 127 apart in deberta-v3-base), coarser "
    "farther away. The three panels "
    "add up to the score each pair has before the softmax; the share in each title says how much of this head's "
    "score comes from that term. The panels stay in word pieces, which is what the model computes."
)
WORDS_NOTE = ("Words: each word's pieces merged as Clark et al. (2019) did. Attention to a word is the sum of the "
              "attention to its pieces, attention from a word the mean of its pieces' rows, so a row still sums to 1. "
              "The query-key section below stays with the pieces, which is what the model computes.")
context = widgets.require()
relative = context.loaded.model.config.relative_attention  # DeBERTa: the scores split into three terms
widgets.contents({"query-key": "Query against key", **({"score-terms": "Score terms"} if relative else {}),
                  "all-heads": "All heads at a glance", "head-statistics": "Head statistics"})
result = heavy.run(context, *spec.computations(spec.Settings())["recorded"])  # the prediction page's pass
if result is None:
    st.stop()  # over the budget: the page has said why
summary = context.loaded.summary
tokens = result.tokens

controls = st.columns([1, 1, 2, 1.4])
with controls[0]:
    layer = st.selectbox("Layer", range(summary.layers), **state.kept("layer", range(summary.layers)))
with controls[1]:
    head = st.selectbox("Head", range(summary.heads), **state.kept("head", range(summary.heads)))
with controls[3]:
    hide_special = st.toggle(
        "Hide [CLS] and [SEP]",
        **state.kept("hide_special"),
        help="Many heads park most of their attention on [CLS] or [SEP]; hiding them shows the rest. "
        "Rows then no longer sum to 1.",
    )
positions = spec.shown_positions(result, hide_special)
with controls[2]:
    focus = widgets.select_int(
        "Attention from token", "focus", positions, format_func=lambda i: f"{i}: {tokens[i]}",
        default=spec.default_focus(positions),
    )
if len(positions) > 64:
    st.caption("A long input: drag a box on the heatmap to zoom into some tokens (double-click to zoom out).")
units = st.container()
left, right = st.columns([3, 2])
head_download = st.container()  # the charts of this section are drawn once every setting below is read

st.subheader("Why it looks there: query against key", anchor="query-key")
st.caption(
    "The head's score for a pair of tokens is the dot product of the looking token's query vector q and the "
    "looked-at token's key vector k: multiply them dimension by dimension and add up. Divided by the square root "
    "of the head's size, the scores of one row go through softmax to give the attention above."
)
with st.columns([1, 2])[0]:
    key = widgets.select_int(
        "Key token (looked at)", "neuron_key", positions, format_func=lambda i: f"{i}: {tokens[i]}",
        default=spec.strongest_key(result, layer, head, focus, positions),
    )
if relative:
    st.caption(
        "In DeBERTa q·k is one of three terms of the score (content to content); the other two come from how far "
        "apart the tokens are, and each term is divided by √(3 × the head's size). The attention shown is the "
        "model's, all three terms together: the next section splits the score."
    )
sums = st.columns(3)
query_charts = st.container()
if relative:
    st.subheader("Where does this head's score come from?", anchor="score-terms")
    show.caption("{}", TERMS_NOTE)
    terms_section = st.container()  # filled last: it runs the model once more, within the visitor's budget

st.subheader("All heads at a glance", anchor="all-heads")
st.caption(
    "Each small square is one head's pattern (rows: the tokens looking, columns: the tokens looked at), layers "
    "top to bottom. Stripes are heads that attend to one token (often [CLS], [SEP] or '.'), diagonals are heads "
    "that look at a neighbour. The selected head is outlined in red."
)
overview = st.container()

st.subheader("Head statistics", anchor="head-statistics")
stats = cache.head_statistics(context.key, context.prepared, result)
names = list(STATISTICS)
statistic = st.segmented_control("Statistic", names, required=True, **state.kept("statistic", names))

with units:
    words = widgets.units_picker(context, WORDS_NOTE)
settings = spec.Settings(layer, head, hide_special, focus, key, statistic, words is not None, score_terms=relative)
charts = cache.attention_charts(context.key, context.prepared, settings, result, stats)
with left:
    widgets.show_chart(charts["pattern"], key="pattern")
with right:
    widgets.show_chart(charts["bars"], key="bars")
with head_download:
    widgets.download_view(f"Attention, layer {layer}, head {head}", f"attention_L{layer}_H{head}", ["pattern", "bars"],
                          label="Download this head's view")
terms = spec.query_key(settings, result)
sums[0].metric("q·k: the sum of the products (before scaling)", f"{terms.dot:.3f}")
sums[1].metric(f"{'Content → content score' if relative else 'Score before softmax'}: q·k / {terms.divisor}", f"{terms.score:.3f}")
sums[2].metric("Attention after softmax" + (" (all three terms)" if relative else ""), f"{terms.weight:.1%}")
with query_charts:
    widgets.show_chart(charts["query_key"], key="query_key")
    widgets.show_chart(charts["query_scores"], key="query_scores")
with overview:
    widgets.show_chart(charts["overview"], key="overview")
widgets.show_chart(charts["stat"], key="stat")
widgets.download_view("Attention, all heads", "attention_all_heads", ["overview", "stat"], label="Download the all-heads view")
st.dataframe(
    cache.head_statistics_table(context.key, context.prepared, stats),
    hide_index=True,
    height=320,
    width="content",
    column_config={
        # pixel widths: every column fits the main column at 1366 px wide (sidebar open), none cut at the right edge
        "layer": st.column_config.NumberColumn(width=55),
        "head": st.column_config.NumberColumn(width=55),
        "entropy": st.column_config.NumberColumn(format="%.2f bits", help=STATISTICS["entropy"], width=85),
        **{
            name: st.column_config.ProgressColumn(help=STATISTICS[name], format="percent", min_value=0, max_value=1,
                                                  width=105)
            for name in names
            if name != "entropy"
        },
    },
)
show.caption("One row per head; click a column to sort. Averages over the {} tokens of this input (previous/next over "
             "the tokens that have one). The table's toolbar downloads it as CSV.", len(tokens))
if relative:
    with terms_section:
        computation, work = spec.computations(settings)["score_terms"]
        split = heavy.run(context, computation, work, key="score_terms")
        if split is not None:
            widgets.show_chart(spec.view(settings, context, {"recorded": result, "statistics": stats,
                                                             "score_terms": split})["score_terms"], key="score_terms")
            show.caption("This section runs the model once more: {}.", computation.cost(context, work).describe())
