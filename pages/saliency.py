"""Saliency for a masked prediction: which input tokens it depends on (four methods, through Captum), optionally
against a second word, and a deletion curve that tests the map. The page lays out the widgets; what it computes
and draws is its spec, viz_app/specs/saliency.py."""
import streamlit as st

from bert.analysis.attribution.saliency import METHODS
from bert.errors import InvalidInputError
from viz_app.app import analysis_widgets, show, state, widgets
from viz_app import heavy
from viz_app.specs import saliency
from viz_app.specs import logit_lens
from viz_app.specs.logit_lens import lens_at

widgets.page_header(
    "Saliency",
    "Which input tokens push the prediction at a [MASK]? Gradient methods also split each token into its token, "
    "position and segment embeddings; perturbation methods mask tokens and watch the prediction. Pick a second "
    "word to ask why the model prefers one word to the other, and check below whether the map can be trusted. "
    "Gradient × input is one pass; the other methods run the model once per step, window or order.",
)
context = widgets.require()
position = analysis_widgets.require_mask(context, "saliency")
lens = heavy.run(context, logit_lens.LENS, logit_lens.LensWork(logit_lens.TOP))  # the candidates to explain
if lens is None:
    st.stop()
lens = lens_at(lens, position)
candidates = lens.layers[-1].top
words = st.columns(2)
target = words[0].selectbox("Explain the prediction of", candidates, **state.kept("saliency_target", candidates),
                            format_func=lambda c: f"{c.token} ({c.probability:.1%})")
foils = [None] + [c for c in candidates if c.token_id != target.token_id]
foil = words[1].selectbox("…rather than (optional)", foils, **state.kept("saliency_foil", foils),
                          format_func=lambda c: "none: explain log p alone" if c is None else f"{c.token} ({c.probability:.1%})")
method = st.radio("Method", METHODS, horizontal=True, **state.kept("saliency_method", list(METHODS)),
                  format_func=saliency.METHOD_NAMES.get)
sliders = st.columns(2)
steps = sliders[0].slider("Integration steps", saliency.STEPS[0], saliency.STEPS[-1], step=saliency.STEPS.step,
                          **state.kept("saliency_steps", saliency.STEPS), disabled=method != "integrated_gradients")
samples = sliders[1].slider("Shapley orders (samples)", saliency.SAMPLES[0], saliency.SAMPLES[-1],
                            step=saliency.SAMPLES.step, **state.kept("saliency_samples", saliency.SAMPLES),
                            disabled=method != "shapley_value_sampling")
explained = saliency.Explained(method, position, target.token_id, None if foil is None else foil.token_id, steps, samples)
result = heavy.run(context, saliency.ATTRIBUTIONS, explained)
if result is None:
    st.stop()
words = widgets.units_picker(context, "Words: a word's attribution is the sum of its pieces' attributions (the "
                             "totals stay the same). The deletion curve below still removes word pieces.")
settings = saliency.Settings(explained, words=words is not None)
widgets.show_chart(saliency.view(settings, context, {"attributions": result})["attributions"], key="saliency")
show.caption("{}", saliency.method_note(result))
if saliency.integral_is_rough(result):
    st.warning("The integral is not yet accurate at this many steps (the path crosses a sharp change): raise the steps.")
st.subheader("Can this map be trusted?")
deletion = saliency.deletion_only_cost(context)
if st.toggle(f"Draw the deletion curve: mask the tokens in the map's order and in {saliency.RANDOM_ORDERS} random "
             f"orders ({deletion.describe()})", **state.kept("saliency_deletion")):
    try:
        curve = heavy.run(context, saliency.DELETION, explained)
    except InvalidInputError as problem:  # every token is [CLS], [SEP] or [MASK]: nothing to remove
        show.info("No deletion curve: {}. Add a word to the sentence to test the map.", problem)
    else:
        if curve is not None:
            widgets.show_chart(saliency.view(settings, context, {"deletion": curve})["deletion"], key="deletion")
