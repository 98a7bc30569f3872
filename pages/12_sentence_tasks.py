"""Sentence tasks: next-sentence prediction, a fine-tuned classifier's classes (and what drove them), token labels."""
import streamlit as st

from bert.analysis.attribution.saliency import METHODS, NEXT_SENTENCE_LABELS
from viz_app import analysis_widgets as aw
from viz_app import sentence_tasks as tasks
from viz_app import cache, state, widgets
from viz_app.charts.saliency import saliency_chart
from viz_app.charts.sentence_tasks import probability_chart
from viz_app.label_names import label_legend

widgets.page_header(
    "Sentence tasks",
    "BERT's sentence-level jobs read the [CLS] token's final vector: whether sentence B follows sentence A "
    "(next-sentence prediction, a pre-training task), or a class a fine-tuned model was trained to give. A token "
    "classifier labels every token instead. Which of these a model can do depends on the heads it has.",
)
context = widgets.require()
model, key = context.loaded.model, aw.model_key(context)
encoding = context.prepared.base
heads = model.sentence_heads
if not heads:
    st.warning(
        "This model has no sentence-level head. For \"does B follow A?\" pick "
        f"{tasks.WHICH_MODEL['next_sentence']}; for classes, {tasks.WHICH_MODEL['classify']}."
    )
    st.stop()


chosen_method = []  # the method picker is drawn once, by the first section that explains


def explain(head: str, target: int, labels) -> None:
    """Which input tokens, and which embedding part, pushed the model towards `target`."""
    if not chosen_method:
        state.clamp("tasks_method", list(METHODS))
        chosen_method.append(st.radio("Attribution method", METHODS, horizontal=True, key="tasks_method",
                                      persist_state="session", format_func=lambda m: m.replace("_", " ")))
    method = chosen_method[0]
    result = cache.saliency(*key, encoding, method, 0, target, 32, head)
    widgets.show_chart(saliency_chart(result), key=f"saliency_{head}")
    st.caption(
        f"Attributions of log p('{widgets.escape_markdown(labels[target])}') to each token's token, position and segment "
        "embeddings (the Saliency page explains the methods). Bars above zero pushed towards this answer."
    )


if "next_sentence" in heads:
    st.subheader("Does B follow A?")
    if not context.pair.strip() or context.prepared.pair_dropped:
        st.info("Type a second sentence (segment B) at the top: the model then says whether it follows the first.")
    else:
        result = cache.next_sentence(*key, context.text, context.pair, context.truncate)
        typed, swapped = st.columns(2)
        typed.metric("P(B follows A), as typed", f"{result.follows:.1%}")
        swapped.metric("P(A follows B), swapped", f"{result.swapped:.1%}")
        st.caption(
            "Pre-training showed BERT pairs where B was the true next sentence half of the time and a random sentence "
            "otherwise; the swapped pair (B first) is the question sentence-order prediction (ALBERT) asks instead."
        )
        if context.source == "minilm":
            st.caption(
                "The built-in model's head was trained here on top of a frozen encoder and is weak: it is right on about "
                "60% of held-out pairs (chance is 50%) and cannot tell the order of two related sentences "
                "(bert/weights/MODEL_CARD.md). bert-base-uncased's own head is far better."
            )
        if st.toggle("Which tokens drove it?", key="tasks_explain_nsp"):
            explain("next_sentence", 0 if result.follows >= 0.5 else 1, NEXT_SENTENCE_LABELS)

if "classify" in heads:
    st.subheader("Classes")
    table = cache.class_probabilities(*key, encoding)
    labels = list(table["label"])
    top = labels[int(table["probability"].argmax())]
    chosen = st.selectbox("Explain the class", labels, index=labels.index(top), key="tasks_class", bind="query-params",
                          persist_state="session")
    widgets.show_chart(probability_chart(table, chosen), key="classes")
    if legend := label_legend(labels):
        st.caption(f"What the labels mean: {legend}")  # only our own words and codes
    explain("classify", labels.index(chosen), labels)

if "tag" in heads:
    st.subheader("Token labels")
    table = cache.token_labels(*key, encoding)
    st.markdown(tasks.label_chips(table), unsafe_allow_html=True)  # tokens and labels escaped in label_chips
    st.caption("Each token's most likely label and its probability; [CLS] and [SEP] are left out.")
    if legend := label_legend(model.labels):
        st.caption(f"What the labels mean: {legend}")  # only our own words and codes
    st.download_button("CSV of the token labels", table.drop(columns="special").to_csv(index=False), "token_labels.csv",
                       "text/csv", key="csv_token_labels", icon=":material/download:", type="tertiary")

missing = [head for head in ("next_sentence", "classify", "tag") if head not in heads]
if missing:
    names = {"next_sentence": "next-sentence prediction", "classify": "classes", "tag": "token labels"}
    st.caption(" · ".join(f"For {names[h]}, pick {tasks.WHICH_MODEL[h]}." for h in missing))
