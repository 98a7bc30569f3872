"""Shared pieces of the analysis pages (probes, logit lens, ablation, rollout, corpus head statistics, saliency):
cached calls into bert.analysis, and the plotly charts they draw. The analyses themselves live in the package.

Cached results are keyed by the model (source, folder, revision) and the inputs, never by the model object.
"""
from __future__ import annotations

import hashlib
import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from bert.analysis import ablation, head_stats, probes, rollout
from bert.data import LabelledSentence, builtin_sentences, split_sentences
from bert.devices import as_numpy
from viz_app import cache, state
from viz_app.charts.base import ATTENTION_SCALE, HIGHLIGHT_COLOUR, PART_COLOURS, Chart, heatmap_height, layout, legend_on_top, token_labels
from viz_app.sidebar import Context

MAX_UPLOAD_BYTES = 2_000_000
BUILTIN = "Built-in sentences (WordNet examples)"
UPLOAD = "Upload a .txt file"


def model_key(context: Context) -> tuple:
    return context.source, context.folder, context.revision


# ---- sentence sets --------------------------------------------------------------------------------------------


def sentence_source(key: str, most: int = 1000, choice: str | None = None) -> tuple[list[LabelledSentence], str] | None:
    """The sentence-set picker: built-in (first N, N's default in state.PARAMS[f"{key}_count"]) or an uploaded
    text file split into sentences. `choice` (BUILTIN or UPLOAD): a page that draws its own picker says which.
    Returns (sentences, a one-line description) or None after showing what is missing."""
    choice = choice or st.radio("Sentences", [BUILTIN, UPLOAD], key=f"{key}_source", horizontal=True)
    if choice == BUILTIN:
        high = min(most, len(builtin_sentences()))
        state.clamp_range(f"{key}_count", 20, high, step=10)
        count = st.slider("How many", 20, high, step=10, key=f"{key}_count", persist_state="session")
        return builtin_sentences(count), f"the first {count} built-in sentences"
    upload = st.file_uploader("A plain-text file: one sentence per line, or running text", type=["txt"], key=f"{key}_file")
    if upload is None:
        st.info("Choose a .txt file to probe your own text.")
        return None
    text = read_upload(upload)
    if text is None:
        return None
    sentences = split_sentences(text, max_sentences=most)
    if len(sentences) < 10:
        st.warning(f"Found {len(sentences)} sentence(s) in that file; the analyses need at least 10.")
        return None
    return sentences, f"{len(sentences)} sentences from {html.escape(upload.name)}"


def read_upload(upload, most_bytes: int = MAX_UPLOAD_BYTES) -> str | None:
    """An uploaded file's text, or None after a message: too large (checked before decoding), not UTF-8, empty."""
    size = upload.size
    if size > most_bytes:
        st.warning(f"That file is {size:,} bytes; the limit is {most_bytes:,} bytes. Upload a shorter text.")
        return None
    try:
        text = upload.getvalue().decode("utf-8")
    except UnicodeDecodeError:
        st.warning("That file is not UTF-8 text. Save it as plain UTF-8 text and upload it again.")
        return None
    if not text.strip():
        st.warning("That file is empty. Upload a .txt file with some sentences in it.")
        return None
    return text


def _digest(sentences: list[LabelledSentence]) -> str:
    return hashlib.sha1("\n".join(f"{s.text}\t{s.pos}\t{s.start}" for s in sentences).encode()).hexdigest()


# ---- cached analyses ------------------------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs={list: lambda s: _digest(s)})
def probe_report(source, folder, revision, sentences: list, tasks: tuple[str, ...], seed: int) -> probes.ProbeReport:
    loaded = cache.load_model(source, folder, revision)
    bar = st.progress(0.0, "Starting…")
    report = probes.run_probes(loaded.model, loaded.tokenizer, sentences, tasks, seed=seed,
                               progress=lambda done, what: bar.progress(min(done, 1.0), what))
    bar.empty()
    return report


@st.cache_data(show_spinner="Averaging every head's output over 200 built-in sentences (once per model)…", max_entries=4)
def mean_head_outputs(source, folder, revision) -> np.ndarray:
    loaded = cache.load_model(source, folder, revision)
    return as_numpy(ablation.mean_head_outputs(loaded.model, loaded.tokenizer, builtin_sentences(200)))


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs={list: lambda s: _digest(s)})
def corpus_statistics(source, folder, revision, sentences: list, pairs: bool):
    loaded = cache.load_model(source, folder, revision)
    bar = st.progress(0.0, "Starting…")
    result = head_stats.corpus_head_statistics(loaded.model, loaded.tokenizer, sentences, pairs=pairs,
                                              progress=lambda done, what: bar.progress(min(done, 1.0), what))
    bar.empty()
    return result


@st.cache_data(show_spinner="Solving the max-flow problems…", max_entries=16)
def attention_flow(attention: np.ndarray, layer: int) -> np.ndarray:
    return rollout.attention_flow(rollout.head_average(attention), layer=layer)


