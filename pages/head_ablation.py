"""Head ablation: remove heads or whole layers and watch the predictions change; rank every head. The page lays out
the widgets; what it computes and draws is its spec, viz_app/specs/head_ablation.py."""
import pandas as pd
import streamlit as st

from bert.analysis.causal import ablation
from bert.layers import head_label, layer_label
from viz_app.app import analysis_widgets, show, state, widgets
from viz_app import heavy
from viz_app.specs import head_ablation

widgets.page_header(
    "Head ablation",
    "Remove attention heads and see the masked-word predictions change. Zero ablation replaces a head's output "
    "by zeros; mean ablation by its average output over 200 built-in sentences (it keeps the head's usual offset "
    "and removes only what depends on this input). Ablating a layer removes all its heads.",
)
context = widgets.require()
position = analysis_widgets.require_mask(context, "ablation")
summary = context.loaded.summary
mode = st.radio("Ablation", list(ablation.MODES), horizontal=True, **state.kept("ablation_mode", list(ablation.MODES)),
                format_func=lambda m: {"zero": "zero", "mean": "mean (corpus average)"}[m])
all_heads = [(layer, head) for layer in range(summary.layers) for head in range(summary.heads)]
state.clamp_subset("ablation_heads", all_heads)
state.clamp_subset("ablation_layers", list(range(summary.layers)))
columns = st.columns(2)
chosen_heads = columns[0].multiselect("Heads to ablate", all_heads, **state.kept("ablation_heads"),
                                      format_func=lambda lh: head_label(*lh))
chosen_layers = columns[1].multiselect("Whole layers to ablate", list(range(summary.layers)), **state.kept("ablation_layers"),
                                       format_func=layer_label)
heads = sorted(set(chosen_heads) | set(ablation.layer_heads(context.loaded.model, chosen_layers)))
mean = None
if mode == "mean":  # the heads' mean output over the built-in sentences, once per model, shared by every visitor
    mean = heavy.run(context, head_ablation.MEAN, head_ablation.MeanWork(), key="ablation_mean")
    if mean is None:
        st.stop()
show.subheader("Top {} at position {}, {} head(s) ablated", head_ablation.SHOWN, position, len(heads))
table = heavy.run(context, head_ablation.BEFORE_AFTER, head_ablation.BeforeAfterWork(position, tuple(heads), mode))
if table is None:
    st.stop()
st.dataframe(pd.DataFrame(table), hide_index=True)

st.subheader("Rank every head")
show.caption("Each of the {} heads is ablated alone ({}), all in batched forward passes (one row per head), and the "
             "change in log-probability of the intact model's top prediction is measured.", len(all_heads), mode)
work = head_ablation.RankingWork(position, mode, mean_priced=False)  # "mean": the page ran MEAN above
cost = head_ablation.RANKING.cost(context, work)
if st.toggle(f"Rank all heads ({cost.describe()})", **state.kept("ablation_rank")):
    ranking = heavy.run(context, head_ablation.RANKING, work, key="ablation_rank")
    if ranking is not None:
        settings = head_ablation.Settings(position, mode, tuple(heads), rank=True)
        widgets.show_chart(head_ablation.view(settings, context, {"ranking": ranking})["ranking"], key="ranking")
