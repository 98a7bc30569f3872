"""Notebook views: the app's figures for a sentence or a recorded pass, inline in Jupyter, VS Code and Colab.

    import bert
    from viz_app import notebook

    model, tokenizer = bert.load_pretrained("minilm")
    run = notebook.record(model, tokenizer, "The [MASK] barked at the mailman.")
    notebook.prediction(run)                               # the candidates at the [MASK]
    notebook.attention(run, layer=2, head=3)               # one head's pattern
    notebook.attention_heads(run)                          # every head at a glance
    notebook.neuron_view(run, layer=2, head=3, query=1)    # one query against one key, term by term
    notebook.embeddings(run)                               # token, position and segment parts of each token
    notebook.mlp(run, layer=3)                             # the strongest MLP neurons on every token
    notebook.logit_lens(run)                               # what each layer would predict at the [MASK]
    notebook.head_ablation(run)                            # what ablating each head does to the prediction
    notebook.probe_curves(model, tokenizer, ["pos"])       # how well each layer tells parts of speech apart
    notebook.saliency(run, "occlusion")                    # which tokens the prediction depends on
    notebook.deletion_curve(run, "occlusion")              # and whether that map means anything
    figure.write_html("view.html")                         # any of them as one offline file

Each function returns the Plotly figure the app's page draws for the same input and settings, made by the same
view (a page spec's, viz_app/specs/) or chart builder (viz_app/charts/) from the same recorded pass
(viz_app/app/forward.py, `record`). Streamlit is not imported: a notebook needs only the library, Plotly and pandas.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import plotly.graph_objects as go

from bert import BertTokenizer, InvalidInputError
from bert.analysis.attribution.deletion import deletion_curve as deletion_of
from bert.analysis.attribution.saliency import saliency as saliency_of
from bert.analysis.causal.ablation import rank_heads
from bert.analysis.representations.logit_lens import logit_lens as lenses_of
from bert.model import Bert
from viz_app.specs.probes import runs as probe_runs
from viz_app.app.forward import ForwardResult, InputProblem, PreparedInput, prepare_input
from viz_app.app.forward import record as record_pass
from viz_app.app.models import LoadedModel, ModelKey, summarize
from viz_app.app.tables import model_tables, table_subspaces
from viz_app.charts.head_ablation import head_effect_heatmap
from viz_app.charts.saliency import deletion_chart, saliency_chart
from viz_app.specs import embeddings as embeddings_spec, logit_lens as logit_lens_spec, mlp as mlp_spec
from viz_app.specs import attention as attention_spec, prediction as prediction_spec
from viz_app.specs.probes.view import ProbeViewSettings, probes_view


@dataclass(frozen=True)
class Recorded:
    """One input and its recorded pass, with the model and tokenizer that made it."""

    model: Bert
    tokenizer: BertTokenizer
    prepared: PreparedInput  # the input as the app prepares it: text, pair, masks
    result: ForwardResult  # attention, q and k, MLP activations, embeddings, predictions (read-only arrays)

    @property
    def loaded(self) -> LoadedModel:
        """The model as a page spec reads it (viz_app/specs/base.py `HasInputs`)."""
        return LoadedModel(ModelKey.of("notebook"), self.model, self.tokenizer, summarize(self.model, self.tokenizer))

    @property
    def mask_positions(self) -> tuple[int, ...]:
        return tuple(mask.position for mask in self.result.masks)


def record(model: Bert, tokenizer: BertTokenizer, text: str, pair: str | None = None, masks: Sequence[int] = (),
           truncate: bool = False) -> Recorded:
    """Run the model once on `text` (and `pair`, segment B), with the tokens at `masks` replaced by [MASK] as a
    click does in the app; [MASK] typed in the text counts too. Raises InvalidInputError for empty or too long text."""
    try:
        prepared = prepare_input(tokenizer, text, pair, masks, truncate, model.config.max_position_embeddings)
    except InputProblem as problem:
        raise InvalidInputError(problem.message) from problem
    return Recorded(model, tokenizer, prepared, record_pass(model, tokenizer, prepared))


def prediction(run: Recorded, top_k: int = 10, mask: int = 0) -> go.Figure:
    """The candidates at the `mask`-th [MASK] (from 0) and their probabilities. Like the app's page, from a pass
    that records nothing (the fused attention path), so the numbers are the page's to the last bit."""
    _require_mask(run, mask)
    predicted = record_pass(run.model, run.tokenizer, run.prepared, activations=False)
    charts = prediction_spec.view(prediction_spec.Settings(top_k, shown=(mask,)), run, {"recorded": predicted})
    return charts[f"mask_{mask}"].figure


def attention(run: Recorded, layer: int = 0, head: int = 0, hide_special: bool = False) -> go.Figure:
    """One head's attention pattern, query rows against key columns."""
    return _attention(run, layer, head, hide_special)["pattern"]


def attention_heads(run: Recorded, layer: int = 0, head: int = 0, hide_special: bool = False) -> go.Figure:
    """Every head of every layer at a glance, (layer, head) marked."""
    return _attention(run, layer, head, hide_special)["overview"]


def neuron_view(run: Recorded, layer: int = 0, head: int = 0, query: int = 1, key: int | None = None) -> go.Figure:
    """The neuron view (Vig 2019): the query vector of token `query` against the key vector of token `key` (default:
    the token it attends to most), term by term, and their product."""
    return _attention(run, layer, head, False, query, key)["query_key"]


