"""Which models the picker offers, how to load one, and a short summary of its size (no Streamlit here)."""
from __future__ import annotations

import json
import os
import types
from collections import abc
from dataclasses import dataclass
from pathlib import Path

import torch

import bert
from bert.checkpoint import WEIGHT_FILES
from bert.devices import model_device
from bert.hub import MODEL_TYPES, hub_cache_dir
from bert.pretrained import FINETUNED_FILES, MINILM_HEAD_FILE, MINILM_NSP_FILE
from viz_app.app.text import Markdown

FOLDER = "folder"  # the picker's "a local Hugging Face folder" choice
PREFERRED_HUB_IDS = ("bert-base-uncased", "bert-base-cased", "bert-large-uncased")  # offered first when cached
BUILTIN_NOTE = Markdown(
    "Built in: a small model trained by this project (MiniLM-L6 + a masked-LM head, see "
    "bert/weights/MODEL_CARD.md), rougher than BERT-base. For the real bert-base-uncased, use "
    "Download a model below while online (or run `python -m bert download bert-base-uncased`): it then comes "
    "first here."
)
DEVICE_VARIABLE = "BERT_DEVICE"  # environment variable: where the app runs models (default: a GPU when present)


@dataclass(frozen=True)
class ModelKey:
    """Which model, as one hashable value: what every cache is keyed by and what a page passes on."""

    source: str  # what load_pretrained takes and the URL carries: "minilm", a hub id or a folder path
    folder: str | None = None  # the folder actually loaded, for a cached hub model or a local folder
    revision: str = ""  # a fingerprint of the files (see `revision`): a replaced checkpoint is a new key

    @classmethod
    def of(cls, source: str, folder: str | None = None) -> ModelKey:
        """The key of `source` (and its folder) as the files are now."""
        return cls(source, folder, revision(source, folder))


@dataclass(frozen=True)
class ModelChoice:
    source: str  # what load_pretrained takes and the URL carries: "minilm", a hub id, or FOLDER
    name: str  # what the sidebar's picker shows: the built-in ones fit its width at 1366x768 (PICKER_WIDTH characters)
    note: str = ""  # where it comes from or what it lacks ("built in", "local Hugging Face cache"); "" for none
    folder: str | None = None  # a cached hub model's snapshot folder, loaded directly

    @property
    def label(self) -> str:
        """The full name, "name (note)": under the sidebar's picker, and in the pickers of the main area."""
        return f"{self.name} ({self.note})" if self.note else self.name


PICKER_WIDTH = 26  # characters a picker entry shows before the sidebar cuts it ("MiniLM-L6 + masked-LM head")


@dataclass(frozen=True)
class ModelSummary:
    layers: int
    heads: int
    hidden: int
    intermediate: int
    max_positions: int
    vocab: int
    parameters: int  # every parameter once (the tied decoder weight is the token embedding)
    has_mlm_head: bool
    device: str = "the CPU"  # where it runs, in words: "the CPU", "the GPU (NVIDIA H100 80GB HBM3)"

    def one_line(self) -> str:
        return (
            f"{self.layers} layers · {self.heads} heads · hidden {self.hidden} · "
            f"{self.parameters / 1e6:.1f} M parameters · runs on {self.device}"
        )


POSITIONS_ROTATED = ("This model has no position or segment embeddings: it rotates each position into the queries and "
                     "keys inside every attention layer (rotary embeddings, Su et al. 2021; ModernBERT, Warner et al. "
                     "2024), so only the token embedding enters and this page's three-part comparison does not apply.")
POSITIONS_ROTATED_SEGMENTS = ("This model has no position embeddings: it rotates each position into the queries and keys "
                              "inside every attention layer (rotary embeddings, Su et al. 2021; GTE, Zhang et al. 2024), so "
                              "only the token and segment embeddings enter and this page's three-part comparison does not "
                              "apply.")
POSITIONS_RELATIVE = ("This model has no position or segment embeddings: every attention layer adds scores read from "
                      "the distance between two tokens (disentangled attention, He et al. 2021), so only the token "
                      "embedding enters and this page's three-part comparison does not apply.")


