"""Chart for the architecture page: where the parameters live."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import Chart, layout


@dataclass(frozen=True)
class ModuleRow:
    path: str  # "" for the model itself, else the module path ("transformer.0.attention.mlp")
    depth: int
    label: str  # "token_embedding: Embedding(30522, 384)"
    kind: str  # class name ("Linear" for a PackedLinear: the CPU speed pass is no part of the outline), "HookPoint" ...
    parameters: int  # every parameter below this module, a tied tensor counted once where it is first owned
    weights: str  # own tensors and their shapes: "weight [1536, 384], bias [1536]"
    activation: str  # for a hook point: the recorded shape for this input, "[1, 12, 384]"
    note: str = ""  # what a module whose name reads otherwise elsewhere computes; a tied tensor's owner
    checkpoint: str = ""  # its own tensors' module in the Hugging Face checkpoint ("encoder.layer.0.output.dense")


def parameter_treemap(rows: list[ModuleRow]) -> Chart:
    """Modules with parameters as nested blocks, each block's area its parameter count."""
    kept = [r for r in rows if r.parameters and r.kind != "HookPoint"]
    paths = {r.path for r in kept}
    ids = [r.path or "Bert" for r in kept]
    parents = [_parent(r.path, paths) for r in kept]
    labels = [r.label.split(":")[0] if r.path else "Bert" for r in kept]
    values = [r.parameters for r in kept]
    figure = go.Figure(
        go.Treemap(
            ids=ids,
            parents=parents,
            labels=labels,
            values=values,
            branchvalues="total",
            maxdepth=4,
            customdata=[r.path or "Bert" for r in kept],
            hovertemplate="<b>%{customdata}</b><br>%{value:,} parameters<br>"
            "%{percentRoot:.1%} of the model<extra></extra>",
            texttemplate="<b>%{label}</b><br>%{value:,}<br>%{percentRoot:.1%}",
            marker=dict(colorscale="Blues", cmin=0, line=dict(width=1, color="white")),
            root=dict(color="#dfe7f1"),
            pathbar=dict(visible=True),
        )
    )
    layout(figure, "Where the parameters are: area = parameter count (click a block to zoom in)", height=520)
    data = pd.DataFrame({"module": ids, "parent": parents, "parameters": values})
    return Chart(figure, data, "parameters_by_module")


def _parent(path: str, paths: set[str]) -> str:
    if not path:
        return ""
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    while parent and parent not in paths:
        parent = parent.rsplit(".", 1)[0] if "." in parent else ""
    return parent or "Bert"
