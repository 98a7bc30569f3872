"""The Hugging Face hub: find a BERT-family model in the local cache, or download one into it (with huggingface_hub).

    folder = download("bert-base-uncased")       # config, weights and tokenizer files only
    folder = download("roberta-base")            # every family of MODEL_TYPES (answerdotai/ModernBERT-base, ...)
    folder = download("microsoft/deberta-v3-base")  # no safetensors there: pytorch_model.bin, read as tensors only
    folder = cached_folder("bert-base-uncased")  # None when it is not in the local cache

The endpoint (HF_ENDPOINT) and the cache (HF_HUB_CACHE, HF_HOME) are read at each call, not when huggingface_hub
is imported, so a test or a long-running app can point them elsewhere. Failures raise DownloadError, whose
`reason` is "offline", "unknown" (no such model), "not_bert" or "failed", with a one-line message.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

from .checkpoint import WEIGHT_FILES
from .families.registry import MODEL_TYPES as FAMILIES
from .errors import DownloadError, ModelNotFoundError

DEFAULT_ENDPOINT = "https://huggingface.co"
# The config.json model types this project loads: BERT and its families (bert/families/registry.py: RoBERTa, Liu et
# al. 2019; DistilBERT, Sanh et al. 2019; ALBERT, Lan et al. 2020; ELECTRA, Clark et al. 2020; ModernBERT, Warner et
# al. 2024; DeBERTa-v3, He et al. 2023, model type deberta-v2; XLM-RoBERTa, Conneau et al. 2020; CamemBERT, Martin et
# al. 2020; ESM-2, Lin et al. 2023, model type esm; EuroBERT, Boizard et al. 2025; GTE, Zhang et al. 2024, model type
# gte).
MODEL_TYPES = FAMILIES
# What loading one needs: config, safetensors weights and every file its tokenizer may be read from (tokenizer.json;
# vocab.txt for WordPiece and for ESM-2's amino acids; vocab.json + merges.txt for RoBERTa's byte-level BPE; spiece.model for ALBERT's and
# spm.model for DeBERTa-v3's SentencePiece; the special tokens by role). Never the .h5, .msgpack or ONNX copies many
# repositories also hold.
NEEDED_FILES = ["config.json", "*.safetensors", "*.safetensors.index.json", "tokenizer.json", "vocab.txt", "vocab.json",
                "merges.txt", "spiece.model", "spm.model", "special_tokens_map.json", "tokenizer_config.json"]
# PyTorch's weights, fetched only from a repository without safetensors (microsoft/deberta-v3-base): bert/checkpoint.py
# reads them with torch.load(weights_only=True), which refuses any object but tensors, so a .bin cannot run code.
BIN_FILES = ["pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*.bin"]
REACHABLE_TIMEOUT_S = 3.0  # offline should cost seconds, not minutes of retries


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache, as huggingface_hub finds it (read now, so tests can point it elsewhere)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def _snapshot_download():
    try:
        from huggingface_hub import snapshot_download
    except ImportError as error:
        raise ModelNotFoundError("huggingface_hub is not installed: pip install huggingface_hub") from error
    return snapshot_download


def cached_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot folder of a hub id (whatever files it holds), or None. Never touches the network."""
    snapshot_download = _snapshot_download()
    try:
        return Path(snapshot_download(repo_id, allow_patterns=NEEDED_FILES, local_files_only=True,
                                      cache_dir=hub_cache_dir()))
    except Exception:  # huggingface_hub raises several types for "not in the cache" (and for a malformed id)
        return None


def has_weights(folder: Path) -> bool:
    """Weights that loading reads (bert/checkpoint.py's WEIGHT_FILES: safetensors, else pytorch_model.bin)."""
    return any((folder / name).is_file() for name in WEIGHT_FILES)


def cached_folder(repo_id: str) -> Path | None:
    """The cached snapshot of a hub id with weights, or None. Never touches the network."""
    folder = cached_snapshot(repo_id)
    return folder if folder is not None and has_weights(folder) else None


def offline_mode() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) set: huggingface_hub's switch for "never ask the network"."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().lower() in ("1", "on", "yes", "true")


def reachable(timeout: float = REACHABLE_TIMEOUT_S) -> bool:
    """Does the hub endpoint answer at all (any HTTP status counts)? A short timeout, no retries."""
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint() + "/api/models", method="HEAD"), timeout=timeout)
    except urllib.error.HTTPError:
        return True  # it answered, even if with an error status
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return True


def offline_message() -> str:
    return f"cannot reach the Hugging Face hub ({endpoint()}): this machine seems to be offline"


def download(repo_id: str, tqdm_class=None) -> Path:
    """A BERT-family model (MODEL_TYPES) from the hub into the local cache (nothing is fetched when it is already there); its snapshot folder.

    tqdm_class: huggingface_hub's progress bars by default (on the terminal); any tqdm subclass to follow the
    progress elsewhere. Raises DownloadError with reason "offline", "unknown", "not_bert" or "failed".
    """
    repo_id = repo_id.strip()
    folder = cached_folder(repo_id)
    if folder is not None:
        return folder
    if offline_mode():
        raise DownloadError("offline", f"HF_HUB_OFFLINE is set, so nothing is downloaded; unset it to fetch {repo_id!r}")
    if not reachable():
        raise DownloadError("offline", offline_message())
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (EntryNotFoundError, HFValidationError, RepositoryNotFoundError,
                                        RevisionNotFoundError)

    common = dict(cache_dir=hub_cache_dir(), endpoint=endpoint())
    try:
        config = json.loads(Path(hf_hub_download(repo_id, "config.json", **common)).read_text(encoding="utf-8"))
        model_type = config.get("model_type")
        if model_type not in MODEL_TYPES:
            raise DownloadError("not_bert", f"{repo_id!r} is not a BERT-family encoder (its config.json says model_type "
                                            f"{model_type!r}); the families loaded here: {', '.join(MODEL_TYPES)}")
        folder = Path(_snapshot_download()(repo_id, allow_patterns=_needed_files(repo_id), tqdm_class=tqdm_class, **common))
    except DownloadError:
        raise
    except (RepositoryNotFoundError, RevisionNotFoundError, HFValidationError) as error:
        raise DownloadError("unknown", f"no model {repo_id!r} on the Hugging Face hub (or it is private): "
                                       f"check the spelling, e.g. bert-base-uncased") from error
    except EntryNotFoundError as error:
        raise DownloadError("not_bert", f"{repo_id!r} is not a BERT-family encoder (it has no config.json)") from error
    except ValueError as error:  # config.json that is not JSON
        raise DownloadError("not_bert", f"{repo_id!r} is not a BERT-family encoder (its config.json is not readable: "
                                        f"{error})") from error
    except Exception as error:  # connection dropped, disk full, hub error...
        raise DownloadError("failed", f"downloading {repo_id!r} failed: {type(error).__name__}: {error}".splitlines()[0]) from error
    if not has_weights(folder):
        raise DownloadError("not_bert", f"{repo_id!r} has no weights this project loads (model.safetensors or pytorch_model.bin)")
    return folder


def _needed_files(repo_id: str) -> list[str]:
    """NEEDED_FILES, and PyTorch's .bin weights where the repository has no safetensors (never both)."""
    from huggingface_hub import HfApi

    files = HfApi(endpoint=endpoint()).list_repo_files(repo_id)
    safetensors = [name for name in WEIGHT_FILES if ".safetensors" in name]  # at the top, where loading looks
    return NEEDED_FILES if any(name in safetensors for name in files) else NEEDED_FILES + BIN_FILES
