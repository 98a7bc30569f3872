"""One forward pass, step by step: the visitor's sentence through the loaded model in the order it computes, every
number the hook's recorded value of one pass. The page lays out the widgets; what it computes and draws is its
spec, viz_app/specs/one_pass.py."""
from dataclasses import replace

import streamlit as st

from viz_app.app import show, state, widgets
from viz_app.export import html as export_html
from viz_app import heavy
from viz_app.specs import one_pass

widgets.page_header(
    "One pass, step by step",
    "Follow your sentence through the model, from the word pieces to the guess for [MASK], in the order it computes: "
    "every number below is the model's own, recorded in one forward pass (as Transformer Explainer, Cho et al. 2024, "
    "does for GPT-2). Click a block of the pass to open its step; pick a token to follow it through every step.",
)
context = widgets.require()
tokens = list(context.prepared.masked.tokens)
summary = context.loaded.summary
defaults = one_pass.Settings.from_state(st.session_state, context)  # the widgets drawn below included
step = defaults.step  # the step opened (the diagram's and the picker's value, kept in the session)
at_layer, at_head, at_token, *at_temperature = st.columns(4 if step == "guess" else 3)
with at_layer:
    layer = st.selectbox("Layer to open", range(summary.layers), **state.kept("pass_layer", range(summary.layers)))
with at_head:
    head = st.selectbox("Head to follow", range(summary.heads), **state.kept("pass_head", range(summary.heads)))
with at_token:
    token = widgets.select_int("Token to follow", "pass_token", list(range(len(tokens))),
                               format_func=lambda i: f"{i}: {tokens[i]}", default=defaults.token)
# the tokens flow from the block open on the run before; keyed by what it draws: a changed figure under one key
# clears its selection in the browser, a rerun that would close a picker the visitor has just opened
diagram = one_pass.diagram(defaults, context, widgets.last_drawn("pass_diagram", (step, defaults.layer)))
widgets.show_chart(diagram, key=widgets.figure_key("pass_diagram", diagram), on_click=one_pass.opened)
st.pills("Or pick a step here", list(one_pass.STEPS), format_func=one_pass.STEPS.get,
         **state.kept("pass_step", list(one_pass.STEPS)))
if at_temperature:  # the guess: the temperature on its first screen, beside the other choices
    at_temperature[0].select_slider("Temperature of the final softmax", one_pass.TEMPERATURES,
                                    help="Below 1 the top guess takes more, above 1 the guesses even out.",
                                    **state.kept("pass_temperature", one_pass.TEMPERATURES))
with st.expander("What if", expanded=step == "guess"):
    zero_head = st.toggle(f"Zero head {head} of layer {layer} and see the guess change", **state.kept("pass_zero_head"))
settings = replace(defaults, layer=layer, head=head, token=token, zero_head=zero_head, step=step)
planned = one_pass.computations(settings)
results = {name: heavy.run(context, computation, work) for name, (computation, work) in planned.items()}
if results["pass"] is None:
    st.stop()  # over the budget: heavy.run has said why
charts = one_pass.view(settings, context, results)
paragraphs = one_pass.paragraphs(settings, context, results["pass"])

show.subheader("{}", one_pass.STEPS[step])
show.markdown("{}", paragraphs[step])
WORKED_BEFORE = {"head_matrix": "projection", "weighted_values": "score"}  # the attention step's worked sums, placed
for name, chart in charts.items():
    if name == "guesses_zeroed":
        show.caption("Without head {} of layer {} (its weighted values set to zero):", head, layer)
    if name == "head_matrix":
        show.subheader("Where does a number come from?")
        show.caption("Pick a number of this head: it is worked out below from the numbers before it, as the model "
                     "computed it; the last line is the value the model recorded.")
        cell, dimension, key = st.columns(3)
        cell.selectbox("Matrix", list(one_pass.CELLS), format_func=one_pass.CELLS.get,
                       **state.kept("pass_cell", list(one_pass.CELLS)))
        sizes = list(range(results["pass"].q.shape[-1]))
        dimension.selectbox(f"Dimension of {tokens[token]}'s row", sizes, **state.kept("pass_dimension", sizes))
        with key:
            widgets.select_int("Key (the query is the followed token)", "pass_key", list(range(len(tokens))),
                               format_func=lambda i: f"{i}: {tokens[i]}",
                               default=one_pass.chosen_key(settings, results["pass"]))
    if name in WORKED_BEFORE:
        worked = one_pass.worked(settings, context, results["pass"])
        if name == "weighted_values":
            st.code(worked["score"], language=None, wrap_lines=True)
            st.code(worked["weight"], language=None, wrap_lines=True)
        else:
            st.code(worked["projection"], language=None, wrap_lines=True)
    widgets.show_chart(chart, key=f"pass_{name}")
strips = one_pass.strips(settings, context, results)
if strips:
    with st.expander("Every number of these vectors"):
        for name, chart in strips.items():
            widgets.show_chart(chart, key=f"pass_{name}")
steps = list(one_pass.STEPS)
index = steps.index(step)
back, forward = st.columns(2)
back.button("Previous step", disabled=index == 0, width="stretch",
            **state.filling("pass_previous", lambda _: {"pass_step": steps[index - 1]}, event="on_click"))
forward.button("Next step", disabled=index == len(steps) - 1, width="stretch",
               **state.filling("pass_next", lambda _: {"pass_step": steps[index + 1]}, event="on_click"))
show.caption("Cost: one recorded forward pass of {} tokens (with BERT-base at 512 tokens, about as long as the "
             "prediction page's pass: docs/benchmarks.md); a second one while a head is zeroed.", len(tokens))
st.download_button("Download the whole walk", data=lambda: export_html.view_document(
    "One pass, step by step", list(one_pass.walk(settings, context, results).values()), f"Model: {context.key.source}. Sentence: {context.prepared.text}",
    tuple(paragraphs[name] for name in one_pass.STEPS)), file_name="one_pass.html", mime="text/html",
    key="pass_download", on_click="ignore", icon=":material/download:",
    help="Every step's charts and text in one HTML file that opens with no app and no network.")
