"""What each heavy computation a page can start costs, from the loaded model, the input and the page's settings:
the library's cost functions (bert/costs.py) as the page runs them. The pages check these against the budgets
(viz_app/server/heavy.py) before they start anything. Plain Python."""
from __future__ import annotations

from bert.analysis.attention.score_terms import score_terms_cost
from bert.analysis.attribution.saliency import saliency_cost, swappable
from bert.analysis.causal.patching import patching_cost
from bert.analysis.causal.tracing import trace_cost
from bert.analysis.corpus.batching import batches_cost
from bert.config import BertConfig
from bert.costs import relative_size
from bert.costs import Cost
from bert.replaced_tokens import replaced_tokens_cost
from bert.tokenizer import Encoding
from viz_app.specs.causal_tracing import SITES_FOR_BLOCKS
from viz_app.app.models import LoadedModel


def _swappable(loaded: LoadedModel, encoding: Encoding) -> int:
    return sum(swappable(loaded.tokenizer, encoding))


def saliency(loaded: LoadedModel, encoding: Encoding, method: str, steps: int, samples: int) -> Cost:
    return saliency_cost(method, len(encoding), _swappable(loaded, encoding), steps=steps, samples=samples)


def score_terms(tokens: int) -> Cost:
    """A DeBERTa layer's three score terms (the attention page's "Where does this head's score come from?"): one
    pass that keeps them."""
    return score_terms_cost(tokens)


def exact_patching(loaded: LoadedModel, tokens: int, head_layer: int | None) -> Cost:
    return patching_cost(loaded.model.config, tokens, head_layer=head_layer)


def trace(loaded: LoadedModel, tokens: int, samples: int, blocks: bool) -> Cost:
    return trace_cost(loaded.model.config, tokens, samples, SITES_FOR_BLOCKS[blocks])




def corpus_pass(lengths: list[int]) -> Cost:
    """One pass over a corpus (its index for the search, a scan of every neuron or feature), from the sentences'
    lengths in tokens: batches of 32, sorted by length (bert/analysis/corpus/batching.py)."""
    return batches_cost(lengths, 32, ("a smaller corpus (fewer or shorter sentences)",))




def replaced_tokens(discriminator: LoadedModel, generator: LoadedModel | None, encoding: Encoding) -> tuple[Cost, BertConfig]:
    """The discriminator's pass over the input, and the generator's before it when it fills [MASK]s; counted at
    the larger model's size (the generator is usually the smaller)."""
    fills = generator is not None and bool(discriminator.tokenizer.mask_positions(encoding))
    config = discriminator.model.config if not fills else max(discriminator.model.config, generator.model.config, key=relative_size)
    return replaced_tokens_cost(len(encoding), fills), config
