"""Values a lesson computes for the loaded model and the step's sentence, instead of writing numbers into its text:
"the head with the highest previous-token share" is layer 2, head 5 in one model and layer 0, head 7 in another.

Each `Computation` reads `StepFacts` (one forward pass of the step's input, and what is derived from it, each
computed at most once) and returns a `Finding`: how it reads in a text, its fields ({name.field}), and what it
sets when a step's state uses it (a head, a layer, a token position). Every forward pass a value reads is a page
spec's `Computation` (viz_app/specs/base.py: the recorded pass, a context-mixing method, a causal run) or one of the
two below (`HELPFUL`, and the Sentence tasks page's `NEXT_SENTENCE`), run through the step's `PerModel`; `reads(state)` lists them, so what
a step costs is what its values and figures read (viz_app/lessons/steps.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Mapping

import numpy as np

from bert.analysis.attention.attention_stats import HeadStatistics
from bert.analysis.causal import ablation
from bert.analysis.causal.patching import PatchingResult
from bert.analysis.causal.tracing import TraceResult
from bert.costs import Cost
from bert.errors import BertError
from bert.layers import head_label, layer_label
from bert.analysis.attention.mixing import ContextMixing
from viz_app.specs import causal_tracing, mixing, sentence_tasks
from viz_app.specs.base import Computation as SpecComputation, Inputs
from viz_app.app.forward import ForwardResult, InputProblem, PreparedInput, prepare_input
from viz_app.specs.recorded import PREDICTIONS
from viz_app.specs.attention import head_statistics

HEAD_KEYS = ("head", "layer", "ablation_heads", "search_head")
POSITION_KEYS = ("masks", "focus", "mlp_token", "lens_mask", "ablation_mask", "saliency_mask", "search_position",
                 "tasks_tag_token")
LAYER_KEYS = ("layer", "mlp_layer", "rollout_layer", "contexts_layer", "search_layer")


class NotComputable(BertError):
    """A computed value this model or sentence does not have (no [MASK], no next-sentence head, ...)."""


@dataclass(frozen=True)
class Finding:
    text: str  # how {name} reads in a lesson's text
    fields: dict[str, str] = field(default_factory=dict)  # {name.field}
    head: tuple[int, int] | None = None  # (layer, head)
    layer: int | None = None
    position: int | None = None  # a token's index in the input


@dataclass(frozen=True)
class PerModel:
    """What steps read and is computed once per input and work (a spec's computation: the recorded pass, a mixing
    method) or once per model and work (a `per_model` one: the causal runs), which a step's computed values and its
    figures both read. The app passes its caches (viz_app/lessons/session.py); `of(loaded)` keeps each result in
    this object."""
    computed: Callable[[SpecComputation, PreparedInput | None, Any], Any]  # (computation, input, work) -> its result
    # (the input is not read by a `per_model` one: the causal runs read their sentences from the work)

    @classmethod
    def of(cls, loaded) -> PerModel:
        """Each computed on first use and kept by this object."""
        kept: dict = {}

        def computed(computation: SpecComputation, prepared: PreparedInput | None, work):
            given, prepared = prepared, None if computation.per_model else prepared
            key = (computation.name, None if prepared is None else prepared.key, computation.cache_key(work))
            if key not in kept:  # a result it reads (`Inputs.result_of`) comes from here too, computed once
                earlier = lambda other, other_work: computed(other, given, other_work)  # noqa: E731
                kept[key] = computation.compute(Inputs(loaded, prepared, earlier=earlier), work)
            return kept[key]

        return cls(computed)


class StepFacts:
    """What computed values read, for one model and one step's input; each part is computed when first asked."""

    def __init__(self, loaded, text: str, pair: str, masks=(), truncate: bool = False, state: Mapping[str, Any] | None = None,
                 per_model: PerModel | None = None):
        self.loaded, self.text, self.pair, self.masks, self.truncate = loaded, text, pair, tuple(masks), truncate
        self.state = dict(state or {})  # the step's whole state: what the causal tracing page reads besides the sentence
        self.per_model = per_model or PerModel.of(loaded)

    @cached_property
    def prepared(self) -> PreparedInput:
        try:
            return prepare_input(self.loaded.tokenizer, self.text, self.pair, self.masks, self.truncate,
                                 self.loaded.summary.max_positions)
        except InputProblem as problem:
            raise NotComputable(problem.message) from None

    def computed(self, planned: tuple[SpecComputation, Any]):
        """A spec computation's result for the step's input and its work, through the `PerModel`."""
        computation, work = planned
        return self.per_model.computed(computation, self.prepared, work)

    @cached_property
    def result(self) -> ForwardResult:
        return self.computed(PREDICTIONS)

    @cached_property
    def statistics(self) -> HeadStatistics:
        return head_statistics(self.result)

    @cached_property
    def helpful_head(self) -> HelpfulHead:
        self.first_mask  # says why there is nothing to rank
        return self.computed((HELPFUL, NoWork()))

    @cached_property
    def patching(self) -> tuple[PatchingResult, PatchingResult]:
        """(exact, attribution) patching for the step's two sentences (viz_app/specs/causal_tracing.py)."""
        request = causal_tracing.Settings.from_state(self.state).patching  # the page's figures read the same runs
        try:
            return (self.per_model.computed(causal_tracing.EXACT, None, request),
                    self.per_model.computed(causal_tracing.ATTRIBUTION, None, request))
        except BertError as problem:
            raise NotComputable(str(problem)) from None

    @cached_property
    def trace(self) -> TraceResult:
        request = causal_tracing.Settings.from_state(self.state).trace
        try:
            return self.per_model.computed(causal_tracing.TRACE, None, request)
        except BertError as problem:
            raise NotComputable(str(problem)) from None

    def mixing(self, method: str) -> ContextMixing:
        """One context-mixing method's matrices for the step's input (viz_app/specs/mixing.py), computed once."""
        return self.computed(_method(method))

    @property
    def first_mask(self):
        if not self.loaded.model.has_mlm_head:
            raise NotComputable("this model has no masked-LM head, so it makes no guess")
        if not self.result.masks:
            raise NotComputable("the sentence has no [MASK]")
        return self.result.masks[0]


