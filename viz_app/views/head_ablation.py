"""The head ablation page's view: every head ranked by what ablating it alone does to the prediction."""
from __future__ import annotations

from bert.analysis.causal.ablation import HeadRanking
from viz_app.charts.base import Chart
from viz_app.charts.head_ablation import head_effect_heatmap


def head_ablation_view(ranking: HeadRanking) -> dict[str, Chart]:
    """"ranking": the effect of ablating each head alone, as a [layer, head] heatmap."""
    return {"ranking": head_effect_heatmap(ranking)}
