"""BERT, module by module, in the order BERT computes (Devlin et al. 2019, section 3): embedding, layers, LM head.

The same tree runs BERT's family, with the differences BertConfig states (bert/config.py): RoBERTa's positions
after the padding index (Liu et al. 2019), DistilBERT without segments or pooler (Sanh et al. 2019), ALBERT's
narrow embeddings projected to H and its one layer applied at every depth (Lan et al. 2020, `SharedLayer`; several
shared layers in groups: `LayerGroups`), ELECTRA's projection and its discriminator head (Clark et al. 2020,
`ReplacedTokenHead`), ModernBERT's pre-norm layers without biases, GeGLU MLP, rotary positions, local attention
windows and final LayerNorm (Warner et al. 2024), DeBERTa-v3's disentangled attention over shared, log-bucketed
relative-position embeddings instead of a position table (He et al. 2021, 2023; `RelativePositions`).

Every `hook_*` attribute is a HookPoint whose name is its module path; the comment beside it gives its shape.
"""
from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple, Sequence, Union

import torch
import torch.nn.functional as F
from einops import repeat
from torch import nn

from . import attention as attn
from .activation_cache import ActivationCache
from .config import BertConfig
from .errors import InputTooLongError, InvalidInputError, MissingHeadError
from .hooks import _ACTIVE_RUN, HookPoint, HookRun, Intervention, NameFilter, active_run, group_interventions, make_filter, name_hook_points
from .stopping import checkpoint


def activate(x: torch.Tensor, activation: str) -> torch.Tensor:
    """One of bert/config.py's ACTIVATIONS, by name: the MLP's is config.activation, the masked-LM head's (and
    ModernBERT's classifiers') config.lm_activation."""
    if activation == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if activation == "relu":
        return F.relu(x)
    if activation == "silu":
        return F.silu(x)
    return F.gelu(x)


class BertEmbedding(nn.Module):
    """token + position + segment embeddings, summed, then LayerNorm and dropout; where E < H (ALBERT, small
    ELECTRAs) a linear projection to H follows. A family without segments (DistilBERT, ModernBERT) has no segment
    embedding; one with rotary positions (ModernBERT) no position table: its positions turn q and k in attention;
    DeBERTa-v3 none either: its attention reads relative positions (RelativePositions), and its padded positions'
    embeddings are zeroed (padded_rows_zero), as Hugging Face's DeBERTa does."""

    def __init__(self, config: BertConfig):
        super().__init__()
        width = config.embedding_width  # E
        self.pad_token_id, self.position_offset = config.pad_token_id, config.position_offset
        self.padded_rows_zero = config.padded_rows_zero  # DeBERTa: padded positions' embeddings zeroed after LayerNorm
        self.token_embedding = nn.Embedding(config.vocab_size, width)
        table = config.absolute_positions and not config.rotary
        self.position_embedding = nn.Embedding(config.position_rows, width) if table else None
        self.token_type_embedding = nn.Embedding(config.type_vocab_size, width) if config.type_vocab_size else None
        self.layer_norm = nn.LayerNorm(width, eps=config.layer_norm_eps, bias=config.norm_bias)
        self.dropout = nn.Dropout(config.hidden_dropout)
        # ALBERT's embedding_hidden_mapping_in, ELECTRA's embeddings_project: E -> H
        self.projection = nn.Linear(width, config.hidden_size) if config.projects_embeddings else None
        self.hook_token = HookPoint()  # [batch, seq, E]
        if self.position_embedding is not None:
            self.hook_position = HookPoint()  # [batch, seq, E]
        if self.token_type_embedding is not None:
            self.hook_token_type = HookPoint()  # [batch, seq, E]
        self.hook_sum = HookPoint()  # [batch, seq, E] before LayerNorm
        if self.projection is not None:
            self.hook_norm = HookPoint()  # [batch, seq, E] after LayerNorm, before the projection
        self.hook_out = HookPoint()  # [batch, seq, hidden] what enters the first layer (after LayerNorm, or the projection)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        batch, seq = input_ids.shape
        token = self.hook_token(self.token_embedding(input_ids))
        if self.position_embedding is None:  # rotary or relative positions: in attention, not here
            summed = token
        elif self.position_offset:  # RoBERTa: from pad_token_id + 1 on; a padded token at pad_token_id
            not_padding = input_ids.ne(self.pad_token_id).long()
            positions = torch.cumsum(not_padding, dim=1) * not_padding + self.pad_token_id
            summed = token + self.hook_position(self.position_embedding(positions))
        else:  # positions count from 0 for this input's length (a fixed span of 512 would not add to a shorter input)
            positions = torch.arange(seq, device=input_ids.device)
            summed = token + self.hook_position(repeat(self.position_embedding(positions), "seq hidden -> batch seq hidden", batch=batch))
        if self.token_type_embedding is not None:
            summed = summed + self.hook_token_type(self.token_type_embedding(token_type_ids))
        summed = self.hook_sum(summed)
        if self.projection is None:
            normed = self.layer_norm(summed)
            if self.padded_rows_zero and attention_mask is not None:
                normed = normed * attention_mask[..., None].to(normed.dtype)
            return self.dropout(self.hook_out(normed))
        return self.hook_out(self.projection(self.dropout(self.hook_norm(self.layer_norm(summed)))))


class RelativeInput(NamedTuple):
    """What DeBERTa's attention layers read of the relative positions, computed once per forward pass."""

    index: torch.Tensor  # LongTensor [query, key]: the row of `embeddings` for each query-key pair
    embeddings: torch.Tensor  # [2 * span, hidden] the relative-position embeddings after their LayerNorm