def family_notes(config: bert.BertConfig) -> list[str]:
    """What the sidebar adds for a model built unlike BERT's layers (ModernBERT, Warner et al. 2024): no position
    or segment tables and no next-sentence head, its local layers; DeBERTa's relative positions (He et al. 2021);
    EuroBERT's RMSNorm and grouped-query attention (Boizard et al. 2025). Empty for the post-LN families."""
    notes = []
    if config.rotary:
        parts = ["Positions rotated into q and k (Su et al. 2021)", "no segment embeddings" if not config.type_vocab_size else "",
                 "no next-sentence head", "a norm before each sub-layer (pre-norm)" if config.pre_norm else ""]
        notes.append("; ".join(part for part in parts if part) + ".")
    if config.rms_norm:
        notes.append("RMSNorm in place of LayerNorm (Zhang and Sennrich 2019): each vector is divided by its root mean "
                     "square, with no mean taken away and no shift.")
    if config.query_heads_per_key > 1:
        notes.append(f"Grouped-query attention (Ainslie et al. 2023): every {config.query_heads_per_key} heads share one "
                     f"key and one value head, {config.key_value_head_count} of each per layer.")
    if config.relative_attention:
        notes.append("Positions enter every attention layer as relative distances (content-to-position and "
                     "position-to-content scores, He et al. 2021); no next-sentence head.")
    if config.local_attention is not None:
        every = config.global_attn_every_n_layers
        notes.append(f"Local attention: layers 0, {every}, {2 * every}, … see the whole input, the others only the "
                     f"{config.local_attention // 2} tokens on each side (Beltagy et al. 2020's sliding window).")
    return notes


@dataclass(frozen=True)
class LoadedModel:
    """What the app shares between every session: never mutate `model` (eval mode, no per-request state)."""

    key: ModelKey
    model: bert.Bert
    tokenizer: bert.BertTokenizer
    summary: ModelSummary


class ModelCallError(RuntimeError):
    """A page called the model itself: its forward passes are a spec's computations, run by viz_app/heavy.py."""


class ModelDescription:
    """The loaded model, or one of its modules, as a page reads it: its config, output heads, labels, hook names,
    module tree, parameters (names and sizes) and repr. Calling it, or any method of it that runs it (`forward`,
    `run_with_cache`, `encode`, the heads' logits, a hook's registration), raises ModelCallError: a page's pass is a
    `Computation` (viz_app/specs/base.py), whose `cost` and `compute` read the model itself. Every module reached
    from it (an attribute, an index, `named_modules()`, `children()`, `get_submodule`, the module's own dicts) is a
    ModelDescription of that module, and `isinstance` reads it as the module's class (the Architecture page sorts
    the module tree by kind)."""

    __slots__ = ("_described",)
    DESCRIBING = frozenset({"hook_names", "named_parameters", "parameters", "named_buffers", "buffers", "extra_repr",
                            "named_modules", "modules", "named_children", "children", "get_submodule", "keys",
                            "values", "items"})  # the methods that read: what they give is described in turn

    def __init__(self, module: torch.nn.Module) -> None:
        object.__setattr__(self, "_described", module)

    def __getattribute__(self, name: str):
        module = object.__getattribute__(self, "_described")
        if name == "__class__":  # isinstance(description, nn.Embedding) reads the module's class
            return type(module)
        if name.startswith("__") and name.endswith("__") and name != "__dict__":
            return object.__getattribute__(self, name)
        value = getattr(module, name)
        if not callable(value) or isinstance(value, torch.nn.Module):
            return _described(value)
        if name not in ModelDescription.DESCRIBING:
            raise ModelCallError(f"a page cannot run the model (its {name}): declare the pass as a Computation "
                                 "and run it through viz_app.heavy.run")
        return lambda *args, **kwargs: _described(value(*args, **kwargs))

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError("the model is shared by every session: a page changes nothing of it")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("the model is shared by every session: a page changes nothing of it")

    def __call__(self, *args, **kwargs):
        raise ModelCallError("a page cannot run the model: declare the pass as a Computation and run it through "
                             "viz_app.heavy.run")

    def __repr__(self) -> str:
        return repr(object.__getattribute__(self, "_described"))

    def __reduce_ex__(self, protocol):  # a copy or a pickle would hand over the module itself
        raise TypeError("a description of the model is not copied: a page reads it where it is")

    def __getstate__(self):
        raise TypeError("a description of the model is not copied: a page reads it where it is")

    def __dir__(self):
        return dir(object.__getattribute__(self, "_described"))

    def __eq__(self, other) -> bool:
        mine = object.__getattribute__(self, "_described")
        return mine is (object.__getattribute__(other, "_described") if type(other) is ModelDescription else other)

    def __hash__(self) -> int:
        return hash(object.__getattribute__(self, "_described"))

    def __bool__(self) -> bool:
        return bool(object.__getattribute__(self, "_described"))

    def __len__(self) -> int:  # a ModuleList, ModuleDict or Sequential: its modules
        return len(object.__getattribute__(self, "_described"))

    def __contains__(self, item) -> bool:
        return item in object.__getattribute__(self, "_described")

    def __iter__(self):
        return (_described(item) for item in object.__getattribute__(self, "_described"))

    def __getitem__(self, index):
        return _described(object.__getattribute__(self, "_described")[index])