# ---- charts ---------------------------------------------------------------------------------------------------


def probe_accuracy_chart(report: probes.ProbeReport) -> Chart:
    figure = go.Figure()
    rows = []
    palette = ["#3b6fb6", "#e08a2e", "#2ca02c", "#9467bd", "#8c564b", "#d62728", "#17becf"]
    for colour, (task, result) in zip(palette, report.results.items()):
        x = result.layer_names
        figure.add_scatter(x=x, y=result.accuracy, name=f"{task}", mode="lines+markers", line=dict(color=colour))
        figure.add_scatter(x=x, y=result.control_accuracy, name=f"{task} (control)", mode="lines",
                           line=dict(color=colour, dash="dash"), opacity=0.7)
        for layer, a, c in zip(x, result.accuracy, result.control_accuracy):
            rows.append({"task": task, "layer": layer, "accuracy": a, "control_accuracy": c, "selectivity": a - c,
                         "majority_baseline": result.majority_accuracy})
    layout(figure, "Held-out probe accuracy by layer (dashed: control task)", height=420,
           yaxis=dict(title="accuracy", range=[0, 1.02], tickformat=".0%"), **legend_on_top())
    return Chart(figure, pd.DataFrame(rows), "probe_accuracy",
                 "Solid: the probe on the real labels. Dashed: the same probe on random labels fixed per word type "
                 "(Hewitt & Liang's control task). The gap between them is the selectivity.")


def selectivity_chart(report: probes.ProbeReport) -> Chart:
    figure = go.Figure()
    rows = []
    for task, result in report.results.items():
        figure.add_bar(x=result.layer_names, y=result.selectivity, name=task)
        rows += [{"task": task, "layer": l, "selectivity": s} for l, s in zip(result.layer_names, result.selectivity)]
    layout(figure, "Selectivity = accuracy - control accuracy", height=360,
           yaxis=dict(title="selectivity", tickformat=".0%"), barmode="group", **legend_on_top())
    return Chart(figure, pd.DataFrame(rows), "probe_selectivity")


def lens_chart(lens, tokens: list[str]) -> Chart:
    names = [layer.name for layer in lens.layers]
    figure = go.Figure()
    figure.add_scatter(x=names, y=[layer.final_rank for layer in lens.layers], name="rank (left axis)", mode="lines+markers")
    figure.add_scatter(x=names, y=[layer.final_probability for layer in lens.layers], name="probability (right axis)",
                       mode="lines+markers", yaxis="y2")
    final = html.escape(lens.final.token, quote=False)
    layout(figure, f"Where '{lens.final.token}' (the final prediction at position {lens.position}) ranks, layer by layer",
           height=380, yaxis=dict(title="rank (1 = top)", type="log", autorange="reversed"),
           yaxis2=dict(title="probability", overlaying="y", side="right", range=[0, 1], tickformat=".0%",
                       tickvals=[0, 0.25, 0.5, 0.75, 1], showgrid=False),
           **legend_on_top())
    data = pd.DataFrame({"layer": names, "rank": [l.final_rank for l in lens.layers],
                         "probability": [l.final_probability for l in lens.layers], "final_prediction": final})
    return Chart(figure, data, f"logit_lens_{lens.position}",
                 "The LM head read at every layer's residual stream: rank 1 means that layer would already predict it.")


def head_effect_heatmap(ranking: ablation.HeadRanking) -> Chart:
    effect = as_numpy(ranking.effect)
    layers, heads = effect.shape
    bound = float(np.abs(effect).max()) or 1.0
    figure = go.Figure(go.Heatmap(
        z=effect, x=[f"H{h}" for h in range(heads)], y=[f"L{l}" for l in range(layers)], zmid=0, zmin=-bound, zmax=bound,
        colorscale="RdBu_r", colorbar=dict(title="Δ log p"),
        hovertemplate="layer %{y}, head %{x}<br>log p intact - ablated: %{z:.3f}<extra></extra>",
    ))
    layout(figure, f"Effect of ablating each head alone on p('{ranking.target.token}')", height=heatmap_height(layers, 36),
           yaxis=dict(autorange="reversed"))
    data = pd.DataFrame([{"layer": l, "head": h, "effect": e, "ablated_probability": float(ranking.ablated_probability[l, h])}
                         for l, h, e in ranking.ranked()])
    return Chart(figure, data, "head_ablation_ranking",
                 "Red: the head helps this prediction (ablating it lowers the log-probability); blue: it works against it.")


