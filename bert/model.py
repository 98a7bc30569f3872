"""BERT, module by module, in the order BERT computes (Devlin et al. 2019, section 3): embedding, layers (attention,
then the MLP, each a residual sub-layer with its LayerNorm), output heads.

The same tree runs BERT's family, with the differences BertConfig states (bert/config.py; which family sets which:
bert/families/). What only some families have sits in modules of its own: the output heads
(bert/output_heads.py), ALBERT's shared layers (bert/shared_layers.py), DeBERTa's relative positions, which
attention adds to its scores as a bias (bert/relative_positions.py). Each sub-layer has one forward whatever
the family: a LayerNorm before it (pre-norm) or after its residual (post-LN), the identity on the other side.

Every `hook_*` attribute is a HookPoint whose name is its module path; the comment beside it gives its shape.
"""
from __future__ import annotations

from typing import Iterable, Mapping

import torch
from einops import repeat
from torch import nn

from . import attention as attn
from .activation_cache import ActivationCache
from .activations import activate
from .config import POSITION_ATTENTION, SEQUENCE_POOLING, BertConfig
from .errors import InvalidInputError, MissingHeadError
from .hooks import HookPoint, HookRun, Intervention, NameFilter, active_run, group_interventions, make_filter, name_hook_points
from .model_inputs import check_heads, check_inputs
from .norms import norm_layer
from .output_heads import (MISSING_OUTPUT, OUTPUT_MODULES, OWN_OUTPUT_ORDER, BertLMHead, BertPooler, Labels, LinearHead,
                           ReplacedTokenHead, init_weights, label_names, resolve_output, task_head)
from .relative_positions import RelativeInput, RelativePositions
from .shared_layers import shared_layers
from .stopping import checkpoint
from .token_dropout import dropped_masks


