"""Every heavy analysis's cost, known before it starts, against the passes it actually makes: a forward pre-hook
on the embedding counts the rows of every forward pass, a backward hook on the last layer counts backward
passes. And a watcher (bert/stopping.py) stops each of them, Captum's loops included, at its next pass."""
from __future__ import annotations

import math

import pytest

from bert import Bert, BertConfig
from bert.analysis.attention import decompx as decompx_module, norm_based as norm_based_module
from bert.analysis.attention import value_zeroing as value_zeroing_module
from bert.analysis.attention.mixing import METHODS as MIXING_METHODS, NORM_PASSES_AT_512, context_mixing, mixing_cost
from bert.analysis.attention.mixing import record_for_mixing
from bert.analysis.attribution.deletion import deletion_cost, deletion_curve
from bert.analysis.attribution.saliency import METHODS, saliency, saliency_cost, swappable
from bert.analysis.causal.ablation import mean_head_outputs, mean_head_outputs_cost, rank_heads, rank_heads_cost
from bert.analysis.causal.erasure import amnesic_probing, amnesic_probing_cost
from bert.analysis.probing.pipeline import ProbeSettings, extract_features, extract_features_cost
from bert.analysis.probing.sentence_sets import sentence_set
from bert.analysis.probing.treebank import builtin_treebank
from bert.analysis.causal.patching import SITES, attribution_sweep, patching_cost, patching_sweep, prepare_contrast
from bert.analysis.causal.tracing import TRACE_SITES, causal_trace, trace_cost
from bert.analysis.attention.head_stats import corpus_head_statistics, head_statistics_cost
from bert.analysis.corpus.batching import batches_cost, hook_batches
from bert.analysis.representations.compare import compare_models, comparison_cost
from bert.analysis.representations.self_similarity import (
    anisotropy_baseline, anisotropy_baseline_cost, word_contexts, word_contexts_cost,
)
from bert.costs import Cost, relative_size
from bert.data import LabelledSentence, builtin_sentences
from bert.errors import StoppedError
from bert.hooks import hook_name
from bert.stopping import watching
from bert_test_support import small_bert

SHORT = "the dog [MASK] at the cat"
LONG = "the dog [MASK] at the cat and her dog went to the park . the cat is"


def stopping_at_the_second_check():
    """(the rows of each check, a watcher that raises StoppedError at its second check)."""
    checks: list[int] = []

    def stop(rows: int) -> None:
        checks.append(rows)
        if len(checks) == 2:
            raise StoppedError("the visitor left")

    return checks, stop


class Counted:
    """The passes a model makes: rows of each forward pass, rows of each backward pass through the last layer."""

    def __init__(self, model: Bert):
        self.forward, self.backward = 0, 0
        model.embedding.register_forward_pre_hook(self._forward)
        model.transformer[-1].register_full_backward_hook(self._backward)

    def _forward(self, module, args):
        self.forward += args[0].shape[0]

    def _backward(self, module, grad_input, grad_output):
        self.backward += grad_output[0].shape[0]

    def reset(self) -> "Counted":
        self.forward, self.backward = 0, 0
        return self

    def assert_matches(self, cost: Cost) -> None:
        assert (self.forward, self.backward) == (cost.forward_passes, cost.backward_passes)


@pytest.fixture(scope="module")
def counted_model(tokenizer):
    model = small_bert(tokenizer.vocab_size, seed=0)
    return model, Counted(model)


@pytest.mark.parametrize("text", [SHORT, LONG])
@pytest.mark.parametrize("method, settings", [
    ("gradient_x_input", {}), ("integrated_gradients", {"steps": 8, "batch_size": 3}), ("integrated_gradients", {"steps": 16}),
    ("occlusion", {"window": 1}), ("occlusion", {"window": 3, "batch_size": 4}),
    ("shapley_value_sampling", {"samples": 3}), ("shapley_value_sampling", {"samples": 5, "batch_size": 7}),
])
def test_saliency_makes_the_passes_its_cost_says(counted_model, tokenizer, text, method, settings):
    model, counted = counted_model
    encoding = tokenizer.encode(text)
    cost = saliency_cost(method, len(encoding), sum(swappable(tokenizer, encoding)),
                         **{k: v for k, v in settings.items() if k != "batch_size"})
    counted.reset()
    saliency(model, tokenizer, encoding, method, **settings)
    counted.assert_matches(cost)
    assert cost.tokens == len(encoding)


