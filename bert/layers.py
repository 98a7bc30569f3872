"""The one numbering of layers, heads and residual-stream positions, and the labels that say it (docs/library.md's
first table). Every label a user reads (app, charts, lessons, CLI text, JSON) comes from here.

- Transformer layers count from 0: "layer 0" is `transformer.0` (Hugging Face's `encoder.layer.0`,
  TransformerLens's `blocks.0`), the last of L is "layer L-1". In ALBERT a layer is one application of a shared
  layer; with layer groups of several inner layers, of one inner layer (as transformers' hidden_states count).
- Attention heads count from 0 within their layer: "layer 3, head 7" is `cache["pattern", 3][:, 7]`.
- The residual stream has L + 1 positions, by Hugging Face's `hidden_states` index i: 0 is "embeddings" (the
  embedding LayerNorm's output), i >= 1 is "after layer i-1" (that layer's output, `hook_name("layer_out", i - 1)`).
  Where code or JSON needs the index itself it is called `hidden_states_index`, never "layer".
- Published numbers that count from 1 (Clark et al. 2019's head "8-10", Hewitt and Manning 2019's "layer 7")
  are converted with `from_one_based` where they are quoted, and the text says so.
"""
from __future__ import annotations

from .errors import InvalidInputError

EMBEDDINGS = "embeddings"


def layer_label(layer: int) -> str:
    """"layer 3": transformer layer 3, counted from 0."""
    return f"layer {int(layer)}"


def head_label(layer: int, head: int) -> str:
    """"layer 3, head 7": head 7 of layer 3, both counted from 0."""
    return f"{layer_label(layer)}, head {int(head)}"


def head_short_label(head: int) -> str:
    """"head 7" (a column of a layer-by-head grid)."""
    return f"head {int(head)}"


def residual_label(hidden_states_index: int) -> str:
    """"embeddings" for hidden_states[0], "after layer i-1" for hidden_states[i]."""
    index = int(hidden_states_index)
    if index < 0:
        raise InvalidInputError(f"a hidden_states index counts from 0 (the embeddings), not {index}")
    return EMBEDDINGS if index == 0 else f"after {layer_label(index - 1)}"


def residual_labels(num_layers: int) -> list[str]:
    """The labels of hidden_states[0..num_layers]: "embeddings", "after layer 0", ..., "after layer L-1"."""
    return [residual_label(index) for index in range(num_layers + 1)]


def layer_labels(num_layers: int) -> list[str]:
    """"layer 0", ..., "layer L-1"."""
    return [layer_label(layer) for layer in range(num_layers)]


def from_one_based(published: int) -> int:
    """A layer or head numbered from 1 in a paper (Clark et al. 2019, Hewitt and Manning 2019) in this numbering."""
    if int(published) < 1:
        raise InvalidInputError(f"a number counted from 1 is at least 1, not {published}")
    return int(published) - 1
