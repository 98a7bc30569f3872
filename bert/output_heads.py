"""The output heads: what reads the encoder's last hidden states and gives logits (Devlin et al. 2019, figure 4),
and the other families' variants of them. One name per output head (`output=` in Bert.forward, `{name}_logits`):

    "mlm"         BertLMHead: dense, the head's activation, LayerNorm, the tied unembedding ([batch, seq, vocab])
    "nsp"         LinearHead over BertPooler: is sentence B the next one (ALBERT: are A and B in order) ([batch, 2])
    "classifier"  a sequence classifier ([batch, labels]): LinearHead over the pooler (BERT, ALBERT),
                  FirstTokenClassifier (RoBERTa, DistilBERT, ELECTRA, DeBERTa), NormedHeadClassifier (ModernBERT),
                  PooledDenseClassifier (EuroBERT)
    "tagger"      a token classifier ([batch, seq, labels]): LinearHead, or NormedHeadClassifier (ModernBERT)
    "replaced"    ReplacedTokenHead: ELECTRA's discriminator, one logit per token (Clark et al. 2020) ([batch, seq])

Every head's last output is a HookPoint (`hook_logits`); its shape is in the comment beside it.
"""
from __future__ import annotations

from typing import Sequence, Union

import torch
import torch.nn.functional as F
from torch import nn

from .activations import activate
from .config import BertConfig
from .errors import InvalidInputError
from .hooks import HookPoint
from .norms import norm_layer


class BertLMHead(nn.Module):
    """dense (H -> E), activation, LayerNorm, then the unembedding (E -> vocab), whose weight is the token
    embedding (tied). RoBERTa's lm_head, DistilBERT's vocab_* layers, ALBERT's predictions, ELECTRA's
    generator head and ModernBERT's head + decoder are this module. EuroBERT's lm_head is the unembedding alone
    (config.lm_transform False: no dense, activation or norm), with a weight of its own (tied_unembedding False)."""

    def __init__(self, config: BertConfig, token_embedding: nn.Embedding):
        super().__init__()
        self.activation = config.lm_activation
        transform = config.lm_transform
        self.mlp = nn.Linear(config.hidden_size, config.embedding_width, bias=config.head_bias) if transform else None
        self.layer_norm = norm_layer(config, config.embedding_width) if transform else None
        self.unembedding = nn.Linear(config.embedding_width, config.vocab_size, bias=config.decoder_bias)
        self.tied = config.tied_unembedding
        if self.tied:
            self.unembedding.weight = token_embedding.weight  # tied: one tensor, two uses
        self.hook_transform = HookPoint()  # [*positions, E] after dense, activation, LayerNorm (without them: the hidden states)
        self.hook_logits = HookPoint()  # [*positions, vocab]

    def initialised(self) -> "BertLMHead":
        """With BERT's fresh initialisation (init_weights), the unembedding left as it is where it is the token
        embedding (an untied one initialised too)."""
        for module in (self.mlp, self.layer_norm):
            if module is not None:
                module.apply(init_weights)
        if not self.tied:
            nn.init.normal_(self.unembedding.weight, std=0.02)
        if self.unembedding.bias is not None:
            nn.init.zeros_(self.unembedding.bias)
        return self

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.hook_logits(self.unembedding(self.hook_transform(self.transform(hidden))))

    def transform(self, hidden: torch.Tensor) -> torch.Tensor:
        """dense, activation, LayerNorm: [*positions, E], what the unembedding reads (without them: `hidden`)."""
        if self.mlp is None:
            return hidden
        return self.layer_norm(activate(self.mlp(hidden), self.activation))

    def token_logits(self, hidden: torch.Tensor, tokens: list[int]) -> torch.Tensor:
        """[*positions, len(tokens)]: the logits of these tokens only (a metric that reads two of the vocabulary's
        logits skips the unembedding's other rows); no hooks."""
        bias = self.unembedding.bias
        return F.linear(self.transform(hidden), self.unembedding.weight[tokens], None if bias is None else bias[tokens])


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
        self.layer_norm = norm_layer(config)
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


