"""What does each word take from the others? Context mixing by method, one or two side by side; rollout and flow."""
import numpy as np
import streamlit as st

from bert.analysis.attention.mixing import METHODS, PRE_NORM_REASON, methods_for
from bert.analysis.attention.rollout import FLOW_TOKEN_LIMIT
from bert.errors import MissingHeadError
from viz_app import cache, heavy, page_costs, state, widgets
from viz_app.mixing import METHOD_TITLES, NO_SECOND
from viz_app.views.mixing import MixingSettings, method_charts, mixing_view

widgets.page_header(
    "What each word takes from the others",
    "An attention weight is not an influence: a token with a large weight can bring a tiny vector, and the residual "
    "connection and the LayerNorms decide how much of a token's own vector survives (Kobayashi et al. 2020, 2021). "
    "Each method below answers, per layer, how much each token's output (a row) takes from each input token (a "
    "column), and, where its paper does, for the whole model.",
)
context = widgets.require()
tokens = list(cache.predictions_and_attention(context.key, context.prepared).tokens)
num_layers = context.loaded.summary.layers
methods = methods_for(context.loaded.model.config)
seconds = [NO_SECOND, *methods]
if len(methods) < len(METHODS):
    st.caption(f"Only the attention weights here: {PRE_NORM_REASON}.")
pick, beside = st.columns(2)  # wide enough for the longest method's name and paper at 1366 px
with pick:
    method = st.selectbox("Method", methods, format_func=METHOD_TITLES.get, **state.kept("mixing_method", methods))
with beside:
    compare = st.selectbox("Beside it", seconds, format_func=lambda m: "nothing" if m == NO_SECOND else METHOD_TITLES[m],
                           **state.kept("mixing_compare", seconds))
at_layer, at_token = st.columns([1, 3])
with at_layer:
    layer = st.selectbox("Layer", range(num_layers), **state.kept("rollout_layer", range(num_layers), num_layers - 1))
defaults = MixingSettings.from_state(st.session_state, num_layers, tokens)
with at_token:
    query = widgets.select_int("Token whose row is drawn as bars", "mixing_query", list(range(len(tokens))),
                               format_func=lambda i: f"{i}: {tokens[i]}", default=defaults.query)
settings = MixingSettings(method, compare, layer, query)


def computed(name: str, side: str):
    """The method's matrices, or None where they are not computed: over the server's budget (viz_app/heavy.py says
    why, or asks the owner and the presenter first). Every method but the attention weights grows with the tokens
    (at 512 tokens on BERT-base, the recorded pass included: ALTI as long as 19 forward passes, value zeroing 514)."""
    cost = page_costs.context_mixing(name, len(tokens))
    try:
        if not heavy.allowed(context, cost, f"mixing_{side}"):
            return None
        if cost.forward_passes > 2:
            st.caption(f"{METHODS[name].title}: about {cost.describe()}.")
        with heavy.job(context, cost, f"Computing {METHODS[name].title}"):
            return cache.context_mixing(context.key, context.prepared, name)
    except MissingHeadError as problem:  # DecompX on a model with no output head to decompose
        st.warning(str(problem))
        return None


sides = st.columns(2) if compare != NO_SECOND else [st.container()]
for column, side, name in zip(sides, ("first", "second"), (method, compare)):
    with column:
        result = computed(name, side)
        if result is None:
            continue
        for chart_name, chart in method_charts(settings, tokens, result, side).items():
            widgets.show_chart(chart, key=chart_name)
        if result.whole_model is None:
            st.caption(f"{METHODS[name].paper} define no whole-model aggregate for this method.")
widgets.download_view("What each word takes from the others", "context_mixing")

st.subheader("Attention flow")
st.caption(
    f"A max-flow problem per (position, input token) on the layered graph whose edge capacities are the mixed "
    f"attention weights (Abnar & Zuidema 2020); each row normalised to sum to 1. Limited to inputs of "
    f"{FLOW_TOKEN_LIMIT} tokens; at that length it can take half a minute."
)
if len(tokens) > FLOW_TOKEN_LIMIT:
    st.info(f"This input has {len(tokens)} tokens; attention flow is offered up to {FLOW_TOKEN_LIMIT}. "
            f"Shorten the sentence to see it.")
elif st.toggle("Compute attention flow", key="rollout_flow"):
    attention = cache.predictions_and_attention(context.key, context.prepared).attention
    flow = cache.attention_flow(np.ascontiguousarray(attention), settings.layer)
    widgets.show_chart(mixing_view(settings, tokens, cache.context_mixing(context.key, context.prepared, "attention"),
                                   flow=flow)["flow"], key="flow")
