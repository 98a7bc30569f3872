"""One word, many contexts: how alike are a word's vectors in different sentences, layer by layer (Ethayarajh 2019).
The page lays out the widgets; what it computes and draws is its spec, viz_app/specs/word_contexts.py."""
import dataclasses

import streamlit as st

from bert.analysis.representations.self_similarity import ETHAYARAJH_2019, ETHAYARAJH_2019_SOURCE, EXAMPLES, WordNotFoundError
from bert.errors import BertError
from viz_app import heavy
from viz_app.app import url_params as params, state, widgets
from viz_app.app import show
from viz_app.specs import word_contexts

widgets.page_header(
    "One word, many contexts",
    "A word gets a new vector in every sentence. How alike are a word's vectors in different sentences, layer by "
    "layer? Type a word and a few sentences that use it; the chart compares them at every layer, beside how alike "
    "any two random words are at that layer.",
)
context = widgets.require(needs_input=False)


def example(word: str | None) -> dict:
    """The word and its sentences, for the example picked."""
    return {"contexts_word": word, "contexts_sentences": "\n".join(EXAMPLES[word])} if word in EXAMPLES else {}


st.selectbox("Start from an example", list(EXAMPLES), index=None, **state.filling("contexts_example", example),
             placeholder="Pick one to fill in the word and the sentences")
left, right = st.columns([1, 3])
left.text_input("Word", max_chars=50, **state.kept("contexts_word"))
right.text_area(f"Sentences that use it, one per line (2 to {word_contexts.MAX_SENTENCES})", height=170,
                max_chars=params.MAX_URL_TEXT, **state.kept("contexts_sentences"))
settings = word_contexts.Settings.from_state(st.session_state, context)
if settings.problem:
    (st.warning if len(settings.sentences) > word_contexts.MAX_SENTENCES else st.info)(settings.problem)
    st.stop()
results = {}
try:
    for name, (computation, work) in word_contexts.computations(settings).items():
        results[name] = heavy.run(context, computation, work)
        if results[name] is None:  # over the budget: the page has said why
            st.stop()
except WordNotFoundError as error:
    show.warning("“{}” is not a word of sentence {}: “{}”. Use the word as it is written in every sentence (capital "
                 "letters do not matter; “banks” is not “bank”), or remove that sentence.", settings.word,
                 error.sentence_index + 1, error.sentence)
    st.stop()
except BertError as error:  # a sentence, or a built-in one, longer than the model's positions
    show.warning("The model cannot read these sentences: {}.", error)
    st.stop()
result, base = results["contexts"], results["baseline"]
shown = settings.word
charts = word_contexts.view(settings, context, results)
widgets.show_chart(charts["self_similarity"], key="self_similarity")
show.markdown("{}", word_contexts.reading(shown, result, base))
split = {" ".join(pieces) for pieces in result.pieces if len(pieces) > 1}
if split:
    show.caption("The model reads “{}” as several word pieces ({}): its vector in a sentence is the average of its "
                 "pieces' vectors.", shown, ', '.join(sorted(split)))
show.caption("Baseline: {:,} random pairs of tokens from the first {} built-in sentences ([CLS] and [SEP] left out). "
             "In a sentence that uses the word twice, its first use counts.", word_contexts.BASELINE_SAMPLES,
             word_contexts.BASELINE_SENTENCES)

st.subheader("Which sentences are alike?")
options = list(range(len(result.layers)))
layer = st.select_slider("Layer", options, format_func=lambda i: result.layers[i],
                         **state.kept("contexts_layer", options, options[-1]))
widgets.show_chart(word_contexts.view(dataclasses.replace(settings, layer=layer), context, results)["cosines"],
                   key="contexts_cosines")

show.info("**What Ethayarajh found.** {} ({}.)\n\n**What we find.** {}", ETHAYARAJH_2019, ETHAYARAJH_2019_SOURCE,
          word_contexts.OUR_FINDING)
