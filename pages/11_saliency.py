"""Saliency for a masked prediction, split into token, position and segment embeddings."""
import streamlit as st

from bert.analysis.attribution.saliency import METHODS
from viz_app import analysis_widgets, cache, state, widgets
from viz_app.charts.saliency import saliency_chart
from viz_app.views.logit_lens import lens_at

widgets.page_header(
    "Saliency by embedding part",
    "Which input tokens, and which part of their input vector (token identity, position, segment), push the "
    "prediction at a [MASK]? Attributions of log p(word) to each token's token, position and segment embeddings.",
)
context = widgets.require()
position = analysis_widgets.mask_picker(context, "saliency")
if position is None:
    st.stop()
lens = lens_at(cache.logit_lens(context.key, context.prepared, 5), position)
candidates = lens.layers[-1].top
target = st.selectbox("Explain the probability of", candidates, key="saliency_target",
                      format_func=lambda c: f"{c.token} ({c.probability:.1%})")
columns = st.columns(2)
state.clamp("saliency_method", list(METHODS))
method = columns[0].radio("Method", METHODS, horizontal=True, key="saliency_method", persist_state="session", format_func=lambda m: m.replace("_", " "))
steps = columns[1].slider("Integration steps", 8, 128, value=32, step=8, key="saliency_steps", bind="query-params",
                          persist_state="session", disabled=method != "integrated_gradients")
result = cache.saliency(context.key, context.prepared, method, position, target.token_id, steps)
widgets.show_chart(saliency_chart(result), key="saliency")
if method == "gradient_x_input":
    st.caption(
        "Gradient × input, per part. The embedding LayerNorm ignores the scale of token + position + segment, so the "
        "three parts of each token add up to about zero: read which part pushes which way, not a token's total."
    )
else:
    gap = result.completeness_gap
    difference = result.score - result.baseline_score
    st.caption(
        f"Integrated gradients from a baseline ([PAD] for word tokens, the mean position embedding everywhere, segment A "
        f"everywhere), "
        f"{steps} steps. Completeness: the attributions add up to {result.total:.3f}; log p(x) - log p(baseline) = "
        f"{difference:.3f} (gap {gap:+.3f}). With one sentence, segment attributions are 0: every token is in segment "
        "A, as in the baseline."
    )
    if abs(gap) > 0.1 * max(abs(difference), 1e-6):
        st.warning("The integral is not yet accurate at this many steps (the path crosses a sharp change): raise the steps.")
