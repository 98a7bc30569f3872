"""Reading and writing Hugging Face BERT checkpoints through one explicit key table.

Strict: a missing, unexpected or mis-shaped tensor is a CheckpointError that names the key and the file (except the
tensors a family lists as `unread`, which no model here reads: bert/families/).
"""
from __future__ import annotations

import json
import logging
import pickle
import zipfile
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch.overrides import TorchFunctionMode

from .config import BertConfig
from .errors import CheckpointError
from .families.family import Heads
from .families.registry import family_of
from .families.tables import split_key
from .model import Bert

log = logging.getLogger(__name__)

# The weight files a Hugging Face folder may hold, in the order loading looks for them. The hub's .bin files are
# fetched only where a repository has no safetensors (bert/hub.py); a .bin is read with torch.load(weights_only=True).
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def key_table(
    config: BertConfig, mlm_head: bool, pooler: bool, nsp_head: bool, classifier: bool = False, tagger: bool = False,
    discriminator: bool = False,
) -> dict[str, str]:
    """ours -> Hugging Face, one line per tensor, for the config's family (without the base model's prefix, e.g.
    `bert.`, that task models add). The tables themselves: each family's module in bert/families/."""
    heads = Heads(mlm_head, pooler, nsp_head, classifier, tagger, discriminator)
    return family_of(config).table(config, heads)


def task_head(hf_config: dict, state: dict[str, torch.Tensor], source: str, family: str = "bert") -> dict:
    """Bert's task-head arguments (classifier_labels or tagger_labels, problem_type) for a checkpoint: none
    without `classifier.weight` (or the family's sequence-classifier tensors); where the tensors alone do not say
    whether it classifies sequences or tokens (BERT, ALBERT), config.json's `architectures` says which, and
    `id2label` names the labels."""
    spec = family_of(family)
    if spec.sequence_key is not None and spec.sequence_key in state:
        kind, out_key = "classifier", spec.sequence_out
    elif "classifier.weight" in state and spec.sequence_key is not None:
        kind, out_key = "tagger", "classifier.weight"
    elif "classifier.weight" in state:
        names = {f"{spec.class_prefix}ForSequenceClassification": "classifier", f"{spec.class_prefix}ForTokenClassification": "tagger"}
        architectures = hf_config.get("architectures") or []
        kinds = {names[a] for a in architectures if a in names}
        if len(kinds) != 1:
            raise CheckpointError(
                f"{source} has a `classifier` head, but config.json's architectures {architectures} do not say whether it "
                f"classifies sequences or tokens: set \"architectures\" to [\"{spec.class_prefix}ForSequenceClassification\"] or "
                f"[\"{spec.class_prefix}ForTokenClassification\"]"
            )
        kind, out_key = kinds.pop(), "classifier.weight"
    else:
        return {}
    num_labels = state[out_key].shape[0]
    id2label = hf_config.get("id2label") or {}
    labels = [str(id2label.get(str(i), id2label.get(i, f"LABEL_{i}"))) for i in range(num_labels)]
    if id2label and len(id2label) != num_labels:
        raise CheckpointError(
            f"{source}: config.json's id2label has {len(id2label)} labels, but {out_key} has {num_labels} rows"
        )
    return {f"{kind}_labels": labels, "problem_type": hf_config.get("problem_type")}


def read_state_dict(path: str | Path, family: str = "bert") -> dict[str, torch.Tensor]:
    """Tensors of a .safetensors, sharded .index.json or .bin file, with Hugging Face's names normalised:
    no base-model prefix (`bert.`, `roberta.`, ...), LayerNorm gamma/beta as weight/bias (old TensorFlow conversions)."""
    path = Path(path)
    if path.name.endswith(".index.json"):
        weight_map = read_json(path).get("weight_map")
        if not isinstance(weight_map, dict):
            raise CheckpointError(f"{path} has no weight_map naming the shard of each tensor")
        shards = sorted(set(weight_map.values()))
        raw = {k: v for shard in shards for k, v in _read_tensors(path.parent / shard).items()}
    else:
        raw = _read_tensors(path)
    return {_normalise(key, family_of(family).prefix): tensor for key, tensor in raw.items()}


def find_weights(folder: Path) -> Path:
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return folder / name
    raise CheckpointError(f"{folder} has no weights file; expected one of {', '.join(WEIGHT_FILES)}")


