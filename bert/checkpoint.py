"""Reading and writing Hugging Face BERT checkpoints through one explicit key table.

Strict: a missing, unexpected or mis-shaped tensor is a CheckpointError that names the key and the file.
"""
from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .config import BertConfig
from .errors import CheckpointError
from .model import Bert

# The weight files a Hugging Face folder may hold, in the order loading looks for them. Only the safetensors ones
# are fetched from the hub (bert/hub.py); a pytorch_model.bin is read with torch.load(weights_only=True).
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
# Keys a checkpoint may carry that hold nothing of their own: a position-index buffer, and the decoder,
# which BERT ties to the token embedding (its weight) and to cls.predictions.bias (its bias).
_DERIVED_KEYS = {
    "embeddings.position_ids": None,
    "embeddings.token_type_ids": None,
    "cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
}


# Task heads Hugging Face stores as `classifier.weight/bias`: which of ours it is, by config.json's architectures.
_TASK_HEADS = {"BertForSequenceClassification": "classifier", "BertForTokenClassification": "tagger"}
_NO_PREFIX = ("cls.", "classifier.")  # head tensors that sit beside the `bert.` encoder, not inside it


def key_table(
    config: BertConfig, mlm_head: bool, pooler: bool, nsp_head: bool, classifier: bool = False, tagger: bool = False
) -> dict[str, str]:
    """ours -> Hugging Face, one line per tensor (without the `bert.` prefix that task models add)."""
    table = {
        "embedding.token_embedding.weight": "embeddings.word_embeddings.weight",
        "embedding.position_embedding.weight": "embeddings.position_embeddings.weight",
        "embedding.token_type_embedding.weight": "embeddings.token_type_embeddings.weight",
        "embedding.layer_norm.weight": "embeddings.LayerNorm.weight",
        "embedding.layer_norm.bias": "embeddings.LayerNorm.bias",
    }
    for i in range(config.num_layers):
        ours, theirs = f"transformer.{i}", f"encoder.layer.{i}"
        for param in ("weight", "bias"):
            table |= {
                f"{ours}.attention.attention.project_query.{param}": f"{theirs}.attention.self.query.{param}",
                f"{ours}.attention.attention.project_key.{param}": f"{theirs}.attention.self.key.{param}",
                f"{ours}.attention.attention.project_value.{param}": f"{theirs}.attention.self.value.{param}",
                f"{ours}.attention.mlp.{param}": f"{theirs}.attention.output.dense.{param}",
                f"{ours}.attention.layer_norm.{param}": f"{theirs}.attention.output.LayerNorm.{param}",
                f"{ours}.residual.mlp1.{param}": f"{theirs}.intermediate.dense.{param}",
                f"{ours}.residual.mlp2.{param}": f"{theirs}.output.dense.{param}",
                f"{ours}.residual.layer_norm.{param}": f"{theirs}.output.LayerNorm.{param}",
            }
    if mlm_head:
        table |= {
            "lm_head.mlp.weight": "cls.predictions.transform.dense.weight",
            "lm_head.mlp.bias": "cls.predictions.transform.dense.bias",
            "lm_head.layer_norm.weight": "cls.predictions.transform.LayerNorm.weight",
            "lm_head.layer_norm.bias": "cls.predictions.transform.LayerNorm.bias",
            "lm_head.unembedding.bias": "cls.predictions.bias",
        }
    if pooler:
        table |= {"pooler.dense.weight": "pooler.dense.weight", "pooler.dense.bias": "pooler.dense.bias"}
    if nsp_head:
        table |= {"nsp_head.weight": "cls.seq_relationship.weight", "nsp_head.bias": "cls.seq_relationship.bias"}
    if classifier:
        table |= {"classifier.weight": "classifier.weight", "classifier.bias": "classifier.bias"}
    if tagger:
        table |= {"tagger.weight": "classifier.weight", "tagger.bias": "classifier.bias"}
    return table


def task_head(hf_config: dict, state: dict[str, torch.Tensor], source: str) -> dict:
    """Bert's task-head arguments (classifier_labels or tagger_labels, problem_type) for a checkpoint:
    none without `classifier.weight`; otherwise config.json's `architectures` says which, `id2label` names the labels."""
    if "classifier.weight" not in state:
        return {}
    architectures = hf_config.get("architectures") or []
    kinds = {_TASK_HEADS[a] for a in architectures if a in _TASK_HEADS}
    if len(kinds) != 1:
        raise CheckpointError(
            f"{source} has a `classifier` head, but config.json's architectures {architectures} do not say whether it "
            f"classifies sequences or tokens: set \"architectures\" to [\"BertForSequenceClassification\"] or "
            f"[\"BertForTokenClassification\"]"
        )
    num_labels = state["classifier.weight"].shape[0]
    id2label = hf_config.get("id2label") or {}
    labels = [str(id2label.get(str(i), id2label.get(i, f"LABEL_{i}"))) for i in range(num_labels)]
    if id2label and len(id2label) != num_labels:
        raise CheckpointError(
            f"{source}: config.json's id2label has {len(id2label)} labels, but classifier.weight has {num_labels} rows"
        )
    return {f"{kinds.pop()}_labels": labels, "problem_type": hf_config.get("problem_type")}


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """Tensors of a .safetensors, sharded .index.json or .bin file, with Hugging Face's names normalised:
    no `bert.` prefix, LayerNorm gamma/beta as weight/bias (old TensorFlow conversions)."""
    path = Path(path)
    if path.name.endswith(".index.json"):
        weight_map = read_json(path).get("weight_map")
        if not isinstance(weight_map, dict):
            raise CheckpointError(f"{path} has no weight_map naming the shard of each tensor")
        shards = sorted(set(weight_map.values()))
        raw = {k: v for shard in shards for k, v in _read_tensors(path.parent / shard).items()}
    else:
        raw = _read_tensors(path)
    return {_normalise(key): tensor for key, tensor in raw.items()}


