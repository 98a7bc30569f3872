"""One word, many contexts: how alike are a word's vectors in different sentences, layer by layer (Ethayarajh 2019)."""
import streamlit as st

from bert.analysis.representations.self_similarity import ETHAYARAJH_2019, ETHAYARAJH_2019_SOURCE, EXAMPLES, WordNotFoundError
from bert.errors import BertError
from viz_app import cache, page_costs
from viz_app.server import heavy
from viz_app.app import url_params as params, state, widgets
from viz_app.specs import word_contexts
from viz_app.charts.token_matrix import token_heatmap
from viz_app.charts.word_contexts import self_similarity_chart
from viz_app.app.text import escape_markdown

widgets.page_header(
    "One word, many contexts",
    "A word gets a new vector in every sentence. How alike are a word's vectors in different sentences, layer by "
    "layer? Type a word and a few sentences that use it; the chart compares them at every layer, beside how alike "
    "any two random words are at that layer.",
)
context = widgets.require(needs_input=False)


def use_example() -> None:
    word = st.session_state.get("contexts_example")
    if word in EXAMPLES:
        st.session_state["contexts_word"] = word
        st.session_state["contexts_sentences"] = "\n".join(EXAMPLES[word])


st.selectbox("Start from an example", list(EXAMPLES), index=None, key="contexts_example", on_change=use_example,
             placeholder="Pick one to fill in the word and the sentences")
left, right = st.columns([1, 3])
word = left.text_input("Word", max_chars=50, **state.kept("contexts_word")).strip()
text = right.text_area(f"Sentences that use it, one per line (2 to {word_contexts.MAX_SENTENCES})", height=170,
                       max_chars=params.MAX_URL_TEXT, **state.kept("contexts_sentences"))
sentences = word_contexts.sentence_lines(text)
if not word:
    st.info("Type the word to follow, for example “bank”.")
    st.stop()
if len(sentences) < 2:
    st.info("Type at least two sentences that use the word, one per line.")
    st.stop()
if len(sentences) > word_contexts.MAX_SENTENCES:
    st.warning(f"That is {len(sentences)} sentences; this page compares at most {word_contexts.MAX_SENTENCES}. Remove some.")
    st.stop()
key = context.key
cost, baseline_cost = page_costs.word_contexts(context.loaded, sentences), cache.per_model_cost(key, "anisotropy_baseline")
if not (heavy.allowed(context, cost, "word_contexts") and heavy.allowed(context, baseline_cost, "word_contexts_baseline")):
    st.stop()
try:
    with heavy.job(context, cost, "Running the sentences"):
        result = cache.word_in_contexts(key, word, tuple(sentences))
    with heavy.job(context, baseline_cost, "Measuring the baseline on the built-in sentences (once per model)"):
        base = cache.anisotropy_baseline(key)
except WordNotFoundError as error:
    st.warning(f"“{escape_markdown(word)}” is not a word of sentence {error.sentence_index + 1}: "
               f"“{escape_markdown(error.sentence)}”. Use the word as it is written in every sentence (capital "
               "letters do not matter; “banks” is not “bank”), or remove that sentence.")
    st.stop()
except BertError as error:  # a sentence, or a built-in one, longer than the model's positions
    st.warning(f"The model cannot read these sentences: {escape_markdown(str(error))}.")
    st.stop()
shown = escape_markdown(word)
widgets.show_chart(self_similarity_chart(word, result.layers, result.self_similarity, base), key="self_similarity")
st.markdown(word_contexts.reading(shown, result, base))
split = {" ".join(pieces) for pieces in result.pieces if len(pieces) > 1}
if split:
    st.caption(f"The model reads “{shown}” as several word pieces ({escape_markdown(', '.join(sorted(split)))}): "
               "its vector in a sentence is the average of its pieces' vectors.")
st.caption(f"Baseline: {word_contexts.BASELINE_SAMPLES:,} random pairs of tokens from the first {word_contexts.BASELINE_SENTENCES} built-in "
           "sentences ([CLS] and [SEP] left out). In a sentence that uses the word twice, its first use counts.")

st.subheader("Which sentences are alike?")
options = list(range(len(result.layers)))
layer = st.select_slider("Layer", options, format_func=lambda i: result.layers[i],
                         **state.kept("contexts_layer", options, options[-1]))
labels = [f"{i + 1}. {s[:28]}…" if len(s) > 28 else f"{i + 1}. {s}" for i, s in enumerate(sentences)]
widgets.show_chart(token_heatmap(
    result.cosines[layer], labels, f"Cosine similarity of '{word}' between sentences, {result.layers[layer]}",
    "word_contexts_cosines", "Each cell: how alike the word's vectors in two sentences are at this layer. Sentences "
    "that use the word in the same sense should be more alike in the upper layers."), key="contexts_cosines")

st.info(f"**What Ethayarajh found.** {ETHAYARAJH_2019} ({ETHAYARAJH_2019_SOURCE}.)\n\n**What we find.** {word_contexts.OUR_FINDING}")
