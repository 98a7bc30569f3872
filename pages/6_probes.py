"""Layer-wise probes: how well a linear classifier reads properties off each layer, against a control task."""
import pandas as pd
import streamlit as st

from bert.analysis.probes import TASKS
from viz_app import analysis_widgets as aw
from viz_app import cache, state, widgets
from viz_app.charts.probes import probe_accuracy_chart, selectivity_chart

widgets.page_header(
    "Layer probes",
    "A logistic regression per layer is trained on the hidden states of 80% of the sentences and scored on the "
    "other 20% (split by sentence, seeded). Each probe is paired with a control task (Hewitt & Liang 2019): random "
    "labels fixed per word type, which a probe can only learn by memorising words. Selectivity = accuracy minus "
    "control accuracy.",
)
context = widgets.require(needs_input=False)
picked = aw.sentence_source("probes")
state.clamp_subset("probe_tasks", list(TASKS))
tasks = st.multiselect("Tasks", list(TASKS), key="probe_tasks", persist_state="session", format_func=lambda t: t.replace("_", " "))
with st.expander("What each task asks"):
    st.markdown("\n".join(f"- **{name.replace('_', ' ')}**: {task.description}" for name, task in TASKS.items()))
seed = int(st.number_input(
    "Random seed", min_value=0, max_value=10_000, value=0, step=1, key="probe_seed", bind="query-params",
    persist_state="session",
    help="Picks which sentences are held out for scoring and the control task's random labels: change it to see "
    "how much the scores move by chance.",
))
if picked is None:
    st.stop()
if not tasks:
    st.info("Pick at least one task.")
    st.stop()
sentences, description = picked
if not st.toggle("Run the probes", key="probe_run", help="A few seconds to a few minutes, by the number of sentences"):
    st.caption(f"Ready: {description}, tasks {', '.join(tasks)}.")
    st.stop()
report = cache.probe_report(*aw.model_key(context), sentences, tuple(tasks), seed)
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
