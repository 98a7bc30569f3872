"""Compare two models: layer-by-layer similarity (CKA), how much each head's attention moved, predictions side by side.
The page lays out the widgets; the comparison and its charts are its spec, viz_app/specs/compare_models.py."""
import streamlit as st

from bert.errors import BertError
from viz_app import heavy
from viz_app.server import access
from viz_app.app import analysis_widgets, models, show, state, widgets
from viz_app import cache
from viz_app.specs import compare_models as model_comparison
from viz_app.app.models import ModelKey

widgets.page_header(
    "Compare two models",
    "The same sentences through two models: a pre-trained model and one fine-tuned from it, or two of BERT's family "
    "(BERT and RoBERTa, say). CKA (centred kernel alignment) scores how alike two layers' vectors are: 1 when they "
    "differ only by a rotation and a uniform scale. The Jensen-Shannon distance scores how far each attention head's "
    "pattern moved: 0 for the same pattern.",
)
context = widgets.require()
choices = {c.source: c for c in context.visitor.choices}  # a student: the offered models only, no folder
if st.session_state.get("compare_with") not in (None, *choices):  # a link naming a model this server does not offer
    show.info("{}", access.not_offered(context.visitor.choices))
source_b = st.selectbox("Model B (model A is the one chosen in the sidebar)", list(choices), format_func=lambda s: choices[s].label,
                        **state.kept("compare_with", list(choices), model_comparison.partner(context.key.source, list(choices))))
folder_b = choices[source_b].folder
if source_b == models.FOLDER:
    folder_b = st.text_input("Folder of model B", **state.kept("compare_folder"),
                             placeholder="/path/to/a/fine-tuned/bert").strip()
    if not folder_b:
        st.info("Type the path of a Hugging Face folder of a BERT-family model (config.json, weights, its tokenizer) "
                "to compare with.")
        st.stop()
    source_b = folder_b
key_a, key_b = context.key, ModelKey.of(source_b, folder_b)
if key_a == key_b:
    st.info("Model B is the same as model A: pick another model to compare with.")
    st.stop()
try:
    loaded_b = cache.load_model(key_b)
except (BertError, OSError, ValueError, RuntimeError) as error:
    show.error("Could not load model B, “{}” ({}). Pick another model.", str(source_b),
               access.failure(error, context.visitor.role))
    st.stop()
shared = cache.same_vocabulary(key_a, key_b)
name_a, name_b = context.key.source, source_b

st.subheader("Predictions side by side")
table = heavy.run(context, model_comparison.SIDE_BY_SIDE, model_comparison.SideBySideWork(key_b, shared))
if table is None:
    st.stop()
if table.empty:
    show.info("{}", model_comparison.nothing_shared(context.loaded, loaded_b, context.prepared, shared))
else:
    st.dataframe(table.rename(columns={"model A": f"A: {name_a}", "model B": f"B: {name_b}"}), hide_index=True)
    one_sided = model_comparison.one_sided(table)
    if one_sided:
        show.caption("{}", one_sided)

st.subheader("What changed inside, over many sentences")
picked = analysis_widgets.sentence_source("compare", most=500)
if picked is None:
    st.stop()
sentences, description = picked
texts = tuple(s.text for s in sentences)
settings = model_comparison.Settings(key_b, texts, name_a, name_b)
try:
    result = heavy.run(context, *model_comparison.computations(settings)["comparison"])
except BertError as error:
    show.error("These two models cannot be compared: {}.", error)
    st.stop()
if result is None:  # over the budget: the page has said why
    st.stop()
charts = model_comparison.view(settings, context, {"comparison": result})
if result.unit == "token":
    show.caption("Over {}: {:,} tokens, every token of every sentence.", description, result.num_examples)
else:
    show.caption("The two models split words into different pieces, so their vectors are aligned by words: a word's "
                 "vector is the mean of its pieces' vectors. Over {}: {:,} words in {:,} sentences; {:,} sentence{} "
                 "skipped, where the two tokenizers split the words differently.", description, result.num_examples,
                 result.num_sentences, result.skipped, '' if result.skipped == 1 else 's')
if result.same_depth:
    widgets.show_chart(charts["cka_by_layer"], key="cka_by_layer")
    halves = result.lower_and_upper() if result.unit == "token" else None  # fine-tuning's pattern: one vocabulary
    if halves is not None:
        lower, upper = halves
        verdict = ("agrees: the upper layers changed more" if upper < lower - 0.02 else
                   "does not show it: the upper layers changed no more than the lower ones")
        show.markdown("**What fine-tuning usually does.** Merchant et al. (2020, *What happens to BERT embeddings "
                      "during fine-tuning?*) found that fine-tuning changes the top layers most and the lower layers "
                      "little: CKA against the base model stays near 1 low down and falls near the top. Here the "
                      "lower half of the layers has a mean CKA of {:.2f} and the upper half {:.2f}, so this pair {}.",
                      lower, upper, verdict)
widgets.show_chart(charts["cka_matrix"], key="cka_matrix")
if "attention_change" in charts:
    widgets.show_chart(charts["attention_change"], key="attention_change")
elif result.unit == "word":
    st.info("The two models read different tokens, so their attention patterns cannot be paired up head by head.")
else:
    st.info("The two models have different numbers of layers or heads, so their heads cannot be paired up.")
