"""The causal tracing page's view: activation patching grids (exact and attribution) and noise tracing grids."""
from __future__ import annotations

from bert.analysis.causal.patching import PatchingResult
from bert.analysis.causal.tracing import TraceResult
from bert.layers import head_short_label, layer_label, layer_labels, residual_labels
from viz_app.charts.base import Chart
from viz_app.charts.causal import attribution_scatter, patching_heatmap, probability_heatmap

SWEEP_TITLES = {
    "residual": "Residual stream: patch one layer's state at one position",
    "attention": "Attention blocks: patch what one layer's attention adds at one position",
    "mlp": "MLP blocks: patch what one layer's MLP adds at one position",
    "heads": "Attention heads: patch one head's output at every position",
}
SWEEP_CAPTIONS = {
    "residual": "Rows: the embeddings' output, then each layer's output. 1 (red): patching this state alone restores "
                "the clean sentence's preference; 0 (white): no effect; below 0 (blue): it pushes the other way.",
    "attention": "What the layer's attention block adds to the residual stream at that position.",
    "mlp": "What the layer's MLP block adds to the residual stream at that position.",
    "heads": "Each head's output patched at every position at once (before the layer's output projection mixes the heads).",
}


def _rows(site: str, count: int) -> list[str]:
    """Row labels (bert/layers.py): the residual stream's row i is hidden_states[i] ("embeddings", "after layer
    i-1"), the other sweeps' row i is layer i."""
    return residual_labels(count - 1) if site == "residual" else layer_labels(count)


def patching_view(result: PatchingResult, attribution: PatchingResult | None = None, compare: str = "residual") -> dict[str, Chart]:
    """"residual", "attention", "mlp", "heads", "head_positions" (when the result has it) from `result` (exact, or
    attribution alone); with both, "comparison": attribution against exact, cell by cell, for the sweep `compare`."""
    method = "attribution patching" if result.method == "attribution" else "activation patching"
    charts = {}
    for site, title in SWEEP_TITLES.items():
        grid = getattr(result, site)
        if grid is None:
            continue
        columns = [head_short_label(h) for h in range(grid.shape[1])] if site == "heads" else result.tokens
        charts[site] = patching_heatmap(grid.numpy(), _rows(site, grid.shape[0]), columns, f"{title} ({method})",
                                        f"patching_{site}", SWEEP_CAPTIONS[site], "head" if site == "heads" else "token")
    if result.head_positions is not None:
        grid = result.head_positions
        charts["head_positions"] = patching_heatmap(
            grid.numpy(), [head_short_label(h) for h in range(grid.shape[0])], result.tokens,
            f"The heads of {layer_label(result.head_layer)}, one position at a time ({method})", "patching_head_positions",
            "Which head, reading at which position, carries the difference.")
    if attribution is not None and getattr(result, compare) is not None and getattr(attribution, compare) is not None:
        exact, approximate = getattr(result, compare), getattr(attribution, compare)
        columns = [head_short_label(h) for h in range(exact.shape[1])] if compare == "heads" else result.tokens
        cells = [f"{row}, {column}" for row in _rows(compare, exact.shape[0]) for column in columns]
        charts["comparison"] = attribution_scatter(exact.numpy(), approximate.numpy(), cells, f"attribution_{compare}")
    return charts


def tracing_view(trace: TraceResult) -> dict[str, Chart]:
    """One p(answer) heatmap per traced site."""
    captions = {
        "residual": "Rows: the embeddings' output, then each layer's output. Dark: restoring this one state brings the "
                    "answer back; white: no better than the noisy run.",
        "attention": "What one layer's attention adds at one position, restored.",
        "mlp": "What one layer's MLP adds at one position, restored.",
    }
    names = {"residual": "states", "attention": "attention outputs", "mlp": "MLP outputs"}
    return {
        site: probability_heatmap(grid.numpy(), _rows(site, grid.shape[0]), trace.tokens,
                                  f"p('{trace.answer}') with one of the clean run's {names[site]} restored", f"tracing_{site}",
                                  captions[site], low=trace.corrupted_probability)
        for site, grid in trace.restored.items()
    }
