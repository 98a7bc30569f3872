"""Which connections carry the answer? The circuit graph of a clean/counterfactual pair, its faithfulness curve,
and one edge or node patched live. The page lays out the widgets; what it computes and draws is its spec,
viz_app/specs/circuits.py."""
import streamlit as st

from bert.errors import BertError
from viz_app.app import show, state, widgets
from viz_app import heavy
from viz_app.specs import circuits

widgets.page_header(
    "Which connections carry the answer?",
    "Two sentences that differ in one word (the keys / the key … [MASK]) and two words for the [MASK] (are / is). "
    "Each edge, from a node's output (the embeddings, a head, an MLP) to a later node's input (a head's query, key "
    "or value, an MLP, the output), is scored by how much the logit difference changes when that edge alone carries "
    "the counterfactual sentence's value (Hanna et al. 2024). The LayerNorms are recomputed (docs/circuits.md).",
)
context = widgets.require(needs_input=False)
reason = circuits.refusal(context.loaded)
if reason:
    show.warning("Not for this model: {}.", reason)
    st.stop()
indices = [*range(len(circuits.PAIRS)), circuits.OWN]
index = st.selectbox("Pair", indices, format_func=circuits.pair_label, **state.kept("circuit_pair", indices))
if index == circuits.OWN:
    clean_box, corrupt_box = st.columns(2)
    clean_box.text_input("Clean sentence (one [MASK])", **state.kept("circuit_clean"))
    corrupt_box.text_input("Counterfactual (as many word pieces)", **state.kept("circuit_corrupt"))
    answer_box, foil_box = st.columns(2)
    answer_box.text_input("Answer (the clean sentence's word)", **state.kept("circuit_answer"))
    foil_box.text_input("Foil (the counterfactual's word)", **state.kept("circuit_foil"))
method_box, steps_box, shown_box = st.columns(3)
methods = list(circuits.METHOD_TITLES)
method_box.selectbox("Method", methods, format_func=circuits.METHOD_TITLES.get, **state.kept("circuit_method", methods))
steps_box.number_input("EAP-IG steps", 1, circuits.MAX_STEPS, **state.kept("circuit_steps", range(1, circuits.MAX_STEPS + 1)))
shown_box.slider("Edges drawn (top by |score|)", 1, circuits.MAX_SHOWN, **state.kept("circuit_shown", range(1, circuits.MAX_SHOWN + 1)))
settings = circuits.Settings.from_state(st.session_state, context)
try:
    contrast = circuits.contrast_of(context.loaded, settings.pair)
except BertError as problem:
    show.warning("{}", problem)
    st.stop()
exact_cost = circuits.scores_cost(circuits.Inputs(context.loaded), circuits.ScoreWork(settings.pair, "exact", 1))
show.caption("Exact edge patching here: {}; {}", exact_cost.describe(),
             "within your budget." if heavy.within_budget(context, exact_cost) else
             "over your budget, so EAP-IG (about steps + 2 passes) or EAP (3 passes) stand in for it.")
planned = circuits.computations(settings)
result = heavy.run(context, *planned["scores"])
if result is None:
    st.stop()
scores = result.scores
st.text(f"logit({contrast.answer}) − logit({contrast.foil}) at the [MASK]: clean {scores.clean_metric:.3f}, "
        f"counterfactual {scores.corrupted_metric:.3f}")
charts = circuits.view(settings, context, {"scores": result})
parts = circuits.picker_parts(result, settings.shown)


def patch_clicked(event: dict) -> dict:
    """A click on an edge's diamond or a node's circle picks it to patch (the picker below stays the keyboard's way)."""
    part = circuits.clicked_part(event, parts)
    return {} if part is None else {"circuit_part": part}


graph_box, patch_box = st.columns([3, 1])  # the patched result beside the graph, not below it
with graph_box:
    widgets.show_chart(charts["graph"], key="graph", on_click=patch_clicked)
with patch_box:
    st.caption("Click an edge's diamond or a node's circle to patch it, or pick it here:")
    part = st.selectbox("Patch one edge or node with the counterfactual's value", parts,
                        format_func=lambda p: circuits.part_label(scores.graph, p),
                        **state.kept("circuit_part", parts, ""))
    if part:
        ablated = heavy.run(context, circuits.ABLATION, circuits.AblationWork(settings.pair, part))
        if ablated is not None:
            st.text(circuits.ablation_text(scores, part, ablated, circuits.metric_words(settings.pair)))
widgets.show_chart(charts["faithfulness"], key="faithfulness")
widgets.download_view("Which connections carry the answer?", "circuits")
