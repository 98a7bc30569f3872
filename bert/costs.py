"""What a computation costs, known before it starts: forward passes of the model, each over `tokens` tokens.

Every heavy analysis has a pure `*_cost` function beside it (bert/analysis/attribution, bert/analysis/causal,
bert/analysis/corpus, bert/analysis/features) that returns a Cost from the input's length and the settings; the
tests count the passes the analysis actually makes and compare. One forward pass is one input row through the
model, whatever the batch it rides in (a batch of 32 rows is 32 passes). A backward pass (the gradient methods)
costs about two forward passes (Kaplan et al. 2020, section 2.1: 2N FLOPs per token forward, 4N backward), so
`equivalent_passes` counts it as two.

Memory is priced beside the passes: `kept_bytes`, what the result keeps once the computation ends (a server caches
it: the probes' word vectors of every layer), and `peak_bytes`, the most it holds while it runs (0: not counted,
a pass's own activations).

The work of a pass grows with its tokens (the MLPs and projections, linearly; attention scores, quadratically,
a small share up to 512 tokens in BERT-base) and with the model's width and depth: `work` is in BERT-base token
passes, so one budget serves a small model and BERT-base alike.
"""
from __future__ import annotations

from dataclasses import dataclass

from .config import BertConfig

BACKWARD_PASS = 2  # forward-pass equivalents of one backward pass
BERT_BASE_LAYER_WEIGHTS = 12 * 12 * 768 * 768  # layers x the 12 hidden x hidden matrices' worth of one layer


@dataclass(frozen=True)
class Cost:
    forward_passes: int  # input rows run forward through the model
    tokens: int  # tokens in each row
    lower: tuple[str, ...] = ()  # the settings that make it cheaper, in the words a page uses ("integration steps")
    backward_passes: int = 0  # rows whose gradient is also taken (one backward pass each)
    kept_bytes: int = 0  # memory the result keeps after the computation (e.g. every layer's word vectors)
    peak_bytes: int = 0  # memory it holds at most while it runs, the kept part included (0: not counted)

    @property
    def equivalent_passes(self) -> int:
        """Forward-pass equivalents: a backward pass counts as BACKWARD_PASS forward passes."""
        return self.forward_passes + BACKWARD_PASS * self.backward_passes

    def work(self, config: BertConfig | None = None) -> float:
        """BERT-base token passes: equivalent passes x tokens x the model's size relative to BERT-base's layers
        (1 without a config)."""
        return self.equivalent_passes * self.tokens * (1.0 if config is None else relative_size(config))

    def __add__(self, other: "Cost") -> "Cost":
        """Both computations, one after the other (over the longer input of the two, when they differ): their
        kept memory adds up, and the second one's peak comes on top of what the first one keeps."""
        lower = self.lower + tuple(setting for setting in other.lower if setting not in self.lower)
        return Cost(self.forward_passes + other.forward_passes, max(self.tokens, other.tokens), lower,
                    self.backward_passes + other.backward_passes, self.kept_bytes + other.kept_bytes,
                    max(self.peak_bytes, self.kept_bytes + other.peak_bytes))

    def describe(self) -> str:
        """"4,088 forward passes of 511 tokens (and 32 backward passes)", with ", keeping 1,774 MB" when it keeps
        memory."""
        text = f"{self.forward_passes:,} forward pass{'' if self.forward_passes == 1 else 'es'} of {self.tokens:,} tokens"
        if self.backward_passes:
            text += f" (and {self.backward_passes:,} backward pass{'' if self.backward_passes == 1 else 'es'})"
        if self.kept_bytes:
            text += f", keeping {megabytes(self.kept_bytes)} MB"
        return text


def megabytes(count: int) -> str:
    """Bytes in MB (10^6 bytes) for a message: "1,774"; "0.4" under 1 MB."""
    return f"{count / 1e6:,.0f}" if count >= 1e6 else f"{count / 1e6:.1f}"


def relative_size(config: BertConfig) -> float:
    """A model's work per token relative to BERT-base's: its layers' weights (4 hidden x hidden attention matrices
    and 2 hidden x intermediate MLP matrices per layer) over BERT-base's. DeBERTa's position terms add, per token
    and term, a product of hidden numbers with each of the 2k relative positions (k: config.relative_span)."""
    hidden = config.hidden_size
    per_layer = 4 * hidden * hidden + 2 * hidden * config.intermediate_size
    if config.relative_attention:
        per_layer += len(config.position_attention) * 2 * config.relative_span * hidden
    return config.num_layers * per_layer / BERT_BASE_LAYER_WEIGHTS