class RelativePositions(nn.Module):
    """DeBERTa's relative-position embeddings (He et al. 2021, section 3.1), one table shared by every layer
    (Hugging Face's encoder.rel_embeddings, then encoder.LayerNorm): 2k rows for the relative distances -k .. k - 1,
    which DeBERTa-v3 reaches through log buckets (attention.relative_index; k = position_buckets)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.span, self.buckets, self.max_distance = config.relative_span, config.position_buckets, config.relative_distance
        self.embedding = nn.Embedding(2 * self.span, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.hook_embeddings = HookPoint()  # [2 * span, hidden] after LayerNorm: what each layer projects to position keys and queries

    def extra_repr(self) -> str:
        return f"span={self.span}, buckets={self.buckets}, max_distance={self.max_distance}"

    def forward(self, seq: int) -> RelativeInput:
        device = self.embedding.weight.device
        index = attn.relative_index(seq, self.buckets, self.max_distance, self.span, device)
        return RelativeInput(index, self.dropout(self.hook_embeddings(self.layer_norm(self.embedding.weight))))


class PureSelfAttentionLayer(nn.Module):
    """Multi-head scaled dot-product attention, before the output projection. Step by step (scores, pattern,
    weighted values) when a call records or changes the scores or the pattern; otherwise through PyTorch's fused
    scaled_dot_product_attention, which gives the same z (to float rounding) faster and, on a GPU, without ever
    holding the [query, key] matrix (bert/attention.py).

    With rotary positions (ModernBERT) q and k are turned by their positions before the scores, and hook_q and
    hook_k record them turned: the q and k whose product is the scores, as in every family. A local layer's
    queries see only the keys within `window` positions (`attention.window_band` draws it).

    DeBERTa's disentangled attention (He et al. 2021, eq. 4): the scores are the sum of three terms, each recorded
    on its own and each already divided by sqrt(head_dim * config.score_scale), so that hook_scores_c2c +
    hook_scores_c2p + hook_scores_p2c is hook_scores before masking: content-to-content (q·k), content-to-position
    (each query against the position key of its distance to each key) and position-to-content (each key against the
    position query of that distance). The position keys and queries are the relative-position embeddings through
    this layer's own key and query maps (share_att_key). When nobody records or changes a term, the scores or the
    pattern, the fused kernel adds c2p + p2c to its own q·k. A padded query's row is masked whole (DeBERTa's
    padded_rows_zero: softmax spreads it evenly)."""

    def __init__(self, config: BertConfig, layer: int = 0):
        super().__init__()
        self.num_heads = config.num_heads
        self.causal = config.causal  # left-to-right: no query sees the keys to its right
        self.window = config.window(layer)  # a local layer's half-width (ModernBERT: local_attention // 2); None: global
        self.rope_theta = config.rope_theta(layer) if config.rotary else None  # rotary base; None: no rotation
        bias = config.attention_bias
        self.project_query = nn.Linear(config.hidden_size, config.hidden_size, bias=bias)
        self.project_key = nn.Linear(config.hidden_size, config.hidden_size, bias=bias)
        self.project_value = nn.Linear(config.hidden_size, config.hidden_size, bias=bias)
        self.dropout = nn.Dropout(config.attention_dropout)
        self.hook_q = HookPoint()  # [batch, head, query, head_dim] (rotary: after the rotation)
        self.hook_k = HookPoint()  # [batch, head, key, head_dim] (rotary: after the rotation)
        self.hook_v = HookPoint()  # [batch, head, key, head_dim]
        self.position_attention = config.position_attention if config.relative_attention else None
        self.padded_queries = config.padded_rows_zero  # DeBERTa: a padded query's row is all masked
        if self.position_attention is not None:  # DeBERTa: each term scaled by 1 / sqrt(head_dim * score_scale)
            self.scale = (config.head_size * config.score_scale) ** 0.5
            self.hook_scores_c2c = HookPoint()  # [batch, head, query, key] content-to-content, scaled
            if "c2p" in self.position_attention:
                self.hook_scores_c2p = HookPoint()  # [batch, head, query, key] content-to-position, scaled
            if "p2c" in self.position_attention:
                self.hook_scores_p2c = HookPoint()  # [batch, head, query, key] position-to-content, scaled
        self.hook_scores = HookPoint()  # [batch, head, query, key] scaled; padded keys (if causal, later ones; local: those outside the window) at the dtype's minimum
        self.hook_pattern = HookPoint()  # [batch, head, query, key] softmax of the scores; rows sum to 1
        self.hook_z = HookPoint()  # [batch, head, query, head_dim] each head's output (weighted values)

    def extra_repr(self) -> str:
        parts = [f"window=±{self.window}" if self.window is not None else "global"]
        return ", ".join(parts + ([f"rotary theta={self.rope_theta:g}"] if self.rope_theta is not None else []))

    def disentangled_scores(self, q: torch.Tensor, k: torch.Tensor, relative: RelativeInput, content: bool = True) -> torch.Tensor | None:
        """DeBERTa's unmasked scores [batch, head, query, key]: c2c + c2p + p2c, each term through its hook.
        content False: c2p + p2c only (None without position terms), the bias the fused kernel adds to its q·k."""
        scores = self.hook_scores_c2c(torch.matmul(q, k.transpose(-1, -2)) / self.scale) if content else None
        positions = relative.embeddings[None]  # [1, 2 * span, hidden]
        if "c2p" in self.position_attention:
            position_keys = attn.split_heads(self.project_key(positions), self.num_heads)[0]  # [head, 2 * span, head_dim]
            c2p = self.hook_scores_c2p(attn.content_to_position(q, position_keys, relative.index, self.scale))
            scores = c2p if scores is None else scores + c2p
        if "p2c" in self.position_attention:
            position_queries = attn.split_heads(self.project_query(positions), self.num_heads)[0]  # [head, 2 * span, head_dim]
            p2c = self.hook_scores_p2c(attn.position_to_content(k, position_queries, relative.index, self.scale))
            scores = p2c if scores is None else scores + p2c
        return scores

    def _watched(self) -> bool:
        """Whether this call records or changes the scores, the pattern or (DeBERTa) a term of the scores."""
        terms = ("c2c", *self.position_attention) if self.position_attention is not None else ()
        return any(getattr(self, f"hook_scores{suffix}").is_watched() for suffix in ("", *(f"_{term}" for term in terms))) \
            or self.hook_pattern.is_watched()

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None, relative: RelativeInput | None = None) -> torch.Tensor:
        q = attn.split_heads(self.project_query(x), self.num_heads)
        k = attn.split_heads(self.project_key(x), self.num_heads)
        if self.rope_theta is not None:  # turn q and k by their positions (Su et al. 2021)
            cos, sin = attn.rotary_angles(x.shape[1], q.shape[-1], self.rope_theta, x.device)
            q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)
        q, k = self.hook_q(q), self.hook_k(k)
        v = self.hook_v(attn.split_heads(self.project_value(x), self.num_heads))
        if self.position_attention is not None and relative is None:
            raise InvalidInputError("a relative-attention layer needs the relative positions: Bert.relative_input(seq)")
        dropout = self.dropout.p if self.training else 0.0
        if self.position_attention is not None and self._watched():
            scores = self.hook_scores(attn.mask_padding(self.disentangled_scores(q, k, relative), attention_mask, self.padded_queries))
            z = attn.weighted_values(self.dropout(self.hook_pattern(scores.softmax(dim=-1))), v)
        elif self.position_attention is not None:  # DeBERTa, nobody looking: c2p + p2c as a bias on the fused kernel's q·k
            z = attn.fused_attention(q, k, v, attention_mask, dropout=dropout, bias=self.disentangled_scores(q, k, relative, content=False),
                                     scale=1 / self.scale, padded_queries=self.padded_queries)
        elif self.hook_scores.is_watched() or self.hook_pattern.is_watched():
            scores = self.hook_scores(attn.masked_scores(q, k, attention_mask, self.causal, self.window))
            pattern = self.hook_pattern(scores.softmax(dim=-1))
            z = attn.weighted_values(self.dropout(pattern), v)
        else:  # nobody looks at the scores or the pattern: the same z from one fused kernel
            z = attn.fused_attention(q, k, v, attention_mask, dropout=dropout, causal=self.causal, window=self.window)
        return attn.merge_heads(self.hook_z(z))  # [batch, seq, hidden]


class SelfAttentionLayer(nn.Module):
    """Attention, output projection, dropout, then residual + LayerNorm (post-LN, as in BERT). Pre-norm
    (ModernBERT): LayerNorm on the input, then attention, projection, dropout, residual; layer 0 has no LayerNorm
    here, its input being the normed embeddings."""

    def __init__(self, config: BertConfig, layer: int = 0):
        super().__init__()
        self.pre_norm = config.pre_norm
        has_norm = not (config.pre_norm and layer == 0)
        norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=config.norm_bias) if has_norm else None
        if self.pre_norm:  # registered in the order of computing, so that print(model) reads top to bottom
            self.layer_norm = norm
        self.attention = PureSelfAttentionLayer(config, layer)
        # the output projection (Hugging Face: attention.output.dense)
        self.mlp = nn.Linear(config.hidden_size, config.hidden_size, bias=config.attention_bias)
        if not self.pre_norm:
            self.layer_norm = norm
        self.dropout = nn.Dropout(config.hidden_dropout)
        if self.pre_norm and has_norm:
            self.hook_in = HookPoint()  # [batch, seq, hidden] the LayerNorm'd input that attention reads
        self.hook_result = HookPoint()  # [batch, seq, hidden] what attention adds to the residual stream
        self.hook_out = HookPoint()  # [batch, seq, hidden] after residual + LayerNorm (pre-norm: after the residual)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None, relative: RelativeInput | None = None) -> torch.Tensor:
        if not self.pre_norm:
            result = self.hook_result(self.mlp(self.attention(x, attention_mask, relative)))
            return self.hook_out(self.layer_norm(x + self.dropout(result)))
        normed = x if self.layer_norm is None else self.hook_in(self.layer_norm(x))
        result = self.hook_result(self.mlp(self.attention(normed, attention_mask)))
        return self.hook_out(x + self.dropout(result))


class NormedResidualLayer(nn.Module):
    """The MLP block: hidden -> intermediate, GELU, -> hidden, dropout, residual + LayerNorm. Pre-norm
    (ModernBERT): LayerNorm on the input, the MLP, dropout, residual. Gated (ModernBERT's GeGLU, Shazeer 2020):
    a second map of the normed input, the gate, multiplies the activation (Hugging Face's Wi holds mlp1 and gate)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=config.norm_bias)
        if config.pre_norm:  # registered in the order of computing
            self.layer_norm = norm
        self.mlp1 = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.mlp_bias)
        self.gate = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.mlp_bias) if config.gated_mlp else None
        self.mlp2 = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.mlp_bias)
        if not config.pre_norm:
            self.layer_norm = norm
        self.dropout = nn.Dropout(config.hidden_dropout)
        if config.pre_norm:
            self.hook_in = HookPoint()  # [batch, seq, hidden] the LayerNorm'd input that the MLP reads
        self.hook_pre = HookPoint()  # [batch, seq, intermediate] before GELU
        if self.gate is not None:
            self.hook_gate = HookPoint()  # [batch, seq, intermediate] the gate, multiplied with GELU(pre)
        self.hook_post = HookPoint()  # [batch, seq, intermediate] after GELU (gated: times the gate): the neuron activations
        self.hook_result = HookPoint()  # [batch, seq, hidden] what the MLP adds to the residual stream

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = self.hook_in(self.layer_norm(x)) if self.config.pre_norm else x
        pre = self.hook_pre(self.mlp1(normed))
        post = activate(pre, self.config.activation)
        if self.gate is not None:
            post = post * self.hook_gate(self.gate(normed))
        result = self.hook_result(self.mlp2(self.hook_post(post)))
        if self.config.pre_norm:
            return x + self.dropout(result)
        return self.layer_norm(x + self.dropout(result))


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig, layer: int = 0):
        super().__init__()
        self.attention = SelfAttentionLayer(config, layer)
        self.residual = NormedResidualLayer(config)
        self.hook_out = HookPoint()  # [batch, seq, hidden] the layer's output, input of the next layer

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None, relative: RelativeInput | None = None) -> torch.Tensor:
        return self.hook_out(self.residual(self.attention(x, attention_mask, relative)))


