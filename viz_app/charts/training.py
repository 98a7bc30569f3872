"""Charts for the "How BERT was trained" page: loss curves, held-out loss against model size, cloze accuracy,
and the masking and sentence-pair chips (HTML, every token escaped)."""
from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from bert.pretraining.miniature import RunLog
from bert.pretraining.successors import ObjectiveRun
from bert.pretraining.walkthrough import MaskedExample, PairExample
from viz_app.charts.base import Chart, layout, legend_on_top

KIND_COLOURS = {"mask": "#d62728", "random": "#e08a2e", "kept": "#2ca02c"}
KIND_NAMES = {"mask": "→ [MASK] (80%)", "random": "→ a random token (10%)", "kept": "kept as it is (10%)"}
SEGMENT_COLOURS = ("#3b6fb6", "#2ca02c")
RUN_COLOURS = ["#3b6fb6", "#d62728", "#2ca02c", "#9467bd"]


def _chip(text: str, colour: str, filled: bool, note: str = "") -> str:
    background = f"{colour}33" if filled else "transparent"
    small = f'<br><small style="color:{colour}">{html.escape(note)}</small>' if note else ""
    return (f'<span style="display:inline-block;margin:2px;padding:2px 6px;border-radius:6px;text-align:center;'
            f'border:2px solid {colour};background:{background}">{html.escape(text)}{small}</span>')


def masking_chips(example: MaskedExample, row: str) -> str:
    """One row of chips: "text" (the original, chosen ones outlined), "read" (what the model reads) or "labels"."""
    chips = []
    for token, shown, kind in zip(example.tokens, example.shown, example.kinds):
        colour = KIND_COLOURS.get(kind, "#bbbbbb")
        if row == "text":
            chips.append(_chip(token, colour, False))
        elif row == "read":
            chips.append(_chip(shown, colour, kind is not None))
        else:
            chips.append(_chip(token if kind else "–", colour, kind is not None))
    return "".join(chips)


def legend_chips() -> str:
    return " ".join(_chip(name, KIND_COLOURS[kind], True) for kind, name in KIND_NAMES.items()) + " " + _chip("not chosen", "#bbbbbb", False)


def pair_chips(pair: PairExample) -> str:
    """[CLS] A [SEP] B [SEP] with each token's segment id under it (0 blue, 1 green)."""
    return "".join(_chip(token, SEGMENT_COLOURS[segment], token in ("[CLS]", "[SEP]"), f"seg {segment}")
                   for token, segment in zip(pair.tokens, pair.segment_ids))


def loss_curves(runs: dict[str, RunLog], title: str, heldout_only: bool = False) -> Chart:
    """Training loss per step (thin) and held-out loss per evaluation (dots) of each run."""
    figure, rows = go.Figure(), []
    for index, (label, run) in enumerate(runs.items()):
        colour = RUN_COLOURS[index % len(RUN_COLOURS)]
        steps = np.arange(1, len(run.train_loss) + 1)
        if not heldout_only and len(steps):
            figure.add_trace(go.Scatter(x=steps, y=run.train_loss, mode="lines", name=f"{label}: training",
                                        line=dict(color=colour, width=1), opacity=0.45))
        evals = list(run.evals)
        figure.add_trace(go.Scatter(x=[e["step"] for e in evals], y=[e["heldout_loss"] for e in evals], mode="lines+markers",
                                    name=f"{label}: held-out", line=dict(color=colour, width=3)))
        rows += [{"run": label, "step": int(s), "training_loss": loss} for s, loss in zip(steps, run.train_loss)]
        rows += [{"run": label, "step": e["step"], "heldout_loss": e["heldout_loss"]} for e in evals]
    layout(figure, title, height=380, xaxis=dict(title="step"), yaxis=dict(title="masked-token loss (nats)"), **legend_on_top())
    return Chart(figure, pd.DataFrame(rows), "loss_curves",
                 "Loss = mean −log p(the hidden token) over the chosen tokens; ln 8000 ≈ 9.0 is a uniform guess over the vocabulary.")


