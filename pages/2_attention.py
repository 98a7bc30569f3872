"""Attention: where each token looks, head by head."""
import pandas as pd
import streamlit as st

from bert.analysis.attention.attention_stats import STATISTICS
from bert.analysis.attention.query_key import query_key_product
from viz_app import widgets
from viz_app.charts.attention import attention_bars, heads_overview, pattern_heatmap, statistic_heatmap
from viz_app.charts.query_key import query_key_terms, query_scores

widgets.page_header(
    "Attention",
    "Every layer has several heads; each head lets every token (a query, one row) take a weighted average of "
    "all tokens (the keys). A row of a pattern sums to 1. Pick a head to see its pattern, or scan all heads below.",
)
context = widgets.require()
result = context.forward()
summary = context.loaded.summary
tokens = result.tokens

controls = st.columns([1, 1, 2, 1.4])
with controls[0]:
    layer = st.selectbox("Layer", range(summary.layers), key="layer", bind="query-params", persist_state="session")
with controls[1]:
    head = st.selectbox("Head", range(summary.heads), key="head", bind="query-params", persist_state="session")
with controls[3]:
    hide_special = st.toggle(
        "Hide [CLS] and [SEP]",
        key="hide_special",
        persist_state="session",
        help="Many heads park most of their attention on [CLS] or [SEP]; hiding them shows the rest. "
        "Rows then no longer sum to 1.",
    )
positions = [i for i, special in enumerate(result.special) if not (hide_special and special)]
with controls[2]:
    focus = widgets.select_int(
        "Attention from token",
        "focus",
        positions,
        format_func=lambda i: f"{i}: {tokens[i]}",
        default=1 if 1 in positions else None,
    )

pattern = result.attention[layer, head]
if len(positions) > 64:
    st.caption("A long input: drag a box on the heatmap to zoom into some tokens (double-click to zoom out).")
left, right = st.columns([3, 2])
with left:
    widgets.show_chart(pattern_heatmap(pattern, tokens, positions, layer, head), key="pattern")
with right:
    widgets.show_chart(attention_bars(pattern[focus], tokens, positions, focus, layer, head), key="bars")
widgets.download_view(f"Attention, layer {layer}, head {head}", f"attention_L{layer}_H{head}", ["pattern", "bars"],
                      label="Download this head's view")

st.subheader("Why it looks there: query against key")
st.caption(
    "The head's score for a pair of tokens is the dot product of the looking token's query vector q and the "
    "looked-at token's key vector k: multiply them dimension by dimension and add up. Divided by the square root "
    "of the head's size, the scores of one row go through softmax to give the attention above."
)
strongest = max(positions, key=lambda p: pattern[focus, p])
with st.columns([1, 2])[0]:
    key = widgets.select_int(
        "Key token (looked at)", "neuron_key", positions, format_func=lambda i: f"{i}: {tokens[i]}", default=strongest
    )
terms = query_key_product(result.queries[layer, head], result.keys[layer, head], focus, key)
sums = st.columns(3)
sums[0].metric("q·k: the sum of the products (before scaling)", f"{terms.dot:.3f}")
sums[1].metric(f"Score before softmax: q·k / √{terms.products.size}", f"{terms.score:.3f}")
sums[2].metric("Attention after softmax", f"{terms.weight:.1%}")
widgets.show_chart(query_key_terms(terms, tokens, layer, head), key="query_key")
widgets.show_chart(query_scores(terms, tokens, positions, layer, head), key="query_scores")

st.subheader("All heads at a glance")
st.caption(
    "Each small square is one head's pattern (rows: the tokens looking, columns: the tokens looked at), layers "
    "top to bottom. Stripes are heads that attend to one token (often [CLS], [SEP] or '.'), diagonals are heads "
    "that look at a neighbour. The selected head is outlined in red."
)
widgets.show_chart(heads_overview(result.attention, positions, (layer, head)), key="overview")

st.subheader("Head statistics")
stats = context.head_statistics()
names = list(STATISTICS)
statistic = st.segmented_control("Statistic", names, default="entropy", key="statistic", bind="query-params", persist_state="session",
                                 required=True)
widgets.show_chart(statistic_heatmap(stats[statistic], statistic, STATISTICS[statistic], (layer, head)), key="stat")
widgets.download_view("Attention, all heads", "attention_all_heads", ["overview", "stat"], label="Download the all-heads view")
table = pd.DataFrame(stats.rows())
st.dataframe(
    table,
    hide_index=True,
    height=320,
    column_config={
        "layer": st.column_config.NumberColumn(width="small"),
        "head": st.column_config.NumberColumn(width="small"),
        "entropy": st.column_config.NumberColumn(format="%.2f bits", help=STATISTICS["entropy"]),
        **{
            name: st.column_config.ProgressColumn(help=STATISTICS[name], format="percent", min_value=0, max_value=1)
            for name in names
            if name != "entropy"
        },
    },
)
st.caption(
    f"One row per head; click a column to sort. Averages over the {len(tokens)} tokens of this input "
    "(previous/next over the tokens that have one). The table's toolbar downloads it as CSV."
)
