"""Where is the variable? Interchange interventions and distributed alignment search: which directions of which layer
carry a variable (the subject's number, a pronoun's gender), scored by how often swapping them between two sentences
makes the model answer as the other value calls for. The page lays out the widgets; what it computes and draws is its
spec, viz_app/specs/variable.py."""
import streamlit as st

from bert.analysis.causal.alignment import METHODS
from bert.data.variable_pairs import COLUMNS
from bert.errors import BertError
from bert.layers import layer_label
from viz_app import heavy
from viz_app.app import show, state, uploads, widgets
from viz_app.specs import variable as spec

widgets.page_header(
    "Where is the variable?",
    "Two sentences that differ in one variable (the dog / the dogs … [MASK]): take a few directions of one layer's "
    "vector from the second sentence into the first and see whether the model now answers as the second one would "
    "(are, not is). The share of held-out pairs where it does is the interchange intervention accuracy (IIA); "
    "distributed alignment search learns the directions (Geiger et al. 2024). A control task with shuffled labels "
    "says how much of it a method gets from memorising words (Hewitt & Liang 2019; Arora et al. 2024).",
)
context = widgets.require(needs_input=False)
loaded = context.loaded
if not loaded.summary.has_mlm_head:
    st.warning("This model has no masked-LM head, so it makes no guess to swap. Pick minilm or a BERT with its MLM head.")
    st.stop()

tasks = list(spec.TASK_LABELS)
task = st.selectbox("Pairs", tasks, format_func=spec.TASK_LABELS.get,
                    **state.kept("variable_task", tasks))
upload = None
if task == spec.UPLOAD:
    file = uploads.upload_box("Your pairs: a .tsv with a header, or .jsonl, with the columns " + ", ".join(COLUMNS),
                              ["tsv", "jsonl"], "variable_file", uploads.PAIRS_BYTES,
                              help="Base and source: the same number of word pieces, one [MASK] at the same place.")
    if file is None:
        show.info("Choose a file of pairs: one line each, with {}.", ", ".join(COLUMNS))
        st.stop()
    text = uploads.read_text(file, uploads.PAIRS_BYTES)
    if text is None:
        st.stop()
    upload = spec.PairsFrom(spec.UPLOAD, file.name, text)

columns = st.columns(4)
methods = list(METHODS)
method = columns[0].selectbox("Method", methods, format_func=spec.METHOD_TITLES.get, **state.kept("variable_method", methods))
columns[1].number_input("k (directions swapped)", 1, spec.MAX_DIMS, **state.kept("variable_dims", range(1, spec.MAX_DIMS + 1)),
                        help="DAS, PCA and random swap k; the difference of means, the probe and LDA find one; "
                             "Boundless DAS learns it; full swaps the whole vector.")
columns[2].number_input("Training steps", 1, spec.MAX_STEPS, **state.kept("variable_steps", range(1, spec.MAX_STEPS + 1)),
                        help="DAS and Boundless DAS: each step is 16 pairs, forward and backward.")
columns[3].number_input("Training pairs", 2, spec.MAX_PAIRS, **state.kept("variable_pairs", range(2, spec.MAX_PAIRS + 1)),
                        help="At most this many for training; half as many held out (new templates and words).")
columns = st.columns(3)
layers = list(range(loaded.summary.layers))
with columns[0]:
    widgets.select_int("Layer (its output)", "variable_layer", layers, format_func=layer_label)
positions = list(spec.POSITIONS)
columns[1].radio("Position", positions, format_func=spec.POSITIONS.get, horizontal=True,
                 **state.kept("variable_position", positions))
columns[2].number_input("Seed", 0, 10**6, **state.kept("variable_seed", range(0, 10**6 + 1)))
st.toggle("Sweep every layer and position (with full patching's grid beside it)", **state.kept("variable_sweep"))
sentences = st.columns(2)
sentences[0].text_input("Your sentence (one [MASK])", **state.kept("variable_sentence"))
sentences[1].text_input("A second sentence, the variable's other value (as many word pieces)", **state.kept("variable_source"))

settings = spec.Settings.from_state(st.session_state, context, upload)
planned = spec.computations(settings)
results = {}
try:  # each through the server's budget and a heavy slot (viz_app/heavy.py), priced before it starts
    for name in ("align", "sweep", "full_sweep"):
        if name in planned:
            results[name] = heavy.run(context, *planned[name])
            if results[name] is None:
                st.stop()
except BertError as problem:  # a bad upload (it names the line), pairs that do not fit this model
    show.warning("{}", problem)
    st.stop()
result = results["align"]
st.text(f"{method} at {layer_label(settings.layer)}, {spec.POSITIONS[settings.position]}, {settings.source.title()}:\n"
        + spec.result_text(result))
charts = spec.view(settings, context, results)
widgets.show_chart(charts["result"], key="result")
grids = st.columns(2)
for column, name in zip(grids, ("sweep", "full_sweep")):
    if name in charts:
        with column:
            widgets.show_chart(charts[name], key=name)
for name in ("projection", "swap"):
    if name not in planned:
        continue
    try:
        results[name] = heavy.run(context, *planned[name])
    except BertError as problem:  # the two sentences do not line up
        show.warning("{}", problem)
        continue
    if name == "swap" and results[name] is not None:
        st.text(spec.swap_text(results[name]))
    elif name == "projection" and results[name] is not None:
        chart = spec.view(settings, context, results).get("projection")
        if chart is None:
            st.caption("Full patching swaps the whole vector: it has no direction to draw over your sentence.")
        else:
            widgets.show_chart(chart, key="projection")
widgets.download_view("Where is the variable?", "variable")
