"""What a computation costs, known before it starts: forward passes of the model, each over `tokens` tokens.

Every heavy analysis has a pure `*_cost` function beside it (bert/analysis/attribution, bert/analysis/causal,
bert/analysis/corpus, bert/analysis/features) that returns a Cost from the input's length and the settings; the
tests count the passes the analysis actually makes and compare. One forward pass is one input row through the
model, whatever the batch it rides in (a batch of 32 rows is 32 passes). A backward pass (the gradient methods)
costs about two forward passes (Kaplan et al. 2020, section 2.1: 2N FLOPs per token forward, 4N backward), so
`equivalent_passes` counts it as two.

Memory is priced beside the passes, from the shapes of the tensors a computation holds at once (float32, 4 bytes a
number): `kept_bytes`, what the result keeps once the computation ends (a server caches it: the probes' word vectors
of every layer, a recorded pass's activations); `peak_bytes`, the most it holds at once while it runs, the kept
part included, where the analysis prices it from its own tensors (the circuit graph's receiver streams, value
zeroing's batch of zeroed layers); and `rows_at_once`, the rows of its largest batch whose activations
`peak_bytes` leaves out (0 where it prices them). `peak(config)`, which a server compares with its memory budget
(viz_app/server/budget.py), is the larger of `peak_bytes` and what it keeps plus those rows' activations
(`pass_bytes`, with the autograd graph when it takes gradients). So a computation that runs a pass is never
priced at 0 bytes.

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
    peak_bytes: int = 0  # memory it holds at most while it runs, the kept part included (0: `peak` derives it)
    rows_at_once: int = 1  # rows of its largest batch whose activations peak_bytes leaves out (0: it prices them)

    @property
    def equivalent_passes(self) -> int:
        """Forward-pass equivalents: a backward pass counts as BACKWARD_PASS forward passes."""
        return self.forward_passes + BACKWARD_PASS * self.backward_passes

    def work(self, config: BertConfig | None = None) -> float:
        """BERT-base token passes: equivalent passes x tokens x the model's size relative to BERT-base's layers
        (1 without a config)."""
        return self.equivalent_passes * self.tokens * (1.0 if config is None else relative_size(config))

    def peak(self, config: BertConfig) -> int:
        """The bytes it holds at most: `peak_bytes`, and at least what it keeps plus the activations of the rows
        it leaves out, `pass_bytes(config, tokens, rows_at_once, gradient)` (gradient: it takes backward passes)."""
        least = self.kept_bytes
        if self.forward_passes and self.rows_at_once:
            least += pass_bytes(config, self.tokens, self.rows_at_once, gradient=self.backward_passes > 0)
        return max(self.peak_bytes, least)

    def __add__(self, other: "Cost") -> "Cost":
        """Both computations, one after the other (over the longer input of the two, when they differ): their
        kept memory adds up, the second one's peak comes on top of what the first one keeps, and the activations
        neither prices come at the larger batch, on top of all that is kept (an upper bound of either's)."""
        lower = self.lower + tuple(setting for setting in other.lower if setting not in self.lower)
        return Cost(self.forward_passes + other.forward_passes, max(self.tokens, other.tokens), lower,
                    self.backward_passes + other.backward_passes, self.kept_bytes + other.kept_bytes,
                    max(self.peak_bytes, self.kept_bytes + other.peak_bytes), max(self.rows_at_once, other.rows_at_once))

    def describe(self) -> str:
        """"4,088 forward passes of 511 tokens (and 32 backward passes)", with ", keeping 1,774 MB" when it keeps
        memory."""
        text = f"{self.forward_passes:,} forward pass{'' if self.forward_passes == 1 else 'es'} of {self.tokens:,} tokens"
        if self.backward_passes:
            text += f" (and {self.backward_passes:,} backward pass{'' if self.backward_passes == 1 else 'es'})"
        if self.kept_bytes:
            text += f", keeping {megabytes(self.kept_bytes)} MB"
        return text


FLOAT_BYTES = 4  # the models run in float32


def pass_bytes(config: BertConfig, tokens: int, rows: int = 1, gradient: bool = False, head: bool = True,
               fused: bool = False) -> int:
    """The activations of one forward pass of `rows` rows of `tokens` tokens (T) through a model of hidden size H,
    intermediate size I, `heads` heads, L layers and a vocabulary of V, in bytes (FLOAT_BYTES a number):

    - one layer's, which a pass without gradients holds at a time: the stream in and out, q, k, v and the heads'
      output (6·T·H), the MLP's intermediate before and after its activation (2·T·I), and the scores, the
      pattern and a softmax temporary (3·heads·T²; none when the attention is `fused`: PyTorch's
      scaled_dot_product_attention, for a pass that records no q, k, scores or pattern);
    - with gradients (a backward pass follows), every layer's stays for the backward pass, and the backward pass
      holds one layer's gradients besides: (L + 1) layers' worth;
    - with the output `head`, its logits at every position (T·V) and its transform (T·H).

    per row: (layers × (6·T·H + 2·T·I + 3·heads·T²) + T·(V + H)) × FLOAT_BYTES, layers 1 or L + 1; times `rows`.
    Measured against the resident memory of BERT-base-shaped computations at 512 tokens:
    tests/app/server/test_memory_peaks.py."""
    layers = config.num_layers + 1 if gradient else 1
    hidden, intermediate = config.hidden_size, config.intermediate_size
    layer = 6 * tokens * hidden + 2 * tokens * intermediate + (0 if fused else 3 * config.num_heads * tokens * tokens)
    output = tokens * (config.vocab_size + hidden) if head else 0
    return rows * (layers * layer + output) * FLOAT_BYTES


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
