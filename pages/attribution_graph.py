"""How did it get to that guess? The attribution graph of the sentence's [MASK], pruned by influence, and one feature
switched off to compare the measured change with the graph's prediction; features merged by hand into a named
supernode. The page lays out the widgets; what it computes and draws is its spec, viz_app/specs/attribution_graph.py."""
import streamlit as st

from bert.errors import BertError
from viz_app.app import show, state, widgets
from viz_app import heavy
from viz_app.specs import attribution_graph as spec

widgets.page_header(
    "How did it get to that guess?",
    "Each MLP is replaced by a transcoder: a layer of sparse features that reads what the MLP reads and writes what "
    "it writes (Dunefsky et al. 2024). With the attention patterns frozen and each LayerNorm replaced by its tangent "
    "at the run, the guess at the [MASK] is then an exact sum of contributions: from the input words, from the active "
    "features and from each MLP's error, what its transcoder misses (Ameisen et al. 2025, \"Circuit tracing\").",
)
context = widgets.require()
reason = spec.refusal(context.loaded)
if reason:
    show.warning("{}", reason)
    st.stop()
if len(context.prepared.all_masks) != 1:
    show.info("Put exactly one [MASK] in the sentence: the graph explains the guess there.")
    st.stop()
word_box, foil_box, cap_box = st.columns(3)
word_box.text_input("Word to explain (empty: the top guess)", **state.kept("graph_target"))
foil_box.text_input("Against this word (optional)", **state.kept("graph_foil"))
cap_box.selectbox("Features kept at most (the rest go into the error nodes)", spec.CAPS,
                  **state.kept("graph_max_features", spec.CAPS))
node_box, edge_box = st.columns(2)
node_box.select_slider("Nodes kept: share of the influence (%)", spec.THRESHOLDS, **state.kept("graph_node_threshold", spec.THRESHOLDS))
edge_box.select_slider("Edges kept: share of the influence (%)", spec.THRESHOLDS, **state.kept("graph_edge_threshold", spec.THRESHOLDS))
settings = spec.Settings.from_state(st.session_state, context)
try:
    result = heavy.run(context, *spec.computations(settings)["graph"])
except BertError as problem:
    show.warning("{}", problem)
    st.stop()
if result is None:
    st.stop()
graph = result.graph
target = graph.target_index
st.text(f"{graph.target_label} at the [MASK]: {float(graph.inputs[target]):.3f} = the edges into it "
        f"{float(graph.adjacency[target].sum()):.3f} + biases {float(graph.bias[target]):.3f}")
show.caption("{}", spec.SUM_NOTE)
show.caption("{} active features of {} per layer (k = {}){}; replacement score {}, completeness score {}: the share "
             "of the influence that reaches the target through features rather than error nodes, and of each node's "
             "input that comes from non-error nodes.", graph.num_features, result.features, result.k,
             f", {graph.folded} weaker ones folded into the error nodes" if graph.folded else "",
             f"{result.replacement_score:.2f}", f"{result.completeness_score:.2f}")
offered = spec.feature_nodes(result, settings)
state.clamp_subset("graph_merged", offered[1:])
merge_box, name_box = st.columns([3, 1])
merge_box.multiselect("Merge features into one node (a supernode), its edges the sums of theirs", offered[1:],
                      format_func=lambda n: spec.node_label(result, n), **state.kept("graph_merged"))
name_box.text_input("The supernode's name", max_chars=spec.MAX_NAME, **state.kept("graph_merged_name"))
settings = spec.Settings.from_state(st.session_state, context)
charts = spec.view(settings, context, {"graph": result})


def switch_clicked(event: dict) -> dict:
    """A click on a feature's circle picks it to switch off (the picker beside the graph stays the keyboard's way)."""
    node = spec.clicked_node(event, offered)
    return {} if node is None else {"graph_node": node}


graph_box, ablation_box = st.columns([3, 1])
with graph_box:
    widgets.show_chart(charts["graph"], key="graph", on_click=switch_clicked)
with ablation_box:
    st.caption("A hover names what each feature fires on most (its label: the word pieces of its largest activations "
               "in the transcoders' training text) and the words it raises most, read by the masked-LM head straight "
               "from its output direction.")
    node = st.selectbox("Switch off one feature", offered, format_func=lambda n: spec.node_label(result, n),
                        **state.kept("graph_node", offered, ""))
    if node:
        planned = spec.computations(spec.Settings(settings.target, settings.foil, settings.max_features,
                                                  settings.node_threshold, settings.edge_threshold, node), result.answer)
        try:
            ablation = heavy.run(context, *planned["ablation"])
        except BertError as problem:
            show.warning("{}", problem)
            ablation = None
        if ablation is not None:
            st.text(spec.ablation_text(result, node, ablation))
st.download_button("circuit-tracer JSON of this graph", data=lambda: spec.graph_export(
    result, settings, context.loaded.model.config.vocab_size, context.loaded.key.source), file_name="attribution_graph.json",
    mime="application/json", key="graph_json", on_click="ignore", icon=":material/download:",
    help="The pruned graph in circuit-tracer's format, each feature's label as its clerp and the supernode in qParams.")
widgets.download_view("How did it get to that guess?", "attribution_graph")