class BertEmbedding(nn.Module):
    """token + position + segment embeddings, summed, then LayerNorm and dropout; where E < H (ALBERT, small
    ELECTRAs) a linear projection to H follows. A family without segments (DistilBERT, ModernBERT) has no segment
    embedding; one with rotary positions (ModernBERT) no position table: its positions turn q and k in attention;
    DeBERTa-v3 none either: its attention reads relative positions (RelativePositions), and its padded positions'
    embeddings are zeroed (padded_rows_zero), as Hugging Face's DeBERTa does. ESM-2 and EuroBERT put no norm on their
    embeddings (embedding_norm); ESM-2 drops its mask token's embedding as in training (token_dropout,
    bert/token_dropout.py)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        width = config.embedding_width  # E
        self.pad_token_id, self.position_offset = config.pad_token_id, config.position_offset
        self.padded_rows_zero = config.padded_rows_zero  # DeBERTa: padded positions' embeddings zeroed after LayerNorm
        self.token_embedding = nn.Embedding(config.vocab_size, width)
        table = config.absolute_positions and not config.rotary
        self.position_embedding = nn.Embedding(config.position_rows, width) if table else None
        self.token_type_embedding = nn.Embedding(config.type_vocab_size, width) if config.type_vocab_size else None
        self.layer_norm = norm_layer(config, width) if config.embedding_norm else None  # ESM-2, EuroBERT: none
        self.mask_token_id = config.mask_token_id if config.token_dropout else None  # ESM: the token dropout drops
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
        if self.mask_token_id is not None:  # ESM: the mask token's embedding dropped, every one scaled as in training
            token = dropped_masks(token, input_ids, attention_mask, self.mask_token_id)
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
        normed = summed if self.layer_norm is None else self.layer_norm(summed)
        if self.projection is None:
            if self.padded_rows_zero and attention_mask is not None:
                normed = normed * attention_mask[..., None].to(normed.dtype)
            return self.dropout(self.hook_out(normed))
        return self.hook_out(self.projection(self.dropout(self.hook_norm(normed))))


class PureSelfAttentionLayer(nn.Module):
    """Multi-head scaled dot-product attention, before the output projection, on one of two paths: step by step
    (scores, pattern, weighted values) when a call records or changes the scores or the pattern; otherwise through
    PyTorch's fused scaled_dot_product_attention, which gives the same z (to float rounding) faster and, on a GPU,
    without ever holding the [query, key] matrix (bert/attention.py).

    With rotary positions (ModernBERT) q and k are turned by their positions before the scores, and hook_q and
    hook_k record them turned: the q and k whose product is the scores, as in every family. A local layer's
    queries see only the keys within `window` positions (`attention.window_band` draws it). With grouped-query
    attention (EuroBERT) fewer key and value heads are projected, each read by a group of query heads: hook_k and
    hook_v record them as each query head reads them (`attention.share_across_heads`).

    Relative positions (DeBERTa's disentangled attention, He et al. 2021, eq. 4) are an additive score bias, the
    same on both paths: the scores are q·k (content-to-content, hook_scores_c2c) plus content-to-position (each
    query against the position key of its distance to each key) plus position-to-content (each key against the
    position query of that distance), each recorded on its own and each divided by sqrt(head_dim * score_scale),
    so that their sum is hook_scores before masking. The position keys and queries are the relative-position
    embeddings through this layer's own key and query maps (share_att_key). A padded query's row is masked whole
    (DeBERTa's padded_rows_zero: softmax spreads it evenly)."""

    def __init__(self, config: BertConfig, layer: int = 0):
        super().__init__()
        self.num_heads, self.key_value_heads = config.num_heads, config.key_value_head_count
        self.query_heads_per_key = config.query_heads_per_key  # grouped-query attention: query heads per key-value head
        self.causal = config.causal  # left-to-right: no query sees the keys to its right
        self.window = config.window(layer)  # a local layer's half-width (ModernBERT: local_attention // 2); None: global
        self.rope_theta = config.rope_theta(layer) if config.rotary else None  # rotary base; None: no rotation
        self.scale = (config.head_size * config.score_scale) ** 0.5  # sqrt(head_dim), sqrt(3 head_dim) with both of DeBERTa's terms
        bias = config.attention_bias
        self.project_query = nn.Linear(config.hidden_size, config.hidden_size, bias=bias)
        key_value_width = config.key_value_head_count * config.head_size  # hidden, or less with grouped-query attention
        self.project_key = nn.Linear(config.hidden_size, key_value_width, bias=bias)
        self.project_value = nn.Linear(config.hidden_size, key_value_width, bias=bias)
        self.dropout = nn.Dropout(config.attention_dropout)
        self.hook_q = HookPoint()  # [batch, head, query, head_dim] (rotary: after the rotation)
        self.hook_k = HookPoint()  # [batch, head, key, head_dim] (rotary: after the rotation; grouped: each head's copy of its group's)
        self.hook_v = HookPoint()  # [batch, head, key, head_dim] (grouped: each head's copy of its group's)
        self.position_attention = config.position_attention if config.relative_attention else ()  # DeBERTa's position terms
        self.padded_queries = config.padded_rows_zero  # DeBERTa: a padded query's row is all masked
        # c2c, then the position terms in POSITION_ATTENTION's order (c2p, p2c): the hooks' order and the sum's
        self.score_terms = ("c2c", *(t for t in POSITION_ATTENTION if t in self.position_attention)) if config.relative_attention else ()
        for term in self.score_terms:  # [batch, head, query, key] each term of the scores, scaled
            setattr(self, f"hook_scores_{term}", HookPoint())
        self.hook_scores = HookPoint()  # [batch, head, query, key] scaled; padded keys (if causal, later ones; local: those outside the window) at the dtype's minimum
        self.hook_pattern = HookPoint()  # [batch, head, query, key] softmax of the scores; rows sum to 1
        self.hook_z = HookPoint()  # [batch, head, query, head_dim] each head's output (weighted values)

    def extra_repr(self) -> str:
        parts = [f"window=±{self.window}" if self.window is not None else "global"]
        return ", ".join(parts + ([f"rotary theta={self.rope_theta:g}"] if self.rope_theta is not None else []))

    def position_terms(self, q: torch.Tensor, k: torch.Tensor, relative: RelativeInput | None) -> list[torch.Tensor]:
        """What relative positions add to q·k, term by term, each through its hook (DeBERTa: c2p, p2c; each
        [batch, head, query, key]); none without relative attention. Their sum is the score bias."""
        if not self.position_attention:
            return []
        if relative is None:
            raise InvalidInputError("a relative-attention layer needs the relative positions: Bert.relative_input(seq)")
        positions = relative.embeddings[None]  # [1, 2 * span, hidden]
        terms = []
        for term in self.score_terms[1:]:
            if term == "c2p":
                position_keys = attn.split_heads(self.project_key(positions), self.num_heads)[0]  # [head, 2 * span, head_dim]
                terms.append(self.hook_scores_c2p(attn.content_to_position(q, position_keys, relative.index, self.scale)))
            else:
                position_queries = attn.split_heads(self.project_query(positions), self.num_heads)[0]  # [head, 2 * span, head_dim]
                terms.append(self.hook_scores_p2c(attn.position_to_content(k, position_queries, relative.index, self.scale)))
        return terms

    def _watched(self) -> bool:
        """Whether this call records or changes the scores, the pattern or a term of the scores."""
        hooks = [self.hook_scores, self.hook_pattern] + [getattr(self, f"hook_scores_{term}") for term in self.score_terms]
        return any(hook.is_watched() for hook in hooks)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None, relative: RelativeInput | None = None) -> torch.Tensor:
        q = attn.split_heads(self.project_query(x), self.num_heads)
        k = attn.split_heads(self.project_key(x), self.key_value_heads)
        if self.rope_theta is not None:  # turn q and k by their positions (Su et al. 2021)
            cos, sin = attn.rotary_angles(x.shape[1], q.shape[-1], self.rope_theta, x.device)
            q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)
        q, k = self.hook_q(q), self.hook_k(attn.share_across_heads(k, self.query_heads_per_key))
        v = self.hook_v(attn.share_across_heads(attn.split_heads(self.project_value(x), self.key_value_heads), self.query_heads_per_key))
        terms = self.position_terms(q, k, relative)
        if self._watched():  # recorded: the scores and the pattern as tensors a hook can see
            shape = (*q.shape[:-1], k.shape[-2])  # [batch, head, query, key]; each written where it is recorded (HookPoint.slot)
            content = attn.attention_scores(q, k, self.scale, out=None if self.score_terms else self.hook_scores.slot(shape, q, k))
            scores = sum(terms, content if not self.score_terms else self.hook_scores_c2c(content))
            scores = self.hook_scores(attn.mask_scores(scores, attention_mask, self.causal, self.window, self.padded_queries))
            pattern = self.hook_pattern(torch.softmax(scores, dim=-1, out=self.hook_pattern.slot(shape, scores)))
            z = attn.weighted_values(self.dropout(pattern), v, out=self.hook_z.slot(q.shape[:-1] + v.shape[-1:], pattern, v))
        else:  # fused: nobody looks at the scores or the pattern, the same z from one kernel (the terms as a bias)
            z = attn.fused_attention(q, k, v, attention_mask, dropout=self.dropout.p if self.training else 0.0, causal=self.causal,
                                     window=self.window, bias=sum(terms[1:], terms[0]) if terms else None, scale=1 / self.scale,
                                     padded_queries=self.padded_queries)
        return attn.merge_heads(self.hook_z(z))  # [batch, seq, hidden]