@contextmanager
def shapes_only():
    """Modules built inside have their shapes and no numbers: on the meta device, their initialisers skipped."""
    with torch.device("meta"), _ShapesOnly():
        yield


class _ShapesOnly(TorchFunctionMode):
    """While a model is built on the meta device, its initialisers (torch.nn.init's, a tensor's normal_, zero_, ...)
    leave the meta tensors as they are: there are no numbers to draw. Run on the meta device, the first of them costs
    a process about 2 s (it loads torch._dynamo), every model load of every command and app server. A torch function
    mode holds for the thread that enters it only, so a model another thread builds meanwhile is initialised as ever."""

    INITIALISERS = frozenset({"normal_", "uniform_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
                              "xavier_uniform_", "xavier_normal_", "orthogonal_", "zeros_", "ones_", "constant_",
                              "zero_", "fill_"})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensor = args[0] if args else kwargs.get("tensor")
        if getattr(func, "__name__", None) in self.INITIALISERS and isinstance(tensor, torch.Tensor) and tensor.is_meta:
            return tensor
        return func(*args, **kwargs)


def model_from_state_dict(config: BertConfig, state: dict[str, torch.Tensor], source: str, hf_config: dict | None = None) -> Bert:
    """Build a Bert with the heads the checkpoint has and fill it, strictly, through the family's key table.
    `hf_config` (config.json as a dict) says what a `classifier` head is and names its labels."""
    spec = family_of(config)
    found = {head: key in state for head, key in spec.head_keys.items()}
    task = task_head(hf_config or {}, state, source, config.family)
    heads = dict(
        mlm_head=found.get("mlm_head", False) and not (spec.head_shared and task),
        # the NSP head and the sequence classifier (in BERT and ALBERT) read the pooler: it must be there too
        pooler=config.pooler and (found.get("pooler", False) or found.get("nsp_head", False)
                                  or ("classifier_labels" in task and config.sequence_head == "pooler")),
        nsp_head=found.get("nsp_head", False),
        discriminator=found.get("discriminator", False),
    )
    table = key_table(config, **heads, classifier="classifier_labels" in task, tagger="tagger_labels" in task)
    _check_derived_keys(state, source, spec.derived)
    their_keys = list(dict.fromkeys(split_key(theirs)[0] for theirs in table.values()))  # fused tensors once
    missing = [theirs for theirs in their_keys if theirs not in state]
    unread = sorted(key for key in set(state) - set(their_keys) if spec.unread and (key.startswith(spec.unread) or key.endswith(spec.unread)))
    if unread:
        log.info("%s: %d tensors no model here reads are skipped: %s", source, len(unread),
                 ", ".join(unread))
    unexpected = sorted(set(state) - set(their_keys) - set(spec.derived) - set(unread))
    if missing:
        raise CheckpointError(
            f"{source}: missing tensor {missing[0]!r} ({len(missing)} missing in all; config.json's model_type is {config.family!r})"
        )
    if unexpected:
        raise CheckpointError(
            f"{source}: unexpected tensor {unexpected[0]!r} ({len(unexpected)} unexpected in all); "
            f"is this a {spec.class_prefix} checkpoint (config.json's model_type is {config.family!r})?"
        )
    with shapes_only():  # no memory, no random weights; every tensor is assigned below
        model = Bert(config, **heads, **task)
    shapes = {key: tensor.shape for key, tensor in model.state_dict().items()}
    tied = heads["mlm_head"] and config.tied_unembedding
    unfilled = set(shapes) - set(table) - ({"lm_head.unembedding.weight"} if tied else set())  # the tied one is set below
    if unfilled:
        raise CheckpointError(f"{source}: the key table has no entry for {sorted(unfilled)[0]!r} (a bug in the family's key table, bert/families/)")
    ours = {}
    for our_key, entry in table.items():
        their_key, index, count = split_key(entry)
        tensor, shape = state[their_key], shapes[our_key]
        implied = (shape[0] * count, *shape[1:])  # a fused tensor holds `count` blocks of our shape
        if tensor.shape != implied:
            raise CheckpointError(
                f"{source}: tensor {their_key!r} has shape {tuple(tensor.shape)}, but config.json implies {implied}"
            )
        ours[our_key] = tensor.float().chunk(count)[index]
    if tied:
        ours["lm_head.unembedding.weight"] = ours["embedding.token_embedding.weight"]
    model.load_state_dict(ours, strict=True, assign=True)
    if tied:
        model.lm_head.unembedding.weight = model.embedding.token_embedding.weight  # assign made two parameters: tie them again
    return model.eval()