class TensorDescription:
    """A parameter or buffer of the loaded model, as a page reads it: its shape, size, dtype, device and whether it
    is trained, never its numbers. Any other use (arithmetic, indexing, `.data`, `.numpy()`, an in-place change)
    raises ModelCallError: the numbers reach a page through a `Computation`, which reads the model itself. Two
    descriptions of one tensor are equal and hash alike (the Architecture page finds tied weights so)."""

    __slots__ = ("_described",)
    READING = frozenset({"shape", "dtype", "device", "requires_grad", "ndim", "is_leaf"})

    def __init__(self, tensor: torch.Tensor) -> None:
        object.__setattr__(self, "_described", tensor)

    def __getattr__(self, name: str):
        if name in TensorDescription.READING:
            return getattr(object.__getattribute__(self, "_described"), name)
        raise ModelCallError(f"a page reads a weight's shape and size, not its numbers (its {name}): declare what "
                             "uses them as a Computation and run it through viz_app.heavy.run")

    def size(self, dim: int | None = None):
        tensor = object.__getattribute__(self, "_described")
        return tensor.size() if dim is None else tensor.size(dim)

    def dim(self) -> int:
        return object.__getattribute__(self, "_described").dim()

    def numel(self) -> int:
        return object.__getattribute__(self, "_described").numel()

    def __len__(self) -> int:
        return len(object.__getattribute__(self, "_described"))

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError("the model is shared by every session: a page changes nothing of it")

    def __repr__(self) -> str:
        tensor = object.__getattribute__(self, "_described")
        kind = "Parameter" if isinstance(tensor, torch.nn.Parameter) else "Tensor"
        return f"{kind} of shape {list(tensor.shape)} ({str(tensor.dtype).removeprefix('torch.')})"

    def __eq__(self, other) -> bool:
        return type(other) is TensorDescription and \
            object.__getattribute__(self, "_described") is object.__getattribute__(other, "_described")

    def __hash__(self) -> int:
        return id(object.__getattribute__(self, "_described"))

    def __reduce_ex__(self, protocol):
        raise TypeError("a description of the model is not copied: a page reads it where it is")


