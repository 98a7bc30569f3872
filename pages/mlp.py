"""MLP activations: which neurons fire on which tokens. The page lays out the widgets; what it computes and draws
is its spec, viz_app/specs/mlp.py."""
import streamlit as st

from viz_app.app import state, widgets
from viz_app import heavy
from viz_app.specs import mlp as spec

widgets.page_header(
    "MLP activations",
    "After attention, every layer sends each token on its own through a two-layer MLP: hidden → intermediate "
    "neurons → GELU → hidden. These are the neuron activations after GELU (mostly ≥ 0; GELU dips to −0.17).",
)
context = widgets.require()
summary = context.loaded.summary
tokens = context.prepared.masked.tokens

controls = st.columns([1, 2, 2])
with controls[0]:
    layer = st.selectbox("Layer", range(summary.layers), **state.kept("mlp_layer", range(summary.layers)))
with controls[1]:
    offered = spec.shown_range(summary.intermediate)
    shown = st.slider(
        "Neurons in the heatmap", offered[0], offered[-1], **state.kept("neurons_shown", offered),
        help=f"The layer has {summary.intermediate} neurons; the heatmap shows those that fire hardest on this input.",
    )
with controls[2]:
    position = widgets.select_int(
        "Token", "mlp_token", list(range(len(tokens))), format_func=lambda i: f"{i}: {tokens[i]}"
    )

units = st.container()
heatmap = st.container()
left, right = st.columns(2)
results = {name: heavy.run(context, computation, work)
           for name, (computation, work) in spec.computations(spec.Settings()).items()}
if any(result is None for result in results.values()):
    st.stop()  # over the budget: the page has said why
with right:
    neuron = st.number_input(
        "Neuron", min_value=0, max_value=summary.intermediate - 1, step=1,
        **state.kept("neuron", range(summary.intermediate),  # none chosen: the token's strongest
                     spec.strongest_neuron(results["recorded"], layer, position)),
        help="Type a neuron number from the heatmap or the bars (n123 → 123).",
    )
with units:
    words = widgets.units_picker(context, "Words: a word's activation is the mean of its pieces' activations "
                                 "(as Clark et al. 2019 averaged attention from a word's pieces).")
settings = spec.Settings(layer, shown, position, int(neuron), words is not None)
charts = spec.view(settings, context, results)
with heatmap:
    widgets.show_chart(charts["heatmap"], key="heatmap")
with left:
    widgets.show_chart(charts["top_neurons"], key="top_neurons")
with right:
    widgets.show_chart(charts["neuron"], key="neuron")