def to_hf_state_dict(model: Bert) -> dict[str, torch.Tensor]:
    """Our weights under Hugging Face's names (task-model layout: the base model's prefix on the encoder), on the CPU."""
    table = key_table(model.config, model.has_mlm_head, model.pooler is not None, model.has_nsp_head, model.has_classifier,
                      model.has_tagger, model.has_discriminator)
    spec = family_of(model.config)
    prefix, base_parts = spec.prefix + ".", spec.base_parts
    ours = model.state_dict()
    blocks: dict[str, list[torch.Tensor]] = {}  # checkpoint key -> its blocks in order (one for most)
    for our_key, entry in sorted(table.items(), key=lambda item: split_key(item[1])[1]):
        blocks.setdefault(split_key(entry)[0], []).append(ours[our_key].cpu())
    return {(prefix if theirs.startswith(base_parts) else "") + theirs: torch.cat(parts).contiguous() for theirs, parts in blocks.items()}


def hf_architecture(model: Bert) -> str:
    """The transformers class that loads all of this model's heads."""
    spec = family_of(model.config)
    name = spec.class_prefix
    if model.has_classifier:
        return f"{name}ForSequenceClassification"
    if model.has_tagger:
        return f"{name}ForTokenClassification"
    if model.has_discriminator:
        if model.has_mlm_head:
            raise CheckpointError("no transformers class holds both a replaced-token head and a masked-LM head: save the "
                                  "generator and the discriminator apart")
        return f"{name}ForPreTraining"
    if model.has_nsp_head:
        return f"{name}ForPreTraining" if model.has_mlm_head else f"{name}{spec.sentence_head_alone}"
    return f"{name}ForMaskedLM" if model.has_mlm_head else f"{name}Model"


def hf_config_dict(model: Bert) -> dict:
    """config.json: the architecture, and the task head's labels (id2label, label2id, problem_type) if it has one."""
    hf = {**model.config.to_hf_dict(), "architectures": [hf_architecture(model)]}
    if model.labels is not None:
        hf |= {"id2label": dict(enumerate(model.labels)), "label2id": {name: i for i, name in enumerate(model.labels)}}
        hf |= {"problem_type": model.problem_type} if model.problem_type else {}
    return hf


def save_hf_folder(model: Bert, folder: str | Path, vocab_file: str | Path | None = None) -> Path:
    """Write config.json and model.safetensors (and vocab.txt if given) in Hugging Face layout."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(hf_config_dict(model), indent=2))
    save_file(to_hf_state_dict(model), str(folder / "model.safetensors"), metadata={"format": "pt"})
    if vocab_file is not None:
        (folder / "vocab.txt").write_bytes(Path(vocab_file).read_bytes())
    return folder


def _normalise(key: str, prefix: str = "bert") -> str:
    key = key.removeprefix(prefix + ".")
    return key.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")


def _check_derived_keys(state: dict[str, torch.Tensor], source: str, derived_keys: dict[str, str | None]) -> None:
    """A decoder stored beside what it is tied to must equal it; then it carries nothing new."""
    for derived, original in derived_keys.items():
        if derived in state and original is not None:
            if original not in state:
                state[original] = state[derived]  # e.g. only decoder.bias stored, as newer versions do
            elif not torch.equal(state[derived].float(), state[original].float()):
                raise CheckpointError(f"{source}: {derived!r} differs from {original!r}; untied decoders are not supported")


def _read_tensors(path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise CheckpointError(f"weights file {path} does not exist")
    try:
        if path.suffix == ".safetensors":
            return load_file(str(path))
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (SafetensorError, OSError, RuntimeError, EOFError, zipfile.BadZipFile, ValueError) as error:
        raise CheckpointError(f"{path} is corrupt or truncated and cannot be read ({error}); download it again") from error
    except pickle.UnpicklingError as error:
        raise CheckpointError(
            f"{path} was refused: it is not a plain file of tensors (it is corrupt, or it holds other objects, "
            f"and loading those could run code). Convert it to safetensors from a source you trust ({error})"
        ) from error
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path} is not a state dict of tensors")
    return state


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path} is not readable JSON ({error})") from error
