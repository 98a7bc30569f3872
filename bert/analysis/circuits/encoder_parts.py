"""The one place where the circuit analyses read a model's parameters and recompute its sub-layers.

An edge needs what the model's forward pass does not give: a head whose query, key and value read three different
inputs, and an MLP or the output reading a residual stream of its own. So the circuit run (graph_run.py) rebuilds
each layer from the pieces below, which are the model's own modules and weights: `EncoderParts.of(model)` is all it
knows of bert/model.py's module tree. Shapes: batch (rows), head, seq (positions), hidden.

Families: BERT's post-LN layers (BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA) and ModernBERT's pre-norm ones
(rotary positions, local windows, gated MLP). DeBERTa's disentangled attention is refused (its position terms
would need position nodes of their own).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ... import attention as attn
from ...errors import InvalidInputError
from ...activations import activate
from ...model import Bert


def per_head_product(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """[batch, head, seq, in] times each head's [head, in, out] -> [batch, head, seq, out], as one batched product
    over the heads (a broadcast over the batch would copy the weights once per row)."""
    batch, heads, seq, width = x.shape
    flat = x.transpose(0, 1).reshape(heads, batch * seq, width)  # [head, batch * seq, in]
    return torch.bmm(flat, weight).reshape(heads, batch, seq, -1).transpose(0, 1)


@dataclass(frozen=True)
class LayerParts:
    """One layer's attention (per head) and MLP, and the LayerNorms around them."""

    module: torch.nn.Module  # the layer (BertLayer; ALBERT: the shared layer at this depth)
    query: torch.Tensor  # [head, head_dim, hidden] each head's slice of the query map
    key: torch.Tensor
    value: torch.Tensor
    query_bias: torch.Tensor | None  # [head, 1, head_dim]
    key_bias: torch.Tensor | None
    value_bias: torch.Tensor | None
    output: torch.Tensor  # [head, head_dim, hidden] each head's slice of the output projection
    output_bias: torch.Tensor | None  # [hidden], added once per layer (not a head's)
    window: int | None  # ModernBERT's local layers: ±window positions
    rope_theta: float | None  # rotary base; None: no rotation
    causal: bool

    def head_outputs(self, query_in: torch.Tensor, key_in: torch.Tensor, value_in: torch.Tensor,
                     attention_mask: torch.Tensor | None) -> torch.Tensor:
        """What each head writes to the residual stream (z times its slice of the output projection, without the
        projection's bias): [batch, head, seq, hidden], from inputs [batch, head or 1, seq, hidden] each."""
        return per_head_product(self.weighted_values(query_in, key_in, value_in, attention_mask), self.output)

    def weighted_values(self, query_in: torch.Tensor, key_in: torch.Tensor, value_in: torch.Tensor,
                        attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Each head's attention-weighted values z, before the output projection: [batch, head, seq, head_dim],
        from inputs [batch, head or 1, seq, hidden] each (a batch of 1 is shared by every row of the others)."""
        return self.values_through(self.pattern(query_in, key_in, attention_mask), value_in)

    def pattern(self, query_in: torch.Tensor, key_in: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Each head's attention pattern [batch, head, query, key] from the inputs of its queries and keys
        ([batch, head or 1, seq, hidden] each)."""
        q, k = self._project(query_in, self.query, self.query_bias), self._project(key_in, self.key, self.key_bias)
        if self.rope_theta is not None:
            cos, sin = attn.rotary_angles(q.shape[2], q.shape[-1], self.rope_theta, q.device)
            q, k = attn.rotate(q, cos, sin), attn.rotate(k, cos, sin)
        return attn.masked_scores(q, k, attention_mask, self.causal, self.window).softmax(dim=-1)

    def values_through(self, pattern: torch.Tensor, value_in: torch.Tensor) -> torch.Tensor:
        """z [batch, head, seq, head_dim]: the values of `value_in` ([batch, head or 1, seq, hidden]) weighted by a
        given pattern [batch, head, query, key] (a frozen one, in the replacement model of bert/analysis/tracing/)."""
        return attn.weighted_values(pattern, self._project(value_in, self.value, self.value_bias))

    def head(self, head: int) -> "LayerParts":
        """The same layer with one head only (its maps, biases and slice of the output projection)."""
        def one(tensor: torch.Tensor | None) -> torch.Tensor | None:
            return None if tensor is None else tensor[head:head + 1]

        return replace(self, query=one(self.query), key=one(self.key), value=one(self.value), query_bias=one(self.query_bias),
                       key_bias=one(self.key_bias), value_bias=one(self.value_bias), output=one(self.output))

    def attention_total(self, read: torch.Tensor, attention_mask: torch.Tensor | None,
                        position: int | None = None) -> torch.Tensor:
        """What the attention sub-layer adds to the residual stream when every head reads `read` ([batch, seq,
        hidden]): the heads' outputs summed, with the projection's bias; [batch, seq, hidden], or [batch, 1, hidden]
        at `position` only (every key is still read)."""
        z = self.weighted_values(read[:, None], read[:, None], read[:, None], attention_mask)  # [batch, head, seq, head_dim]
        if position is not None:
            z = z[:, :, position:position + 1]
        total = attn.merge_heads(z) @ self.output.flatten(0, 1)  # [batch, seq, hidden]
        return total if self.output_bias is None else total + self.output_bias

    @staticmethod
    def _project(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """[batch, head or 1, seq, hidden] -> [batch, head, seq, head_dim]: each head's map of its own input (one
        matrix product for every head when they share it)."""
        if x.shape[1] == 1:
            flat = torch.nn.functional.linear(x[:, 0], weight.flatten(0, 1), None if bias is None else bias.flatten())
            return attn.split_heads(flat, weight.shape[0])
        projected = per_head_product(x, weight.transpose(-1, -2))
        return projected if bias is None else projected + bias

    def attention_norm(self, x: torch.Tensor) -> torch.Tensor:
        """The LayerNorm after attention (post-LN) or before it (pre-norm; none in ModernBERT's layer 0)."""
        norm = self.module.attention.layer_norm
        return x if norm is None else norm(x)

    def mlp_norm(self, x: torch.Tensor) -> torch.Tensor:
        """The LayerNorm after the MLP (post-LN) or before it (pre-norm)."""
        return self.module.residual.layer_norm(x)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        """What the MLP writes to the residual stream (with its output bias): [..., hidden]."""
        block = self.module.residual
        post = activate(block.mlp1(x), block.activation)
        if block.gate is not None:
            post = post * block.gate(x)
        return block.mlp2(post)


@dataclass(frozen=True)
class EncoderParts:
    model: Bert
    layers: list[LayerParts]
    pre_norm: bool  # ModernBERT: the residual stream is a sum, each reader norms it; False: BERT's post-LN

    @staticmethod
    def check(model: Bert) -> None:
        """Raise InvalidInputError saying why this model's circuits cannot be read (from its config and heads only:
        no weight is read)."""
        if model.config.relative_attention:
            raise InvalidInputError("circuits do not read DeBERTa's disentangled attention yet (its relative-position "
                                    "terms are inputs of every head that no node sends): choose another model")
        if not model.has_mlm_head:
            raise InvalidInputError("circuits score the masked word: load a model with a masked-LM head")

    @classmethod
    def of(cls, model: Bert) -> "EncoderParts":
        config = model.config
        cls.check(model)
        layers = [_layer_parts(getattr(application, "layer", application), depth, model)
                  for depth, application in enumerate(model.transformer)]
        return cls(model, layers, config.pre_norm)

    @property
    def num_heads(self) -> int:
        return self.model.config.num_heads

    def embed(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """The embeddings' output, what enters layer 0: [batch, seq, hidden]."""
        return self.model.embedding(input_ids, token_type_ids, attention_mask)

    def layer(self, layer: int, x: torch.Tensor, attention_mask: torch.Tensor | None = None,
              position: int | None = None) -> torch.Tensor:
        """One whole layer on the residual stream x [batch, seq, hidden], every head and the MLP reading the model's
        own stream (as run_graph computes a layer no patched edge reaches): [batch, seq, hidden], or [batch, 1,
        hidden] at `position` only (what the output reads from the last layer)."""
        parts = self.layers[layer]
        total = parts.attention_total(parts.attention_norm(x) if self.pre_norm else x, attention_mask, position)
        if position is not None:
            x = x[:, position:position + 1]
        return self.mlp_sublayer(layer, self.attention_sublayer(layer, x, total))

    def stream_after(self, sublayer: int, summed: torch.Tensor) -> torch.Tensor:
        """The residual stream after sub-layer `sublayer` (attention of layer l: 2l, its MLP: 2l + 1) from the
        stream before it plus what it adds: through the LayerNorm after it (post-LN), the sum itself (pre-norm)."""
        if self.pre_norm:
            return summed
        layer, is_mlp = divmod(sublayer, 2)
        return self.layers[layer].mlp_norm(summed) if is_mlp else self.layers[layer].attention_norm(summed)

    def attention_sublayer(self, layer: int, x: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
        """The stream after the attention sub-layer that adds `total` to x."""
        return x + total if self.pre_norm else self.layers[layer].attention_norm(x + total)

    def mlp_sublayer(self, layer: int, x: torch.Tensor, mlp_in: torch.Tensor | None = None) -> torch.Tensor:
        """The stream after the MLP sub-layer, the MLP reading `mlp_in` (a stream of its own; None: x)."""
        parts = self.layers[layer]
        own = x if mlp_in is None else mlp_in
        mlp = parts.mlp(parts.mlp_norm(own) if self.pre_norm else own)
        return x + mlp if self.pre_norm else parts.mlp_norm(x + mlp)

    def final(self, x: torch.Tensor) -> torch.Tensor:
        """The residual stream as the output head reads it (through ModernBERT's final LayerNorm)."""
        return self.model.final_hidden(x)

    def logits(self, hidden: torch.Tensor, tokens: list[int] | None = None) -> torch.Tensor:
        """The masked-LM head: [rows, hidden] -> [rows, vocab], or [rows, len(tokens)] for those tokens only."""
        return self.model.lm_head(hidden) if tokens is None else self.model.lm_head.token_logits(hidden, tokens)


def _layer_parts(layer, depth: int, model: Bert) -> LayerParts:
    config, heads = model.config, model.config.num_heads
    attention = layer.attention.attention

    def per_head(linear) -> tuple[torch.Tensor, torch.Tensor | None]:
        """[head, head_dim, hidden] and [head, 1, head_dim]: with grouped-query attention each query head gets its
        key-value head's map (attn.share_across_heads)."""
        weight = linear.weight.unflatten(0, (-1, config.head_size))  # [head or key-value head, head_dim, hidden]
        bias = None if linear.bias is None else linear.bias.unflatten(0, (-1, 1, config.head_size))
        shared = heads // weight.shape[0]
        return attn.share_across_heads(weight[None], shared)[0], None if bias is None else attn.share_across_heads(bias[None], shared)[0]

    (query, query_bias), (key, key_bias), (value, value_bias) = (per_head(attention.project_query), per_head(attention.project_key),
                                                                 per_head(attention.project_value))
    projection = layer.attention.mlp  # the output projection: [hidden, head * head_dim]
    output = projection.weight.unflatten(1, (heads, -1)).permute(1, 2, 0)  # [head, head_dim, hidden]
    return LayerParts(layer, query, key, value, query_bias, key_bias, value_bias, output, projection.bias,
                      config.window(depth), config.rope_theta(depth) if config.rotary else None, config.causal)

