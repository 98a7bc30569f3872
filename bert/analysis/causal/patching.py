"""Activation patching on two sentences: which layer, position and head carry what makes the model say a word?

    contrast = prepare_contrast(tokenizer, "The doctor said that [MASK] was tired.",
                                "The nurse said that [MASK] was tired.", answer="he", foil="she")
    result = patching_sweep(model, contrast)     # exact: one patched run per cell, many cells per forward pass
    result.residual      # [layer + 1, position]: hidden_states numbering (0 = the embeddings' output, i = after layer i)
    result.attention     # [layer, position]: what the attention block adds to the residual stream (0-based layers)
    result.mlp           # [layer, position]: what the MLP block adds
    result.heads         # [layer, head]: one head's output z, at every position at once
    approx = attribution_sweep(model, contrast)  # the same grids from one forward and one backward pass

The metric is logit(answer) - logit(foil) at the [MASK] (Vig et al. 2020; Heimersheim & Nanda 2024). Direction
"denoise" (the default) patches the clean run's activations into the corrupted run; "noise" patches the corrupted
run's into the clean run. A value is normalised as (patched - base) / (source - base), where base is the run being
patched and source the run the activation comes from: for denoising (patched - corrupted) / (clean - corrupted), so
1 means that this one activation restores the clean behaviour and 0 that it changes nothing; for noising, 1 means it
alone brings the corrupted behaviour.

Batched: a sweep repeats the base input along the batch, one row per cell, and each row's intervention replaces
only that row's activation (a bool mask per hook), so a whole sweep costs (cells / batch_size) forward passes, where
TransformerLens's patching utilities run one pass per cell. Attribution patching (Nanda 2023; Syed et al. 2023)
approximates every cell at once: the gradient of the metric at the base run times (source - base) activation.
Causal tracing on one sentence with noise is in tracing.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import torch

from ...config import BertConfig
from ...costs import Cost
from ...devices import model_device
from ...errors import InvalidInputError
from ...hooks import hook_name
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding

SITES = ("residual", "attention", "mlp", "heads")  # what a sweep patches
DIRECTIONS = ("denoise", "noise")
SITE_KINDS = {"attention": "attention_result", "mlp": "mlp_result", "heads": "z"}  # the hook kind of each site
Progress = Callable[[int, int], None]  # (patched runs done, total)


@dataclass(frozen=True)
class Contrast:
    """Two inputs of the same length with one [MASK] at the same place, and the two words to compare there."""

    clean: Encoding
    corrupted: Encoding
    mask_position: int
    answer: str  # the vocabulary token the clean sentence should make likely
    answer_id: int
    foil: str
    foil_id: int

    @property
    def tokens(self) -> list[str]:
        return self.clean.tokens


@dataclass(frozen=True)
class Patch:
    """One activation to patch. site "residual": `layer` in hidden_states numbering (0..L); the others 0-based.
    position None: every position; head (site "heads" only) None: every head."""

    site: str
    layer: int
    position: int | None = None
    head: int | None = None


def site_hook(site: str, layer: int) -> str:
    """The hook a site reads and replaces: the residual stream is hidden_states[layer]."""
    if site == "residual":
        return hook_name("embedding_out") if layer == 0 else hook_name("layer_out", layer - 1)
    return hook_name(SITE_KINDS[site], layer)


def prepare_contrast(tokenizer: BertTokenizer, clean: str, corrupted: str, answer: str, foil: str, max_length: int = 512) -> Contrast:
    """Check and encode a patching experiment; every problem raises InvalidInputError saying what to change."""
    clean_encoding = tokenizer.encode(clean, max_length=max_length)
    corrupted_encoding = tokenizer.encode(corrupted, max_length=max_length)
    if clean.strip() == corrupted.strip():
        raise InvalidInputError("the clean and corrupted sentences are the same, so patching can change nothing: "
                                "change a word in the corrupted one (e.g. a name or a noun)")
    if len(clean_encoding) != len(corrupted_encoding):
        raise InvalidInputError(
            f"the sentences must have the same number of word pieces to patch position by position: clean has "
            f"{len(clean_encoding)} {clean_encoding.tokens}, corrupted has {len(corrupted_encoding)} {corrupted_encoding.tokens}"
        )
    masks = [tokenizer.mask_positions(e) for e in (clean_encoding, corrupted_encoding)]
    for name, positions in zip(("clean", "corrupted"), masks):
        if len(positions) != 1:
            raise InvalidInputError(f"the {name} sentence has {len(positions)} [MASK]; it needs exactly one, where the answer goes")
    if masks[0] != masks[1]:
        raise InvalidInputError(f"the [MASK] is at token {masks[0][0]} in the clean sentence and at {masks[1][0]} in the "
                                f"corrupted one: put it at the same place")
    answer_id, foil_id = tokenizer.one_token_id(answer, "answer"), tokenizer.one_token_id(foil, "foil")
    answer_token, foil_token = tokenizer.id_to_token(answer_id), tokenizer.id_to_token(foil_id)
    if answer_id == foil_id:
        raise InvalidInputError(f"the answer and the foil are the same token ({answer_token!r}): the metric compares two different words")
    return Contrast(clean_encoding, corrupted_encoding, masks[0][0], answer_token, answer_id, foil_token, foil_id)


@dataclass(frozen=True)
class PatchingResult:
    tokens: list[str]  # the clean sentence's tokens
    corrupted_tokens: list[str]
    answer: str
    foil: str
    clean_metric: float  # logit(answer) - logit(foil) at the [MASK], clean run
    corrupted_metric: float
    direction: str
    method: str  # "exact" or "attribution"
    residual: torch.Tensor | None = None  # [layer + 1, position], normalised
    attention: torch.Tensor | None = None  # [layer, position]
    mlp: torch.Tensor | None = None  # [layer, position]
    heads: torch.Tensor | None = None  # [layer, head]
    head_positions: torch.Tensor | None = None  # [head, position] at layer `head_layer`
    head_layer: int | None = None

    def strongest(self, site: str, count: int = 3) -> list[tuple[int, int, float]]:
        """(row, column, value) of a grid's `count` cells of largest |value|, largest first (rows: layers; columns:
        positions, or heads for "heads")."""
        grid = getattr(self, site)
        if grid is None:
            raise InvalidInputError(f"this result has no {site!r} sweep")
        order = grid.flatten().abs().argsort(descending=True, stable=True)[:count].tolist()
        return [(i // grid.shape[1], i % grid.shape[1], float(grid.flatten()[i])) for i in order]

    def to_dict(self) -> dict:
        """The grids as lists (rows: layers), the metrics, the tokens."""
        grids = {name: getattr(self, name).tolist() for name in ("residual", "attention", "mlp", "heads", "head_positions")
                 if getattr(self, name) is not None}
        return {"clean_metric": self.clean_metric, "corrupted_metric": self.corrupted_metric, "tokens": list(self.tokens)} | grids


def _inputs(model: Bert, encoding: Encoding) -> tuple[torch.Tensor, torch.Tensor]:
    return encoding.tensors(model_device(model))


def _at_mask(contrast: Contrast, rows: int, device) -> torch.Tensor:
    at_mask = torch.zeros(rows, len(contrast.clean), dtype=torch.bool, device=device)
    at_mask[:, contrast.mask_position] = True
    return at_mask


def contrast_metric(logits: torch.Tensor, contrast: Contrast) -> torch.Tensor:
    """logit(answer) - logit(foil) for each row of [row, vocab] logits at the [MASK]."""
    return (logits[:, contrast.answer_id] - logits[:, contrast.foil_id]).float()


@torch.no_grad()
def record_runs(model: Bert, contrast: Contrast, hooks: Iterable[str]) -> tuple[dict, dict, float, float]:
    """The clean and corrupted runs: ({hook: activation [1, ...]} of each, and their metrics). Raises when the two
    metrics are equal (normalising would divide by zero)."""
    hooks = sorted(set(hooks))
    caches, metrics = [], []
    for encoding in (contrast.clean, contrast.corrupted):
        input_ids, token_type_ids = _inputs(model, encoding)
        logits, cache = model.run_with_cache(input_ids, token_type_ids, names=hooks,
                                             logit_mask=_at_mask(contrast, 1, input_ids.device))
        caches.append(dict(cache))
        metrics.append(float(contrast_metric(logits, contrast)[0]))
    if abs(metrics[0] - metrics[1]) < 1e-6:
        raise InvalidInputError(
            f"logit({contrast.answer}) - logit({contrast.foil}) is {metrics[0]:.4f} in both sentences: the corrupted "
            f"sentence does not change the metric, so there is nothing to restore (change the corrupted sentence)"
        )
    return caches[0], caches[1], metrics[0], metrics[1]


def _row_masks(model: Bert, chunk: Sequence[Sequence[Patch]], seq: int, device) -> dict[str, torch.Tensor]:
    """For each hook the chunk patches: a bool mask over [row, position] ([row, head, position] for z)."""
    masks: dict[str, torch.Tensor] = {}
    heads = model.config.num_heads
    for row, patches in enumerate(chunk):
        for patch in patches:
            name = site_hook(patch.site, patch.layer)
            if name not in masks:
                masks[name] = torch.zeros((len(chunk), heads, seq) if patch.site == "heads" else (len(chunk), seq), dtype=torch.bool)
            position = slice(None) if patch.position is None else patch.position
            if patch.site == "heads":
                masks[name][row, slice(None) if patch.head is None else patch.head, position] = True
            else:
                masks[name][row, position] = True
    return {name: mask.to(device) for name, mask in masks.items()}


def patch_rows(source: Mapping[str, torch.Tensor], masks: Mapping[str, torch.Tensor]):
    """(hook, intervention) pairs: where a row's mask is True, that row's activation becomes `source`'s ([1, ...])."""

    def patched(activation: torch.Tensor, name: str) -> torch.Tensor:
        mask = masks[name][..., None]  # [row, (head,) position, 1]
        return torch.where(mask, source[name].to(activation.dtype), activation)

    return [(name, patched) for name in masks]