class SharedLayer(nn.Module):
    """ALBERT's one layer, applied `repeats` times (Lan et al. 2020, section 3.1: cross-layer parameter sharing).

    Iterating gives one callable per application, so `for layer in model.transformer` reads as for BERT; each
    application records its hooks under its own depth (`transformer.3....` for the fourth). Within LayerGroups,
    one of several shared layers, applied at `depths` only."""

    def __init__(self, config: BertConfig, depths: Sequence[int] | None = None):
        super().__init__()
        self.layer = BertLayer(config)
        self.depths = list(range(config.num_layers)) if depths is None else list(depths)
        self.every_depth = depths is None
        self.repeats = len(self.depths)

    def extra_repr(self) -> str:
        where = "" if self.every_depth else f", at depths {', '.join(map(str, self.depths))}"
        return f"applied {self.repeats} times{where}"

    def __len__(self) -> int:
        return self.repeats

    def __iter__(self):
        return iter([LayerApplication(self.layer, depth) for depth in self.depths])

    def __getitem__(self, index):
        return list(self)[index]


class LayerGroups(nn.Module):
    """ALBERT with several shared layers (Hugging Face's num_hidden_groups, inner_group_num): `groups[g][j]` is
    inner layer j of group g, a SharedLayer. Each application of a group runs its inner layers in order, and
    every inner layer's application is a layer of its own (a depth, with its hooks and its hidden state, as
    transformers' hidden_states and attentions count them). The group applications go to group 0 first, then
    group 1, ... (BertConfig.shared_layer_at).

    Iterating gives one callable per depth, in order, as SharedLayer does."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.groups = nn.ModuleList(
            nn.ModuleList(SharedLayer(config, config.depths_of(group, inner)) for inner in range(config.layers_per_group))
            for group in range(config.layer_groups)
        )
        self.num_layers = config.num_layers

    def extra_repr(self) -> str:
        groups, inner = len(self.groups), len(self.groups[0])
        return f"{groups} groups of {inner} layers, {self.num_layers} layer applications"

    def __len__(self) -> int:
        return self.num_layers

    def __iter__(self):
        applications = [application for group in self.groups for shared in group for application in shared]
        return iter(sorted(applications, key=lambda application: application.depth))

    def __getitem__(self, index):
        return list(self)[index]


def shared_layer_path(config: BertConfig, group: int, inner: int) -> str:
    """Where inner layer `inner` of group `group` sits in ALBERT's module tree: `transformer.layer` for the one
    shared layer, `transformer.groups.{group}.{inner}.layer` in LayerGroups."""
    if (config.layer_groups, config.layers_per_group) == (1, 1):
        return "transformer.layer"
    return f"transformer.groups.{group}.{inner}.layer"


def layer_stack(config: BertConfig) -> nn.Module:
    """The encoder's layers: BERT's ModuleList, ALBERT's SharedLayer, or LayerGroups."""
    if not config.shared_layers:
        return nn.ModuleList(BertLayer(config, i) for i in range(config.num_layers))
    return SharedLayer(config) if (config.layer_groups, config.layers_per_group) == (1, 1) else LayerGroups(config)


