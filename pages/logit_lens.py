"""Logit lens: what each layer would predict at a [MASK] if the model stopped there."""
import pandas as pd
import streamlit as st

from viz_app.app import analysis_widgets, widgets
from viz_app import cache
from viz_app.app.text import escape_markdown
from viz_app.views.logit_lens import lens_at, logit_lens_view

widgets.page_header(
    "Logit lens",
    "The LM head is trained on the last layer only. Reading it at every layer's residual stream (after the "
    "embeddings, then after each layer) shows when the final prediction emerges: its rank and probability by "
    "layer, and each layer's own top 5.",
)
context = widgets.require()
position = analysis_widgets.mask_picker(context, "lens")
if position is None:
    st.stop()
lenses = cache.logit_lens(context.key, context.prepared, 5)
widgets.show_chart(logit_lens_view(lenses, position, context.prepared)["lens"], key="lens")
lens = lens_at(lenses, position)
table = pd.DataFrame(
    [
        {"layer": layer.name, "rank of final": layer.final_rank, "p(final)": layer.final_probability,
         **{f"#{i + 1}": f"{c.token} ({c.probability:.1%})" for i, c in enumerate(layer.top)}}
        for layer in lens.layers
    ]
)
st.dataframe(table, hide_index=True, column_config={"p(final)": st.column_config.NumberColumn(format="percent")})
st.caption(f"Final prediction: **{escape_markdown(lens.final.token)}** ({lens.final.probability:.1%}).")
