"""Saliency for a masked prediction: which input tokens it depends on (four methods, through Captum), optionally
against a second word, and a deletion curve that tests the map."""
import streamlit as st

from bert.analysis.attribution.saliency import METHODS
from bert.errors import InvalidInputError
from viz_app.app import analysis_widgets, state, widgets
from viz_app import cache, page_costs
from viz_app.server import heavy
from viz_app.specs.logit_lens import lens_at
from viz_app.views.saliency import METHOD_NAMES, integral_is_rough, method_note, saliency_view

widgets.page_header(
    "Saliency",
    "Which input tokens push the prediction at a [MASK]? Gradient methods also split each token into its token, "
    "position and segment embeddings; perturbation methods mask tokens and watch the prediction. Pick a second "
    "word to ask why the model prefers one word to the other, and check below whether the map can be trusted. "
    "Gradient × input is one pass; the other methods run the model once per step, window or order.",
)
context = widgets.require()
position = analysis_widgets.mask_picker(context, "saliency")
if position is None:
    st.stop()
lens = lens_at(cache.logit_lens(context.key, context.prepared, 5), position)
candidates = lens.layers[-1].top
words = st.columns(2)
target = words[0].selectbox("Explain the prediction of", candidates, key="saliency_target",
                            format_func=lambda c: f"{c.token} ({c.probability:.1%})")
foils = [None] + [c for c in candidates if c.token_id != target.token_id]
foil = words[1].selectbox("…rather than (optional)", foils, key="saliency_foil",
                          format_func=lambda c: "none: explain log p alone" if c is None else f"{c.token} ({c.probability:.1%})")
method = st.radio("Method", METHODS, horizontal=True, **state.kept("saliency_method", list(METHODS)),
                  format_func=METHOD_NAMES.get)
settings = st.columns(2)
steps = settings[0].slider("Integration steps", 8, 128, step=8, **state.kept("saliency_steps", range(8, 129, 8)),
                           disabled=method != "integrated_gradients")
samples = settings[1].slider("Shapley orders (samples)", 5, 100, step=5, **state.kept("saliency_samples", range(5, 101, 5)),
                             disabled=method != "shapley_value_sampling")
explained = (context.key, context.prepared, method, position, target.token_id, steps, "mlm",
             None if foil is None else foil.token_id, samples)
cost = page_costs.saliency(context.loaded, context.prepared.masked, method, steps, samples)
if not heavy.allowed(context, cost, "saliency"):
    st.stop()
with heavy.job(context, cost, "Computing attributions"):
    result = cache.saliency(*explained)
words = widgets.units_picker(context, "Words: a word's attribution is the sum of its pieces' attributions (the "
                             "totals stay the same). The deletion curve below still removes word pieces.")
charts = saliency_view(result, None, words)
widgets.show_chart(charts["attributions"], key="saliency")
st.caption(method_note(result))
if integral_is_rough(result):
    st.warning("The integral is not yet accurate at this many steps (the path crosses a sharp change): raise the steps.")
st.subheader("Can this map be trusted?")
deletion = page_costs.deletion(context.loaded, context.prepared.masked)
if st.toggle(f"Draw the deletion curve: mask the tokens in the map's order and in 10 random orders "
             f"({deletion.describe()})", **state.kept("saliency_deletion")):
    if heavy.allowed(context, deletion, "deletion"):
        try:
            with heavy.job(context, deletion, "Masking tokens in the map's order and at random"):
                curve = cache.deletion_curve(*explained)
        except InvalidInputError as problem:  # every token is [CLS], [SEP] or [MASK]: nothing to remove
            st.info(f"No deletion curve: {problem}. Add a word to the sentence to test the map.")
        else:
            widgets.show_chart(saliency_view(result, curve)["deletion"], key="deletion")
