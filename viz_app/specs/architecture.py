"""The page "Architecture" (address `architecture`): the module tree of a Bert (bert/model.py, in the order it
computes), with parameter counts and this input's tensor shapes, and the hand arithmetic of its parameter count
(Devlin et al. 2019's sizes). Its spec (viz_app/specs/base.py): `Settings`, `computations`, `view`. Plain Python."""
from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd
import torch
from torch import nn

from bert import BertConfig, BertTokenizer, Encoding, count_parameters
from bert.devices import model_device
from bert.params import model_heads
from bert.hooks import HookPoint
from bert.model import Bert
from bert.packed_linear import PackedLinear
from bert.predict import at_positions
from bert.checkpoint import key_table
from bert.costs import Cost
from bert.families.tables import split_key
from viz_app.charts.architecture import ModuleRow, parameter_treemap
from viz_app.charts.base import Chart
from viz_app.specs.base import Computation, HasInputs, Planned

NAME = "architecture"
LESSON_CHARTS = ("treemap",)

_LAYER = re.compile(r"^transformer\.(\d+)(\.|$)")
# The module tree keeps the names of the outline it follows (bert/model.py), two of which mean something else in most
# other texts: what each computes, said beside it wherever the tree is shown
ROLES = {
    "attention.mlp": "the heads' output projection, not an MLP",
    "residual": "the MLP block and its add & norm",
}


def hook_shapes(model: Bert, tokenizer: BertTokenizer, encoding: Encoding) -> dict[str, tuple[int, ...]]:
    """The shape at every hook point for this input: one pass recording everything (the masked-LM head at the
    [MASK]s only, as the pages run it), then one pass per sentence-level head the model has (pooler, classifier,
    token classifier, next-sentence head) for the hooks only they reach."""
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    logit_mask = at_positions(tokenizer.mask_positions(encoding), len(encoding), input_ids.device)
    shapes: dict[str, tuple[int, ...]] = {}
    with torch.inference_mode():
        shapes |= model.run_with_cache(input_ids, token_type_ids, logit_mask=logit_mask)[1].shapes
        for output in _sentence_heads(model):  # the masked-LM pass is above
            shapes |= model.run_with_cache(input_ids, token_type_ids, output=output)[1].shapes
    return shapes


def _sentence_heads(model: Bert) -> list[str]:
    return [output for output in model.output_heads if output != "mlm"]


@dataclass(frozen=True)
class ShapesWork:
    """The shapes read nothing but the model and the input."""


SHAPES = Computation(  # one pass recording everything, then one per sentence-level head (hook_shapes)
    "architecture.shapes", lambda work: "The shape at every hook point",
    cost=lambda inputs, work: Cost(1 + len(_sentence_heads(inputs.loaded.model)), len(inputs.prepared.masked)),
    compute=lambda inputs, work: hook_shapes(inputs.loaded.model, inputs.loaded.tokenizer, inputs.prepared.masked), work=ShapesWork)


@dataclass(frozen=True)
class Settings:
    """The page has no settings of its own: the model and the input decide it."""

    @classmethod
    def from_state(cls, state, inputs: HasInputs) -> "Settings":
        return cls()


def computations(settings: Settings) -> Planned:
    """"shapes": the shape at every hook point for this input."""
    return {"shapes": (SHAPES, ShapesWork())}


def view(settings: Settings, inputs: HasInputs, results) -> dict[str, Chart]:
    """"treemap": where the parameters are, module by module."""
    return {"treemap": parameter_treemap(module_rows(inputs.loaded.model, results["shapes"]))}


def architecture_note(config: BertConfig) -> str:
    """One line under the tree: what the layers after layer 0 are (their own weights, or ALBERT's shared ones)."""
    if config.num_layers < 2:
        return "One layer."
    if not config.shared_layers:
        return f"Layers 1–{config.num_layers - 1} repeat layer 0 (same modules and shapes, their own weights)."
    distinct = config.distinct_layers
    shared = ("one layer's weights" if distinct == 1 else
              f"{distinct} layers' weights ({config.layer_groups} group(s) of {config.layers_per_group})")
    return (f"ALBERT shares weights across depth (Lan et al. 2020, section 3.1): the {config.num_layers} layers "
            f"apply {shared} again and again, so each layer reads the same tensors as the one it repeats.")


