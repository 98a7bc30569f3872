"""Head statistics over a corpus (Clark et al. 2019), with the paper's findings beside ours for BERT-base. The page
lays out the widgets; what it computes and draws is its spec, viz_app/specs/head_statistics.py."""
import pandas as pd
import streamlit as st

from bert.analysis.attention.attention_stats import STATISTICS
from bert.analysis.attention.head_stats import CLARK_2019, CLARK_2019_SOURCE, clark_2019_reference, is_bert_base, top_heads
from bert.errors import BertError
from viz_app.app import analysis_widgets, show, state, widgets
from viz_app.charts.published import published_table
from viz_app import heavy
from viz_app.specs import head_statistics
from viz_app.app.text import joined, markdown

widgets.page_header(
    "Head statistics over a corpus",
    "For every head, the average share of attention to [CLS], [SEP], punctuation (mostly periods and commas), the "
    "previous and next token and itself, and the attention entropy, averaged over all tokens of a sentence set, as "
    "in Clark et al. (2019), who fed BERT pairs of segments: consecutive sentences are paired here the same way.",
)
context = widgets.require(needs_input=False)
picked = analysis_widgets.sentence_source("stats")
pairs = st.toggle("Pair consecutive sentences as A and B", **state.kept("stats_pairs"))
if picked is None:
    st.stop()
sentences, description = picked
work = head_statistics.StatisticsWork(tuple(sentences), pairs)
try:
    statistics = heavy.run(context, head_statistics.STATISTICS_OVER_SENTENCES, work, key="head_statistics")
except BertError as error:  # e.g. a pair longer than the model's positions
    show.warning("The model cannot read these sentences: {}. Pick fewer or shorter sentences, or another model.", error)
    st.stop()
if statistics is None:
    st.stop()
names = list(STATISTICS)
statistic = st.segmented_control("Statistic", names, required=True, **state.kept("stats_statistic", names))
settings = head_statistics.Settings(work, statistic)
widgets.show_chart(head_statistics.view(settings, context, {"statistics": statistics})["by_layer"], key="stats_by_layer")
show.caption("{}. Over {}.", STATISTICS[statistic], description)
published = clark_2019_reference().get(statistic)
if published:
    with st.expander(f"BERT-base's {statistic} in Clark et al. 2019 (grey on the chart when BERT-base is loaded)"):
        st.caption("Read off the paper's Figure 2 (about ±0.02), BERT-base on Wikipedia segment pairs. Their punctuation "
                   "is periods and commas only; a blank is a value the figure hides.")
        st.dataframe(published_table(published), hide_index=True)
if is_bert_base(context.loaded.model):
    show.info("This model has BERT-base's shape, so the published findings are drawn beside ours (shaded). Source: "
              "{}.\n\n{}", CLARK_2019_SOURCE, joined("\n", (markdown("- {}", f.claim) for f in CLARK_2019)))
else:
    show.caption("Load bert-base-uncased to see {}'s findings drawn beside these numbers.", CLARK_2019_SOURCE)
left, right = st.columns(2)
for column, name in ((left, "previous"), (right, "next")):
    show.markdown("**Strongest {}-token heads**", name, on=column)
    column.dataframe(pd.DataFrame(top_heads(statistics, name, 5), columns=["layer (from 0)", "head", f"share to {name}"]),
                     hide_index=True, column_config={f"share to {name}": st.column_config.NumberColumn(format="percent")})
