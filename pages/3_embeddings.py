"""Embeddings: do token, position and segment embeddings split the hidden space like a concatenation, or overlap?"""
import numpy as np
import streamlit as st

from bert.analysis.representations.embedding_subspaces import PAIRS, decompose
from viz_app import cache, widgets
from viz_app.charts import embeddings as charts
from viz_app.tables import project_tokens
from viz_app.text import subspace_reading

widgets.page_header(
    "Embeddings",
    "BERT's input vector for a token is token embedding + position embedding + segment embedding, summed (then "
    "LayerNorm). Does the model keep the three in separate directions, as if they were "
    "concatenated, or do they overlap? The hidden dimensions are not a privileged basis, so we look for "
    "separate subspaces in any rotation.",
)
context = widgets.require()
result = context.forward()
tokens = result.tokens
summary = context.loaded.summary

st.subheader("1 · This sentence, token by token")
parts = decompose(result.embeddings["token"], result.embeddings["position"], result.embeddings["segment"])
st.caption(
    "Left: how long each part is. Right: the cosine between parts. If the parts lived in separate subspaces "
    "(a concatenation), every cosine would be 0 and the overlap share of |sum|² would be 0."
)
left, right = st.columns(2)
with left:
    widgets.show_chart(charts.part_norms(parts, tokens), key="norms")
with right:
    widgets.show_chart(charts.part_cosines(parts, tokens), key="cosines")
mean_cosines = {pair: float(np.abs(parts.cosines[pair]).mean()) for pair in PAIRS}
random_cosine = np.sqrt(2 / np.pi / summary.hidden)  # mean |cosine| of two random directions
st.markdown(
    "Mean |cosine| over this sentence: "
    + ", ".join(f"{a}–{b} **{value:.2f}**" for (a, b), value in mean_cosines.items())
    + f". Random directions in {summary.hidden} dimensions would give about **{random_cosine:.2f}**."
)

st.subheader("2 · The embedding tables")
tables = cache.tables(context.source, context.folder, context.revision)
st.caption(
    "Left: how many principal components it takes to explain each table's variance; a table squeezed into few "
    "directions leaves room for the others. Right: every position embedding in its table's first two principal "
    "components, joined in order; the positions of this input are circled."
)
left, right = st.columns(2)
with left:
    variance = charts.explained_variance(tables.token_variance, tables.position_variance, tables.hidden)
    widgets.show_chart(variance, key="variance")
with right:
    widgets.show_chart(charts.position_curve(tables.position_coords, len(tokens)), key="position_curve")
left, right = st.columns(2)
with left:
    widgets.show_chart(charts.position_cosines(tables.position_cosines), key="position_cosines")
    st.caption("Nearby positions have similar embeddings (the band along the diagonal): position varies smoothly.")
with right:
    coords = project_tokens(tables, result.embeddings["token"])
    scatter = charts.token_scatter(tables.sample_tokens, tables.sample_coords, tokens, coords)
    widgets.show_chart(scatter, key="token_scatter")
    st.caption("Grey: a fixed random sample of vocabulary words; red: this sentence's tokens.")

st.subheader("3 · Separate subspaces or shared ones?")
k = st.slider(
    "Directions per table (k)",
    1,
    min(64, summary.hidden),
    value=min(16, summary.hidden),
    key="k",
    bind="query-params",
    persist_state="session",
    help="Each table's subspace is spanned by its top-k singular vectors (the segment table has 2 rows: at most 2).",
)
report = cache.subspaces(context.source, context.folder, context.revision, k)
st.caption(
    "Principal angles measure how two subspaces sit: 0° = a shared direction, 90° = perpendicular. Dotted lines: "
    "two random subspaces of the same sizes. Then: the share of each table's vectors (|Px|/|x|) that lies inside "
    "another table's subspace; a concatenation would give 0% off the diagonal."
)
left, right = st.columns([3, 2])
with left:
    widgets.show_chart(charts.angle_curves(report), key="angles")
with right:
    widgets.show_chart(charts.surviving_matrix(report), key="surviving")
st.markdown(subspace_reading(report))
st.caption(
    f"The two segment embeddings have cosine {tables.segment_cosine:.2f} with each other; the token table spreads its "
    f"variance over many directions (its first component holds {tables.token_variance[0]:.1%}), the position table "
    f"over few (its first holds {tables.position_variance[0]:.0%}). Try other k with the slider."
)
widgets.download_view("Embeddings", "embeddings_view")
