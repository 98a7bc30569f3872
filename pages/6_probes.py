"""Layer-wise probes: how well a linear classifier reads properties off each layer, against a control task; on a
treebank also the structural probes (Hewitt & Manning 2019) and one sentence's predicted tree."""
import pandas as pd
import streamlit as st

from bert.analysis.probing.probes import TASKS
from bert.errors import BertError
from viz_app import analysis_widgets as aw
from viz_app import cache, probe_data, probe_results, state, widgets
from viz_app.text import escape_markdown
from viz_app.charts.probes import probe_accuracy_chart, selectivity_chart

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

if source in (probe_data.WORDNET, probe_data.TEXT):
    picked = aw.sentence_source("probes", choice=probe_data.SOURCES[source])
    state.clamp_subset("probe_tasks", list(TASKS))
    tasks = st.multiselect("Tasks", list(TASKS), key="probe_tasks", persist_state="session",
                           format_func=lambda t: t.replace("_", " "))
    with st.expander("What each task asks"):
        st.markdown("\n".join(f"- **{name.replace('_', ' ')}**: {task.description}" for name, task in TASKS.items()))
    seed = probe_data.seed_input()
    if picked is None:
        st.stop()
    if not tasks:
        st.info("Pick at least one task.")
        st.stop()
    sentences, description = picked
    if not probe_data.run_toggle():
        st.caption(f"Ready: {description}, tasks {', '.join(tasks)}.")
        st.stop()
    report = cache.probe_report(context.key, sentences, tuple(tasks), seed)
    for task, reason in report.skipped.items():
        st.warning(f"{task}: {reason}")
    if report.results:
        widgets.show_chart(probe_accuracy_chart(report), key="probe_accuracy")
        widgets.show_chart(selectivity_chart(report), key="probe_selectivity")
        st.dataframe(pd.DataFrame([
            {"task": task, "classes": len(r.class_names), "train tokens": r.num_train, "test tokens": r.num_test,
             "majority baseline": r.majority_accuracy, "best layer": r.layer_names[max(range(len(r.accuracy)), key=r.accuracy.__getitem__)],
             "best accuracy": max(r.accuracy)}
            for task, r in report.results.items()
        ]), hide_index=True, column_config={c: st.column_config.NumberColumn(format="percent") for c in ("majority baseline", "best accuracy")})
        st.caption(f"On {description}; seed {seed}.")
        widgets.download_view("Layer probes", "probes_view")
    st.stop()

data = probe_data.treebank_data(source, cache.labelled_file)
if data is None:
    st.stop()
tasks = probe_data.task_picker(data.tasks)
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
if not probe_data.run_toggle():
    st.caption(f"Ready: {data.description}; tasks {', '.join(map(escape_markdown, tasks))}.")
    st.stop()
try:
    run = cache.treebank_probes(context.key, data.key, data, tuple(tasks), pieces, seed, mdl)
except BertError as error:
    st.warning(f"The probes cannot run on this data: {escape_markdown(str(error))}.")
    st.stop()
probe_results.show(run, data)
widgets.download_view("Layer probes", "probes_view")