Read = tuple[SpecComputation, Any]  # a computation a value reads and its work, as a spec's `computations` lists them


@dataclass(frozen=True)
class NoWork:
    """The work of a computation that reads only the step's input."""


HelpfulHead = tuple[ablation.HeadRanking, str]  # the ranking, and the first guess once its top head is ablated


def _helpful_head(inputs: Inputs, work: NoWork) -> HelpfulHead:
    """Every head ablated alone (zeroed) at the first [MASK], then the guess there without the head that helps most."""
    loaded, masked = inputs.loaded, inputs.prepared.masked
    ranking = ablation.rank_heads(loaded.model, loaded.tokenizer, masked)
    layer, head = (int(i) for i in np.unravel_index(int(ranking.effect.numpy().argmax()), ranking.effect.shape))
    [after] = [p for p in ablation.predict_ablated(loaded.model, loaded.tokenizer, masked, [(layer, head)], top_k=1)
               if p.position == ranking.position]
    return ranking, after.candidates[0].token


def _length(inputs: Inputs) -> int:
    return len(inputs.prepared.masked)


HELPFUL = SpecComputation(
    "lessons.most_helpful_head", lambda work: "Every head ablated alone", compute=_helpful_head,
    cost=lambda inputs, work: ablation.rank_heads_cost(inputs.loaded.model.config, _length(inputs)) + Cost(1, _length(inputs)),
    work=NoWork)
NEXT_SENTENCE = (sentence_tasks.NEXT_SENTENCE, sentence_tasks.PairWork())  # the Sentence tasks page's: the pair both ways


def _method(method: str) -> Read:
    return mixing.METHOD, mixing.MethodWork(method)


def _recorded(state: Mapping[str, Any]) -> tuple[Read, ...]:
    return (PREDICTIONS,)


def _methods(*methods: str, recorded: bool = True) -> Callable[[Mapping[str, Any]], tuple[Read, ...]]:
    return lambda state: ((PREDICTIONS,) if recorded else ()) + tuple(_method(method) for method in methods)


def _causal(*computations: SpecComputation) -> Callable[[Mapping[str, Any]], tuple[Read, ...]]:
    """The causal tracing page's runs for the step's sentences (its figures read the same)."""
    def reads(state: Mapping[str, Any]) -> tuple[Read, ...]:
        settings = causal_tracing.Settings.from_state(state)
        return tuple((c, settings.trace if c is causal_tracing.TRACE else settings.patching) for c in computations)
    return reads


