"""A from-scratch, hookable BERT that loads real Hugging Face checkpoints."""
from .activation_cache import ActivationCache
from .checkpoint import save_hf_folder
from .config import BertConfig
from .errors import BertError, CheckpointError, DataFileError, InputTooLongError, InvalidInputError, MissingHeadError, ModelNotFoundError, UnknownHookError
from .hooks import hook_name, stack_layers
from .model import Bert
from .packed_linear import pack_for_cpu_inference
from .params import count_parameters
from .pretrained import load_pretrained
from .tokenizer import BertTokenizer, Encoding, load_tokenizer

__all__ = [
    "Bert", "BertConfig", "BertTokenizer", "Encoding", "load_pretrained", "load_tokenizer", "pack_for_cpu_inference", "save_hf_folder", "count_parameters",
    "ActivationCache", "hook_name", "stack_layers",
    "BertError", "CheckpointError", "DataFileError", "InputTooLongError", "InvalidInputError", "MissingHeadError",
    "ModelNotFoundError", "UnknownHookError",
]