def token_heatmap(matrix: np.ndarray, tokens: list[str], title: str, name: str, caption: str = "") -> Chart:
    labels = token_labels(tokens)
    figure = go.Figure(go.Heatmap(z=matrix, x=labels, y=labels, colorscale=ATTENTION_SCALE, zmin=0,
                                  hovertemplate="from %{y}<br>to %{x}<br>%{z:.3f}<extra></extra>"))
    layout(figure, title, height=heatmap_height(len(tokens)), yaxis=dict(autorange="reversed"), xaxis=dict(tickangle=-45))
    rows = [f"{i} {t}" for i, t in enumerate(tokens)]
    return Chart(figure, pd.DataFrame(matrix, index=rows, columns=rows), name, caption, keep_index=True)


def statistic_by_layer_chart(values: np.ndarray, statistic: str, findings: list[head_stats.PublishedFinding]) -> Chart:
    """Every head as a dot, the layer mean as a line (layers 1-based as in the paper); published findings shaded."""
    layers, heads = values.shape
    figure = go.Figure()
    for finding in findings:
        figure.add_vrect(x0=min(finding.layers) - 0.5, x1=max(finding.layers) + 0.5, fillcolor="#f2c14e", opacity=0.25,
                         line_width=0, annotation_text="Clark et al. 2019: " + finding.claim, annotation_position="top left")
    xs = np.repeat(np.arange(1, layers + 1), heads)
    figure.add_scatter(x=xs, y=values.flatten(), mode="markers", name="one head", marker=dict(size=6, opacity=0.6),
                       customdata=np.tile(np.arange(heads), layers), hovertemplate="layer %{x}, head %{customdata}: %{y:.3f}<extra></extra>")
    figure.add_scatter(x=np.arange(1, layers + 1), y=np.nanmean(values, axis=1), mode="lines+markers", name="layer mean",
                       line=dict(color=HIGHLIGHT_COLOUR))
    layout(figure, f"{statistic} by layer (layers counted from 1, as in the paper)", height=420,
           xaxis=dict(title="layer", dtick=1), yaxis=dict(title=statistic), **legend_on_top())
    data = pd.DataFrame({"layer": xs, "head": np.tile(np.arange(heads), layers), statistic: values.flatten()})
    return Chart(figure, data, f"corpus_{statistic}_by_layer")


def saliency_chart(result, parts: tuple[str, ...]) -> Chart:
    labels = token_labels(result.tokens)
    figure = go.Figure()
    for part, row in zip(parts, result.attributions):
        figure.add_bar(x=labels, y=row, name=part, marker_color=PART_COLOURS[part])
    method = result.method.replace("_", " ")
    where = "" if result.position == 0 else f" at position {result.position}"
    layout(figure, f"{method}: log p('{result.target.token}'){where}, by embedding part",
           height=420, barmode="relative", xaxis=dict(tickangle=-45), yaxis=dict(title="attribution"), **legend_on_top())
    data = pd.DataFrame(result.attributions.T, columns=list(parts))
    data.insert(0, "input token", result.tokens)
    return Chart(figure, data, f"saliency_{result.method}")


@st.cache_data(show_spinner=False, max_entries=32)
def lens(source, folder, revision, encoding, top_k: int):
    from bert.analysis.logit_lens import logit_lens

    loaded = cache.load_model(source, folder, revision)
    return logit_lens(loaded.model, loaded.tokenizer, encoding, top_k=top_k)


@st.cache_data(show_spinner="Ablating every head, one per row of a batch…", max_entries=32)
def head_ranking(source, folder, revision, encoding, position: int, mode: str) -> ablation.HeadRanking:
    loaded = cache.load_model(source, folder, revision)
    mean_z = None
    if mode == "mean":
        import torch

        mean_z = torch.from_numpy(mean_head_outputs(source, folder, revision))
    return ablation.rank_heads(loaded.model, loaded.tokenizer, encoding, position=position, mode=mode, mean_z=mean_z)


@st.cache_data(show_spinner="Computing attributions…", max_entries=32)
def saliency(source, folder, revision, encoding, method: str, position: int, target_id: int, steps: int, head: str = "mlm"):
    from bert.analysis.saliency import saliency as explain

    loaded = cache.load_model(source, folder, revision)
    return explain(loaded.model, loaded.tokenizer, encoding, method, position, target_id, steps=steps, head=head)


def mask_picker(context: Context, key: str) -> int | None:
    """Which [MASK] to analyse (None, with a message, when the input has none or the model cannot predict)."""
    from viz_app import widgets

    if not context.loaded.summary.has_mlm_head:
        st.warning("This model has no masked-LM head, so there is no prediction to analyse. Pick minilm or a BERT with its MLM head.")
        return None
    masks = list(context.prepared.all_masks)
    if not masks:
        st.info("Put a [MASK] in the sentence (type it, or click a word on the Masked prediction page) to analyse its prediction.")
        return None
    tokens = context.prepared.base.tokens
    def describe(i: int) -> str:
        return f"position {i} (typed [MASK])" if tokens[i] == "[MASK]" else f"position {i} (was '{tokens[i]}')"

    return widgets.select_int("[MASK] to analyse", f"{key}_mask", masks, format_func=describe)