class ResidualSubLayer(nn.Module):
    """What both sub-layers share: a residual around them and a LayerNorm either after the sum (BERT's post-LN)
    or on the sub-layer's input (pre-norm: ModernBERT), the identity on the other side. One forward for both:
    result = sublayer(norm_input(x)); out = add_residual(x, result)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.pre_norm = config.pre_norm

    def norm_input(self, x: torch.Tensor) -> torch.Tensor:
        """Pre-norm: the LayerNorm'd input (hook_in); post-LN, or a pre-norm sub-layer without a norm: x itself."""
        return self.hook_in(self.layer_norm(x)) if self.pre_norm and self.layer_norm is not None else x

    def add_residual(self, x: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
        """x + dropout(result), then LayerNorm in a post-LN layer."""
        summed = x + self.dropout(result)
        return summed if self.pre_norm else self.layer_norm(summed)


class SelfAttentionLayer(ResidualSubLayer):
    """Attention, output projection, dropout, then residual + LayerNorm (post-LN, as in BERT). Pre-norm
    (ModernBERT, ESM-2): LayerNorm on the input, then attention, projection, dropout, residual; layer 0 has no
    LayerNorm here where its input is the normed embeddings (ModernBERT; ESM-2's embeddings are not normed)."""

    def __init__(self, config: BertConfig, layer: int = 0):
        super().__init__(config)
        has_norm = not (config.pre_norm and layer == 0 and config.embedding_norm)  # the embeddings are normed already
        norm = norm_layer(config) if has_norm else None
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
        result = self.hook_result(self.mlp(self.attention(self.norm_input(x), attention_mask, relative)))
        return self.hook_out(self.add_residual(x, result))


class NormedResidualLayer(ResidualSubLayer):
    """The MLP block: hidden -> intermediate, the MLP's activation (config.activation: GELU in BERT), -> hidden,
    dropout, residual + LayerNorm. Pre-norm (ModernBERT): LayerNorm on the input, the MLP, dropout, residual.
    Gated (ModernBERT's GeGLU, Shazeer 2020): a second map of the normed input, the gate, multiplies the
    activation (Hugging Face's Wi holds mlp1 and gate)."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.activation = config.activation
        norm = norm_layer(config)
        if config.pre_norm:  # registered in the order of computing
            self.layer_norm = norm
        self.mlp1 = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.input_maps_bias)
        self.gate = nn.Linear(config.hidden_size, config.intermediate_size, bias=config.input_maps_bias) if config.gated_mlp else None
        self.mlp2 = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.mlp_bias)
        if not config.pre_norm:
            self.layer_norm = norm
        self.dropout = nn.Dropout(config.hidden_dropout)
        if config.pre_norm:
            self.hook_in = HookPoint()  # [batch, seq, hidden] the LayerNorm'd input that the MLP reads
        self.hook_pre = HookPoint()  # [batch, seq, intermediate] before the activation
        if self.gate is not None:
            self.hook_gate = HookPoint()  # [batch, seq, intermediate] the gate, multiplied with activation(pre)
        self.hook_post = HookPoint()  # [batch, seq, intermediate] after the activation (gated: times the gate): the neuron activations
        self.hook_result = HookPoint()  # [batch, seq, hidden] what the MLP adds to the residual stream

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = self.norm_input(x)
        pre = self.hook_pre(self.mlp1(normed))
        # the neurons written where hook_post records them, where it does (HookPoint.slot): gated, by the product
        post = activate(pre, self.activation, out=self.hook_post.slot(pre.shape, pre) if self.gate is None else None)
        if self.gate is not None:
            gate = self.hook_gate(self.gate(normed))
            post = torch.mul(post, gate, out=self.hook_post.slot(pre.shape, post, gate))
        return self.add_residual(x, self.hook_result(self.mlp2(self.hook_post(post))))


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig, layer: int = 0):
        super().__init__()
        self.attention = SelfAttentionLayer(config, layer)
        self.residual = NormedResidualLayer(config)
        self.hook_out = HookPoint()  # [batch, seq, hidden] the layer's output, input of the next layer

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None, relative: RelativeInput | None = None) -> torch.Tensor:
        return self.hook_out(self.residual(self.attention(x, attention_mask, relative)))


def layer_stack(config: BertConfig) -> nn.Module:
    """The encoder's layers: BERT's ModuleList, or ALBERT's shared ones (bert/shared_layers.py)."""
    if config.shared_layers:
        return shared_layers(config, lambda: BertLayer(config))
    return nn.ModuleList(BertLayer(config, i) for i in range(config.num_layers))


class FinalNorm(nn.Module):
    """The LayerNorm after the last layer of a pre-norm model (ModernBERT's final_norm): its output is what the
    output heads read (transformers' last hidden state)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer_norm = norm_layer(config)
        self.hook_out = HookPoint()  # [batch, seq, hidden]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hook_out(self.layer_norm(x))


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
        check_heads(config, nsp_head, discriminator)
        self.embedding = BertEmbedding(config)
        self.relative_positions = RelativePositions(config) if config.relative_attention else None
        self.transformer = layer_stack(config)
        self.final_norm = FinalNorm(config) if config.pre_norm else None  # what the output heads read (pre-norm)
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
        self.apply(init_weights)  # costs nothing on the meta device, where the loader builds (bert/checkpoint.py)

    def _pooled(self, classifier_labels: Labels) -> bool:
        """Whether a sequence classifier with these labels reads the pooler (BERT, ALBERT)."""
        return classifier_labels is not None and self.config.sequence_head == "pooler"

    def add_output_heads(
        self, mlm_head: bool = False, nsp_head: bool = False, classifier_labels: Labels = None,
        tagger_labels: Labels = None, problem_type: str | None = None, discriminator: bool = False,
    ) -> "Bert":
        """Give a loaded encoder fresh, randomly initialised heads, to pre-train or fine-tune them
        (the pooler comes with NSP and with the classifier, kept if the checkpoint had one)."""
        check_heads(self.config, nsp_head, discriminator)
        if discriminator and self.discriminator is None:
            self.discriminator = ReplacedTokenHead(self.config).apply(init_weights)
        if mlm_head and self.lm_head is None:
            self.lm_head = BertLMHead(self.config, self.embedding.token_embedding).initialised()
        if (nsp_head or self._pooled(classifier_labels)) and self.pooler is None:
            self.pooler = BertPooler(self.config).apply(init_weights)
        if nsp_head and self.nsp_head is None:
            self.nsp_head = LinearHead(self.config.hidden_size, 2).apply(init_weights)
        if classifier_labels is not None or tagger_labels is not None:
            if self.classifier is not None or self.tagger is not None:
                raise InvalidInputError("this model already has a task head (classifier or tagger)")
            self._add_task_head(classifier_labels, tagger_labels, problem_type)
            (self.classifier or self.tagger).apply(init_weights)
        self._hook_names = name_hook_points(self)
        return self

    def _add_task_head(self, classifier_labels: Labels, tagger_labels: Labels, problem_type: str | None) -> None:
        labels = classifier_labels if classifier_labels is not None else tagger_labels
        if labels is None:
            return
        names = label_names(labels)
        dropout = self.config.hidden_dropout if self.config.classifier_dropout is None else self.config.classifier_dropout
        output_head = task_head(self.config, len(names), dropout, sequence=classifier_labels is not None)
        if classifier_labels is not None:
            self.classifier = output_head
            problem_type = problem_type or ("regression" if len(names) == 1 else "single_label_classification")
        else:
            self.tagger = output_head
        self.labels, self.problem_type = names, problem_type

    # whether the model has each output head (a module, or None)
    has_mlm_head = property(lambda self: self.lm_head is not None)
    has_nsp_head = property(lambda self: self.nsp_head is not None)
    has_classifier = property(lambda self: self.classifier is not None)
    has_tagger = property(lambda self: self.tagger is not None)
    has_discriminator = property(lambda self: self.discriminator is not None)

    @property
    def output_heads(self) -> list[str]:
        """The output heads this model has, by their `output=` names: some of "mlm", "nsp", "classifier", "tagger",
        "replaced"."""
        return [output for output, module in OUTPUT_MODULES.items() if getattr(self, module) is not None]

    def hook_names(self) -> list[str]:
        """Every hook point, in the order the forward pass reaches them."""
        return list(self._hook_names)

    def encode(self, input_ids, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        """The final hidden states: [batch, seq, hidden]. token_type_ids None: all segment A (zeros), as in
        Hugging Face and TransformerLens."""
        token_type_ids = check_inputs(self.config, input_ids, token_type_ids, attention_mask)
        if attention_mask is not None and bool(attention_mask.all()):
            attention_mask = None  # nothing padded: the same result, and the fused kernel is faster without a mask
        checkpoint(input_ids.shape[0])  # whoever watches this thread's runs may stop here (bert/stopping.py)
        x = self.embedding(input_ids, token_type_ids, attention_mask)
        relative = self.relative_input(input_ids.shape[1])
        for layer in self.transformer:
            x = layer(x, attention_mask, relative)
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
        output = resolve_output(output, self.own_output, logit_mask)
        self._require(output)  # before the forward pass
        hidden = self.encode(input_ids, token_type_ids, attention_mask)
        if output == "classifier":  # ModernBERT's and EuroBERT's pooling reads the mask
            return self.classifier_logits(hidden, attention_mask)
        return self.mlm_logits(hidden, logit_mask) if output == "mlm" else getattr(self, f"{output}_logits")(hidden)

    @property
    def own_output(self) -> str | None:
        """The output head `model(ids)` runs when none is named, as transformers' class of the checkpoint would: the
        masked-LM head ("mlm", with NSP beside it in BertForPreTraining), else ELECTRA's discriminator ("replaced"),
        else the task head ("classifier" or "tagger"), else the next-sentence head; None for a bare encoder."""
        return next((output for output in OWN_OUTPUT_ORDER if getattr(self, OUTPUT_MODULES[output]) is not None), None)

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
        without a pooler, from the first token's vector (FirstTokenClassifier); in ModernBERT and EuroBERT, from the
        first token or the mean over the tokens attention_mask keeps (NormedHeadClassifier, PooledDenseClassifier)."""
        self._require("classifier")
        if self.config.sequence_head in SEQUENCE_POOLING:
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
        if output != "mlm" and getattr(self, OUTPUT_MODULES[output]) is None:
            raise MissingHeadError(MISSING_OUTPUT[output])

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