def module_rows(model: Bert, hook_shapes: dict[str, tuple[int, ...]], first_layer_only: bool = True) -> list[ModuleRow]:
    """One row per module, in the order of model.named_modules(). With first_layer_only, layers after the
    first are summarised in one row (they are identical in structure), like the outline's "... more layers"."""
    owner = {}  # parameter -> path of the first module that owns it (a tensor hashes by identity, as its description)
    for name, parameter in model.named_parameters():
        owner.setdefault(parameter, name)
    counted = {name: parameter.numel() for name, parameter in model.named_parameters()}  # deduplicated
    num_layers = len(model.transformer)
    checkpoint_names = _checkpoint_modules(model)
    rows = []
    for path, module in model.named_modules():
        layer = _LAYER.match(path)
        if first_layer_only and layer and int(layer.group(1)) > 0:
            if path == "transformer.1":
                rest = sum(_count(counted, f"transformer.{i}") for i in range(1, num_layers))
                span = f"1–{num_layers - 1}" if num_layers > 2 else "1"
                label = f"({span}): {num_layers - 1} more BertLayer, the same as (0)"
                rows.append(ModuleRow(path, 2, label, "BertLayer", rest, "", ""))
            continue
        depth = 0 if not path else path.count(".") + 1
        rows.append(
            ModuleRow(
                path=path,
                depth=depth,
                label=_label(path, module),
                kind=_kind(module),
                parameters=_count(counted, path),
                weights=_own_weights(module, path, owner),
                activation=_shape(hook_shapes.get(path)) if isinstance(module, HookPoint) else "",
                note="; ".join(note for note in (_role(path), _tied_note(module, path, owner)) if note),
                checkpoint=checkpoint_names.get(path, ""),
            )
        )
    return rows


def tree_text(rows: list[ModuleRow]) -> str:
    """The rows as an indented outline with box-drawing branches, parameters and shapes in aligned columns."""
    lines = []
    for index, row in enumerate(rows):
        prefix = "" if row.depth == 0 else "".join(_branch(rows, index, d) for d in range(1, row.depth + 1))
        lines.append((prefix + row.label, row))
    width = max(len(text) for text, _ in lines) + 2
    out = []
    for text, row in lines:
        if row.kind == "HookPoint":
            detail = f"→ {row.activation}"
        else:
            detail = f"{row.parameters:>12,} params" if row.parameters else ""
        extra = "   " + row.weights if row.weights else ""
        extra += f"   ({row.note})" if row.note else ""
        out.append(f"{text:<{width}}{detail}{extra}".rstrip())
    return "\n".join(out)


def _branch(rows: list[ModuleRow], index: int, depth: int) -> str:
    """The two characters drawn at `depth` for row `index`: a branch for its own depth, a bar or a gap above."""
    row = rows[index]
    later_sibling = False
    for following in rows[index + 1 :]:
        if following.depth < depth:
            break
        if following.depth == depth:
            later_sibling = True
            break
    if depth == row.depth:
        return "├─ " if later_sibling else "└─ "
    return "│  " if later_sibling else "   "


def _role(path: str) -> str:
    """What the module at `path` computes, where its name reads otherwise (ROLES); "" elsewhere."""
    layer = _LAYER.match(path)
    return ROLES.get(path[layer.end():], "") if layer else ""


def _checkpoint_modules(model: Bert) -> dict[str, str]:
    """Our module path -> its module in the Hugging Face checkpoint, read from the family's key table
    (bert/families/): "transformer.0.attention.mlp" -> "encoder.layer.0.attention.output.dense". A fused tensor's
    block keeps its place ("layers.0.attn.Wqkv[1/3]": the second third)."""
    table = key_table(model.config, **{head: bool(count) for head, count in model_heads(model).items()
                                       if head not in ("classifier_labels", "tagger_labels")},
                      classifier=model.classifier is not None, tagger=model.tagger is not None)
    modules = {}
    for ours, theirs in table.items():
        module, _, _ = ours.rpartition(".")
        key, index, count = split_key(theirs)
        name = key.rpartition(".")[0]
        modules.setdefault(module, name if count == 1 else f"{name}[{index + 1}/{count}]")
    return modules


def _kind(module: nn.Module) -> str:
    """The module's class name; `__class__`, as a page's description of it reports it (viz_app/app/models.py)."""
    return "Linear" if isinstance(module, PackedLinear) else module.__class__.__name__