@torch.no_grad()
def run_patched(
    model: Bert, encoding: Encoding, rows: Sequence[Sequence[Patch]], source: Mapping[str, torch.Tensor],
    logit_mask_position: int, read: Callable[[torch.Tensor], torch.Tensor], base_interventions: Sequence = (),
    batch_size: int = 64, progress: Progress | None = None,
) -> torch.Tensor:
    """`read(logits at the position)` for each row of patches applied to `encoding`'s run: [row], on the CPU.

    Rows go `batch_size` at a time through one forward pass each; `base_interventions` apply to every row (e.g.
    tracing's noise). A row with no patch is the base run itself."""
    if batch_size < 1:
        raise InvalidInputError(f"batch_size must be at least 1, not {batch_size}")
    input_ids, token_type_ids = _inputs(model, encoding)
    seq, device = input_ids.shape[1], input_ids.device
    values = torch.empty(len(rows))
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        at_position = torch.zeros(len(chunk), seq, dtype=torch.bool, device=device)
        at_position[:, logit_mask_position] = True
        interventions = list(base_interventions) + patch_rows(source, _row_masks(model, chunk, seq, device))
        logits, _ = model.run_with_cache(input_ids.expand(len(chunk), -1), token_type_ids.expand(len(chunk), -1),
                                         names=[], interventions=interventions, logit_mask=at_position)
        values[start : start + len(chunk)] = read(logits).cpu()
        if progress is not None:
            progress(start + len(chunk), len(rows))
    return values