@dataclass(frozen=True)
class Computation:
    describe: str  # one line for docs/teaching.md and error messages
    compute: Callable[..., Finding]  # (facts, **arguments) -> Finding
    state_keys: tuple[str, ...] = ()  # the state keys it can set
    fields: tuple[str, ...] = ()
    arguments: tuple[str, ...] = ()
    reads: Callable[[Mapping[str, Any]], tuple[Read, ...]] = lambda state: ()  # the step's state -> the computations
    # `compute` runs through StepFacts, with their works (what it costs: viz_app/lessons/steps.py); (): no forward pass


def _percent(value: float) -> str:
    return f"{value:.0%}" if value >= 0.01 else f"{value:.1%}"


def _head(layer: int, head: int, **fields: str) -> Finding:
    return Finding(head_label(layer, head), {"layer": str(layer), "head": str(head), **fields}, head=(layer, head),
                 layer=layer)


def _strongest(statistic: str, lowest: bool = False) -> Callable[[StepFacts], Finding]:
    def compute(facts: StepFacts) -> Finding:
        values = np.nan_to_num(facts.statistics[statistic], nan=np.inf if lowest else -np.inf)
        layer, head = np.unravel_index(int(values.argmin() if lowest else values.argmax()), values.shape)
        value = float(facts.statistics[statistic][layer, head])
        share = f"{value:.1f} bits" if statistic == "entropy" else _percent(value)
        return _head(int(layer), int(head), share=share)

    return compute


def _most_helpful_head(facts: StepFacts) -> Finding:
    """The head whose ablation (zeroed) lowers the probability of the model's first guess the most."""
    ranking, new_guess = facts.helpful_head
    layer, head = (int(i) for i in np.unravel_index(int(ranking.effect.numpy().argmax()), ranking.effect.shape))
    return _head(layer, head, guess=ranking.target.token, before=_percent(ranking.target.probability),
                 after=_percent(float(ranking.ablated_probability[layer, head])), new_guess=new_guess)


def _top_guess(facts: StepFacts) -> Finding:
    mask = facts.first_mask
    fields = {"token": mask.tokens[0], "probability": _percent(float(mask.probabilities[0])), "second": mask.tokens[1]}
    if mask.original is not None:
        fields |= {"original": mask.original, "rank": str(mask.original_rank),
                   "original_probability": _percent(float(mask.original_probability))}
    else:
        fields |= {"original": "[MASK]", "rank": "-", "original_probability": "-"}
    return Finding(mask.tokens[0], fields, position=mask.position)


def _position_of(facts: StepFacts, word: str) -> Finding:
    """The first token of `word` in the step's input (before masks are applied)."""
    tokenizer, tokens = facts.loaded.tokenizer, facts.prepared.base.tokens
    pieces = [t for t, special in zip(*_tokens(tokenizer, word)) if not special]
    for start in range(len(tokens) - len(pieces) + 1):
        if pieces and tokens[start : start + len(pieces)] == pieces:
            return Finding(str(start), position=start)
    raise NotComputable(f"the word {word!r} is not in the step's sentence")


def _tokens(tokenizer, word: str):
    encoding = tokenizer.encode(word)
    return encoding.tokens, encoding.special


def _model(facts: StepFacts) -> Finding:
    summary = facts.loaded.summary
    fields = {"layers": str(summary.layers), "heads": str(summary.heads), "hidden": str(summary.hidden),
              "parameters": f"{summary.parameters / 1e6:.0f} million", "last_layer": str(summary.layers - 1)}
    return Finding(f"{summary.layers} layers of {summary.heads} heads", fields)


def _last_layer(facts: StepFacts) -> Finding:
    last = facts.loaded.summary.layers - 1
    return Finding(str(last), layer=last)


def _next_sentence(facts: StepFacts) -> Finding:
    model = facts.loaded.model
    if "nsp" not in model.output_heads:
        raise NotComputable("this model has no next-sentence head")
    base = facts.prepared.base
    if not any(t == 1 for t in base.sentences):
        raise NotComputable("the step has no second sentence")
    result = facts.computed(NEXT_SENTENCE)
    return Finding(_percent(result.follows), {"follows": _percent(result.follows), "swapped": _percent(result.swapped)})