def _described(value):
    """`value` with every module in it (in a list, tuple, dict, view or generator) a ModelDescription of it, every
    tensor a TensorDescription."""
    if isinstance(value, torch.nn.Module):
        return ModelDescription(value)
    if isinstance(value, torch.Tensor):
        return TensorDescription(value)
    if isinstance(value, dict):
        return {key: _described(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_described(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)  # a named tuple: by position
    if isinstance(value, (types.GeneratorType, abc.KeysView, abc.ValuesView, abc.ItemsView)):
        return (_described(item) for item in value)
    return value


@dataclass(frozen=True)
class ModelHandle:
    """What a page holds of the loaded model (viz_app/app/page_context.py's `Context.loaded`): the same fields as a
    `LoadedModel`, with `model` a `ModelDescription`, which describes it and cannot run it."""

    key: ModelKey
    model: ModelDescription
    tokenizer: bert.BertTokenizer
    summary: ModelSummary

    @classmethod
    def of(cls, loaded: LoadedModel) -> "ModelHandle":
        return cls(loaded.key, ModelDescription(loaded.model), loaded.tokenizer, loaded.summary)


def cached_bert_models(cache_dir: Path | None = None) -> list[ModelChoice]:
    """BERT-family checkpoints in the local hub cache (config.json says a model type of bert.hub.MODEL_TYPES, with
    weights), preferred first."""
    try:
        from huggingface_hub import scan_cache_dir
        from huggingface_hub.errors import CacheNotFound
    except ImportError:
        return []
    try:
        info = scan_cache_dir(cache_dir or hub_cache_dir())
    except (CacheNotFound, OSError, ValueError):
        return []
    found = {}
    for repo in info.repos:
        if repo.repo_type != "model":
            continue
        for revision in sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True):
            if _is_bert_folder(Path(revision.snapshot_path)):
                found[repo.repo_id] = str(revision.snapshot_path)
                break
    order = sorted(found, key=lambda repo_id: (repo_id not in PREFERRED_HUB_IDS, _preference(repo_id), repo_id))
    return [ModelChoice(repo_id, repo_id, "local Hugging Face cache", found[repo_id]) for repo_id in order]


def model_choices(cache_dir: Path | None = None) -> list[ModelChoice]:
    """Cached bert-base-uncased (and other cached BERTs) first, then the built-in MiniLM, then any folder."""
    builtin = [ModelChoice("minilm-encoder", "MiniLM-L6, encoder only", "built in, no MLM head")]
    if MINILM_HEAD_FILE.is_file():
        builtin.insert(0, ModelChoice("minilm", "MiniLM-L6 + masked-LM head", "built in"))
    builtin += [ModelChoice(name, name, "MiniLM-L6 fine-tuned here, built in") for name, path in FINETUNED_FILES.items() if path.is_file()]
    return cached_bert_models(cache_dir) + builtin + [ModelChoice(FOLDER, "A local Hugging Face folder…")]


def default_source() -> str:
    """The built-in model: the fallback when a requested or chosen model is not there."""
    return "minilm" if MINILM_HEAD_FILE.is_file() else "minilm-encoder"


def first_choice(choices: list[ModelChoice]) -> str:
    """What a new session starts on: a cached bert-base-uncased (or another preferred BERT), else the built-in."""
    preferred = [c.source for c in choices if c.source in PREFERRED_HUB_IDS]
    return preferred[0] if preferred else default_source()


def revision(source: str, folder: str | None = None) -> str:
    """A cheap fingerprint of the files behind `source`, so a retrained or replaced model is loaded afresh."""
    paths = []
    if source == "minilm":
        paths = [MINILM_HEAD_FILE, MINILM_NSP_FILE]
    elif source in FINETUNED_FILES:
        paths = [FINETUNED_FILES[source]]
    elif folder or Path(source).expanduser().is_dir():
        base = Path(folder or source).expanduser()
        paths = [base / "config.json"] + [base / name for name in WEIGHT_FILES]
    stamps = [f"{p.name}:{p.stat().st_mtime_ns}:{p.stat().st_size}" for p in paths if p.is_file()]
    return "|".join([folder or ""] + stamps)


@dataclass(frozen=True)
class PickedModel:
    """The model chosen in the sidebar: its key and the loaded model, or why it could not be loaded."""

    key: ModelKey | None  # None when nothing is chosen yet (an empty folder box)
    loaded: LoadedModel | None
    error: str | None  # what to tell the user when `loaded` is None


def load(key: ModelKey) -> LoadedModel:
    """Load for the app, on a GPU when there is one (BERT_DEVICE=cpu, cuda:1, ... chooses).
    Raises bert.errors.* (and OSError for unreadable files) with a message for the user."""
    model, tokenizer = bert.load_pretrained(key.folder or key.source, device=os.environ.get(DEVICE_VARIABLE, "auto"), pack_for_cpu=True)
    model.eval()
    return LoadedModel(key, model, tokenizer, summarize(model, tokenizer))


def summarize(model: bert.Bert, tokenizer: bert.BertTokenizer | None = None) -> ModelSummary:
    """max_positions: the longest input, the tokenizer's when it knows fewer (RoBERTa's positions start after its
    padding index, so 514 positions read 512 tokens)."""
    config = model.config
    longest = config.max_position_embeddings if tokenizer is None else min(config.max_position_embeddings, tokenizer.model_max_length)
    return ModelSummary(
        layers=config.num_layers,
        heads=config.num_heads,
        hidden=config.hidden_size,
        intermediate=config.intermediate_size,
        max_positions=longest,
        vocab=config.vocab_size,
        parameters=sum(p.numel() for p in model.parameters()),  # parameters() yields a tied tensor once
        has_mlm_head=model.has_mlm_head,
        device=device_in_words(model_device(model)),
    )


def device_in_words(device: torch.device) -> str:
    if device.type == "cuda":
        return f"the GPU ({torch.cuda.get_device_name(device)})"
    return {"cpu": "the CPU", "mps": "the Apple GPU"}.get(device.type, str(device))


def _is_bert_folder(folder: Path) -> bool:
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return config.get("model_type") in MODEL_TYPES and any((folder / name).is_file() for name in WEIGHT_FILES)


def _preference(repo_id: str) -> int:
    return PREFERRED_HUB_IDS.index(repo_id) if repo_id in PREFERRED_HUB_IDS else len(PREFERRED_HUB_IDS)