def sweep_cells(config: BertConfig, site: str, seq: int) -> int:
    """How many cells `sweep_patches` lists for a site."""
    layers = config.num_layers
    return {"residual": (layers + 1) * seq, "heads": layers * config.num_heads}.get(site, layers * seq)


def patching_cost(config: BertConfig, tokens: int, sites: Sequence[str] = SITES, head_layer: int | None = None,
                  exact: bool = True) -> Cost:
    """The passes `patching_sweep` (exact) or `attribution_sweep` makes for a pair of `tokens`-token sentences:
    the clean and the corrupted run, then one patched run per cell, or one pass with its gradient."""
    if not exact:
        return Cost(3, tokens, ("a shorter pair of sentences",), backward_passes=1)
    cells = sum(sweep_cells(config, site, tokens) for site in sites) + (0 if head_layer is None else config.num_heads * tokens)
    return Cost(2 + cells, tokens, ("a shorter pair of sentences", "attribution patching instead of the exact sweep"))


def sweep_patches(model: Bert, site: str, seq: int) -> list[Patch]:
    """Every cell of a site's sweep, row-major in its grid: residual [layer + 1, position], attention and mlp
    [layer, position], heads [layer, head]."""
    layers, heads = model.config.num_layers, model.config.num_heads
    if site == "residual":
        return [Patch(site, layer, position) for layer in range(layers + 1) for position in range(seq)]
    if site == "heads":
        return [Patch(site, layer, None, head) for layer in range(layers) for head in range(heads)]
    return [Patch(site, layer, position) for layer in range(layers) for position in range(seq)]