def _patching(facts: StepFacts) -> Finding:
    """Where the clean sentence's preference travels: the changed word's position carries it up to some layer, the
    [MASK]'s from some layer on, and which attention block and head move it (layers counted from 0, as the page)."""
    exact, attribution = facts.patching
    tokens, residual = exact.tokens, exact.residual.numpy()
    mask = tokens.index(facts.loaded.tokenizer.mask_token)
    carrier = max((p for p in range(len(tokens)) if p != mask), key=lambda p: residual[0, p])  # the changed word
    carried = [i for i in range(len(residual)) if residual[i, carrier] >= 0.5]
    at_mask = [i for i in range(len(residual)) if residual[i, mask] >= 0.5]
    attention = exact.attention.numpy()[:, mask]
    layer, head = np.unravel_index(int(exact.heads.numpy().argmax()), exact.heads.shape)
    r = np.corrcoef(exact.residual.numpy().ravel(), attribution.residual.numpy().ravel())[0, 1]
    fields = {
        "answer": exact.answer, "foil": exact.foil, "clean": f"{exact.clean_metric:.2f}", "corrupted": f"{exact.corrupted_metric:.2f}",
        "word": tokens[carrier], "carried_until": _after(max(carried, default=0)),
        "mask_from": _after(min(at_mask, default=len(residual) - 1)), "attention_layer": layer_label(int(attention.argmax())),
        "attention_share": f"{float(attention.max()):.2f}", "head": head_label(int(layer), int(head)),
        "head_share": f"{float(exact.heads[layer, head]):.2f}", "r": f"{r:.2f}",
    }
    return Finding(f"logit({exact.answer}) − logit({exact.foil})", fields)


def _trace(facts: StepFacts) -> Finding:
    """The noise trace: the answer's probability clean and noisy, and where restoring one state brings at least half
    of it back: at the noised word (up to which layer) and at the [MASK] (from which layer)."""
    trace = facts.trace
    grid = trace.restored["residual"].numpy()
    halfway = (trace.clean_probability + trace.corrupted_probability) / 2
    word, mask = trace.corrupted_positions[-1], trace.mask_position
    at_word = [i for i in range(len(grid)) if grid[i, word] >= halfway]
    at_mask = [i for i in range(len(grid)) if grid[i, mask] >= halfway]
    fields = {"answer": trace.answer, "clean": _percent(trace.clean_probability), "noisy": _percent(trace.corrupted_probability),
              "noised": " ".join(trace.tokens[i] for i in trace.corrupted_positions),
              "word_until": _after(max(at_word, default=0)), "mask_from": _after(min(at_mask, default=len(grid) - 1))}
    return Finding(trace.answer, fields)


def _after(row: int) -> str:
    """Whose output a residual-stream row is, for "the output of ..." in a lesson's text (bert/layers.py's numbering):
    row 0 is "the embeddings", row i > 0 "layer i-1" (hidden_states[i] is after layer i-1)."""
    return "the embeddings" if row == 0 else layer_label(row - 1)


def _special_columns(facts: StepFacts) -> np.ndarray:
    result = facts.result
    columns = np.array([mixing.is_special(token, special, position)
                        for position, (token, special) in enumerate(zip(result.tokens, result.special))])
    if not columns.any():
        raise NotComputable("the step's sentence has no [SEP] or punctuation")
    return columns


def _to_special(method: str) -> Callable[[StepFacts], Finding]:
    """The mean share of a row that goes to [SEP] and punctuation under `method`, over the middle layers; the layer
    is the middle layer where the attention weights give them the most (the same for every method, so steps agree)."""
    def compute(facts: StepFacts) -> Finding:
        columns = _special_columns(facts)
        middle = mixing.middle_layers(facts.loaded.summary.layers)
        shares = mixing.shares_to(facts.mixing(method).layers, columns)
        weights = mixing.shares_to(facts.mixing("attention").layers, columns)
        layer = max(middle, key=lambda index: weights[index])
        tokens = " ".join(f"“{t}”" for t in dict.fromkeys(t for t, special in zip(facts.result.tokens, columns) if special))
        fields = {"share": _percent(float(shares[list(middle)].mean())), "layer": str(layer),
                  "at_layer": _percent(float(shares[layer])), "tokens": tokens,
                  "middle": f"layers {middle.start} to {middle.stop - 1}"}
        return Finding(fields["share"], fields, layer=layer)

    return compute


