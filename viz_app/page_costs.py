"""What each heavy computation a page can start costs, from the loaded model, the input and the page's settings:
the library's cost functions (bert/costs.py) as the page runs them. The pages check these against the budgets
(viz_app/server/heavy.py) before they start anything. Plain Python."""
from __future__ import annotations

from bert.analysis.attention.head_stats import head_statistics_cost
from bert.analysis.attention.score_terms import score_terms_cost
from bert.analysis.attribution.deletion import deletion_cost
from bert.analysis.attribution.saliency import saliency_cost, swappable
from bert.analysis.causal.ablation import mean_head_outputs_cost, rank_heads_cost
from bert.analysis.causal.patching import patching_cost
from bert.analysis.causal.tracing import trace_cost
from bert.analysis.corpus.batching import batches_cost
from bert.analysis.representations.compare import comparison_cost
from bert.analysis.representations.self_similarity import anisotropy_baseline_cost, word_contexts_cost
from bert.config import BertConfig
from bert.costs import relative_size
from bert.costs import Cost
from bert.data import builtin_sentences
from bert.tokenizer import Encoding
from viz_app.specs.causal_tracing import SITES_FOR_BLOCKS
from viz_app.specs import word_contexts as word_contexts_page
from viz_app.specs.head_ablation import MEAN_SENTENCES
from viz_app.app.models import LoadedModel

RANDOM_ORDERS = 10  # the deletion curve's random orders (viz_app/cache.py)


def _swappable(loaded: LoadedModel, encoding: Encoding) -> int:
    return sum(swappable(loaded.tokenizer, encoding))


def saliency(loaded: LoadedModel, encoding: Encoding, method: str, steps: int, samples: int) -> Cost:
    return saliency_cost(method, len(encoding), _swappable(loaded, encoding), steps=steps, samples=samples)


def deletion(loaded: LoadedModel, encoding: Encoding) -> Cost:
    """The deletion curve alone (its saliency map is computed, and paid for, first)."""
    return deletion_cost(len(encoding), _swappable(loaded, encoding), RANDOM_ORDERS)


def score_terms(tokens: int) -> Cost:
    """A DeBERTa layer's three score terms (the attention page's "Where does this head's score come from?"): one
    pass that keeps them."""
    return score_terms_cost(tokens)


def exact_patching(loaded: LoadedModel, tokens: int, head_layer: int | None) -> Cost:
    return patching_cost(loaded.model.config, tokens, head_layer=head_layer)


def trace(loaded: LoadedModel, tokens: int, samples: int, blocks: bool) -> Cost:
    return trace_cost(loaded.model.config, tokens, samples, SITES_FOR_BLOCKS[blocks])


def head_ranking(loaded: LoadedModel, tokens: int) -> Cost:
    return rank_heads_cost(loaded.model.config, tokens)


def mean_ablation(loaded: LoadedModel) -> Cost:
    """Every head's mean output over the built-in sentences, which "mean" ablation needs (once per model)."""
    return mean_head_outputs_cost(loaded.tokenizer, builtin_sentences(MEAN_SENTENCES), loaded.model.config.max_position_embeddings)


def word_contexts(loaded: LoadedModel, sentences: list[str]) -> Cost:
    """The word's sentences through the model."""
    return word_contexts_cost(loaded.tokenizer, sentences, loaded.model.config.max_position_embeddings)


def anisotropy_baseline(loaded: LoadedModel) -> Cost:
    """The baseline's built-in sentences (once per model, shared by every visitor)."""
    texts = [s.text for s in builtin_sentences(word_contexts_page.BASELINE_SENTENCES)]
    return anisotropy_baseline_cost(loaded.tokenizer, texts, loaded.model.config.max_position_embeddings,
                                     word_contexts_page.BASELINE_SAMPLES, word_contexts_page.BASELINE_SEED)


def corpus_pass(lengths: list[int]) -> Cost:
    """One pass over a corpus (its index for the search, a scan of every neuron or feature), from the sentences'
    lengths in tokens: batches of 32, sorted by length (bert/analysis/corpus/batching.py)."""
    return batches_cost(lengths, 32, ("a smaller corpus (fewer or shorter sentences)",))


def head_statistics(loaded: LoadedModel, sentences: list, pairs: bool) -> Cost:
    """Every head's statistics over a sentence set (bert/analysis/attention/head_stats.py), each input cut to 128 tokens."""
    return head_statistics_cost(loaded.tokenizer, sentences, loaded.model.config.max_position_embeddings, pairs=pairs)


def model_comparison(loaded_a: LoadedModel, loaded_b: LoadedModel, sentences: list[str]) -> tuple[Cost, BertConfig]:
    """Both models over the sentences, and the config to count the passes at: the larger model's (an upper bound
    when the two differ in size)."""
    cost = comparison_cost(loaded_a.model, loaded_b.model, loaded_a.tokenizer, sentences, tokenizer_b=loaded_b.tokenizer)
    return cost, max(loaded_a.model.config, loaded_b.model.config, key=relative_size)