@pytest.mark.parametrize("text", [SHORT, LONG])
def test_deletion_curve_makes_the_passes_its_cost_says(counted_model, tokenizer, text):
    model, counted = counted_model
    encoding = tokenizer.encode(text)
    result = saliency(model, tokenizer, encoding, "gradient_x_input")
    counted.reset()
    deletion_curve(model, tokenizer, encoding, result, random_orders=3, batch_size=5)
    counted.assert_matches(deletion_cost(len(encoding), sum(swappable(tokenizer, encoding)), random_orders=3))


@pytest.mark.parametrize("sites, head_layer", [(SITES, None), (SITES, 1), (("residual",), 0), (("mlp", "heads"), None)])
def test_patching_makes_the_passes_its_cost_says(counted_model, tokenizer, sites, head_layer):
    model, counted = counted_model
    contrast = prepare_contrast(tokenizer, "the dog [MASK] at the park .", "her cat [MASK] to the mail .", "barked", "mail")
    tokens = len(contrast.clean)
    counted.reset()
    patching_sweep(model, contrast, sites, head_layer=head_layer, batch_size=7)
    counted.assert_matches(patching_cost(model.config, tokens, sites, head_layer))
    counted.reset()
    attribution_sweep(model, contrast, sites, head_layer=head_layer)
    counted.assert_matches(patching_cost(model.config, tokens, sites, head_layer, exact=False))