def _residual_keeps(facts: StepFacts) -> Finding:
    """The mean share of a token's own column, over every layer: in the norms without the residual (norm) and with
    it (norm-residual, Kobayashi et al. 2021), and in ALTI's contributions."""
    fields = {name.replace("-", "_"): _percent(float(mixing.own_share(facts.mixing(method).layers).mean()))
              for name, method in (("without", "norm"), ("with", "norm-residual"), ("alti", "alti"),
                                   ("attention", "attention"))}
    return Finding(fields["with"], fields)


def _statistic_head(statistic: str, what: str) -> Computation:
    return Computation(f"the head with the highest {what} in the step's sentence", _strongest(statistic), HEAD_KEYS,
                       ("layer", "head", "share"), reads=_recorded)


COMPUTED: dict[str, Computation] = {
    "previous_token_head": _statistic_head("previous", "share of attention to the previous token"),
    "next_token_head": _statistic_head("next", "share of attention to the next token"),
    "sep_head": _statistic_head("sep", "share of attention to [SEP]"),
    "cls_head": _statistic_head("cls", "share of attention to [CLS]"),
    "punctuation_head": _statistic_head("punctuation", "share of attention to punctuation"),
    "self_head": _statistic_head("self", "share of attention to the token itself"),
    "broad_head": Computation("the head whose attention is most spread out (highest entropy)", _strongest("entropy"),
                              HEAD_KEYS, ("layer", "head", "share"), reads=_recorded),
    "most_helpful_head": Computation(
        "the head whose ablation lowers the probability of the first [MASK]'s top guess the most",
        _most_helpful_head, HEAD_KEYS, ("layer", "head", "guess", "before", "after", "new_guess"),
        reads=lambda state: (PREDICTIONS, (HELPFUL, NoWork()))),
    "top_guess": Computation("the model's first guess at the first [MASK] (and the masked word's rank)", _top_guess,
                             (), ("token", "probability", "second", "original", "rank", "original_probability"),
                             reads=_recorded),
    "position_of": Computation("the position of a word's first token in the step's sentence", _position_of,
                               POSITION_KEYS, arguments=("word",)),
    "model": Computation("the loaded model's size", _model, (), ("layers", "heads", "hidden", "parameters", "last_layer")),
    "last_layer": Computation("the loaded model's last layer (counted from 0)", _last_layer, LAYER_KEYS),
    "next_sentence": Computation("P(B follows A) for the step's two sentences, and for them swapped", _next_sentence,
                                 (), ("follows", "swapped"), reads=lambda state: (NEXT_SENTENCE,)),
    "patching": Computation(
        "activation patching on the step's two sentences (causal tracing page): where the changed word's information "
        "travels to the [MASK]", _patching, (),
        ("answer", "foil", "clean", "corrupted", "word", "carried_until", "mask_from", "attention_layer", "attention_share",
         "head", "head_share", "r"), reads=_causal(causal_tracing.EXACT, causal_tracing.ATTRIBUTION)),
    "weight_to_special": Computation(
        "the share of attention weight on [SEP] and punctuation in the middle layers (context-mixing page); its layer: "
        "the middle layer where it is largest", _to_special("attention"), LAYER_KEYS,
        ("share", "layer", "at_layer", "tokens", "middle"), reads=_methods("attention")),
    "norm_to_special": Computation("the same share by the norms ‖αf(x)‖ (Kobayashi et al. 2020), at the same layers",
                                   _to_special("norm"), LAYER_KEYS, ("share", "layer", "at_layer", "tokens", "middle"),
                                   reads=_methods("norm", "attention")),
    "zeroing_to_special": Computation("the same share by value zeroing (Mohebbi et al. 2023), at the same layers",
                                      _to_special("value-zeroing"), LAYER_KEYS,
                                      ("share", "layer", "at_layer", "tokens", "middle"),
                                      reads=_methods("value-zeroing", "attention")),
    "residual_keeps": Computation(
        "the mean share of each token's own column over every layer: norms without the residual, with it, ALTI, "
        "attention weights", _residual_keeps, (), ("without", "with", "alti", "attention"),
        reads=_methods("norm", "norm-residual", "alti", "attention", recorded=False)),
    "trace": Computation("causal tracing with noise on the step's sentence (causal tracing page)", _trace, (),
                         ("answer", "clean", "noisy", "noised", "word_until", "mask_from"),
                         reads=_causal(causal_tracing.TRACE)),
}
