"""MLP activations: which neurons fire on which tokens."""
import streamlit as st

from viz_app import cache
from viz_app.app import state, widgets
from viz_app.views.mlp import MlpSettings, mlp_view, strongest_neuron

widgets.page_header(
    "MLP activations",
    "After attention, every layer sends each token on its own through a two-layer MLP: hidden → intermediate "
    "neurons → GELU → hidden. These are the neuron activations after GELU (mostly ≥ 0; GELU dips to −0.17).",
)
context = widgets.require()
result = cache.forward(context.key, context.prepared)
summary = context.loaded.summary
tokens = result.tokens

controls = st.columns([1, 2, 2])
with controls[0]:
    layer = st.selectbox("Layer", range(summary.layers), **state.kept("mlp_layer", range(summary.layers)))
with controls[1]:
    shown = st.slider(
        "Neurons in the heatmap",
        8,
        min(256, summary.intermediate),
        **state.kept("neurons_shown", range(8, min(256, summary.intermediate) + 1)),
        help=f"The layer has {summary.intermediate} neurons; the heatmap shows those that fire hardest on this input.",
    )
with controls[2]:
    position = widgets.select_int(
        "Token", "mlp_token", list(range(len(tokens))), format_func=lambda i: f"{i}: {tokens[i]}", default=1
    )

units = st.container()
heatmap = st.container()
left, right = st.columns(2)
with right:
    chosen = st.session_state.get("neuron")
    if chosen is None or not 0 <= chosen < summary.intermediate:
        st.session_state["neuron"] = strongest_neuron(result, layer, position)  # start with the token's strongest
    neuron = st.number_input(
        "Neuron",
        min_value=0,
        max_value=summary.intermediate - 1,
        step=1,
        **state.kept("neuron"),
        help="Type a neuron number from the heatmap or the bars (n123 → 123).",
    )
with units:
    words = widgets.units_picker(context, "Words: a word's activation is the mean of its pieces' activations "
                                 "(as Clark et al. 2019 averaged attention from a word's pieces).")
charts = mlp_view(MlpSettings(layer, shown, position, int(neuron)), result, words)
with heatmap:
    widgets.show_chart(charts["heatmap"], key="heatmap")
with left:
    widgets.show_chart(charts["top_neurons"], key="top_neurons")
with right:
    widgets.show_chart(charts["neuron"], key="neuron")
