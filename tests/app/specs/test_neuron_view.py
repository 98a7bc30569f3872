"""The attention page's neuron view: the products of the recorded q and k sum to the recorded score.

References: the model's own hook_scores and hook_pattern, recorded by a separate run_with_cache; the attention
pattern of `transformers` on the same weights; a hand-computed small case."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from app_helpers import array, figures, no_exception
from bert.analysis.attention.query_key import query_key_product
from bert.errors import InvalidInputError
from bert.hooks import hook_name
from viz_app.app import forward, models

SENTENCE = "The cat sat on the mat because it was tired."
# Tolerances from float32 rounding, so that they hold whichever kernels the CPU has (AVX2 or AVX-512 sum in
# different orders). The fused and the step-by-step pass agree on a score to SCORE_TOLERANCE (a few float32 ulps of
# a dot product over a head's 32 dimensions, scaled). A softmax turns a change of at most delta in every score into
# a relative change of at most 2·delta in each weight (first order), plus the float32 rounding of the weight itself.
SCORE_TOLERANCE = 1e-5
FLOAT32_EPS = float(np.finfo(np.float32).eps)
WEIGHT_RTOL = 2 * SCORE_TOLERANCE + 4 * FLOAT32_EPS


@pytest.fixture(scope="module")
def recorded():
    loaded = models.load(models.ModelKey.of("minilm-encoder"))
    prepared = forward.prepare_input(loaded.tokenizer, SENTENCE, None, [], False, 512)
    return loaded, prepared, forward.record(loaded.model, loaded.tokenizer, prepared)


def test_hand_computed_case():
    queries = np.array([[1.0, 2.0], [0.0, 0.0]])
    keys = np.array([[3.0, -1.0], [1.0, 1.0]])
    terms = query_key_product(queries, keys, query=0, key=0)
    np.testing.assert_array_equal(terms.products, [3.0, -2.0])
    assert terms.dot == 1.0 and terms.scale == pytest.approx(2**-0.5)
    np.testing.assert_allclose(terms.scores, [1 / np.sqrt(2), 3 / np.sqrt(2)])
    assert terms.weight == pytest.approx(1 / (1 + np.exp(2 / np.sqrt(2))))
    with pytest.raises(InvalidInputError, match="key position 2"):
        query_key_product(queries, keys, query=0, key=2)
    deberta = query_key_product(queries, keys, query=0, key=0, score_scale=3, recorded=np.array([0.25, 0.75]))
    assert deberta.scale == pytest.approx(6**-0.5) and deberta.score == pytest.approx(1 / np.sqrt(6))
    assert (terms.divisor, deberta.divisor) == ("√2", "√(3 × 2)")
    assert deberta.weight == 0.25  # the recorded row (position terms, a window), not softmax(q·k)


def test_products_sum_to_the_recorded_score(recorded):
    loaded, prepared, result = recorded
    model = loaded.model
    layers = range(model.config.num_layers)
    names = [hook_name(kind, layer) for layer in layers for kind in ("q", "k", "scores", "pattern")]
    input_ids, token_type_ids = prepared.masked.tensors("cpu")
    with torch.inference_mode():
        _, cache = model.run_with_cache(input_ids, token_type_ids, names=names)
    seq = len(prepared.masked)
    for layer in layers:
        scores, pattern = cache[hook_name("scores", layer)][0].numpy(), cache[hook_name("pattern", layer)][0].numpy()
        # the app's pass is fused, this one step by step (it records the scores): equal to float rounding
        np.testing.assert_allclose(result.queries[layer], cache[hook_name("q", layer)][0].numpy(), atol=1e-5)
        np.testing.assert_allclose(result.keys[layer], cache[hook_name("k", layer)][0].numpy(), atol=1e-5)
        for head in range(model.config.num_heads):
            for query in range(seq):
                for key in range(seq):
                    terms = query_key_product(result.queries[layer, head], result.keys[layer, head], query, key)
                    assert terms.products.sum() * terms.scale == pytest.approx(float(scores[head, query, key]), abs=SCORE_TOLERANCE)
                    assert terms.score == pytest.approx(terms.dot * terms.scale, abs=1e-12)
                np.testing.assert_allclose(terms.scores, scores[head, query], atol=SCORE_TOLERANCE)
                np.testing.assert_allclose(terms.weights, pattern[head, query], rtol=WEIGHT_RTOL, atol=FLOAT32_EPS)
                np.testing.assert_allclose(
                    terms.weights, result.attention[layer, head, query], rtol=WEIGHT_RTOL, atol=FLOAT32_EPS
                )


def test_softmax_of_the_scores_is_the_pattern_of_transformers(recorded, minilm_path):
    from transformers import BertModel

    loaded, prepared, result = recorded
    reference = BertModel.from_pretrained(minilm_path, attn_implementation="eager").eval()
    input_ids, token_type_ids = prepared.masked.tensors("cpu")
    with torch.no_grad():
        attentions = reference(input_ids=input_ids, token_type_ids=token_type_ids, output_attentions=True).attentions
    for layer, head in ((0, 0), (2, 5), (5, 11)):
        for query in range(len(prepared.masked)):
            terms = query_key_product(result.queries[layer, head], result.keys[layer, head], query, 0)
            np.testing.assert_allclose(terms.weights, attentions[layer][0, head, query].numpy(), atol=1e-5)


def test_attention_page_shows_the_terms(open_app, recorded):
    _, _, result = recorded
    at = open_app("attention", model="minilm-encoder", text=SENTENCE, layer=2, head=5, focus=3)
    at.selectbox(key="neuron_key").select(8).run()
    no_exception(at)
    terms = query_key_product(result.queries[2, 5], result.keys[2, 5], 3, 8)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["q·k: the sum of the products (before scaling)"] == f"{terms.dot:.3f}"
    assert metrics[f"Score before softmax: q·k / √{terms.products.size}"] == f"{terms.score:.3f}"
    assert metrics["Attention after softmax"] == f"{terms.weight:.1%}"
    [terms_chart] = [f for f in figures(at) if "“sat” (query, position 3) against “it” (key, position 8)" in f["layout"]["title"]["text"]]
    z = array(terms_chart["data"][0]["z"])
    np.testing.assert_allclose(z, np.stack([terms.query_vector, terms.key_vector, terms.products]), rtol=1e-6)
    [scores_chart] = [f for f in figures(at) if "for every key" in f["layout"]["title"]["text"]]
    np.testing.assert_allclose(array(scores_chart["data"][0]["y"]), terms.scores, rtol=1e-5, atol=1e-6)



def test_head_statistics_table_is_each_heads_entropy_and_cls_share(open_app, recorded, minilm_path):
    """The page's table (kept per input, in Arrow's form), against transformers' attention on the same weights:
    every head's mean entropy in bits (scipy) and mean share of attention paid to [CLS], one row per head."""
    from scipy.stats import entropy
    from transformers import BertModel

    _, prepared, _ = recorded
    reference = BertModel.from_pretrained(minilm_path, attn_implementation="eager").eval()
    input_ids, token_type_ids = prepared.masked.tensors("cpu")
    with torch.no_grad():
        attentions = reference(input_ids=input_ids, token_type_ids=token_type_ids, output_attentions=True).attentions
    # each weight agrees to WEIGHT_RTOL (relative) plus a float32 ulp: a share of attention (at most 1) to their
    # sum, and an entropy, whose change is sum |dp| (|log2 p| + 1/ln 2) <= WEIGHT_RTOL (H + 1/ln 2) + the ulps' terms,
    # to WEIGHT_RTOL (log2(tokens) + 1/ln 2) plus a float32 ulp per key
    tokens = len(prepared.masked)
    share_tolerance = WEIGHT_RTOL + FLOAT32_EPS
    entropy_tolerance = WEIGHT_RTOL * (np.log2(tokens) + 1 / np.log(2)) + tokens * FLOAT32_EPS
    for run in range(2):  # the second visitor reads the table kept for the input
        at = open_app("attention", model="minilm-encoder", text=SENTENCE)
        no_exception(at)
        table = at.dataframe[0].value
        assert len(table) == len(attentions) * attentions[0].shape[1]
        for row in table.itertuples():
            pattern = attentions[row.layer][0, row.head].double().numpy()
            assert row.entropy == pytest.approx(entropy(pattern, base=2, axis=-1).mean(), abs=entropy_tolerance)
            assert row.cls == pytest.approx(pattern[:, 0].mean(), abs=share_tolerance)
