"""The one configuration object every model in this project is built from: BERT and its family.

BERT (Devlin et al. 2019) is the default; every other family is the same module tree with the differences the
fields below state. Which fields a family sets, and how its Hugging Face config.json reads and writes, is in that
family's own module (bert/families/, listed in bert/families/registry.py); this file names none of them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .errors import ConfigError
from .families.registry import MODEL_TYPES as FAMILIES  # Hugging Face's model_type of each family
from .families.registry import family_of, read_hf_config, write_hf_config

ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "silu")  # exact GELU, its tanh approximation, ReLU, SiLU (swish)
# How a sequence classifier reads the encoder: through the pooler (BERT, ALBERT); or from the first token's
# vector through dense + tanh (RoBERTa), dense + ReLU (DistilBERT's pre_classifier) or dense + GELU (ELECTRA); or
# (ModernBERT) the first token's vector or the mean over the real tokens (classifier_pooling) through dense,
# mlm_activation and LayerNorm, as its token classifier also reads each token ("dense_norm").
# EuroBERT's: the first token's vector or the mean over the real tokens through dense and GELU, or every token's
# labels' logits averaged over the real tokens (classifier_pooling "late"; "pooled_gelu").
SEQUENCE_HEADS = ("pooler", "dense_tanh", "dense_relu", "dense_gelu", "dense_norm", "pooled_gelu")
SEQUENCE_POOLING = ("dense_norm", "pooled_gelu")  # the sequence heads that read the attention mask to pool
# classifier_pooling: the first token's vector, or the mean over real tokens (ModernBERT, EuroBERT), or the labels'
# logits of every token averaged over the real tokens (EuroBERT's "late")
POOLINGS = ("cls", "mean", "late")


POSITION_ATTENTION = ("c2p", "p2c")  # DeBERTa's pos_att_type terms: content-to-position, position-to-content


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522  # WordPiece vocabulary (Devlin et al. 2019: "a 30,000 token vocabulary")
    hidden_size: int = 768  # H: width of every token's vector in the residual stream
    num_layers: int = 12  # L: number of stacked BertLayer blocks (ALBERT: every application of a shared layer)
    num_heads: int = 12  # A: attention heads per layer; each head gets hidden_size // num_heads dims
    intermediate_size: int = 3072  # MLP width, 4 * H in BERT
    max_position_embeddings: int = 512  # longest input the position table covers (RoBERTa's table has position_offset more rows)
    type_vocab_size: int = 2  # segments: sentence A = 0, sentence B = 1; RoBERTa 1; DistilBERT 0 (no segment embedding)
    layer_norm_eps: float = 1e-12  # epsilon inside every LayerNorm, as in the released checkpoints
    hidden_dropout: float = 0.1  # dropout on embeddings and on each sub-layer's output (training only)
    attention_dropout: float = 0.1  # dropout on attention patterns (training only)
    activation: str = "gelu"  # the MLP's: one of ACTIVATIONS ("gelu_tanh" is Hugging Face's "gelu_new")
    pad_token_id: int = 0  # id of [PAD] (RoBERTa's <pad> is 1)
    classifier_dropout: float | None = None  # dropout before a classifier or tagger; None: hidden_dropout (as Hugging Face)
    causal: bool = False  # True: each position attends only to itself and its left (a left-to-right model); BERT: False
    family: str = "bert"  # one of FAMILIES: which checkpoints' names and heads this model has (bert/families/)
    # RoBERTa: pad_token_id + 1. Positions then count from pad_token_id + 1 and a padded token takes position
    # pad_token_id (Hugging Face's create_position_ids_from_input_ids). 0: positions count from 0 (the others).
    position_offset: int = 0
    embedding_size: int | None = None  # E: width of the embeddings; None: H. ALBERT, small ELECTRAs: E < H, projected to H
    embedding_projection: bool = False  # a linear map E -> H even where E = H (ALBERT's embedding_hidden_mapping_in)
    shared_layers: bool = False  # ALBERT: one layer's weights applied num_layers times (Lan et al. 2020, section 3.1)
    # ALBERT's num_hidden_groups (G): the shared layers come in G groups with their own weights; the group
    # applications (num_layers / layers_per_group, Hugging Face's num_hidden_layers) go to group 0 first, then
    # group 1, ..., the same number each. 1: every depth shares one set of weights (the released checkpoints).
    layer_groups: int = 1
    # ALBERT's inner_group_num (P): distinct layers in each group, applied one after another each time the group
    # is; each counts as a layer of its own (num_layers = group applications * P). 1: the released checkpoints.
    layers_per_group: int = 1
    mlm_activation: str | None = None  # the masked-LM head's activation; None: `activation` (RoBERTa, ELECTRA: "gelu")
    sequence_head: str = "pooler"  # one of SEQUENCE_HEADS: what the sequence classifier reads
    pooler: bool = True  # whether the family has a pooler (DistilBERT and ELECTRA have none)
    # --- ModernBERT (Warner et al. 2024): pre-norm layers, no biases, GeGLU, rotary positions, local attention ---
    pre_norm: bool = False  # True: LayerNorm on each sub-layer's input (none before layer 0's attention: the embeddings are normed), residual added after, a final LayerNorm after the last layer; False: BERT's post-LN
    norm_bias: bool = True  # LayerNorms have a bias (ModernBERT's released configs: False)
    attention_bias: bool = True  # q, k, v and the attention's output projection have biases (ModernBERT: False)
    mlp_bias: bool = True  # the MLP's linear maps have biases (ModernBERT: False)
    gated_mlp: bool = False  # GeGLU (Shazeer 2020): one map gives input and gate, activation(input) * gate, then out
    rotary: bool = False  # rotary position embeddings on q and k (Su et al. 2021) instead of a position table
    global_rope_theta: float = 10000.0  # RoPE base of the global (full-attention) layers (ModernBERT: 160,000)
    local_rope_theta: float = 10000.0  # RoPE base of the local (sliding-window) layers (ModernBERT: 10,000)
    local_attention: int | None = None  # window of the local layers: a token sees keys within ±local_attention // 2; None: all global
    global_attn_every_n_layers: int = 1  # layer i attends globally when i % n == 0, locally otherwise (ModernBERT: 3)
    head_bias: bool = True  # the dense map of the masked-LM head and the classifiers has a bias (ModernBERT's classifier_bias: False)
    decoder_bias: bool = True  # the masked-LM output (unembedding) has a bias
    classifier_pooling: str = "cls"  # one of POOLINGS: what the "dense_norm" sequence classifier reads
    # --- DeBERTa-v3 (He et al. 2021 "DeBERTa: Decoding-enhanced BERT with Disentangled Attention"; He et al. 2023) ---
    absolute_positions: bool = True  # a position table added to the embeddings (DeBERTa's position_biased_input; v3: False)
    relative_attention: bool = False  # disentangled attention: scores add terms read from shared relative-position embeddings
    position_buckets: int = 0  # relative distances fall in this many log buckets each way (v3: 256); 0: exact distances
    max_relative_positions: int | None = None  # the farthest distance the buckets reach; None: max_position_embeddings
    position_attention: tuple[str, ...] = ()  # which of POSITION_ATTENTION the scores add (v3: both; pos_att_type)
    # True (Hugging Face's DeBERTa): a padded position's embedding is zeroed and its query attends to no key in
    # particular (every key masked: a uniform pattern). No real token reads either; it changes padded rows only.
    padded_rows_zero: bool = False
    # --- EuroBERT (Boizard et al. 2025): a Llama-style encoder: RMSNorm, SwiGLU (gated_mlp with silu), grouped-query
    # attention, rotary positions, no norm on the embeddings, a masked-LM head that is one untied linear map ---
    key_value_heads: int | None = None  # heads of keys and values, each shared by num_heads // key_value_heads query heads (grouped-query attention, Ainslie et al. 2023); None: one per head
    rms_norm: bool = False  # every norm is an RMSNorm (Zhang and Sennrich 2019: no mean subtracted, no bias) instead of a LayerNorm
    lm_transform: bool = True  # the masked-LM head's dense, activation and norm before the unembedding (EuroBERT: none)
    tied_unembedding: bool = True  # the masked-LM output's weight is the token embedding (EuroBERT: a matrix of its own)
    # the MLP's input maps (mlp1, gate) have biases; None: as mlp_bias. GTE (Zhang et al. 2024): none there, while its
    # output map (mlp2) has one (mlp_bias)
    mlp_input_bias: bool | None = None
    # a norm (LayerNorm, or RMSNorm where rms_norm) on the summed embeddings. False (ESM-2, whose emb_layer_norm_before
    # is off; EuroBERT): the sum enters layer 0 as it is, and a pre-norm model's layer-0 attention norms its own input
    embedding_norm: bool = True
    # --- ESM-2 (Lin et al. 2023), a protein language model: pre-norm layers with rotary positions, and two steps of its own ---
    # ESM's token dropout: the mask token's embedding is zeroed and every embedding scaled by (1 - 0.15 * 0.8) / (1 -
    # the input's share of mask tokens), as in its training, where masked tokens were dropped (Rives et al. 2021)
    token_dropout: bool = False
    mask_token_id: int | None = None  # the mask token's id, which token_dropout zeroes

    def __post_init__(self):
        if self.hidden_size % self.num_heads:
            raise ConfigError(
                f"hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}"
            )
        for field, value in (("activation", self.activation), ("mlm_activation", self.mlm_activation or "gelu")):
            if value not in ACTIVATIONS:
                raise ConfigError(f"{field} must be one of {ACTIVATIONS}, not {value!r}")
        if self.family not in FAMILIES:
            raise ConfigError(f"family must be one of {FAMILIES}, not {self.family!r}")
        if self.sequence_head not in SEQUENCE_HEADS:
            raise ConfigError(f"sequence_head must be one of {SEQUENCE_HEADS}, not {self.sequence_head!r}")
        if self.sequence_head == "pooler" and not self.pooler:
            raise ConfigError("sequence_head 'pooler' needs a pooler")
        if self.position_offset not in (0, self.pad_token_id + 1):
            raise ConfigError(f"position_offset must be 0 or pad_token_id + 1 ({self.pad_token_id + 1}), not {self.position_offset}")
        if self.classifier_pooling not in POOLINGS:
            raise ConfigError(f"classifier_pooling must be one of {POOLINGS}, not {self.classifier_pooling!r}")
        if self.classifier_pooling == "late" and self.sequence_head != "pooled_gelu":
            raise ConfigError("classifier_pooling 'late' (every token's logits, averaged) needs sequence_head 'pooled_gelu'")
        if self.local_attention is not None and (self.local_attention < 2 or self.global_attn_every_n_layers < 1):
            raise ConfigError("local_attention must be at least 2 and global_attn_every_n_layers at least 1")
        if self.rotary and self.head_size % 2:
            raise ConfigError(f"rotary position embeddings need an even head size, not {self.head_size}")
        if self.type_vocab_size < 0:
            raise ConfigError(f"type_vocab_size must be 0 (no segment embedding) or more, not {self.type_vocab_size}")
        if self.token_dropout and self.mask_token_id is None:
            raise ConfigError("token_dropout needs mask_token_id: the token whose embedding it zeroes")
        self._check_layer_groups()
        self._check_relative()
        self._check_norms_and_groups()

    def _check_norms_and_groups(self) -> None:
        """Grouped-query attention's groups divide the heads; an RMSNorm has no bias to give."""
        if self.num_heads % self.key_value_head_count:
            raise ConfigError(f"num_heads {self.num_heads} is not a multiple of key_value_heads {self.key_value_heads}: "
                              f"each key and value head serves the same number of query heads")
        if self.rms_norm and self.norm_bias:
            raise ConfigError("an RMSNorm has no bias: rms_norm needs norm_bias=False")
        if self.relative_attention and self.key_value_head_count != self.num_heads:
            raise ConfigError("relative_attention (DeBERTa) needs one key and value head per attention head")

    def _check_relative(self) -> None:
        """DeBERTa's disentangled attention: its terms need relative positions, and rotary positions exclude them."""
        unknown = [term for term in self.position_attention if term not in POSITION_ATTENTION]
        if unknown:
            raise ConfigError(f"position_attention (pos_att_type) terms must be among {POSITION_ATTENTION}, not {unknown}")
        if self.position_attention and not self.relative_attention:
            raise ConfigError("position_attention (pos_att_type) needs relative_attention")
        if self.relative_attention and (self.rotary or self.relative_span < 1):
            raise ConfigError("relative_attention needs position_buckets or max_relative_positions of 1 or more, and no rotary positions")
        if self.relative_attention and (self.shared_layers or self.pre_norm):
            raise ConfigError("relative_attention (DeBERTa) goes with BERT's post-LN layers of their own, not shared or pre-norm ones")
        if self.padded_rows_zero and self.projects_embeddings:
            raise ConfigError("padded_rows_zero (DeBERTa) needs embeddings as wide as hidden_size (no projection)")

    def _check_layer_groups(self) -> None:
        """ALBERT's groups: whole numbers of group applications and of applications per group."""
        groups, inner = self.layer_groups, self.layers_per_group
        if groups < 1 or inner < 1:
            raise ConfigError(f"layer_groups (num_hidden_groups) and layers_per_group (inner_group_num) must be 1 or more, "
                              f"not {groups} and {inner}")
        if (groups, inner) != (1, 1) and not self.shared_layers:
            raise ConfigError("layer_groups and layers_per_group other than 1 need shared_layers (ALBERT)")
        if self.num_layers % inner:
            raise ConfigError(f"num_layers {self.num_layers} is not a multiple of layers_per_group (inner_group_num) {inner}: "
                              f"each application of a group runs all its {inner} layers")
        if self.group_applications % groups:
            raise ConfigError(f"{self.group_applications} group applications (Hugging Face's num_hidden_layers) are not a "
                              f"multiple of layer_groups (num_hidden_groups) {groups}: each group is applied as often")

    @property
    def head_size(self) -> int:
        """Dimensions per head: 768 / 12 = 64 for BERT-base (Devlin et al. 2019)."""
        return self.hidden_size // self.num_heads

    @property
    def input_maps_bias(self) -> bool:
        """Whether the MLP's input maps (mlp1, and the gate) have biases: mlp_input_bias, else mlp_bias."""
        return self.mlp_bias if self.mlp_input_bias is None else self.mlp_input_bias

    @property
    def key_value_head_count(self) -> int:
        """Heads of keys and values: key_value_heads, or num_heads where each head has its own."""
        return self.key_value_heads or self.num_heads

    @property
    def query_heads_per_key(self) -> int:
        """How many query heads share one key and value head: 1, or more with grouped-query attention."""
        return self.num_heads // self.key_value_head_count

    @property
    def group_applications(self) -> int:
        """How many times a layer group is applied in all (Hugging Face's ALBERT num_hidden_layers): num_layers for
        BERT and for ALBERT with one layer per group."""
        return self.num_layers // self.layers_per_group

    @property
    def distinct_layers(self) -> int:
        """Layers with weights of their own: num_layers, or with shared layers layer_groups * layers_per_group."""
        return self.layer_groups * self.layers_per_group if self.shared_layers else self.num_layers

    def shared_layer_at(self, depth: int) -> tuple[int, int]:
        """(group, inner layer) of the shared layer applied at `depth` (0 .. num_layers - 1), as Hugging Face's
        AlbertTransformer: application i = depth // layers_per_group goes to group i // (applications per group)."""
        application, inner = divmod(depth, self.layers_per_group)
        return application // (self.group_applications // self.layer_groups), inner

    def depths_of(self, group: int, inner: int) -> list[int]:
        """The depths at which inner layer `inner` of group `group` is applied (shared_layer_at's inverse)."""
        return [depth for depth in range(self.num_layers) if self.shared_layer_at(depth) == (group, inner)]

    @property
    def embedding_width(self) -> int:
        """E: the embeddings' width (hidden_size unless the family projects them)."""
        return self.embedding_size or self.hidden_size

    @property
    def projects_embeddings(self) -> bool:
        """Whether a linear map takes the embeddings from E to H (embedding_projection, or E != H)."""
        return self.embedding_projection or self.embedding_width != self.hidden_size

    @property
    def position_rows(self) -> int:
        """Rows of the position table: max_position_embeddings, plus RoBERTa's offset."""
        return self.max_position_embeddings + self.position_offset

    def window(self, layer: int) -> int | None:
        """Half-width of layer `layer`'s attention window (a query sees keys at most this far away), None where the
        layer attends globally: ModernBERT's layers 0, n, 2n, ... (n = global_attn_every_n_layers)."""
        if self.local_attention is None or layer % self.global_attn_every_n_layers == 0:
            return None
        return self.local_attention // 2

    def rope_theta(self, layer: int) -> float:
        """The rotary base of layer `layer`: local_rope_theta in a windowed layer, global_rope_theta otherwise."""
        return self.global_rope_theta if self.window(layer) is None else self.local_rope_theta

    @property
    def relative_distance(self) -> int:
        """The farthest relative distance DeBERTa's buckets reach (max_relative_positions, or max_position_embeddings)."""
        return self.max_relative_positions or self.max_position_embeddings

    @property
    def relative_span(self) -> int:
        """k: the relative-position embeddings have 2k rows, for distances -k .. k - 1 (position_buckets, else the
        farthest distance)."""
        return self.position_buckets if self.position_buckets > 0 else self.relative_distance

    @property
    def score_scale(self) -> int:
        """DeBERTa divides every score term by sqrt(head_size * this): 1 + the number of position terms (He et al.
        2021, eq. 4 with both terms: sqrt(3d)); 1 elsewhere."""
        return 1 + len(self.position_attention)

    @property
    def lm_activation(self) -> str:
        return self.mlm_activation or self.activation

    @classmethod
    def base(cls, **overrides) -> "BertConfig":
        """BERT-base: L=12, H=768, A=12, about 110M parameters."""
        return cls(**overrides)

    @classmethod
    def large(cls, **overrides) -> "BertConfig":
        """BERT-large: L=24, H=1024, A=16, about 340M parameters."""
        fields = dict(hidden_size=1024, num_layers=24, num_heads=16, intermediate_size=4096)
        return cls(**{**fields, **overrides})

    @classmethod
    def roberta_base(cls, **overrides) -> "BertConfig":
        """RoBERTa-base (Liu et al. 2019): BERT-base's shape, a 50,265-token byte-level BPE, <pad> = 1."""
        return cls.of_family("roberta", **{"vocab_size": 50265, "pad_token_id": 1, "layer_norm_eps": 1e-5, **overrides})

    @classmethod
    def distilbert_base(cls, **overrides) -> "BertConfig":
        """DistilBERT-base (Sanh et al. 2019): six layers distilled from BERT-base."""
        return cls.of_family("distilbert", **{"num_layers": 6, **overrides})

    @classmethod
    def albert_base(cls, **overrides) -> "BertConfig":
        """ALBERT-base (Lan et al. 2020): E=128 embeddings projected to H=768, a 30,000-token SentencePiece vocabulary,
        no dropout."""
        return cls.of_family("albert", **{"vocab_size": 30000, "hidden_dropout": 0.0, "attention_dropout": 0.0, **overrides})

    @classmethod
    def electra_small(cls, **overrides) -> "BertConfig":
        """ELECTRA-small (Clark et al. 2020) discriminator: E=128, H=256, 4 heads."""
        sizes = dict(hidden_size=256, num_heads=4, intermediate_size=1024, embedding_size=128)
        return cls.of_family("electra", **{**sizes, **overrides})

    @classmethod
    def electra_base(cls, **overrides) -> "BertConfig":
        """ELECTRA-base (Clark et al. 2020) discriminator: BERT-base's shape."""
        return cls.of_family("electra", **overrides)

    @classmethod
    def modernbert_base(cls, **overrides) -> "BertConfig":
        """ModernBERT-base (Warner et al. 2024): 22 layers, H=768, 12 heads, GeGLU of 1,152, a 50,368-token BPE,
        8,192 positions."""
        sizes = dict(vocab_size=50368, num_layers=22, intermediate_size=1152, max_position_embeddings=8192, pad_token_id=50283)
        return cls.of_family("modernbert", **{**sizes, **overrides})

    @classmethod
    def deberta_v3_base(cls, **overrides) -> "BertConfig":
        """DeBERTa-v3-base (He et al. 2023): BERT-base's shape, a 128,100-token SentencePiece vocabulary."""
        return cls.of_family("deberta-v2", **{"vocab_size": 128100, **overrides})

    @classmethod
    def of_family(cls, family: str, **fields) -> "BertConfig":
        """A config of any size with the family's differences (its module's `differences`, bert/families/): e.g.
        `BertConfig.of_family("roberta", hidden_size=64, num_layers=2, ...)` for a fresh small RoBERTa. ALBERT's
        embeddings are E = min(128, H) wide unless embedding_size is given."""
        return cls(**family_of(family).config_fields(fields))

    def replace(self, **changes) -> "BertConfig":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_hf_dict(cls, hf: dict) -> "BertConfig":
        """Read a Hugging Face config.json (as a dict) of any family, by its model_type. Raises ConfigError (a
        ValueError) for what we cannot run."""
        return cls(**read_hf_config(hf))

    def to_hf_dict(self) -> dict:
        """config.json for this family, as transformers writes it."""
        return write_hf_config(self)
