"""The Features and Corpus search pages as specs, outside Streamlit: a lesson step's figures (viz_app/lessons/views.py)
and their price (viz_app/lessons/steps.py) come from the spec alone, and the price is the forward passes the
computation really makes, counted by a watcher (bert/stopping.py) at every pass, against the corpus's own sentences.
A tiny random BERT: the numbers, not the model, are checked."""
from __future__ import annotations

import numpy as np
import pytest

from bert.stopping import watching
from viz_app.app import models
from viz_app.app.forward import prepare_input
from viz_app.lessons.steps import page_computations
from viz_app.lessons.views import view_charts
from viz_app.specs.base import Inputs, planned_cost

pytestmark = pytest.mark.slow  # a pass over the 992 built-in sentences for each


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, tiny_vocab_file):
    """A tiny random BERT with 256 positions: the built-in sentences fit."""
    from transformers import BertForMaskedLM

    from bert_test_support import TINY_CONFIGS, hf_config, randomize_

    folder = tmp_path_factory.mktemp("tiny_256")
    config = hf_config(**TINY_CONFIGS["2layers-h64-4heads-gelu_new"], max_position_embeddings=256)
    randomize_(BertForMaskedLM(config), seed=1).save_pretrained(folder)
    (folder / "vocab.txt").write_bytes(tiny_vocab_file.read_bytes())
    return models.load(models.ModelKey.of("folder", str(folder)))


def counted_rows(draw):
    """What `draw()` returns, and the rows of every forward pass it made."""
    rows = []
    with watching(rows.append):
        drawn = draw()
    return drawn, sum(rows)


def figure_cost(page: str, loaded, state) -> int:
    """The forward passes the step's figures of `page` are priced at."""
    inputs = Inputs(loaded, prepare_input(loaded.tokenizer, state["text"], "", (), False, loaded.summary.max_positions))
    return planned_cost(page_computations(page, state, inputs), inputs).forward_passes


def test_a_neurons_step_counts_every_token_of_the_corpus_at_its_price(loaded):
    from viz_app.specs.features import builtin_corpus

    state = {"text": "The dog [MASK] at the park.", "features_look_at": "MLP neurons", "neurons_layer": 1,
             "neurons_neuron": 5, "neurons_corpus": "builtin"}
    charts, rows = counted_rows(lambda: view_charts("features", loaded, state))
    corpus = builtin_corpus("builtin", loaded.tokenizer, loaded.model.config.max_position_embeddings)
    assert rows == len(corpus.encodings) == figure_cost("features", loaded, state)
    [histogram] = charts
    counts = np.concatenate([np.asarray(trace.y) for trace in histogram.figure.data if trace.y is not None])
    assert counts.sum() == sum(len(encoding) for encoding in corpus.encodings)  # every token, [CLS] and [SEP] too


def test_a_search_step_finds_k_matches_at_the_price_of_the_index_and_the_query(loaded):
    state = {"text": "The dog barked at the mailman.", "search_k": 7}
    charts, rows = counted_rows(lambda: view_charts("corpus_search", loaded, state))
    assert rows == 250 + 1  # the first 250 built-in sentences (the registry's default) once each, then the query
    assert rows == figure_cost("corpus_search", loaded, state)
    words, by_layer = charts
    assert sum(np.asarray(words.figure.data[0].y)) == 7
    assert len(by_layer.figure.data[0].x) == loaded.summary.layers + 1  # the embeddings, then every layer
