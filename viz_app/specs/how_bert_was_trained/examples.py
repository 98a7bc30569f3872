"""The built-in model on the "How BERT was trained" page's own examples: its P(B follows A) for each next-sentence
pair drawn from the visitor's text, and the pre-training loss of the first pair, masked (bert/pretraining/walkthrough.py).
One pass per pair and one for the loss: a `Computation` (viz_app/specs/base.py) the page runs on the built-in model
through the runner, priced like any other. Plain Python."""
from __future__ import annotations

from dataclasses import dataclass

from bert.costs import Cost
from bert.errors import BertError
from bert.pretraining import walkthrough
from viz_app.specs.base import Computation, Inputs


@dataclass(frozen=True)
class ExamplesWork:
    text: str  # the visitor's text, one document
    seed: int  # the run's seed: which pairs and which masks
    task: str  # "nsp" or "sop" (LINK_PARAMS["pair_task"])
    whole_word: bool  # whole-word masking for the loss's example


@dataclass(frozen=True)
class Examples:
    follows: tuple[float, ...]  # P(B follows A) of each pair, in order; () for a model without a next-sentence head
    loss: walkthrough.ExampleLoss | None  # of the first pair, masked; None without both pre-training heads


def _pairs(inputs: Inputs, work: ExamplesWork) -> list[walkthrough.PairExample]:
    try:
        return walkthrough.sentence_pairs(inputs.loaded.tokenizer, work.text, work.seed, work.task)
    except BertError:  # fewer than two sentences: the page says so, and there is nothing to run
        return []


def _cost(inputs: Inputs, work: ExamplesWork) -> Cost:
    pairs, model = _pairs(inputs, work), inputs.loaded.model
    passes = len(pairs) * model.has_nsp_head + bool(pairs and model.has_mlm_head and model.has_nsp_head)
    return Cost(passes, max((len(pair.tokens) for pair in pairs), default=0))


def _examples(inputs: Inputs, work: ExamplesWork) -> Examples:
    pairs, loaded = _pairs(inputs, work), inputs.loaded
    follows = tuple(walkthrough.next_sentence_probability(loaded.model, pair) for pair in pairs) \
        if loaded.model.has_nsp_head else ()
    loss = None
    if pairs and loaded.model.has_mlm_head and loaded.model.has_nsp_head:
        masked = walkthrough.mask_example(loaded.tokenizer, pairs[0].batch, work.seed, work.whole_word)
        loss = walkthrough.example_loss(loaded.model, pairs[0], masked)
    return Examples(follows, loss)


EXAMPLES = Computation(  # one pass per pair, and one for the first pair's loss
    "how_bert_was_trained.examples", lambda work: "The built-in model on your pairs", cost=_cost, compute=_examples,
    per_model=True, work=ExamplesWork)