class PooledDenseClassifier(nn.Module):
    """EuroBERT's sequence classifier (Hugging Face's EuroBertForSequenceClassification): dense, GELU, then to the
    labels, over the first token's vector ("cls", its "bos") or the mean over the real tokens ("mean"); or
    ("late") over every token, the labels' logits then averaged over the real tokens (`pooling`: the config's
    classifier_pooling)."""

    def __init__(self, config: BertConfig, num_labels: int, dropout: float):
        super().__init__()
        self.pooling = config.classifier_pooling
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.out_proj = nn.Linear(config.hidden_size, num_labels)
        self.dropout = nn.Dropout(dropout)
        self.hook_logits = HookPoint()  # [batch, labels]

    def extra_repr(self) -> str:
        return f"pooling={self.pooling}"

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        weights = torch.ones(hidden.shape[:2], device=hidden.device) if attention_mask is None else attention_mask.to(hidden.dtype)
        weights = (weights / weights.sum(dim=1, keepdim=True))[..., None]  # [batch, seq, 1] each real token's share
        if self.pooling == "cls":
            hidden = hidden[:, 0]
        elif self.pooling == "mean":  # [batch, seq, hidden] -> [batch, hidden]
            hidden = (hidden * weights).sum(dim=1)
        logits = self.out_proj(self.dropout(F.gelu(self.dense(self.dropout(hidden)))))
        return self.hook_logits((logits * weights).sum(dim=1) if self.pooling == "late" else logits)


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
OUTPUT_MODULES = {"mlm": "lm_head", "nsp": "nsp_head", "classifier": "classifier", "tagger": "tagger", "replaced": "discriminator"}
OUTPUTS = tuple(OUTPUT_MODULES)
OWN_OUTPUT_ORDER = ("mlm", "replaced", "classifier", "tagger", "nsp")  # which head `model(ids)` runs (Bert.own_output)
MISSING_OUTPUT = {
    "classifier": "this model has no sequence classifier: load a BertForSequenceClassification checkpoint, or fine-tune one (python -m bert finetune)",
    "tagger": "this model has no token classifier: load a BertForTokenClassification checkpoint, or fine-tune one (python -m bert finetune --task tokens)",
    "nsp": "this model has no next-sentence (NSP) head: load one that has (a BertForPreTraining or BertForNextSentencePrediction checkpoint)",
    "replaced": "this model has no replaced-token head: load an ELECTRA discriminator (ElectraForPreTraining)",
}


def resolve_output(output: str | None, own_output: str | None, logit_mask: torch.Tensor | None) -> str:
    """The output head a call runs: `output`, checked; None: the model's own (`own_output`), or "mlm" with a
    logit_mask (a bare encoder keeps "mlm": its logits are None)."""
    if output is None:
        output = "mlm" if logit_mask is not None else (own_output or "mlm")
    if output not in OUTPUTS:
        raise InvalidInputError(f"output must be one of {OUTPUTS}, not {output!r}")
    if logit_mask is not None and output != "mlm":
        raise InvalidInputError("logit_mask selects masked-LM positions: it only goes with output='mlm'")
    return output


def label_names(labels: int | Sequence[str]) -> list[str]:
    """A task head's label names: LABEL_0, LABEL_1, ... for a number of labels, else the names given."""
    names = [f"LABEL_{i}" for i in range(labels)] if isinstance(labels, int) else [str(name) for name in labels]
    if not names:
        raise InvalidInputError("a task head needs at least one label")
    return names


def task_head(config: BertConfig, num_labels: int, dropout: float, sequence: bool) -> nn.Module:
    """A fresh classifier (`sequence`: one prediction per input) or tagger (one per token), as the family's
    config.sequence_head says it reads the encoder."""
    if config.sequence_head == "dense_norm":
        return NormedHeadClassifier(config, num_labels, dropout, config.classifier_pooling if sequence else None)
    if sequence and config.sequence_head == "pooled_gelu":
        return PooledDenseClassifier(config, num_labels, dropout)
    if sequence and config.sequence_head != "pooler":
        return FirstTokenClassifier(config, num_labels, dropout)
    return LinearHead(config.hidden_size, num_labels, dropout)


def init_weights(module: nn.Module) -> None:
    """BERT's initialisation (Devlin et al. 2019): normal(0, 0.02) weights, zero biases, LayerNorm at identity."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, (nn.Linear, nn.LayerNorm)) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, (nn.LayerNorm, nn.RMSNorm)):
        nn.init.ones_(module.weight)
