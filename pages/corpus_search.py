"""Corpus search: the tokens of a corpus whose vectors are nearest to a token of your sentence, layer by layer."""
import pandas as pd
import streamlit as st

from bert.analysis.corpus.batching import residual_names
from bert.layers import head_label, layer_labels
from bert.errors import BertError
from viz_app.app import analysis_widgets, show
from viz_app.specs import corpus_search
from viz_app import heavy
from viz_app.app import uploads
from viz_app.app import state, widgets
from viz_app.app.text import chip_labels, escape_markdown

widgets.page_header(
    "Corpus search",
    "Where else does the model see a word the way it sees it here? Click a token of your sentence: the page finds "
    "the tokens of a set of sentences whose vectors are closest to it (cosine similarity) at the layer you pick, "
    "and shows each in its sentence. At the embeddings a word mostly finds itself; higher up, context counts.",
)
context = widgets.require()
loaded = context.loaded

choice = st.radio("Search in", [analysis_widgets.BUILTIN, analysis_widgets.UPLOAD], horizontal=True,
                  **state.kept("search_corpus", [analysis_widgets.BUILTIN, analysis_widgets.UPLOAD]))
if choice == analysis_widgets.UPLOAD:
    upload = uploads.upload_box(f"A .txt file, one sentence per line: at most {corpus_search.MAX_LINES:,} lines and "
                                f"{corpus_search.MAX_TOKENS:,} tokens", ["txt"], "search_file", uploads.TEXT_BYTES)
    if upload is None:
        show.info("Choose a .txt file with one sentence per line (at most {:,} lines and {:,} tokens) to search your "
                  "own text.", corpus_search.MAX_LINES, corpus_search.MAX_TOKENS)
        st.stop()
    text = uploads.read_text(upload)
    corpus = None if text is None else corpus_search.upload_corpus(text, upload.name, loaded.tokenizer, loaded.summary.max_positions)
    if isinstance(corpus, str):
        show.warning("{}", corpus)
    if not isinstance(corpus, corpus_search.Corpus):
        st.stop()
else:
    counts = list(corpus_search.BUILTIN_COUNTS)
    count = st.select_slider("How many built-in sentences to search", counts, **state.kept("search_count", counts))
    corpus = corpus_search.builtin_corpus(count)
    if count < counts[-1]:
        show.caption("The first {} of the {} sentences are searched, so the first answer comes quickly; more sentences "
                     "find more matches and take longer to index (about {:.0f}× as long for all of them).", count,
                     counts[-1], counts[-1] / count)

encoding = context.prepared.base.first_sentence()  # the query: the first sentence, as the sentence box read it
if context.prepared.pair.strip():
    st.caption("The search reads the first sentence only; the second sentence is left out.")
query_tokens = corpus_search.query_tokens(encoding, context.prepared.text)
tokens = {t.position: t for t in query_tokens}
labels = chip_labels(encoding.tokens, list(tokens))
position = st.pills(f"Click a token of your sentence ({escape_markdown(context.loaded.tokenizer.pieces.marker_note)})", list(tokens),
                    format_func=labels.get, required=True,
                    **state.kept("search_position", list(tokens), corpus_search.default_position(query_tokens)))
query = tokens[position]
st.html(f"<p>Your token in its sentence: {corpus_search.highlighted_in(context.prepared.text, encoding, position)}</p>")
residual = dict(enumerate(residual_names(loaded.model)))  # hidden_states index -> "embeddings", "after layer 0", ...
heads_of = dict(enumerate(layer_labels(loaded.model.config.num_layers)))  # a layer (from 0) -> "layer 0", ...
by = st.radio("Compare tokens by", list(corpus_search.COMPARE_BY), horizontal=True, format_func=corpus_search.COMPARE_BY.get,
              **state.kept("search_by", list(corpus_search.COMPARE_BY)))
names = residual if by == corpus_search.LAYER_OUTPUT else heads_of
layers = list(names)
columns = st.columns([3, 1])
layer = columns[0].select_slider("Layer", layers, format_func=names.get, **state.kept("search_layer", layers, layers[-1]))
k = columns[1].slider("Matches", 5, 50, **state.kept("search_k", range(5, 51)))
head = 0
if by == corpus_search.HEAD_OUTPUT:
    heads = list(range(loaded.model.config.num_heads))
    head = st.select_slider("Head", heads, **state.kept("search_head", heads))
    show.caption("Each head of {} adds up the words it attends to into a small vector of its own ({} numbers) before "
                 "the layer mixes the heads: the search compares those vectors.", names[layer],
                 loaded.model.config.hidden_size // len(heads))

settings = corpus_search.Settings(corpus, position, by, layer, k, head if by == corpus_search.HEAD_OUTPUT else 0)
try:  # only the index this view needs: every layer's output, or this layer's heads (built once, then shared by all)
    index = heavy.run(context, corpus_search.INDEX, corpus_search.index_work(settings))
    found = None if index is None else heavy.run(context, *corpus_search.computations(settings, index)["search"])
except BertError as error:
    show.warning("That text cannot be indexed: {}.", error)
    st.stop()
if found is None:
    st.stop()
show.caption("Searching {:,} tokens of {}.", len(index), corpus.name)
hits = found[layer] if by == corpus_search.LAYER_OUTPUT else found[head]
where = ("at the embeddings" if layer == 0 else names[layer]) if by == corpus_search.LAYER_OUTPUT else f"at {head_label(layer, head)}"
summary = corpus_search.summarize(hits, query.word)
shown = query.word
show.markdown("**{} of {}** matches {} are “{}” itself; {} different word(s).", summary.same_word, len(hits), where,
              shown, len(summary.words))
charts = corpus_search.view(settings, context, {"search": found})
left, right = st.columns([3, 2])
with left:
    st.html("<ol>" + "".join(
        f"<li><code>{hit.cosine:.3f}</code> {corpus_search.highlighted(index.sentences[hit.sentence_index], loaded.tokenizer, hit.position)}</li>"
        for hit in hits) + "</ol>")
with right:
    widgets.show_chart(charts["search_words"], key="search_words")
    st.dataframe(pd.DataFrame({"part of speech": list(summary.parts_of_speech),
                               "matches": list(summary.parts_of_speech.values())}), hide_index=True)
    show.caption("Parts of speech are known for the headword of each built-in sentence (from WordNet); other tokens "
                 "are “unknown”. Positions of the matches in their sentences ([CLS] = 0): {}.",
                 ", ".join(f"{p} ({n})" for p, n in sorted(summary.positions.items())))
table = pd.DataFrame([{"rank": rank, "cosine": hit.cosine, "token": hit.token, "word": hit.word,
                       "part of speech": hit.part_of_speech or "", "position": hit.position,
                       "sentence": index.sentences[hit.sentence_index]} for rank, hit in enumerate(hits, 1)])
st.dataframe(table, hide_index=True)
widgets.show_chart(charts["search_by_layer"], key="search_by_layer" if by == corpus_search.LAYER_OUTPUT else "search_by_head")
