"""Attention rollout and attention flow beside raw attention."""
import numpy as np
import streamlit as st

from bert.analysis.attention.rollout import FLOW_TOKEN_LIMIT
from viz_app import cache, widgets
from viz_app.views.rollout import rollout_view

widgets.page_header(
    "Rollout and flow",
    "Raw attention shows one layer. Rollout and flow (Abnar & Zuidema 2020) follow attention through all layers "
    "up to the chosen one, to estimate how much each input token reaches each position. Residual convention: each "
    "layer's head-averaged attention A becomes 0.5·A + 0.5·I, rows renormalised to sum to 1.",
)
context = widgets.require()
result = cache.predictions_and_attention(context.key, context.prepared)
tokens = result.tokens
layers = range(context.loaded.summary.layers)
layer = st.selectbox("Up to layer", layers, index=len(layers) - 1, key="rollout_layer", bind="query-params",
                     persist_state="session")
charts = rollout_view(layer, result)
raw, rolled = st.columns(2)
with raw:
    widgets.show_chart(charts["raw"], key="raw")
with rolled:
    widgets.show_chart(charts["rollout"], key="rollout")
limit = FLOW_TOKEN_LIMIT
st.subheader("Attention flow")
st.caption(
    f"A max-flow problem per (position, input token) on the layered graph whose edge capacities are the mixed "
    f"attention weights; each row normalised to sum to 1. Limited to inputs of {limit} tokens; at that length "
    f"it can take half a minute."
)
if len(tokens) > limit:
    st.info(f"This input has {len(tokens)} tokens; attention flow is offered up to {limit}. Shorten the sentence to see it.")
elif st.toggle("Compute attention flow", key="rollout_flow"):
    flow = cache.attention_flow(np.ascontiguousarray(result.attention), layer)
    widgets.show_chart(rollout_view(layer, result, flow)["flow"], key="flow")
