"""Logit lens: what each layer would predict at a [MASK] if the model stopped there. The page lays out the widgets;
what it computes and draws is its spec, viz_app/specs/logit_lens.py."""
import streamlit as st

from viz_app.app import analysis_widgets, show, widgets
from viz_app import heavy
from viz_app.specs import logit_lens as spec

widgets.page_header(
    "Logit lens",
    "The LM head is trained on the last layer only. Reading it at every layer's residual stream (after the "
    "embeddings, then after each layer) shows when the final prediction emerges: its rank and probability by "
    "layer, and each layer's own top 5.",
)
context = widgets.require()
position = analysis_widgets.require_mask(context, "lens")
settings = spec.Settings(position)
results = {name: heavy.run(context, computation, work) for name, (computation, work) in spec.computations(settings).items()}
if any(result is None for result in results.values()):
    st.stop()  # over the budget: the page has said why
for name, chart in spec.view(settings, context, results).items():
    widgets.show_chart(chart, key=name)
lens = spec.lens_at(results["lens"], position)
st.dataframe(spec.layer_table(lens), hide_index=True,
             column_config={"p(final)": st.column_config.NumberColumn(format="percent")})
show.caption("Final prediction: **{}** ({:.1%}).", lens.final.token, lens.final.probability)