class LayerApplication:
    """The shared layer at one depth: calling it applies the layer with the run's hooks at that depth. Its
    parameters are the shared layer's (freezing or training one application does so for all)."""

    def __init__(self, layer: BertLayer, depth: int):
        self.layer, self.depth = layer, depth

    def __call__(self, x: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        run = _ACTIVE_RUN.get()
        if run is None:
            return self.layer(x, attention_mask)
        outer, run.depth = run.depth, self.depth
        try:
            return self.layer(x, attention_mask)
        finally:
            run.depth = outer

    def parameters(self):
        return self.layer.parameters()

    def requires_grad_(self, requires_grad: bool = True) -> "LayerApplication":
        self.layer.requires_grad_(requires_grad)
        return self


class BertLMHead(nn.Module):
    """dense (H -> E), activation, LayerNorm, then the unembedding (E -> vocab), whose weight is the token
    embedding (tied). RoBERTa's lm_head, DistilBERT's vocab_* layers, ALBERT's predictions, ELECTRA's
    generator head and ModernBERT's head + decoder are this module."""

    def __init__(self, config: BertConfig, token_embedding: nn.Embedding):
        super().__init__()
        self.activation = config.lm_activation
        self.mlp = nn.Linear(config.hidden_size, config.embedding_width, bias=config.head_bias)
        self.layer_norm = nn.LayerNorm(config.embedding_width, eps=config.layer_norm_eps, bias=config.norm_bias)
        self.unembedding = nn.Linear(config.embedding_width, config.vocab_size, bias=config.decoder_bias)
        self.unembedding.weight = token_embedding.weight  # tied: one tensor, two uses
        self.hook_transform = HookPoint()  # [*positions, E] after dense, activation, LayerNorm
        self.hook_logits = HookPoint()  # [*positions, vocab]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        transformed = self.hook_transform(self.layer_norm(activate(self.mlp(hidden), self.activation)))
        return self.hook_logits(self.unembedding(transformed))


class ReplacedTokenHead(nn.Module):
    """ELECTRA's discriminator (Clark et al. 2020, section 2): dense, activation, then one logit per token that
    says "this token was replaced" (positive) or "original" (negative)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.activation = config.activation
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.prediction = nn.Linear(config.hidden_size, 1)
        self.hook_logits = HookPoint()  # [batch, seq]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.hook_logits(self.prediction(activate(self.dense(hidden), self.activation)).squeeze(-1))


class FirstTokenClassifier(nn.Module):
    """The sequence classifier of the families without BERT's pooler path: the first token's vector through
    dense and an activation, then to the labels. RoBERTa: tanh (RobertaClassificationHead); DistilBERT: ReLU
    (pre_classifier); ELECTRA: GELU (ElectraClassificationHead); DeBERTa: GELU (ContextPooler, then the classifier)."""

    def __init__(self, config: BertConfig, num_labels: int, dropout: float):
        super().__init__()
        self.kind = config.sequence_head  # "dense_tanh", "dense_relu" or "dense_gelu"
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.out_proj = nn.Linear(config.hidden_size, num_labels)
        self.dropout = nn.Dropout(dropout)
        self.hook_logits = HookPoint()  # [batch, labels]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        x = hidden[:, 0]
        if self.kind != "dense_relu":  # DistilBERT has no dropout before its pre_classifier
            x = self.dropout(x)
        x = self.dense(x)
        x = torch.tanh(x) if self.kind == "dense_tanh" else F.relu(x) if self.kind == "dense_relu" else F.gelu(x)
        return self.hook_logits(self.out_proj(self.dropout(x)))


class NormedHeadClassifier(nn.Module):
    """ModernBERT's classifiers (Hugging Face's ModernBertPredictionHead, then dropout and a linear map): dense,
    activation, LayerNorm, dropout, then to the labels. The sequence classifier reads the first token's vector
    or the mean over the real tokens (`pooling`, the config's classifier_pooling); the token classifier
    (`pooling` None) reads every token."""

    def __init__(self, config: BertConfig, num_labels: int, dropout: float, pooling: str | None):
        super().__init__()
        self.activation, self.pooling = config.lm_activation, pooling
        self.dense = nn.Linear(config.hidden_size, config.hidden_size, bias=config.head_bias)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=config.norm_bias)
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(config.hidden_size, num_labels)
        self.hook_logits = HookPoint()  # [batch, labels], or [batch, seq, labels] for the token classifier

    def extra_repr(self) -> str:
        return f"pooling={self.pooling}" if self.pooling else "every token"

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.pooling == "cls":
            hidden = hidden[:, 0]
        elif self.pooling == "mean":  # over the real tokens: [batch, seq, hidden] -> [batch, hidden]
            weights = torch.ones(hidden.shape[:2], device=hidden.device) if attention_mask is None else attention_mask.to(hidden.dtype)
            hidden = (hidden * weights[..., None]).sum(dim=1) / weights.sum(dim=1, keepdim=True)
        x = self.layer_norm(activate(self.dense(hidden), self.activation))
        return self.hook_logits(self.out_proj(self.dropout(x)))


class FinalNorm(nn.Module):
    """The LayerNorm after the last layer of a pre-norm model (ModernBERT's final_norm): its output is what the
    output heads read (transformers' last hidden state)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, bias=config.norm_bias)
        self.hook_out = HookPoint()  # [batch, seq, hidden]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hook_out(self.layer_norm(x))


class BertPooler(nn.Module):
    """[CLS]'s final vector through dense + tanh: the sentence-level summary the NSP head and the classifier read
    (Devlin et al. 2019)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.hook_out = HookPoint()  # [batch, hidden]

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.hook_out(torch.tanh(self.dense(hidden[:, 0])))


class LinearHead(nn.Linear):
    """Dropout, then one linear map to `out_features` logits: the NSP head (over the pooler), the sequence
    classifier (over the pooler) and the token classifier (over every token). A subclass of nn.Linear, so its
    tensors are `weight` and `bias` right under the head's name, as in Hugging Face checkpoints."""

    def __init__(self, in_features: int, out_features: int, dropout: float = 0.0):
        super().__init__(in_features, out_features)
        self.dropout = nn.Dropout(dropout)
        self.hook_logits = HookPoint()  # [*positions, out_features]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hook_logits(super().forward(self.dropout(x)))


Labels = Union[int, Sequence[str], None]  # a number of labels (named LABEL_0, LABEL_1, ...) or their names
# The output heads, one name each: forward(output=...), run_with_cache(output=...), output_heads, `{name}_logits`.
# "replaced": ELECTRA's discriminator (Clark et al. 2020), in place of a masked-LM head.
_OUTPUT_MODULES = {"mlm": "lm_head", "nsp": "nsp_head", "classifier": "classifier", "tagger": "tagger", "replaced": "discriminator"}
OUTPUTS = tuple(_OUTPUT_MODULES)
_OWN_OUTPUT_ORDER = ("mlm", "replaced", "classifier", "tagger", "nsp")  # which head `model(ids)` runs (Bert.own_output)
_MISSING_OUTPUT = {
    "classifier": "this model has no sequence classifier: load a BertForSequenceClassification checkpoint, or fine-tune one (python -m bert finetune)",
    "tagger": "this model has no token classifier: load a BertForTokenClassification checkpoint, or fine-tune one (python -m bert finetune --task tokens)",
    "nsp": "this model has no next-sentence (NSP) head: load one that has (a BertForPreTraining or BertForNextSentencePrediction checkpoint)",
    "replaced": "this model has no replaced-token head: load an ELECTRA discriminator (ElectraForPreTraining)",
}


class Bert(nn.Module):
    """(LongTensor[batch, seq], LongTensor[batch, seq]) -> FloatTensor[batch, seq, vocab].

    Output heads are optional so that any checkpoint loads as it is: an encoder-only checkpoint has no `lm_head`
    (forward then returns None; a model with another head runs that one: `own_output`); `pooler` and `nsp_head` exist when a checkpoint has them or for pre-training.
    One task head at most, for fine-tuning (Devlin et al. 2019, figure 4): `classifier` (sequence or
    sequence-pair classification, or regression with one label, over the pooler) or `tagger` (token classification).
    ELECTRA's discriminator has `discriminator` (one replaced-token logit per token) in place of an MLM head; in
    the families without a pooler the classifier reads the first token (FirstTokenClassifier).
    """

    def __init__(
        self,
        config: BertConfig,
        mlm_head: bool = True,
        pooler: bool = False,
        nsp_head: bool = False,
        classifier_labels: Labels = None,
        tagger_labels: Labels = None,
        problem_type: str | None = None,
        discriminator: bool = False,
    ):
        super().__init__()
        if classifier_labels is not None and tagger_labels is not None:
            raise InvalidInputError("a model has one task head: give classifier_labels or tagger_labels, not both")
        self.config = config
        _check_family_heads(config, nsp_head, discriminator)
        self.embedding = BertEmbedding(config)
        self.relative_positions = RelativePositions(config) if config.relative_attention else None
        self.transformer = layer_stack(config)
        self.final_norm = FinalNorm(config) if config.pre_norm else None
        self.lm_head = BertLMHead(config, self.embedding.token_embedding) if mlm_head else None
        self.discriminator = ReplacedTokenHead(config) if discriminator else None
        self.pooler = BertPooler(config) if config.pooler and (pooler or nsp_head or self._pooled(classifier_labels)) else None
        # [is next, is random]; ALBERT's sentence-order head: [in order, swapped] (Lan et al. 2020, section 4.1)
        self.nsp_head = LinearHead(config.hidden_size, 2) if nsp_head else None
        self.classifier = self.tagger = None
        self.labels: list[str] | None = None  # the task head's label names, in logit order (id2label)
        self.problem_type: str | None = None  # as Hugging Face's config.json: "single_label_classification", "regression", ...
        self._add_task_head(classifier_labels, tagger_labels, problem_type)
        self._hook_names = name_hook_points(self)
        self.apply(self._init_weights)  # costs nothing on the meta device, where the loader builds (bert/checkpoint.py)

    def _pooled(self, classifier_labels: Labels) -> bool:
        """Whether a sequence classifier with these labels reads the pooler (BERT, ALBERT)."""
        return classifier_labels is not None and self.config.sequence_head == "pooler"

    def add_output_heads(
        self, mlm_head: bool = False, nsp_head: bool = False, classifier_labels: Labels = None,
        tagger_labels: Labels = None, problem_type: str | None = None, discriminator: bool = False,
    ) -> "Bert":
        """Give a loaded encoder fresh, randomly initialised heads, to pre-train or fine-tune them
        (the pooler comes with NSP and with the classifier, kept if the checkpoint had one)."""
        _check_family_heads(self.config, nsp_head, discriminator)
        if discriminator and self.discriminator is None:
            self.discriminator = ReplacedTokenHead(self.config).apply(self._init_weights)
        if mlm_head and self.lm_head is None:
            self.lm_head = BertLMHead(self.config, self.embedding.token_embedding)
            for module in (self.lm_head.mlp, self.lm_head.layer_norm):  # not the unembedding: it is the token embedding
                module.apply(self._init_weights)
            if self.lm_head.unembedding.bias is not None:
                nn.init.zeros_(self.lm_head.unembedding.bias)
        if (nsp_head or self._pooled(classifier_labels)) and self.pooler is None:
            self.pooler = BertPooler(self.config).apply(self._init_weights)
        if nsp_head and self.nsp_head is None:
            self.nsp_head = LinearHead(self.config.hidden_size, 2).apply(self._init_weights)
        if classifier_labels is not None or tagger_labels is not None:
            if self.classifier is not None or self.tagger is not None:
                raise InvalidInputError("this model already has a task head (classifier or tagger)")
            self._add_task_head(classifier_labels, tagger_labels, problem_type)
            (self.classifier or self.tagger).apply(self._init_weights)
        self._hook_names = name_hook_points(self)
        return self

    def _add_task_head(self, classifier_labels: Labels, tagger_labels: Labels, problem_type: str | None) -> None:
        labels = classifier_labels if classifier_labels is not None else tagger_labels
        if labels is None:
            return
        names = [f"LABEL_{i}" for i in range(labels)] if isinstance(labels, int) else [str(name) for name in labels]
        if not names:
            raise InvalidInputError("a task head needs at least one label")
        dropout = self.config.hidden_dropout if self.config.classifier_dropout is None else self.config.classifier_dropout
        if self.config.sequence_head == "dense_norm":
            pooling = self.config.classifier_pooling if classifier_labels is not None else None
            output_head = NormedHeadClassifier(self.config, len(names), dropout, pooling)
        elif classifier_labels is not None and not self._pooled(classifier_labels):
            output_head = FirstTokenClassifier(self.config, len(names), dropout)
        else:
            output_head = LinearHead(self.config.hidden_size, len(names), dropout)
        if classifier_labels is not None:
            self.classifier = output_head
            problem_type = problem_type or ("regression" if len(names) == 1 else "single_label_classification")
        else:
            self.tagger = output_head
        self.labels, self.problem_type = names, problem_type

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        """BERT's initialisation (Devlin et al. 2019): normal(0, 0.02) weights, zero biases, LayerNorm at identity."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, (nn.Linear, nn.LayerNorm)) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)

    @property
    def has_mlm_head(self) -> bool:
        return self.lm_head is not None

    @property
    def has_nsp_head(self) -> bool:
        return self.nsp_head is not None

    @property
    def has_classifier(self) -> bool:
        return self.classifier is not None

    @property
    def has_tagger(self) -> bool:
        return self.tagger is not None

    @property
    def has_discriminator(self) -> bool:
        return self.discriminator is not None

    @property
    def output_heads(self) -> list[str]:
        """The output heads this model has, by their `output=` names: some of "mlm", "nsp", "classifier", "tagger",
        "replaced"."""
        return [output for output, module in _OUTPUT_MODULES.items() if getattr(self, module) is not None]

    def hook_names(self) -> list[str]:
        """Every hook point, in the order the forward pass reaches them."""
        return list(self._hook_names)

    def encode(self, input_ids, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        """The final hidden states: [batch, seq, hidden]. token_type_ids None: all segment A (zeros), as in
        Hugging Face and TransformerLens."""
        token_type_ids = self._check_inputs(input_ids, token_type_ids, attention_mask)
        if attention_mask is not None and bool(attention_mask.all()):
            attention_mask = None  # nothing padded: the same result, and the fused kernel is faster without a mask
        checkpoint(input_ids.shape[0])  # whoever watches this thread's runs may stop here (bert/stopping.py)
        x = self.embedding(input_ids, token_type_ids, attention_mask)
        relative = self.relative_input(input_ids.shape[1])
        for layer in self.transformer:
            x = layer(x, attention_mask) if relative is None else layer(x, attention_mask, relative)
            checkpoint()
        return self.final_hidden(x)

    def relative_input(self, seq: int) -> RelativeInput | None:
        """What DeBERTa's layers read of the relative positions for `seq` tokens (pass it as each layer's third
        argument); None in the families without relative attention."""
        return None if self.relative_positions is None else self.relative_positions(seq)

    def final_hidden(self, residual: torch.Tensor) -> torch.Tensor:
        """A residual-stream vector as the output heads read it: through the final LayerNorm in a pre-norm model
        (ModernBERT's final_norm), unchanged otherwise. The logit lens reads earlier layers through it too."""
        return residual if self.final_norm is None else self.final_norm(residual)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, logit_mask=None, output: str | None = None) -> torch.Tensor | None:
        """The logits of one output head (`output`, one of OUTPUTS): "mlm" [batch, seq, vocab] (None without a
        masked-LM head; with `logit_mask`, bool [batch, seq], only there: [selected, vocab]), "nsp" [batch, 2],
        "classifier" [batch, labels] (names in `labels`), "tagger" [batch, seq, labels], "replaced" [batch, seq].
        None: the model's own head (`own_output`), as transformers' class of the same checkpoint gives: an ELECTRA
        discriminator's replaced-token logits, a classifier's labels; "mlm" with a logit_mask."""
        output = self._resolve_output(output, logit_mask)
        if logit_mask is not None and output != "mlm":
            raise InvalidInputError("logit_mask selects masked-LM positions: it only goes with output='mlm'")
        self._require(output)  # before the forward pass
        hidden = self.encode(input_ids, token_type_ids, attention_mask)
        if output == "classifier":  # ModernBERT's mean pooling reads the mask
            return self.classifier_logits(hidden, attention_mask)
        return self.mlm_logits(hidden, logit_mask) if output == "mlm" else getattr(self, f"{output}_logits")(hidden)

    @property
    def own_output(self) -> str | None:
        """The output head `model(ids)` runs when none is named, as transformers' class of the checkpoint would: the
        masked-LM head ("mlm", with NSP beside it in BertForPreTraining), else ELECTRA's discriminator ("replaced"),
        else the task head ("classifier" or "tagger"), else the next-sentence head; None for a bare encoder."""
        return next((output for output in _OWN_OUTPUT_ORDER if getattr(self, _OUTPUT_MODULES[output]) is not None), None)

    def _resolve_output(self, output: str | None, logit_mask: torch.Tensor | None) -> str:
        if output is None:  # a logit_mask asks for the masked-LM head; a bare encoder keeps "mlm" (its logits: None)
            return "mlm" if logit_mask is not None else (self.own_output or "mlm")
        if output not in OUTPUTS:
            raise InvalidInputError(f"output must be one of {OUTPUTS}, not {output!r}")
        return output

    def mlm_logits(self, hidden: torch.Tensor, logit_mask: torch.Tensor | None = None) -> torch.Tensor | None:
        if self.lm_head is None:
            return None
        if logit_mask is not None:
            if logit_mask.shape != hidden.shape[:2] or logit_mask.dtype != torch.bool:
                raise InvalidInputError(f"logit_mask must be a bool tensor of shape {tuple(hidden.shape[:2])}")
            hidden = hidden[logit_mask]  # [selected, hidden]: the LM head runs only where asked
        return self.lm_head(hidden)

    def nsp_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[batch, 2]: is sentence B the true next sentence (index 0) or a random one (index 1)?"""
        self._require("nsp")
        return self.nsp_head(self.pooler(hidden))

    def classifier_logits(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """[batch, labels] from [CLS]'s pooled vector (sequence or pair: [CLS] A [SEP] B [SEP]); in the families
        without a pooler, from the first token's vector (FirstTokenClassifier); in ModernBERT, from the first token
        or the mean over the tokens attention_mask keeps (NormedHeadClassifier)."""
        self._require("classifier")
        if self.config.sequence_head == "dense_norm":
            return self.classifier(hidden, attention_mask)
        return self.classifier(self.pooler(hidden) if self.config.sequence_head == "pooler" else hidden)

    def replaced_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[batch, seq]: ELECTRA's replaced-token detection (Clark et al. 2020), > 0 where a token looks replaced."""
        self._require("replaced")
        return self.discriminator(hidden)

    def tagger_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[batch, seq, labels]: one prediction per token."""
        self._require("tagger")
        return self.tagger(hidden)

    def _require(self, output: str) -> None:
        """Fail before any forward pass when the output head is missing (the masked-LM head may be: forward
        returns None)."""
        if output != "mlm" and getattr(self, _OUTPUT_MODULES[output]) is None:
            raise MissingHeadError(_MISSING_OUTPUT[output])

    def run_with_cache(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        names: NameFilter = None,
        interventions: Mapping[str, Intervention] | Iterable[tuple[str, Intervention]] | None = None,
        logit_mask: torch.Tensor | None = None,
        detach: bool = True,
        output: str | None = None,
    ) -> tuple[torch.Tensor | None, ActivationCache]:
        """One forward pass that records activations and applies interventions, for this call only.

        names: hook names to keep (a list, or a predicate on the name); None keeps all, [] keeps none. A per-layer
        kind kept at every layer is written into one [layer, ...] tensor as the pass goes (`cache.stack(kind)`
        then copies nothing).
        interventions: {hook name: fn(activation, name) -> activation of the same shape}, or (name, fn) pairs.
        output: which output head to run, as in forward: "mlm" (logits, or None without an MLM head), "nsp",
        "classifier", "tagger" or "replaced"; None: the model's own (`own_output`; "mlm" with a logit_mask). Only
        the hooks that head's pass reaches are recorded.
        Returns (that head's output, an ActivationCache: {hook name: tensor}, also `cache["pattern", 3]`).
        A pass that keeps and changes none of q, k, scores and pattern takes the fused attention path.
        """
        run = HookRun(
            keep=make_filter(names, self._hook_names),
            interventions=group_interventions(interventions, self._hook_names),
            known=self._hook_names,
            detach=detach,
            num_layers=self.config.num_layers,
        )
        with active_run(run):
            result = self(input_ids, token_type_ids, attention_mask, logit_mask, output=output)
        return result, ActivationCache(run.cache, self.config.num_layers, run.stacks)

    def _check_inputs(self, input_ids, token_type_ids, attention_mask) -> torch.Tensor:
        """Checks the inputs; returns token_type_ids (zeros when None)."""
        cfg = self.config
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype != torch.long:
            raise InvalidInputError("input_ids must be a LongTensor of shape [batch, seq]")
        if input_ids.numel() == 0:
            raise InvalidInputError(f"input_ids {tuple(input_ids.shape)} is empty: the model needs at least one token")
        if input_ids.shape[1] > cfg.max_position_embeddings:
            raise InputTooLongError(input_ids.shape[1], cfg.max_position_embeddings)
        _check_ids("input_ids", input_ids, cfg.vocab_size)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if not isinstance(token_type_ids, torch.Tensor) or token_type_ids.shape != input_ids.shape or token_type_ids.dtype != torch.long:
            raise InvalidInputError(f"token_type_ids must be a LongTensor shaped like input_ids {tuple(input_ids.shape)}")
        _check_ids("token_type_ids", token_type_ids, max(cfg.type_vocab_size, 1))  # without segments: all 0
        if attention_mask is not None and attention_mask.shape != input_ids.shape:
            raise InvalidInputError(f"attention_mask must be shaped like input_ids {tuple(input_ids.shape)}")
        return token_type_ids


def _check_family_heads(config: BertConfig, nsp_head: bool, discriminator: bool) -> None:
    if nsp_head and not config.pooler:
        raise InvalidInputError(f"a {config.family} model has no pooler, so no next-sentence head")
    if discriminator and config.family != "electra":
        raise InvalidInputError("only ELECTRA has a replaced-token (discriminator) head")


def _check_ids(name: str, ids: torch.Tensor, limit: int) -> None:
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= limit:
        raise InvalidInputError(f"{name} must lie in [0, {limit}); got values from {low} to {high}")