def head_position_patches(model: Bert, layer: int, seq: int) -> list[Patch]:
    """[head, position] cells of one layer's heads."""
    return [Patch("heads", layer, position, head) for head in range(model.config.num_heads) for position in range(seq)]


def _check(model: Bert, sites: Sequence[str], direction: str, head_layer: int | None) -> None:
    if not model.has_mlm_head:
        raise InvalidInputError("activation patching reads the masked-word logits: load a model with a masked-LM head")
    unknown = [site for site in sites if site not in SITES]
    if unknown:
        raise InvalidInputError(f"unknown site(s) {unknown}; choose from {', '.join(SITES)}")
    if direction not in DIRECTIONS:
        raise InvalidInputError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
    if head_layer is not None and not 0 <= head_layer < model.config.num_layers:
        raise InvalidInputError(f"head_layer must be a layer from 0 to {model.config.num_layers - 1}, not {head_layer}")


def _hooks(model: Bert, sites: Sequence[str], head_layer: int | None) -> list[str]:
    layers = model.config.num_layers
    hooks = [site_hook(site, layer) for site in sites for layer in range(layers + (site == "residual"))]
    return hooks + ([site_hook("heads", head_layer)] if head_layer is not None else [])


def patching_sweep(
    model: Bert, contrast: Contrast, sites: Sequence[str] = SITES, direction: str = "denoise",
    head_layer: int | None = None, batch_size: int = 64, progress: Progress | None = None,
) -> PatchingResult:
    """The exact sweeps: every cell its own patched run, `batch_size` runs per forward pass. head_layer: also the
    [head, position] grid of that layer's heads."""
    _check(model, sites, direction, head_layer)
    clean, corrupted, clean_metric, corrupted_metric = record_runs(model, contrast, _hooks(model, sites, head_layer))
    source, base, source_metric, base_metric = _oriented(direction, clean, corrupted, clean_metric, corrupted_metric, contrast)
    seq = len(contrast.clean)
    grids = {site: sweep_patches(model, site, seq) for site in sites}
    if head_layer is not None:
        grids["head_positions"] = head_position_patches(model, head_layer, seq)
    cells = [[patch] for patches in grids.values() for patch in patches]
    values = run_patched(model, base, cells, source, contrast.mask_position, lambda logits: contrast_metric(logits, contrast),
                         batch_size=batch_size, progress=progress)
    normalised = (values - base_metric) / (source_metric - base_metric)
    shaped, start = {}, 0
    for name, patches in grids.items():
        shaped[name] = normalised[start : start + len(patches)].reshape(_grid_shape(model, name, seq))
        start += len(patches)
    return PatchingResult(contrast.clean.tokens, contrast.corrupted.tokens, contrast.answer, contrast.foil, clean_metric,
                          corrupted_metric, direction, "exact", head_layer=head_layer, **shaped)


def _oriented(direction, clean, corrupted, clean_metric, corrupted_metric, contrast):
    """(source activations, base encoding, source metric, base metric) for the direction."""
    if direction == "denoise":
        return clean, contrast.corrupted, clean_metric, corrupted_metric
    return corrupted, contrast.clean, corrupted_metric, clean_metric