def embeddings(run: Recorded, chart: str = "norms", k: int = 16) -> go.Figure:
    """The embeddings page's charts: "norms" and "cosines" of this input's token, position and segment parts;
    "variance", "position_curve", "position_cosines", "token_scatter" of the tables; "angles", "surviving" of their
    k-dimensional subspaces."""
    tables = model_tables(run.model, run.tokenizer, run.model.config.vocab_size)
    analysis = embeddings_spec.TableAnalysis(tables, table_subspaces(run.model, tables, k))
    return _pick(embeddings_spec.view(embeddings_spec.Settings(k), run, {"recorded": run.result, "tables": analysis}), chart)


def mlp(run: Recorded, layer: int = 0, chart: str = "heatmap", token: int = 1, neuron: int | None = None,
        shown: int = 48) -> go.Figure:
    """MLP activations (after GELU) of one layer: "heatmap" (the `shown` neurons that fire hardest, on every token),
    "top_neurons" (token `token`'s strongest), "neuron" (one neuron on every token; default: the token's strongest)."""
    return _pick(mlp_spec.view(mlp_spec.Settings(layer, shown, token, neuron), run, {"recorded": run.result}), chart)


def logit_lens(run: Recorded, mask: int = 0, top_k: int = 5) -> go.Figure:
    """What each layer would predict at the `mask`-th [MASK]: the final prediction's rank and probability."""
    _require_mask(run, mask)
    lenses = lenses_of(run.model, run.tokenizer, run.prepared.masked, top_k=top_k)
    return logit_lens_spec.view(logit_lens_spec.Settings(run.mask_positions[mask]), run, {"lens": lenses})["lens"].figure


def head_ablation(run: Recorded, mask: int = 0, mode: str = "zero") -> go.Figure:
    """Every head ablated alone (one row of a batch each): the change in the prediction at the `mask`-th [MASK]."""
    _require_mask(run, mask)
    ranking = rank_heads(run.model, run.tokenizer, run.prepared.masked, position=run.mask_positions[mask], mode=mode)
    return head_effect_heatmap(ranking).figure


def probe_curves(model: Bert, tokenizer: BertTokenizer, tasks: Sequence[str] = ("pos", "punctuation"),
                 data: str = "wordnet", sentences: int = 200, measure: str | None = None, chart: str = "curves",
                 seed: int = 0) -> go.Figure:
    """Layer by layer, each probe's held-out score against its control task (Hewitt and Liang 2019): "curves", or
    with the distance probe on a treebank one test sentence's predicted "tree". data: "wordnet" (the first
    `sentences` built-in sentences) or "ud_ewt" (UD English EWT's dev file to train, its test file to score);
    tasks: bert.analysis.probing.task_table.TASKS; measure: one the run reports (default: its first)."""
    datasets = {"wordnet": probe_runs.builtin_data, "ud_ewt": probe_runs.ud_ewt_data}
    if data not in datasets:
        raise InvalidInputError(f"data must be one of {tuple(datasets)}, not {data!r}")
    run = probe_runs.probe_run(model, tokenizer, datasets[data](sentences), tuple(tasks), seed=seed)
    charts = probes_view(ProbeViewSettings(measure=measure), run)
    if not charts:
        raise InvalidInputError(f"none of the tasks {tuple(tasks)} could run on this data")
    return _pick(charts, chart)


def saliency(run: Recorded, method: str = "integrated_gradients", mask: int = 0, **options) -> go.Figure:
    """Attributions of the prediction at the `mask`-th [MASK]; `options` go to
    bert.analysis.attribution.saliency.saliency (target_id, foil_id, steps, samples, window, score)."""
    return saliency_chart(_saliency(run, method, mask, options)).figure


def deletion_curve(run: Recorded, method: str = "integrated_gradients", mask: int = 0, random_orders: int = 10,
                   **options) -> go.Figure:
    """The deletion curve of that saliency map against random orders, with their areas."""
    result = _saliency(run, method, mask, options)
    curve = deletion_of(run.model, run.tokenizer, run.prepared.masked, result, random_orders=random_orders)
    return deletion_chart(curve, result.tokens, result.method).figure


def _attention(run: Recorded, layer: int, head: int, hide_special: bool, focus: int = 1, key: int | None = None) -> dict:
    summary = run.model.config
    if not (0 <= layer < summary.num_layers and 0 <= head < summary.num_heads):
        raise InvalidInputError(f"this model has layers 0-{summary.num_layers - 1} and heads 0-{summary.num_heads - 1}")
    for name, position in (("query", focus), ("key", key)):
        if position is not None and not 0 <= position < run.result.seq:
            raise InvalidInputError(f"{name} {position} is outside this {run.result.seq}-token input")
    charts = attention_spec.view(attention_spec.Settings(layer, head, hide_special, focus, key), run, {"recorded": run.result})
    return {name: chart.figure for name, chart in charts.items()}


def _saliency(run: Recorded, method: str, mask: int, options: dict):
    _require_mask(run, mask)
    return saliency_of(run.model, run.tokenizer, run.prepared.masked, method, position=run.mask_positions[mask], **options)


def _pick(charts: dict, chart: str) -> go.Figure:
    if chart not in charts:
        raise InvalidInputError(f"chart must be one of {tuple(charts)}, not {chart!r}")
    return charts[chart].figure


def _require_mask(run: Recorded, mask: int) -> None:
    if not 0 <= mask < len(run.result.masks):
        count = len(run.result.masks)
        raise InvalidInputError(f"mask {mask} does not exist: this input has {count} [MASK] token{'s' if count != 1 else ''}"
                                + ("" if count else "; type [MASK] in the text or pass masks=[position]"))