def size_chart(runs: dict[str, RunLog]) -> Chart:
    """Final held-out loss against parameters (log scale), one point per size."""
    table = pd.DataFrame([{"model": label, "parameters": run.parameters, "heldout_loss": run.evals[-1]["heldout_loss"],
                           "heldout_perplexity": float(np.exp(run.evals[-1]["heldout_loss"]))} for label, run in runs.items()])
    figure = go.Figure(go.Scatter(x=table["parameters"], y=table["heldout_loss"], mode="lines+markers+text",
                                  text=[html.escape(m) for m in table["model"]], textposition="top center",
                                  marker=dict(size=12, color="#3b6fb6")))
    low, high = table["heldout_loss"].min(), table["heldout_loss"].max()
    room = max(high - low, 0.05) * 0.25  # space for the labels above the points
    layout(figure, "Held-out loss after the same number of steps, by model size", height=340,
           xaxis=dict(title="parameters", type="log"), yaxis=dict(title="held-out loss (nats)", range=[low - room, high + room]))
    return Chart(figure, table, "size_vs_heldout_loss")


def cloze_chart(runs: dict[str, RunLog]) -> Chart:
    """The right-context set's answer loss (mean −log p of the answer at the [MASK]) over training, one line per run."""
    figure, rows = go.Figure(), []
    for index, (label, run) in enumerate(runs.items()):
        evals = [e for e in run.evals if "right_context_loss" in e]
        steps, values = [e["step"] for e in evals], [e["right_context_loss"] for e in evals]
        figure.add_trace(go.Scatter(x=steps, y=values, mode="lines+markers", name=html.escape(label),
                                    line=dict(color=RUN_COLOURS[index % len(RUN_COLOURS)], width=3)))
        rows += [{"run": label, "step": s, "answer_loss": v} for s, v in zip(steps, values)]
    layout(figure, "Right-context cloze: how surprised each model is by the answer", height=340, xaxis=dict(title="step"),
           yaxis=dict(title="mean −log p(answer)"), **legend_on_top())
    return Chart(figure, pd.DataFrame(rows), "right_context_cloze",
                 "Lower is better: e^−loss is the probability the model gives the answer on average (geometric mean).")


def guesses_table(run: RunLog) -> pd.DataFrame:
    """The watched sentence's five best guesses at each evaluation."""
    return pd.DataFrame([{"step": e["step"], **{f"#{i + 1}": f"{token} ({p:.1%})" for i, (token, p) in enumerate(e["guesses"])}}
                         for e in run.evals])


def successor_losses(runs: dict[str, ObjectiveRun], labels: dict[str, str]) -> Chart:
    """Held-out masked-token loss per evaluation, one line per objective (labels: objective -> its name); ELECTRA's
    discriminator's own held-out loss (binary, per token) dotted, on the right-hand axis."""
    figure, rows = go.Figure(), []
    for index, (objective, run) in enumerate(runs.items()):
        colour = RUN_COLOURS[index % len(RUN_COLOURS)]
        figure.add_trace(go.Scatter(x=run.steps, y=run.heldout_loss, mode="lines+markers", name=html.escape(labels[objective]),
                                    line=dict(color=colour, width=3)))
        rows += [{"objective": objective, "step": s, "heldout_loss": v} for s, v in zip(run.steps, run.heldout_loss)]
        if run.replaced_loss:
            figure.add_trace(go.Scatter(x=run.steps, y=run.replaced_loss, mode="lines+markers", yaxis="y2",
                                        name="its discriminator (right axis)", line=dict(color=colour, width=2, dash="dot")))
            rows += [{"objective": objective, "step": s, "replaced_loss": v} for s, v in zip(run.steps, run.replaced_loss)]
    right = dict(yaxis2=dict(title="replaced or not: loss per token", overlaying="y", side="right")) \
        if any(run.replaced_loss for run in runs.values()) else {}
    layout(figure, "Held-out loss of each objective, same model size, text and steps", height=380, xaxis=dict(title="step"),
           yaxis=dict(title="masked-token loss (nats)"), **right, **legend_on_top())
    return Chart(figure, pd.DataFrame(rows), "successor_losses",
                 "Every run is measured the same way: held-out sentences, 15% of their pieces hidden, the same draw for all. "
                 "ELECTRA's line is its generator's, a model a quarter as wide.")
