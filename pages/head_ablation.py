"""Head ablation: remove heads or whole layers and watch the predictions change; rank every head."""
import pandas as pd
import streamlit as st
import torch

from bert.analysis.causal import ablation
from bert.layers import head_label, layer_label
from viz_app.app import analysis_widgets, state, widgets
from viz_app import cache, page_costs
from viz_app.server import heavy
from viz_app.views.head_ablation import head_ablation_view

widgets.page_header(
    "Head ablation",
    "Remove attention heads and see the masked-word predictions change. Zero ablation replaces a head's output "
    "by zeros; mean ablation by its average output over 200 built-in sentences (it keeps the head's usual offset "
    "and removes only what depends on this input). Ablating a layer removes all its heads.",
)
context = widgets.require()
position = analysis_widgets.mask_picker(context, "ablation")
if position is None:
    st.stop()
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
mean_z = None
if mode == "mean":  # the heads' mean output over the built-in sentences, once per model, shared by every visitor
    mean_cost = cache.per_model_cost(context.key, "mean_ablation")
    if not heavy.allowed(context, mean_cost, "ablation_mean"):
        st.stop()
    with heavy.job(context, mean_cost, "Averaging every head's output over the built-in sentences"):
        mean_z = torch.from_numpy(cache.mean_head_outputs(context.key))
loaded, encoding = context.loaded, context.prepared.masked
intact = {p.position: p for p in ablation.predict_ablated(loaded.model, loaded.tokenizer, encoding, top_k=10)}
after = {p.position: p for p in ablation.predict_ablated(loaded.model, loaded.tokenizer, encoding, heads, mode, mean_z, top_k=10)}
table = pd.DataFrame(
    [
        {"rank": i + 1, "intact": f"{a.token} ({a.probability:.1%})", "ablated": f"{b.token} ({b.probability:.1%})"}
        for i, (a, b) in enumerate(zip(intact[position].candidates, after[position].candidates))
    ]
)
st.subheader(f"Top 10 at position {position}, {len(heads)} head(s) ablated")
st.dataframe(table, hide_index=True)

st.subheader("Rank every head")
st.caption(
    f"Each of the {len(all_heads)} heads is ablated alone ({mode}), all in batched forward passes (one row per "
    "head), and the change in log-probability of the intact model's top prediction is measured."
)
cost = page_costs.head_ranking(loaded, len(encoding))
if st.toggle(f"Rank all heads ({cost.describe()})", key="ablation_rank") and heavy.allowed(context, cost, "ablation_rank"):
    with heavy.job(context, cost, "Ablating every head, one per row of a batch"):
        ranking = cache.head_ranking(context.key, context.prepared, position, mode)
    widgets.show_chart(head_ablation_view(ranking)["ranking"], key="ranking")
