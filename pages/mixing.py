"""What does each word take from the others? Context mixing by method, one or two side by side; rollout and flow.
The page lays out the widgets; what it computes and draws is its spec, viz_app/specs/mixing.py."""
import streamlit as st

from bert.analysis.attention.mixing import METHODS, attention_only_reason, methods_for
from bert.analysis.attention.rollout import FLOW_TOKEN_LIMIT
from bert.errors import MissingHeadError
from viz_app.app import show, state, widgets
from viz_app import heavy
from viz_app.specs import mixing

widgets.page_header(
    "What each word takes from the others",
    "An attention weight is not an influence: a token with a large weight can bring a tiny vector, and the residual "
    "connection and the LayerNorms decide how much of a token's own vector survives (Kobayashi et al. 2020, 2021). "
    "Each method below answers, per layer, how much each token's output (a row) takes from each input token (a "
    "column), and, where its paper does, for the whole model.",
)
context = widgets.require()
tokens = list(context.prepared.masked.tokens)
num_layers = context.loaded.summary.layers
methods = methods_for(context.loaded.model.config)
seconds = [mixing.NO_SECOND, *methods]
if len(methods) < len(METHODS):
    show.caption("Only the attention weights here: {}.", attention_only_reason(context.loaded.model.config))
pick, beside = st.columns(2)  # wide enough for the longest method's name and paper at 1366 px
with pick:
    method = st.selectbox("Method", methods, format_func=mixing.METHOD_TITLES.get, **state.kept("mixing_method", methods))
with beside:
    compare = st.selectbox("Beside it", seconds, format_func=lambda m: "nothing" if m == mixing.NO_SECOND
                           else mixing.METHOD_TITLES[m], **state.kept("mixing_compare", seconds))
at_layer, at_token = st.columns([1, 3])
with at_layer:
    layer = st.selectbox("Layer", range(num_layers), **state.kept("rollout_layer", range(num_layers), num_layers - 1))
defaults = mixing.Settings.from_state(st.session_state, context)
with at_token:
    query = widgets.select_int("Token whose row is drawn as bars", "mixing_query", list(range(len(tokens))),
                               format_func=lambda i: f"{i}: {tokens[i]}", default=defaults.query)
settings = mixing.Settings(method, compare, layer, query)


def run(side: str, computation, work):
    """The part's result through the server's budget and a heavy slot (viz_app/heavy.py), or None where it
    did not run: over the budget (the page has said why) or DecompX on a model with no output head to decompose."""
    try:
        return heavy.run(context, computation, work, key=f"mixing_{side}")
    except MissingHeadError as problem:
        show.warning("{}", problem)
        return None


planned = mixing.computations(settings)
sides = st.columns(2) if compare != mixing.NO_SECOND else [st.container()]
for column, side in zip(sides, mixing.SIDES):
    with column:
        result = run(side, *planned[side])
        if result is None:
            continue
        for chart_name, chart in mixing.view(settings, context, {side: result}).items():
            widgets.show_chart(chart, key=chart_name)
        if result.whole_model is None:
            show.caption("{} define no whole-model aggregate for this method.", METHODS[result.method].paper)
widgets.download_view("What each word takes from the others", "context_mixing")

st.subheader("Attention flow")
show.caption("A max-flow problem per (position, input token) on the layered graph whose edge capacities are the mixed "
             "attention weights (Abnar & Zuidema 2020); each row normalised to sum to 1. Limited to inputs of {} "
             "tokens; at that length it can take half a minute, within the server's budget like every method, and it "
             "stops when you change the input or leave.", FLOW_TOKEN_LIMIT)
if len(tokens) > FLOW_TOKEN_LIMIT:
    show.info("This input has {} tokens; attention flow is offered up to {}. Shorten the sentence to see it.",
              len(tokens), FLOW_TOKEN_LIMIT)
elif st.toggle("Compute attention flow", **state.kept("rollout_flow")):
    flow_settings = mixing.Settings(method, compare, layer, query, flow=True)
    flow = run("flow", *mixing.computations(flow_settings)["flow"])
    if flow is not None:
        widgets.show_chart(mixing.view(flow_settings, context, {"flow": flow})["flow"], key="flow")