def find_weights(folder: Path) -> Path:
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return folder / name
    raise CheckpointError(f"{folder} has no weights file; expected one of {', '.join(WEIGHT_FILES)}")


def model_from_state_dict(config: BertConfig, state: dict[str, torch.Tensor], source: str, hf_config: dict | None = None) -> Bert:
    """Build a Bert with the heads the checkpoint has and fill it, strictly, through the key table.
    `hf_config` (config.json as a dict) says what a `classifier` head is and names its labels."""
    nsp_head = "cls.seq_relationship.weight" in state
    task = task_head(hf_config or {}, state, source)
    heads = dict(
        mlm_head="cls.predictions.transform.dense.weight" in state,
        # the NSP head and the sequence classifier read the pooler: it must be there too
        pooler="pooler.dense.weight" in state or nsp_head or "classifier_labels" in task,
        nsp_head=nsp_head,
    )
    table = key_table(config, **heads, classifier="classifier_labels" in task, tagger="tagger_labels" in task)
    _check_derived_keys(state, source)
    missing = [theirs for theirs in table.values() if theirs not in state]
    unexpected = sorted(set(state) - set(table.values()) - set(_DERIVED_KEYS))
    if missing:
        raise CheckpointError(f"{source}: missing tensor {missing[0]!r} ({len(missing)} missing in all)")
    if unexpected:
        raise CheckpointError(f"{source}: unexpected tensor {unexpected[0]!r} ({len(unexpected)} unexpected in all); is this a BERT checkpoint?")
    with torch.device("meta"):  # shapes only: no memory, no random weights; every tensor is assigned below
        model = Bert(config, **heads, **task)
    shapes = {key: tensor.shape for key, tensor in model.state_dict().items()}
    unfilled = set(shapes) - set(table) - {"lm_head.unembedding.weight"}  # the tied one is set below
    if unfilled:
        raise CheckpointError(f"{source}: the key table has no entry for {sorted(unfilled)[0]!r} (a bug in bert/checkpoint.py)")
    ours = {}
    for our_key, their_key in table.items():
        tensor = state[their_key]
        if tensor.shape != shapes[our_key]:
            raise CheckpointError(
                f"{source}: tensor {their_key!r} has shape {tuple(tensor.shape)}, but config.json implies {tuple(shapes[our_key])}"
            )
        ours[our_key] = tensor.float()
    if heads["mlm_head"]:
        ours["lm_head.unembedding.weight"] = ours["embedding.token_embedding.weight"]
    model.load_state_dict(ours, strict=True, assign=True)
    if heads["mlm_head"]:
        model.lm_head.unembedding.weight = model.embedding.token_embedding.weight  # assign made two parameters: tie them again
    return model.eval()


def to_hf_state_dict(model: Bert) -> dict[str, torch.Tensor]:
    """Our weights under Hugging Face's names (task-model layout, `bert.` prefix on the encoder), on the CPU."""
    table = key_table(model.config, model.has_mlm_head, model.pooler is not None, model.has_nsp_head, model.has_classifier, model.has_tagger)
    ours = model.state_dict()
    return {("" if theirs.startswith(_NO_PREFIX) else "bert.") + theirs: ours[k].cpu().contiguous() for k, theirs in table.items()}


def hf_architecture(model: Bert) -> str:
    """The transformers class that loads all of this model's heads."""
    if model.has_classifier:
        return "BertForSequenceClassification"
    if model.has_tagger:
        return "BertForTokenClassification"
    if model.has_nsp_head:
        return "BertForPreTraining" if model.has_mlm_head else "BertForNextSentencePrediction"
    return "BertForMaskedLM" if model.has_mlm_head else "BertModel"


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


def _normalise(key: str) -> str:
    key = key.removeprefix("bert.")
    return key.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")


def _check_derived_keys(state: dict[str, torch.Tensor], source: str) -> None:
    """A decoder stored beside what it is tied to must equal it; then it carries nothing new."""
    for derived, original in _DERIVED_KEYS.items():
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
