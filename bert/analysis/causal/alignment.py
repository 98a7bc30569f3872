"""Where a variable lives: distributed alignment search and its baselines, trained and scored on pairs.

    result = align(model, tokenizer, task_pairs("number-pp"), hook_name("layer_out", 3), "differs",
                   AlignmentSettings(method="das", dims=1))
    result.iia["test"], result.control_iia, result.selectivity, result.log_odds

Methods (bert/analysis/causal/interchange.py does the swap; each gives the directions B whose coordinates come from
the source):
- `full`: the whole vector (activation patching, the localist reference);
- `das`: a learned rotation, its first k coordinates swapped (Geiger et al. 2024), trained with PyTorch's orthogonal
  parametrisation as pyvene's RotatedSpaceIntervention;
- `boundless`: Boundless DAS (Wu et al. 2023): the rotation and how many of its coordinates are swapped, through a
  sigmoid boundary whose temperature is annealed from 50 to 0.1;
- CausalGym's baselines (Arora et al. 2024), fitted on the training sentences' vectors at the site with the
  variable's value as the class: `mean-diff` (difference of the class means), `probe` (a logistic regression's
  weight vector), `lda` (linear discriminant analysis's direction), all one dimension; `pca` (the top k principal
  directions); `random` (k random orthonormal directions, the floor). scikit-learn fits them.

Held-out split (seeded): by template and by lexical item at once, so a test pair shares neither its template nor
its words with training. The control task (Hewitt & Liang 2019) gives each word a random value (the values
permuted over the word types) and expects the source's answer only where the two words' control values differ; it
splits by template only, so its words are seen in training and a method that memorises words can score there.
selectivity = IIA − control IIA (on held-out pairs). Pairs the model gets wrong in both sentences (the other
answer preferred in each) are left out of training and scoring, and counted.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from ...config import BertConfig
from ...costs import Cost, pass_bytes
from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer
from ...data.variable_pairs import VariablePair
from .interchange import (PreparedPair, Position, check_site, evaluate, interchange_accuracy, intervened_logits,
                          log_odds, prepare_pairs, record_pairs)

METHODS = ("full", "das", "boundless", "mean-diff", "probe", "pca", "lda", "random")
TRAINED = ("das", "boundless")  # trained by interventions (forward and backward passes); the others fit on vectors
ONE_DIMENSION = ("mean-diff", "probe", "lda")  # a binary variable gives them one direction
BOUNDLESS_TEMPERATURES = (50.0, 0.1)  # annealed linearly over the steps
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class AlignmentSettings:
    method: str = "das"
    dims: int = 1  # k: coordinates swapped (das, pca, random); mean-diff, probe, lda use 1; full all; boundless learns it
    steps: int = 100  # training steps (das, boundless), each one batch of pairs
    batch_size: int = 16  # pairs per training step
    learning_rate: float = 1e-2  # Adam's, for the rotation (the boundary's is 10 times it)
    size_penalty: float = 1.0  # boundless: added to the loss times the share of coordinates swapped
    temperatures: tuple[float, float] = BOUNDLESS_TEMPERATURES  # boundless: the boundary's, first to last step, linear;
    # in coordinates (Wu et al.'s 50 to 0.1 were for 4096 of them): a small model wants a smaller start
    seed: int = 0  # the split, the control's labels, the rotation's start, the batches
    max_pairs: int = 256  # training pairs at most (held-out: half of it), sampled (seeded) after the split
    test_share: float = 0.34  # of the templates and of the lexical items held out
    eval_batch_size: int = 64  # rows a forward pass when recording and scoring


@dataclass(frozen=True)
class PairSplit:
    """The pairs of one experiment, in the model's tokens, the ones the model gets wrong in both sentences already
    left out (`dropped` counts them; `unusable` counts the generated pairs the tokenizer could not line up)."""

    train: list[PreparedPair]
    test: list[PreparedPair]
    control_train: list[PreparedPair]
    control_test: list[PreparedPair]
    control_values: dict[str, str]  # word -> its control value
    dropped: int = 0
    unusable: int = 0


@dataclass(frozen=True)
class AlignmentResult:
    method: str
    hook: str
    position: Position
    dims: int  # the coordinates swapped (boundless: learned)
    pairs: dict  # {"train", "test", "dropped"} (and "unusable", generated pairs the tokenizer could not line up)
    iia: dict  # {"train", "test"}
    control_iia: dict  # {"test"}
    selectivity: float  # iia["test"] - control_iia["test"]
    log_odds: float  # held-out pairs, CausalGym's
    basis: torch.Tensor | None = field(default=None, repr=False)  # [hidden, dims] the directions; None: full

    def to_dict(self) -> dict:
        return {"method": self.method, "position": self.position, "dims": self.dims, "pairs": dict(self.pairs),
                "iia": dict(self.iia), "control_iia": dict(self.control_iia), "selectivity": self.selectivity,
                "log_odds": self.log_odds}


# --- splitting and the control task -------------------------------------------------------------------------------

def split_pairs(pairs: Sequence[VariablePair], seed: int, test_share: float, max_pairs: int
                ) -> tuple[list, list, list, list]:
    """(train, test, control train, control test), sampled to max_pairs (held-out ones: max_pairs // 2, at least 1).
    Task: test pairs have a held-out template and held-out items in both sentences, training pairs neither. Control:
    by template only (a file's pairs, without templates: a seeded share of the pairs)."""
    chooser = random.Random(seed)
    templates = sorted({p.template for p in pairs})
    items = sorted({p.base_item for p in pairs} | {p.source_item for p in pairs})
    held_templates = set(chooser.sample(templates, _share(len(templates), test_share))) if len(templates) > 1 else set()
    held_items = set(chooser.sample(items, _share(len(items), test_share)))

    def test_template(p):
        return p.template in held_templates if held_templates else None

    train = [p for p in pairs if not test_template(p) and p.base_item not in held_items and p.source_item not in held_items]
    test = [p for p in pairs if test_template(p) is not False and p.base_item in held_items and p.source_item in held_items]
    if held_templates:
        control_train = [p for p in pairs if not test_template(p)]
        control_test = [p for p in pairs if test_template(p)]
    else:
        shuffled = chooser.sample(list(pairs), len(pairs))
        cut = len(shuffled) - _share(len(shuffled), test_share)
        control_train, control_test = shuffled[:cut], shuffled[cut:]
    held = max(1, max_pairs // 2)
    return (_sample(chooser, train, max_pairs), _sample(chooser, test, held), _sample(chooser, control_train, max_pairs),
            _sample(chooser, control_test, held))


def _share(count: int, share: float) -> int:
    return min(max(1, round(count * share)), max(count - 1, 1))


def _sample(chooser: random.Random, pairs: list, count: int) -> list:
    return pairs if len(pairs) <= count else chooser.sample(pairs, count)


def control_values(pairs: Sequence[VariablePair], seed: int) -> dict[str, str]:
    """Each word's control value: the words' own values permuted over the word types (seeded), so each value keeps
    its count of words (Hewitt & Liang 2019)."""
    own = {}
    for p in pairs:
        own.setdefault(p.base_word, p.base_value)
        own.setdefault(p.source_word, p.source_value)
    words = sorted(own)
    values = [own[w] for w in words]
    random.Random(seed + 1).shuffle(values)
    return dict(zip(words, values))


def expects_source(pairs: Sequence[PreparedPair], values: dict[str, str] | None = None) -> torch.Tensor:
    """[pair] bool: whether the causal model expects the source's answer after the swap: always for the task; for
    the control, where the two words' control values differ."""
    if values is None:
        return torch.ones(len(pairs), dtype=torch.bool)
    return torch.tensor([values[p.pair.base_word] != values[p.pair.source_word] for p in pairs], dtype=torch.bool)


def prepare_split(model: Bert, tokenizer: BertTokenizer, pairs: Sequence[VariablePair], settings: AlignmentSettings,
                  sites: Sequence[tuple[str, Position]]):
    """Split, tokenize, record every pair's vectors at the sites (one pass a sentence) and leave out the pairs the
    model gets wrong in both sentences: (PairSplit, {set name: (base vectors, source vectors, base-run logits)})."""
    parts = split_pairs(pairs, settings.seed, settings.test_share, settings.max_pairs)
    prepared, unusable = [], 0
    for part in parts:
        ready, bad = prepare_pairs(tokenizer, part, model.config.max_position_embeddings)
        prepared.append(ready)
        unusable += bad
    names = ("train", "test", "control_train", "control_test")
    if not prepared[0] or not prepared[1]:
        raise InvalidInputError(f"too few usable pairs to train and test: {len(prepared[0])} training, {len(prepared[1])} "
                                f"held-out after the split by template and words ({unusable} the tokenizer could not line up); "
                                f"give more pairs, more templates or more words")
    for hook, position in sites:
        check_site(model, hook, position, [p for ready in prepared for p in ready])
    kept, recorded, dropped = [], {}, 0
    for name, ready in zip(names, prepared):
        base, source, base_logits, source_logits = record_pairs(model, tokenizer.pad_id, ready, sites, settings.eval_batch_size)
        right = (base_logits[:, 0] > base_logits[:, 1]) | (source_logits[:, 1] > source_logits[:, 0])
        keep = right.nonzero().flatten().tolist()
        dropped += len(ready) - len(keep) if name in ("train", "test") else 0
        kept.append([ready[i] for i in keep])
        recorded[name] = ({site: v[keep] for site, v in base.items()}, {site: v[keep] for site, v in source.items()}, base_logits[keep])
    if not all(kept):
        raise InvalidInputError("no training or no held-out pair is left (for the task or its control) once the pairs "
                                "the model gets wrong in both sentences are left out: give more pairs, or another task or model")
    split = PairSplit(*kept, control_values=control_values([p.pair for p in kept[2] + kept[3]], settings.seed),
                      dropped=dropped, unusable=unusable)
    return split, recorded


# --- fitting the directions ---------------------------------------------------------------------------------------

def _rotation(hidden: int, columns: int, seed: int) -> torch.nn.Module:
    """A [hidden, columns] matrix with orthonormal columns, kept so by PyTorch's orthogonal parametrisation, started
    at a seeded random one (as pyvene's RotateLayer; columns < hidden: its LowRankRotateLayer, the first `columns`
    columns of a rotation, all that a swap of `columns` coordinates uses), without touching the global random state."""
    layer = torch.nn.Module()
    start = torch.empty(hidden, columns)
    torch.nn.init.orthogonal_(start, generator=torch.Generator().manual_seed(seed))
    layer.weight = torch.nn.Parameter(start)
    with torch.random.fork_rng(devices=[]):  # registering the parametrisation draws from the global generator
        return torch.nn.utils.parametrizations.orthogonal(layer)


def boundary_weights(size: torch.Tensor, hidden: int, temperature: float) -> torch.Tensor:
    """Boundless DAS's soft mask over the rotated coordinates: sigmoid((size - i - 1/2) / temperature) for
    coordinate i, about 1 below `size` and 0 above it as the temperature falls."""
    return torch.sigmoid((size - torch.arange(hidden, device=size.device) - 0.5) / temperature)


def train_rotation(model: Bert, pad_id: int, train: Sequence[PreparedPair], source: torch.Tensor, expected: torch.Tensor,
                   hook: str, position: Position, settings: AlignmentSettings, progress: Progress | None = None
                   ) -> tuple[torch.Tensor, int]:
    """DAS (or Boundless DAS): Adam on the rotation (and the boundary), cross-entropy between the intervened run's
    two answer logits and the expected answer; gradients by torch.autograd.grad, so the model's weights and their
    .grad are never touched. Returns (the basis [hidden, dims], dims)."""
    hidden = source.shape[1]
    boundless = settings.method == "boundless"
    rotation = _rotation(hidden, hidden if boundless else settings.dims, settings.seed)
    boundary = torch.nn.Parameter(torch.tensor(0.5))  # the share of coordinates swapped
    parameters = [{"params": list(rotation.parameters()), "lr": settings.learning_rate}]
    if boundless:
        parameters.append({"params": [boundary], "lr": 10 * settings.learning_rate})
    optimizer = torch.optim.Adam(parameters)
    batches = torch.Generator().manual_seed(settings.seed)
    rows = min(settings.batch_size, len(train))
    temperatures = torch.linspace(*settings.temperatures, settings.steps)
    trained = [p for group in parameters for p in group["params"]]
    for step in range(settings.steps):
        pick = torch.randperm(len(train), generator=batches)[:rows]
        with torch.enable_grad():
            weight = rotation.weight
            if boundless:
                size = boundary.clamp(1e-3, 1.0) * hidden
                basis, weights = weight, boundary_weights(size, hidden, float(temperatures[step]))
            else:
                basis, weights = weight, None
            logits = intervened_logits(model, pad_id, [train[i] for i in pick], hook, position, source[pick], basis, weights)
            loss = torch.nn.functional.cross_entropy(logits, expected[pick].long())
            if boundless:
                loss = loss + settings.size_penalty * boundary
            gradients = torch.autograd.grad(loss, trained)
        for parameter, gradient in zip(trained, gradients):
            parameter.grad = gradient
        optimizer.step()
        with torch.no_grad():  # kept in range: a boundary left above 1 would get no gradient through the clamp, and stay
            boundary.clamp_(1e-3, 1.0)
        if progress is not None:
            progress(step + 1, settings.steps)
    with torch.no_grad():
        weight = rotation.weight.detach().clone()
        if not boundless:
            return weight, settings.dims
        dims = int((boundary_weights(boundary.clamp(1e-3, 1.0) * hidden, hidden, settings.temperatures[1]) > 0.5).sum())
        return weight[:, : max(dims, 1)], max(dims, 1)


def fitted_basis(method: str, vectors: torch.Tensor, labels: Sequence[str], dims: int, seed: int) -> tuple[torch.Tensor | None, int]:
    """A method's directions fitted on [sentence, hidden] vectors and their values (scikit-learn): (basis, dims)."""
    import numpy as np

    hidden = vectors.shape[1]
    x = vectors.double().numpy()
    if method == "full":
        return None, hidden
    if method == "random":
        gaussian = torch.randn(hidden, dims, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        return torch.linalg.qr(gaussian).Q.float(), dims
    if method == "pca":
        from sklearn.decomposition import PCA

        return _unit_columns(PCA(n_components=dims).fit(x).components_.T), dims
    classes = sorted(set(labels))
    if len(classes) != 2:
        raise InvalidInputError(f"{method} needs a variable with two values; these pairs have {len(classes)}: {classes[:6]}")
    y = np.array([classes.index(label) for label in labels])
    if method == "mean-diff":
        direction = x[y == 1].mean(0) - x[y == 0].mean(0)
    elif method == "probe":
        from sklearn.linear_model import LogisticRegression

        direction = LogisticRegression(max_iter=2000).fit(x, y).coef_[0]
    elif method == "lda":
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        direction = LinearDiscriminantAnalysis(solver="svd").fit(x, y).scalings_[:, 0]
    else:
        raise InvalidInputError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    return _unit_columns(direction[:, None]), 1


def _unit_columns(matrix) -> torch.Tensor:
    basis = torch.as_tensor(matrix, dtype=torch.float64)
    return (basis / basis.norm(dim=0, keepdim=True)).float()


# --- one site -----------------------------------------------------------------------------------------------------

def check_settings(settings: AlignmentSettings, hidden: int | None = None) -> None:
    if settings.method not in METHODS:
        raise InvalidInputError(f"unknown method {settings.method!r}; choose from {', '.join(METHODS)}")
    if settings.dims < 1 or (hidden is not None and settings.dims > hidden):
        raise InvalidInputError(f"dims must be from 1 to the hidden size{f' ({hidden})' if hidden else ''}, not {settings.dims}")
    for name in ("steps", "batch_size", "max_pairs", "eval_batch_size"):
        if getattr(settings, name) < 1:
            raise InvalidInputError(f"{name.replace('_', ' ')} must be at least 1, not {getattr(settings, name)}")
    if not 0 < settings.test_share < 1:
        raise InvalidInputError(f"test_share must be between 0 and 1, not {settings.test_share}")


def _fit_and_score(model, pad_id, split, recorded, hook, position, settings, values, progress):
    """(basis, dims, IIA on the training set, IIA and logits on the held-out set) for the task (values None) or
    the control (values: each word's control value)."""
    train_name, test_name = ("train", "test") if values is None else ("control_train", "control_test")
    train, test = getattr(split, train_name), getattr(split, test_name)
    base, source, _ = recorded[train_name]
    site = (hook, position)
    expected = expects_source(train, values)
    if settings.method in TRAINED:
        basis, dims = train_rotation(model, pad_id, train, source[site], expected, hook, position, settings, progress)
    else:
        vectors = torch.cat([base[site], source[site]])
        words = [p.pair.base_word for p in train] + [p.pair.source_word for p in train]
        own = [p.pair.base_value for p in train] + [p.pair.source_value for p in train]
        labels = own if values is None else [values[w] for w in words]
        basis, dims = fitted_basis(settings.method, vectors, labels, settings.dims, settings.seed)
    train_logits = None
    if values is None:
        train_logits = evaluate(model, pad_id, train, hook, position, source[site], basis, batch_size=settings.eval_batch_size)
    test_source = recorded[test_name][1][site]
    test_logits = evaluate(model, pad_id, test, hook, position, test_source, basis, batch_size=settings.eval_batch_size)
    train_iia = None if train_logits is None else interchange_accuracy(train_logits, expected)
    return basis, dims, train_iia, interchange_accuracy(test_logits, expects_source(test, values)), test_logits


def align_prepared(model: Bert, pad_id: int, split: PairSplit, recorded: dict, hook: str, position: Position,
                   settings: AlignmentSettings, progress: Progress | None = None) -> AlignmentResult:
    """One method at one site on pairs already split and recorded (prepare_split): the task, then the control."""
    basis, dims, train_iia, test_iia, test_logits = _fit_and_score(model, pad_id, split, recorded, hook, position, settings, None, progress)
    _, _, _, control_iia, _ = _fit_and_score(model, pad_id, split, recorded, hook, position, settings, split.control_values, progress)
    pairs = {"train": len(split.train), "test": len(split.test), "dropped": split.dropped, "unusable": split.unusable}
    return AlignmentResult(settings.method, hook, position, dims, pairs, {"train": train_iia, "test": test_iia},
                           {"test": control_iia}, test_iia - control_iia, log_odds(test_logits, recorded["test"][2]), basis)


def align(model: Bert, tokenizer: BertTokenizer, pairs: Sequence[VariablePair], hook: str, position: Position,
          settings: AlignmentSettings = AlignmentSettings(), progress: Progress | None = None) -> AlignmentResult:
    """Fit or train one method at one hook and position, and score it on held-out pairs against its control."""
    check_settings(settings, model.config.hidden_size)
    split, recorded = prepare_split(model, tokenizer, pairs, settings, [(hook, position)])
    return align_prepared(model, tokenizer.pad_id, split, recorded, hook, position, settings, progress)


# --- cost and sweep -------------------------------------------------------------------------------------------------

def alignment_cost(config: BertConfig, tokens: int, pair_counts: tuple[int, int, int, int], settings: AlignmentSettings,
                   sites: int = 1) -> Cost:
    """The passes `align` (sites = 1) or `alignment_sweep` makes at most (fewer when pairs are dropped):
    recording, both sentences of every pair, one pass each; then at each site, training (das, boundless) steps x
    batch rows, forward and backward, for the task and for the control; scoring, one intervened pass per
    training, held-out and control held-out pair. pair_counts: (train, test, control train, control test).
    Memory: it keeps both sentences' vectors at every site (float32), and its largest batch is a training step's
    rows with their gradients or a recording batch."""
    train, test, control_train, control_test = pair_counts
    record = 2 * sum(pair_counts)
    trained = settings.method in TRAINED
    training = settings.steps * (min(settings.batch_size, train) + min(settings.batch_size, control_train)) if trained else 0
    scoring = train + test + control_test
    lower = ("fewer pairs", "fewer layers or positions") + (("fewer training steps",) if trained else ())
    kept = record * sites * config.hidden_size * 4
    largest = pass_bytes(config, tokens, max(1, min(settings.eval_batch_size, max(pair_counts, default=1))))
    if trained:
        largest = max(largest, pass_bytes(config, tokens, max(1, min(settings.batch_size, train)), gradient=True))
    return Cost(record + sites * (training + scoring), tokens, lower, backward_passes=sites * training,
                kept_bytes=kept, peak_bytes=kept + largest, rows_at_once=0)


def planned_pairs(tokenizer: BertTokenizer, pairs: Sequence[VariablePair], settings: AlignmentSettings, max_length: int
                  ) -> tuple[tuple[int, int, int, int], int]:
    """(the four pair counts the split gives before any is dropped, the longest sentence's tokens): what
    alignment_cost needs, known before any pass."""
    parts = split_pairs(pairs, settings.seed, settings.test_share, settings.max_pairs)
    ready = [prepare_pairs(tokenizer, part, max_length)[0] for part in parts]
    longest = max((len(p.base) for part in ready for p in part), default=0)
    return tuple(len(part) for part in ready), longest


@dataclass(frozen=True)
class SweepResult:
    method: str
    layers: list[int]  # 0-based layers of the hook kind
    positions: list[Position]
    kind: str  # the hook kind swept (bert/hooks.py), e.g. layer_out
    results: list[list[AlignmentResult]]  # [layer][position]

    def grid(self, what: str = "iia") -> list[list[float]]:
        """[layer][position] of held-out IIA ("iia"), control IIA ("control_iia") or "selectivity"."""
        pick = {"iia": lambda r: r.iia["test"], "control_iia": lambda r: r.control_iia["test"], "selectivity": lambda r: r.selectivity}[what]
        return [[pick(r) for r in row] for row in self.results]


def alignment_sweep(model: Bert, tokenizer: BertTokenizer, pairs: Sequence[VariablePair], layers: Sequence[int],
                    positions: Sequence[Position] = ("mask", "differs"), kind: str = "layer_out",
                    settings: AlignmentSettings = AlignmentSettings(), progress: Progress | None = None) -> SweepResult:
    """One method at every layer x position, on one split: the pairs are recorded once for every site (one pass
    a sentence), then each site is fitted and scored. Stop it from outside with bert.stopping.watching: every pass
    checks. progress(sites done, sites)."""
    from ...hooks import hook_name

    check_settings(settings, model.config.hidden_size)
    bad = [layer for layer in layers if not 0 <= layer < model.config.num_layers]
    if bad or not layers or not positions:
        raise InvalidInputError(f"layers must be from 0 to {model.config.num_layers - 1} (got {list(layers)}), with at least one position")
    sites = [(hook_name(kind, layer), position) for layer in layers for position in positions]
    split, recorded = prepare_split(model, tokenizer, pairs, settings, sites)
    results = []
    for row, layer in enumerate(layers):
        results.append([])
        for column, position in enumerate(positions):
            results[-1].append(align_prepared(model, tokenizer.pad_id, split, recorded, hook_name(kind, layer), position, settings))
            if progress is not None:
                progress(row * len(positions) + column + 1, len(sites))
    return SweepResult(settings.method, list(layers), list(positions), kind, results)
