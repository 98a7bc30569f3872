"""Layer-wise probes: how well a linear classifier reads properties off each layer, against a control task, on any
sentences (the built-in WordNet set, plain text, UD English EWT or a labelled file); on a treebank also the
structural probes (Hewitt & Manning 2019) and one sentence's predicted tree."""
import streamlit as st

from bert.errors import BertError
from viz_app import cache
from viz_app import heavy
from viz_app.specs import probes
from viz_app.app import probe_data, probe_results, show
from viz_app.app import widgets

widgets.page_header(
    "Layer probes",
    "A probe is a small model trained to read a property off one layer's vectors: if it succeeds on sentences it has "
    "not seen, the layer encodes that property in a readable way. Each probe is paired with a control task (Hewitt & "
    "Liang 2019): random labels fixed per word type, which a probe can only learn by memorising words. Selectivity = "
    "accuracy minus control accuracy. On a treebank, structural probes (Hewitt & Manning 2019) also ask whether the "
    "distances between word vectors follow the sentence's dependency tree.",
)
context = widgets.require(needs_input=False)
source = probe_data.source_picker()
data = probe_data.data_picker(source, cache.labelled_file)
if data is None:
    st.stop()
tasks = probe_data.task_picker(data)
left, middle, right = st.columns(3)
with left:
    pieces = probe_data.pieces_picker()
with middle:
    seed = probe_data.seed_input()
with right:
    mdl = probe_data.mdl_toggle(tasks)
if not tasks:
    st.info("Pick at least one task.")
    st.stop()
if source != probe_data.WORDNET and not probe_data.run_toggle():  # the built-in sentences run at once (priced)
    show.caption("Ready: {}; tasks {}.", data.description, ', '.join(tasks))
    st.stop()
settings = probes.Settings(data, tuple(tasks), pieces, seed, mdl)
try:  # priced (with the memory its word vectors keep), within the budget, in a heavy slot: viz_app/heavy.py
    run = heavy.run(context, *probes.computations(settings)["run"])
except BertError as error:
    show.warning("The probes cannot run on this data: {}.", error)
    st.stop()
if run is None:
    st.stop()
probe_results.show(run, data)
probe_results.erase_property(context, run, data, seed)
widgets.download_view("Layer probes", "probes_view")
