"""Sentence tasks: next-sentence prediction, a fine-tuned classifier's classes, token labels, and which input tokens
drove each. The page lays out the widgets; its classes and attributions are its spec, viz_app/specs/sentence_tasks.py."""
import streamlit as st

from bert.analysis.attribution.saliency import METHODS, NEXT_SENTENCE_LABELS
from bert.families.registry import family_of
from viz_app import heavy
from viz_app.specs import sentence_tasks
from viz_app.app import show, state, widgets
from viz_app.app.label_names import label_legend
from viz_app.app.text import joined, markdown
from viz_app.specs.saliency import METHOD_NAMES, method_note

widgets.page_header(
    "Sentence tasks",
    "BERT's sentence-level jobs read the [CLS] token's final vector: whether sentence B follows sentence A "
    "(next-sentence prediction, a pre-training task), or a class a fine-tuned model was trained to give. A token "
    "classifier labels every token instead. Which of these a model can do depends on the heads it has.",
)
context = widgets.require()
model, key, prepared = context.loaded.model, context.key, context.prepared
outputs = [output for output in model.output_heads if output in ("nsp", "classifier", "tagger")]  # not ELECTRA's "replaced"
if not outputs:
    show.warning("This model has no sentence-level head. For \"does B follow A?\" pick {}; for classes, {}.",
                 sentence_tasks.WHICH_MODEL['nsp'], sentence_tasks.WHICH_MODEL['classifier'])
    st.stop()


chosen_method = []  # the method picker is drawn once, by the first section that explains


def explain(output: str, target: int, labels, position: int = 0) -> None:
    """Which input tokens, and which embedding part, pushed the model towards `target`: the label of the token at
    `position` for token labels, a class read from [CLS] otherwise."""
    if not chosen_method:
        chosen_method.append(st.radio("Attribution method", METHODS, horizontal=True, format_func=METHOD_NAMES.get,
                                      **state.kept("tasks_method", list(METHODS))))
    work = sentence_tasks.ExplainWork(output, chosen_method[0], target, position)
    result = heavy.run(context, sentence_tasks.EXPLAIN, work, key=f"saliency_{output}")
    if result is None:  # over the budget: the page has said why
        return
    settings = sentence_tasks.Settings.from_state(st.session_state, context)
    widgets.show_chart(sentence_tasks.view(settings, context, {f"explain_{output}": result})[f"explain_{output}"],
                       key=f"saliency_{output}")
    split = "to each token's token, position and segment embeddings" if len(result.parts) > 1 else "to each input token"
    of_token = f" at '{prepared.base.tokens[position]}'" if output == "tagger" else ""
    show.caption("Attributions of log p('{}'){} {}. Bars above zero pushed towards this answer.", labels[target],
                 of_token, split)
    show.caption("{}", method_note(result))


sentence_order = family_of(model.config).sentence_order  # ALBERT's head's classes: [in order, swapped] (Lan et al. 2020)
if "nsp" in outputs:
    show.subheader("{}", "Are A and B in their order?" if sentence_order else "Does B follow A?")
    asked = "whether the two are in their order" if sentence_order else "whether it follows the first"
    typed_pair = bool(prepared.pair.strip())
    if prepared.pair_dropped:
        show.info("Type a second sentence (segment B) at the top: the model then says {}.", asked)
    else:
        if not typed_pair:  # the first screen draws with a stand-in sentence B
            show.caption("No second sentence typed, so sentence B here is “{}”. Type a second sentence (segment B) at "
                         "the top: the model then says {}.", sentence_tasks.STAND_IN_PAIR, asked)
        work = sentence_tasks.PairWork("" if typed_pair else sentence_tasks.STAND_IN_PAIR)
        result = heavy.run(context, sentence_tasks.NEXT_SENTENCE, work)
        if result is None:
            st.stop()
        typed, swapped = st.columns(2)
        if sentence_order:
            typed.metric("P(in order), as typed", f"{result.follows:.1%}")
            swapped.metric("P(in order), swapped", f"{result.swapped:.1%}")
            st.caption("ALBERT was pre-trained on sentence order instead of next sentences: two sentences that follow "
                       "each other, half of the time swapped. Its head says whether A and B are in their order.")
        else:
            typed.metric("P(B follows A), as typed", f"{result.follows:.1%}")
            swapped.metric("P(A follows B), swapped", f"{result.swapped:.1%}")
            st.caption(
                "Pre-training showed BERT pairs where B was the true next sentence half of the time and a random "
                "sentence otherwise; the swapped pair (B first) is the question sentence-order prediction (ALBERT) asks "
                "instead."
            )
        if key.source == "minilm":
            st.caption(
                "The built-in model's head was trained here on top of a frozen encoder and is weak: it is right on about "
                "60% of held-out pairs (chance is 50%) and cannot tell the order of two related sentences "
                "(bert/weights/MODEL_CARD.md). bert-base-uncased's own head is far better."
            )
        if typed_pair and st.toggle("Which tokens drove it?", **state.kept("tasks_explain_nsp")):
            explain("nsp", 0 if result.follows >= 0.5 else 1, ("in order", "swapped") if sentence_order else NEXT_SENTENCE_LABELS)

if "classifier" in outputs:
    st.subheader("Classes")
    planned = sentence_tasks.computations(sentence_tasks.Settings.from_state(st.session_state, context))
    table = heavy.run(context, *planned["classes"])
    if table is None:
        st.stop()
    labels = list(table["label"])
    top = sentence_tasks.chosen_class(table, None)
    chosen = st.selectbox("Explain the class", labels, **state.kept("tasks_class", labels, top))
    settings = sentence_tasks.Settings.from_state(st.session_state, context)
    widgets.show_chart(sentence_tasks.view(settings, context, {"classes": table})["classes"], key="classes")
    if legend := label_legend(labels):
        show.caption("What the labels mean: {}", legend)  # only our own words and codes
    explain("classifier", labels.index(chosen), labels)

if "tagger" in outputs:
    st.subheader("Token labels")
    table = heavy.run(context, sentence_tasks.TOKEN_LABELS, sentence_tasks.TokenLabelsWork())
    if table is None:
        st.stop()
    st.markdown(sentence_tasks.label_chips(table), unsafe_allow_html=True)  # tokens and labels escaped in label_chips
    st.caption("Each token's most likely label and its probability; [CLS] and [SEP] are left out.")
    if legend := label_legend(model.labels):
        show.caption("What the labels mean: {}", legend)  # only our own words and codes
    st.download_button("CSV of the token labels", table.drop(columns="special").to_csv(index=False), "token_labels.csv",
                       "text/csv", key="csv_token_labels", icon=":material/download:", type="tertiary")
    words = [int(i) for i in table.loc[~table["special"], "position"]]
    if words:
        position = widgets.select_int("Which tokens drove the label of", "tasks_tag_token", words, default=words[0],
                                      format_func=lambda i: f"{i}: {table.at[i, 'token']} ({table.at[i, 'label']})")
        explain("tagger", model.labels.index(table.at[position, "label"]), model.labels, position)

missing = [output for output in ("nsp", "classifier", "tagger") if output not in outputs]
if missing:
    names = {"nsp": "next-sentence prediction", "classifier": "classes", "tagger": "token labels"}
    show.caption("{}", joined(" · ", (markdown("For {}, pick {}.", names[h], sentence_tasks.WHICH_MODEL[h])
                                      for h in missing)))