def test_the_mean_for_mean_ablation_makes_the_passes_its_cost_says(counted_model, tokenizer):
    """One pass a sentence (each cut to 128 tokens, or the model's 64 positions), padded to its batch's longest: 7
    sentences in batches of 3."""
    model, counted = counted_model
    sentences = [LabelledSentence(text=" ".join(["dog"] * n)) for n in (3, 9, 4, 200, 6, 5, 12)]
    cost = mean_head_outputs_cost(tokenizer, sentences, model.config.max_position_embeddings, batch_size=3)
    counted.reset()
    mean_head_outputs(model, tokenizer, sentences, batch_size=3)
    counted.assert_matches(cost)
    # sorted lengths with [CLS] and [SEP]: 5 6 7 | 8 11 14 | 64 -> padded 3 x 7 + 3 x 14 + 64 = 127 tokens
    assert model.config.max_position_embeddings == 64 and cost.tokens == -(-127 // 7)


def test_one_word_in_many_contexts_makes_the_passes_its_cost_says(counted_model, tokenizer):
    model, counted = counted_model
    sentences = ["the dog barked", "her dog went to the park . the cat is", "the dog", "a cat and a dog"]
    cost = word_contexts_cost(tokenizer, sentences, model.config.max_position_embeddings, batch_size=3)
    counted.reset()
    word_contexts(model, tokenizer, "dog", sentences, batch_size=3)
    counted.assert_matches(cost)


@pytest.mark.parametrize("samples", [1, 3, 200])
def test_the_anisotropy_baseline_makes_the_passes_its_cost_says(counted_model, tokenizer, samples):
    """Only the sentences holding a sampled token are run: few samples, few sentences; a sentence too long for the
    model is left out."""
    model, counted = counted_model
    sentences = [f"the {'dog ' * n}barked" for n in range(1, 12)] + ["the cat " * 40]
    cost = anisotropy_baseline_cost(tokenizer, sentences, model.config.max_position_embeddings, samples, seed=3, batch_size=4)
    counted.reset()
    anisotropy_baseline(model, tokenizer, sentences, samples, seed=3, batch_size=4)
    counted.assert_matches(cost)
    assert cost.forward_passes <= 2 * samples and cost.forward_passes <= 11


@pytest.mark.parametrize("tasks", [["pos"], ["segment", "masked_identity", "position"]])
def test_the_probes_word_vectors_make_the_passes_their_cost_says(tokenizer, tasks):
    """One set split 80/20; the segment task's pairs and the masked words' sentences counted too; sentences longer
    than the model's 64 positions left out of both."""
    model = small_bert(tokenizer.vocab_size, seed=0)
    counted = Counted(model)
    data = sentence_set(builtin_sentences(60), "built-in")
    settings = ProbeSettings(seed=2, batch_size=7)
    cost = extract_features_cost(tokenizer, data, None, tasks, settings, model.config.max_position_embeddings)
    features = extract_features(model, tokenizer, data, tasks=tasks, settings=settings)
    counted.assert_matches(cost)
    assert cost.forward_passes >= len(features.train.sentences) + len(features.test.sentences)


def test_amnesic_probing_makes_the_passes_its_cost_says(tokenizer):
    model = small_bert(tokenizer.vocab_size, seed=0, mlm_head=True)
    counted = Counted(model)
    sentences = builtin_treebank("dev").sentences[:40]
    train, test = sentences[:30], sentences[30:]
    limits = dict(seed=1, max_train_words=200, max_test_words=150, max_mlm_words=25, batch_size=9)
    cost = amnesic_probing_cost(tokenizer, train, test, model.config.max_position_embeddings, **limits)
    amnesic_probing(model, tokenizer, train, test, "upos", 1, **limits)
    counted.assert_matches(cost)


@pytest.mark.parametrize("sites, samples", [(("residual",), 2), (TRACE_SITES, 3)])
def test_causal_trace_makes_the_passes_its_cost_says(counted_model, tokenizer, sites, samples):
    model, counted = counted_model
    encoding = tokenizer.encode(SHORT)
    counted.reset()
    causal_trace(model, tokenizer, encoding, [1, 2], sites=sites, samples=samples, batch_size=5)
    counted.assert_matches(trace_cost(model.config, len(encoding), samples, sites))


def test_head_ranking_makes_the_passes_its_cost_says(counted_model, tokenizer):
    model, counted = counted_model
    encoding = tokenizer.encode(LONG)
    counted.reset()
    rank_heads(model, tokenizer, encoding, batch_size=3)
    counted.assert_matches(rank_heads_cost(model.config, len(encoding)))


def test_corpus_passes_and_their_padded_tokens(counted_model, tokenizer):
    model, counted = counted_model
    encodings = [tokenizer.encode(text) for text in (SHORT, LONG, "the cat", "her dog went to the park", SHORT + " " + SHORT)]
    padded = []
    model.embedding.register_forward_pre_hook(lambda module, args: padded.append(args[0].numel()))
    counted.reset()
    for _ in hook_batches(model, encodings, tokenizer.pad_id, [hook_name("embedding_out")], batch_size=2):
        pass
    cost = batches_cost([len(e) for e in encodings], batch_size=2)
    counted.assert_matches(cost)
    assert sum(padded) <= cost.forward_passes * cost.tokens < sum(padded) + cost.forward_passes  # rounded up per pass


@pytest.mark.parametrize("pairs", [False, True])
def test_head_statistics_make_the_passes_their_cost_says(counted_model, tokenizer, pairs):
    model, counted = counted_model
    sentences = [LabelledSentence(text) for text in (SHORT, LONG, "the cat", "her dog went to the park", SHORT + " " + LONG)]
    padded = []
    handle = model.embedding.register_forward_pre_hook(lambda module, args: padded.append(args[0].numel()))
    counted.reset()
    corpus_head_statistics(model, tokenizer, sentences, pairs=pairs, max_tokens=20, batch_size=2)
    handle.remove()
    cost = head_statistics_cost(tokenizer, sentences, model.config.max_position_embeddings, pairs=pairs, max_tokens=20,
                                batch_size=2)
    counted.assert_matches(cost)
    assert cost.forward_passes == (2 if pairs else 5)  # pairs: the first four, two by two; the fifth has no partner
    assert sum(padded) <= cost.forward_passes * cost.tokens < sum(padded) + cost.forward_passes


def test_comparing_two_models_makes_the_passes_its_cost_says(tokenizer):
    model_a, model_b = small_bert(tokenizer.vocab_size, seed=0), small_bert(tokenizer.vocab_size, seed=1, max_positions=12)
    counted_a, counted_b = Counted(model_a), Counted(model_b)
    sentences = [SHORT, LONG, "the cat", "her dog went to the park", SHORT + " " + LONG]  # the last cut to 12 tokens
    padded = []
    model_b.embedding.register_forward_pre_hook(lambda module, args: padded.append(args[0].numel()))
    compare_models(model_a, model_b, tokenizer, sentences, batch_size=2)
    cost = comparison_cost(model_a, model_b, tokenizer, sentences, batch_size=2)
    assert (counted_a.forward, counted_b.forward, cost.forward_passes) == (5, 5, 10)
    assert sum(padded) * 2 <= cost.forward_passes * cost.tokens < sum(padded) * 2 + cost.forward_passes


def test_work_is_in_bert_base_token_passes():
    assert relative_size(BertConfig()) == 1.0
    assert relative_size(BertConfig.large()) == pytest.approx(24 * 12 * 1024**2 / (12 * 12 * 768**2))
    cost = Cost(10, 512, backward_passes=4)
    assert cost.equivalent_passes == 18 and cost.work() == 18 * 512
    assert (cost + Cost(2, 20, ("a shorter text",))).forward_passes == 12
    assert cost.describe() == "10 forward passes of 512 tokens (and 4 backward passes)"


@pytest.mark.parametrize("method", METHODS)
def test_a_watcher_stops_every_saliency_method_at_its_next_pass(counted_model, tokenizer, method):
    """Captum's loops call the model through their own forward function: the watcher still sees every pass."""
    model, counted = counted_model
    encoding = tokenizer.encode(LONG)
    seen = []

    def stop_after_the_preparation(rows: int) -> None:
        seen.append(rows)
        if sum(seen) > 3:
            raise StoppedError("the visitor left")

    counted.reset()
    with pytest.raises(StoppedError), watching(stop_after_the_preparation):
        saliency(model, tokenizer, encoding, method, steps=16, samples=3, batch_size=1)
    assert counted.forward == 3  # the pass after the preparation never started
    assert seen.count(0) >= 3 * model.config.num_layers  # between layers too, so one long pass can stop midway
    counted.reset()
    saliency(model, tokenizer, encoding, "gradient_x_input")  # outside the block nobody watches
    assert counted.forward == 4


class LayerRows:
    """Rows through each layer's MLP, counted at its second map (the model's own layers; batched value zeroing's
    recomputed ones, which run the MLP's maps and not the block), and DecompX's parts carried through each layer
    (it runs the layer's weights, not its modules): over the number of layers, forward-pass equivalents."""

    def __init__(self, model: Bert, monkeypatch):
        self.rows = 0
        for layer in model.transformer:
            layer.residual.mlp2.register_forward_pre_hook(self._count)
        through_layer = decompx_module.through_layer

        def counted_through_layer(recorded, parts, bias, config):
            self.rows += parts.shape[1]  # [query, part, hidden]: one row per part
            return through_layer(recorded, parts, bias, config)

        monkeypatch.setattr(decompx_module, "through_layer", counted_through_layer)

    def _count(self, module, args):
        self.rows += args[0].shape[0]


@pytest.mark.parametrize("text", [SHORT, LONG])
@pytest.mark.parametrize("method", MIXING_METHODS)
def test_context_mixing_makes_the_layer_passes_its_cost_says(counted_model, tokenizer, monkeypatch, text, method):
    """Value zeroing and DecompX in several batches (small memory budgets): tokens + 1 rows through every layer
    after the recorded pass. The norm-based methods' arithmetic on the recorded vectors is not the model's modules:
    the model makes only the recorded pass, and their cost's extra passes are the time they take (below)."""
    model, counted = counted_model
    monkeypatch.setattr(value_zeroing_module, "ROWS_BUDGET", 3 * 16 * model.config.intermediate_size)
    monkeypatch.setattr(decompx_module, "PARTS_BUDGET", 3 * 16 * model.config.intermediate_size)
    layer_rows = LayerRows(model, monkeypatch)
    encoding = tokenizer.encode(text)
    cost = mixing_cost(method, len(encoding))
    counted.reset()
    _, cache = record_for_mixing(model, *encoding.tensors())
    context_mixing(model, cache, method)
    assert counted.forward == 1 and counted.backward == 0  # the recorded pass
    passes = layer_rows.rows / model.config.num_layers
    arithmetic = NORM_PASSES_AT_512.get(method, 0) and max(1, math.ceil(NORM_PASSES_AT_512[method] * len(encoding) / 512))
    assert passes + arithmetic == cost.forward_passes and cost.tokens == len(encoding)


@pytest.mark.parametrize("method", NORM_PASSES_AT_512)
def test_the_norm_based_methods_cost_grows_with_the_tokens_as_measured(method):
    """As long as NORM_PASSES_AT_512 passes at 512 tokens (bench/mixing.py's ratio, rounded up), linearly fewer at
    fewer tokens, never less than one; attention adds nothing to its recorded pass."""
    assert mixing_cost(method, 512).forward_passes == 1 + NORM_PASSES_AT_512[method]
    assert mixing_cost(method, 128).forward_passes == 1 + math.ceil(NORM_PASSES_AT_512[method] / 4)
    assert mixing_cost(method, 8).forward_passes == 2
    assert mixing_cost("attention", 512).forward_passes == 1
    assert mixing_cost(method, 512).forward_passes < mixing_cost("value-zeroing", 512).forward_passes


@pytest.mark.parametrize("method", NORM_PASSES_AT_512)
def test_a_watcher_stops_the_norm_based_methods_between_key_chunks(counted_model, tokenizer, monkeypatch, method):
    """Their chunks of keys are the points a watcher may stop them at: one chunk of three keys, then the stop."""
    model, _ = counted_model
    encoding = tokenizer.encode(LONG)
    monkeypatch.setattr(norm_based_module, "PARTS_BUDGET", 3 * len(encoding) * model.config.hidden_size)
    _, cache = record_for_mixing(model, *encoding.tensors())
    chunks, stop = stopping_at_the_second_check()
    with pytest.raises(StoppedError), watching(stop):
        context_mixing(model, cache, method)
    assert chunks == [0, 0]
    with watching(chunks.append):
        context_mixing(model, cache, method)
    keys = len(encoding)
    assert len(chunks) == 2 + model.config.num_layers * math.ceil(keys / 3)  # every chunk of every layer


@pytest.mark.parametrize("method", [name for name, info in MIXING_METHODS.items() if info.heavy])
def test_a_watcher_stops_value_zeroing_and_decompx_between_their_batches(counted_model, tokenizer, monkeypatch, method):
    model, _ = counted_model
    encoding = tokenizer.encode(LONG)
    first_batch = 3  # rows in one batched pass at these memory budgets
    monkeypatch.setattr(value_zeroing_module, "ROWS_BUDGET", first_batch * len(encoding) * model.config.intermediate_size)
    monkeypatch.setattr(decompx_module, "PARTS_BUDGET", first_batch * len(encoding) * model.config.intermediate_size)
    _, cache = record_for_mixing(model, *encoding.tensors())
    layer_rows = LayerRows(model, monkeypatch)
    checks, stop = stopping_at_the_second_check()
    with pytest.raises(StoppedError), watching(stop):
        context_mixing(model, cache, method)
    # value zeroing: the unchanged row of the first layer, then one batch of it; DecompX: one batch through each layer
    assert layer_rows.rows == (1 + first_batch if method == "value-zeroing" else first_batch * model.config.num_layers)


def test_a_watcher_stops_the_probes_between_their_tasks(tokenizer):
    """The probes' training makes no forward pass: between tasks it asks the watcher, which may stop it."""
    from bert.analysis.probing.pipeline import probe_features

    model = small_bert(tokenizer.vocab_size, seed=0)
    data = sentence_set(builtin_sentences(40), "built-in")
    features = extract_features(model, tokenizer, data, tasks=["pos", "position"], settings=ProbeSettings(seed=2))
    asked, stop = stopping_at_the_second_check()
    with pytest.raises(StoppedError), watching(stop):
        probe_features(features, ["pos", "position"], ProbeSettings(seed=2))
    assert asked == [0, 0]