def _grid_shape(model: Bert, name: str, seq: int) -> tuple[int, int]:
    layers, heads = model.config.num_layers, model.config.num_heads
    return {"residual": (layers + 1, seq), "attention": (layers, seq), "mlp": (layers, seq), "heads": (layers, heads),
            "head_positions": (heads, seq)}[name]


def patched_metric(model: Bert, contrast: Contrast, patches: Sequence[Patch], direction: str = "denoise") -> float:
    """The normalised metric of one run with all `patches` applied together (none: 0; all of one residual layer: 1)."""
    _check(model, [patch.site for patch in patches], direction, None)
    hooks = [site_hook(patch.site, patch.layer) for patch in patches]
    clean, corrupted, clean_metric, corrupted_metric = record_runs(model, contrast, hooks)
    source, base, source_metric, base_metric = _oriented(direction, clean, corrupted, clean_metric, corrupted_metric, contrast)
    value = run_patched(model, base, [list(patches)], source, contrast.mask_position, lambda logits: contrast_metric(logits, contrast))
    return float((value[0] - base_metric) / (source_metric - base_metric))


def attribution_sweep(
    model: Bert, contrast: Contrast, sites: Sequence[str] = SITES, direction: str = "denoise", head_layer: int | None = None,
) -> PatchingResult:
    """Attribution patching: each cell's (patched - base) approximated to first order, gradient of the metric at
    the base run times (source - base) activation, summed over the hidden (or head) dimension of that cell; then
    normalised like the exact sweep. One forward and one backward pass for every site together."""
    _check(model, sites, direction, head_layer)
    hooks = _hooks(model, sites, head_layer)
    clean, corrupted, clean_metric, corrupted_metric = record_runs(model, contrast, hooks)
    source, base, source_metric, base_metric = _oriented(direction, clean, corrupted, clean_metric, corrupted_metric, contrast)
    base_activations = corrupted if direction == "denoise" else clean
    gradients = metric_gradients(model, contrast, base, sorted(set(hooks)))
    layers = model.config.num_layers

    def attribution(name: str) -> torch.Tensor:  # [seq], or [head, seq] for z
        return (gradients[name] * (source[name] - base_activations[name]).float())[0].sum(-1).cpu()

    scale = source_metric - base_metric
    grids = {}
    for site in sites:
        rows = [attribution(site_hook(site, layer)) for layer in range(layers + (site == "residual"))]
        grids[site] = torch.stack([row.sum(-1) if site == "heads" else row for row in rows]) / scale
    if head_layer is not None:
        grids["head_positions"] = attribution(site_hook("heads", head_layer)) / scale
    return PatchingResult(contrast.clean.tokens, contrast.corrupted.tokens, contrast.answer, contrast.foil, clean_metric,
                          corrupted_metric, direction, "attribution", head_layer=head_layer, **grids)


def metric_gradients(model: Bert, contrast: Contrast, encoding: Encoding, hooks: Sequence[str]) -> dict[str, torch.Tensor]:
    """d metric / d activation at each hook, in `encoding`'s run (float32, [1, ...]). A zero tensor that requires
    grad is added at each hook, so the gradient flows whether or not the model's weights require it, and no
    weight's .grad is touched (torch.autograd.grad, not backward)."""
    input_ids, token_type_ids = _inputs(model, encoding)
    offsets: dict[str, torch.Tensor] = {}

    def add_offset(activation: torch.Tensor, name: str) -> torch.Tensor:
        offsets[name] = torch.zeros_like(activation, requires_grad=True)
        return activation + offsets[name]

    with torch.enable_grad():
        logits, _ = model.run_with_cache(input_ids, token_type_ids, names=[], interventions=[(name, add_offset) for name in hooks],
                                         logit_mask=_at_mask(contrast, 1, input_ids.device))
        metric = contrast_metric(logits, contrast).sum()
        gradients = torch.autograd.grad(metric, [offsets[name] for name in hooks], allow_unused=True)
    return {name: (torch.zeros_like(offsets[name]) if grad is None else grad).float() for name, grad in zip(hooks, gradients)}
