"""The one configuration object every BERT in this project is built from."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .errors import ConfigError


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522  # WordPiece vocabulary (Devlin et al. 2019: "a 30,000 token vocabulary")
    hidden_size: int = 768  # H: width of every token's vector in the residual stream
    num_layers: int = 12  # L: number of stacked BertLayer blocks
    num_heads: int = 12  # A: attention heads per layer; each head gets hidden_size // num_heads dims
    intermediate_size: int = 3072  # MLP width, 4 * H in BERT
    max_position_embeddings: int = 512  # longest input the position table covers
    type_vocab_size: int = 2  # segments: sentence A = 0, sentence B = 1
    layer_norm_eps: float = 1e-12  # epsilon inside every LayerNorm, as in the released checkpoints
    hidden_dropout: float = 0.1  # dropout on embeddings and on each sub-layer's output (training only)
    attention_dropout: float = 0.1  # dropout on attention patterns (training only)
    activation: str = "gelu"  # "gelu" (exact, erf) or "gelu_tanh" (the tanh approximation, HF's "gelu_new")
    pad_token_id: int = 0  # id of [PAD]
    classifier_dropout: float | None = None  # dropout before a classifier or tagger; None: hidden_dropout (as Hugging Face)
    causal: bool = False  # True: each position attends only to itself and its left (a left-to-right model); BERT: False

    def __post_init__(self):
        if self.hidden_size % self.num_heads:
            raise ConfigError(
                f"hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}"
            )
        if self.activation not in ("gelu", "gelu_tanh"):
            raise ConfigError(f"activation must be 'gelu' or 'gelu_tanh', not {self.activation!r}")

    @property
    def head_size(self) -> int:
        """Dimensions per head: 768 / 12 = 64 for BERT-base (Devlin et al. 2019)."""
        return self.hidden_size // self.num_heads

    @classmethod
    def base(cls, **overrides) -> "BertConfig":
        """BERT-base: L=12, H=768, A=12, about 110M parameters."""
        return cls(**overrides)

    @classmethod
    def large(cls, **overrides) -> "BertConfig":
        """BERT-large: L=24, H=1024, A=16, about 340M parameters."""
        fields = dict(hidden_size=1024, num_layers=24, num_heads=16, intermediate_size=4096)
        return cls(**{**fields, **overrides})

    def replace(self, **changes) -> "BertConfig":
        return dataclasses.replace(self, **changes)

    # Hugging Face config.json <-> ours. One table, used both ways.
    _HF_FIELDS = {
        "vocab_size": "vocab_size",
        "hidden_size": "hidden_size",
        "num_hidden_layers": "num_layers",
        "num_attention_heads": "num_heads",
        "intermediate_size": "intermediate_size",
        "max_position_embeddings": "max_position_embeddings",
        "type_vocab_size": "type_vocab_size",
        "layer_norm_eps": "layer_norm_eps",
        "hidden_dropout_prob": "hidden_dropout",
        "attention_probs_dropout_prob": "attention_dropout",
        "pad_token_id": "pad_token_id",
        "classifier_dropout": "classifier_dropout",
        "is_decoder": "causal",  # Hugging Face's BertModel attends left-to-right when is_decoder is true
    }
    _HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}

    @classmethod
    def from_hf_dict(cls, hf: dict) -> "BertConfig":
        """Read a Hugging Face BERT config.json (as a dict). Raises ConfigError (a ValueError) for what we cannot run."""
        if hf.get("model_type", "bert") != "bert":
            raise ConfigError(f"model_type is {hf.get('model_type')!r}; only 'bert' checkpoints are supported")
        position_type = hf.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise ConfigError(f"position_embedding_type {position_type!r} is not supported (only 'absolute')")
        hidden_act = hf.get("hidden_act", "gelu")
        if hidden_act not in cls._HF_ACTIVATIONS:
            raise ConfigError(f"hidden_act {hidden_act!r} is not supported; expected one of {sorted(cls._HF_ACTIVATIONS)}")
        fields = {ours: hf[theirs] for theirs, ours in cls._HF_FIELDS.items() if hf.get(theirs) is not None}
        return cls(activation=cls._HF_ACTIVATIONS[hidden_act], **fields)

    def to_hf_dict(self) -> dict:
        hf = {theirs: getattr(self, ours) for theirs, ours in self._HF_FIELDS.items()}
        activation = {"gelu": "gelu", "gelu_tanh": "gelu_new"}[self.activation]
        return {"model_type": "bert", "hidden_act": activation, **hf}