def _label(path: str, module: nn.Module) -> str:
    name = path.rsplit(".", 1)[-1] if path else ""
    kind = _kind(module)
    if isinstance(module, nn.Embedding):
        kind = f"Embedding({module.num_embeddings}, {module.embedding_dim})"
    elif isinstance(module, nn.Linear):
        kind = f"Linear({module.in_features} → {module.out_features})"
    elif isinstance(module, (nn.LayerNorm, nn.RMSNorm)):
        kind = f"{module.__class__.__name__}({module.normalized_shape[0]})"
    elif isinstance(module, nn.Dropout):
        kind = f"Dropout({module.p})"
    elif isinstance(module, nn.ModuleList):
        kind = f"ModuleList of {len(module)}"
    if not path:
        return kind
    return f"({name}): {kind}" if name.isdigit() else f"{name}: {kind}"


def _count(counted: dict[str, int], path: str) -> int:
    if not path:
        return sum(counted.values())
    return sum(n for name, n in counted.items() if name.startswith(path + "."))


def _own_weights(module: nn.Module, path: str, owner: dict[int, str]) -> str:
    parts = []
    for name, parameter in module.named_parameters(recurse=False):
        full = f"{path}.{name}" if path else name
        if owner[parameter] == full:
            parts.append(f"{name} {_shape(tuple(parameter.shape))}")
    return ", ".join(parts)


def _tied_note(module: nn.Module, path: str, owner: dict[int, str]) -> str:
    notes = []
    for name, parameter in module.named_parameters(recurse=False):
        full = f"{path}.{name}" if path else name
        if owner[parameter] != full:
            notes.append(f"{name} {_shape(tuple(parameter.shape))} is tied to {owner[parameter]}, counted there")
    return "; ".join(notes)


def _shape(shape: tuple[int, ...] | None) -> str:
    return "not reached" if shape is None else "[" + ", ".join(str(s) for s in shape) + "]"


HEAD_ROWS = [  # (what, formula, count_parameters key): a row for each head the model has
    ("word-guessing (MLM) head: dense, LayerNorm, one bias per word (its matrix is the embedding's)", "H² + H + 2H + V", "lm_head"),
    ("pooler ([CLS] summary for sentence-level heads)", "H² + H", "pooler"),
    ("next-sentence head", "2H + 2", "nsp_head"),
    ("sentence classifier", "N × H + N (N labels)", "classifier"),
    ("word-by-word (token) classifier", "N × H + N (N labels)", "tagger"),
]


def parameter_arithmetic(model: Bert) -> pd.DataFrame:
    """The hand arithmetic of the parameter count (the "Inner workings" notes) for this model beside BERT-base
    with the same heads, from bert.count_parameters: the encoder, then a row per head the model has."""
    config = model.config
    heads = model_heads(model)
    ours = count_parameters(config, **heads)
    base_config = BertConfig.base()
    base = count_parameters(base_config, **heads)

    def big_weights(counts: dict[str, int]) -> int:
        return counts["attention_qkv_weights_per_layer"] + counts["mlp_weights_per_layer"]

    rows = [
        ("Q, K, V weights per layer", "3 × H × H", "attention_qkv_weights_per_layer"),
        ("MLP weights per layer", "2 × H × I", "mlp_weights_per_layer"),
        ("both, per layer (by hand: ~6.5M)", "3H² + 2HI", None),
        ("both, all layers (by hand: ~78M)", "L × (3H² + 2HI)", "all"),
        ("one whole layer (with biases, output projection, LayerNorms)", "", "layer"),
        ("embedding tables", "(V + P + 2) × H + 2H", "embedding"),
        *[row for row in HEAD_ROWS if ours[row[2]] > 0],
        ("whole model (110M for BERT-base, as usually quoted)", "", "total"),
    ]
    values = []
    for what, formula, key in rows:
        if key is None:
            pair = big_weights(ours), big_weights(base)
        elif key == "all":
            pair = config.num_layers * big_weights(ours), base_config.num_layers * big_weights(base)
        else:
            pair = ours[key], base[key]
        values.append((what, formula, *pair))
    size = f"H={config.hidden_size}, I={config.intermediate_size}, L={config.num_layers}"
    return pd.DataFrame(values, columns=["what", "formula", f"this model ({size})", "BERT-base (H=768, I=3072, L=12), same heads"])
