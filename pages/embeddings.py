"""Embeddings: do token, position and segment embeddings split the hidden space like a concatenation, or overlap?
The page lays out the widgets; what it computes and draws is its spec, viz_app/specs/embeddings.py."""
import numpy as np
import streamlit as st

from viz_app import cache
from viz_app.app import show, state, widgets
from viz_app.app.text import joined, markdown
from viz_app import heavy
from viz_app.specs import embeddings as spec

widgets.page_header(
    "Embeddings",
    "BERT's input vector for a token is token embedding + position embedding + segment embedding, summed (then "
    "LayerNorm). Does the model keep the three in separate directions, as if they were "
    "concatenated, or do they overlap? The hidden dimensions are not a privileged basis, so we look for "
    "separate subspaces in any rotation.",
)
context = widgets.require()
if (why := spec.refusal(context.loaded.model.config)) is not None:
    show.info("{}", why)
    st.stop()
summary = context.loaded.summary
recorded = heavy.run(context, *spec.computations(spec.Settings())["recorded"])
if recorded is None:
    st.stop()  # over the budget: the page has said why
tables = cache.tables(context.key)  # the tables' analysis: no forward pass, once per model

st.subheader("1 · This sentence, token by token")
st.caption(
    "Left: how long each part is. Right: the cosine between parts. If the parts lived in separate subspaces "
    "(a concatenation), every cosine would be 0 and the overlap share of |sum|² would be 0."
)
sentence_left, sentence_right = st.columns(2)
random_cosine = np.sqrt(2 / np.pi / summary.hidden)  # mean |cosine| of two random directions
show.markdown("Mean |cosine| over this sentence: {}. Random directions in {} dimensions would give about **{:.2f}**.",
              joined(", ", (markdown("{}–{} **{:.2f}**", a, b, value)
                            for (a, b), value in spec.mean_cosines(recorded).items())),
              summary.hidden, random_cosine)

st.subheader("2 · The embedding tables")
st.caption(
    "Left: how many principal components it takes to explain each table's variance; a table squeezed into few "
    "directions leaves room for the others. Right: every position embedding in its table's first two principal "
    "components, joined in order; the positions of this input are circled."
)
tables_top = st.columns(2)
tables_bottom = st.columns(2)

st.subheader("3 · Separate subspaces or shared ones?")
k = st.slider(
    "Directions per table (k)",
    1,
    spec.largest_k(summary),
    **state.kept("k", range(1, spec.largest_k(summary) + 1)),  # a smaller model: all its directions
    help="Each table's subspace is spanned by its top-k singular vectors (the segment table has 2 rows: at most 2).",
)
report = cache.subspaces(context.key, k)
charts = spec.view(spec.Settings(k), context, {"recorded": recorded, "tables": spec.TableAnalysis(tables, report)})
with sentence_left:
    widgets.show_chart(charts["norms"], key="norms")
with sentence_right:
    widgets.show_chart(charts["cosines"], key="cosines")
with tables_top[0]:
    widgets.show_chart(charts["variance"], key="variance")
with tables_top[1]:
    widgets.show_chart(charts["position_curve"], key="position_curve")
with tables_bottom[0]:
    widgets.show_chart(charts["position_cosines"], key="position_cosines")
    st.caption("Nearby positions have similar embeddings (the band along the diagonal): position varies smoothly.")
with tables_bottom[1]:
    widgets.show_chart(charts["token_scatter"], key="token_scatter")
    st.caption("Grey: a fixed random sample of vocabulary words; red: this sentence's tokens.")
st.caption(
    "Principal angles measure how two subspaces sit: 0° = a shared direction, 90° = perpendicular. Dotted lines: "
    "two random subspaces of the same sizes. Then: the share of each table's vectors (|Px|/|x|) that lies inside "
    "another table's subspace; a concatenation would give 0% off the diagonal."
)
left, right = st.columns([3, 2])
with left:
    widgets.show_chart(charts["angles"], key="angles")
with right:
    widgets.show_chart(charts["surviving"], key="surviving")
show.markdown("{}", spec.subspace_reading(report))
segments = ("This model has one segment embedding, added to every token alike" if np.isnan(tables.segment_cosine)
            else f"The two segment embeddings have cosine {tables.segment_cosine:.2f} with each other")
show.caption("{}; the token table spreads its variance over many directions (its first component holds {:.1%}), the "
             "position table over few (its first holds {:.0%}). Try other k with the slider.", segments,
             tables.token_variance[0], tables.position_variance[0])
widgets.download_view("Embeddings", "embeddings_view")
