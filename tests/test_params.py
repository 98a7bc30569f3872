"""Parameter counts: the arithmetic per part, the published sizes (Devlin et al. 2019), and exact totals from `transformers` models.

BERT-base and BERT-large are built on the meta device: shapes without memory, so this stays light.
"""
from __future__ import annotations

import pytest
import torch

import bert
from bert import BertConfig, count_parameters


def numel(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # parameters() counts a tied tensor once


def hf_twin(config: BertConfig):
    """The transformers config with the same sizes: built independently of BertConfig.to_hf_dict."""
    from transformers import BertConfig as HFBertConfig

    return HFBertConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size, num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads, intermediate_size=config.intermediate_size,
        max_position_embeddings=config.max_position_embeddings, type_vocab_size=config.type_vocab_size,
    )


def test_seed_004_figures_for_bert_base():
    counts = count_parameters(BertConfig.base())
    assert counts["attention_qkv_weights_per_layer"] == 3 * 768 * 768 == 1_769_472
    assert counts["mlp_weights_per_layer"] == 2 * 768 * 3072 == 4_718_592
    weights_per_layer = counts["attention_qkv_weights_per_layer"] + counts["mlp_weights_per_layer"]
    assert round(weights_per_layer / 1e6, 1) == 6.5  # "TOTAL PARAMETERS PER LAYER: ~6.5M"
    assert round(12 * weights_per_layer / 1e6) == 78  # "TOTAL ENCODER PARAMETERS IN ALL 12x LAYERS = ~78M"


@pytest.mark.parametrize("config, published", [(BertConfig.base(), 110e6), (BertConfig.large(), 340e6)], ids=["base", "large"])
def test_published_sizes(config, published):
    """Devlin et al. 2019: base 110M, large 340M (published, rounded: the BertModel with pooler is 109.5M / 335.1M)."""
    total = count_parameters(config, mlm_head=False, pooler=True)["total"]
    assert abs(total - published) / published < 0.02


def test_named_constructors_match_the_papers_sizes():
    base, large = BertConfig.base(), BertConfig.large()
    assert (base.num_layers, base.hidden_size, base.num_heads, base.head_size) == (12, 768, 12, 64)
    assert (large.num_layers, large.hidden_size, large.num_heads, large.intermediate_size) == (24, 1024, 16, 4096)


HEAD_LAYOUTS = {  # transformers class -> our heads
    "BertModel": dict(mlm_head=False, pooler=True, nsp_head=False),
    "BertForMaskedLM": dict(mlm_head=True, pooler=False, nsp_head=False),
    "BertForPreTraining": dict(mlm_head=True, pooler=True, nsp_head=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("architecture", list(HEAD_LAYOUTS))
@pytest.mark.parametrize("size", ["base", "large"])
def test_exact_totals_against_transformers(size, architecture):
    import transformers

    config = getattr(BertConfig, size)()
    heads = HEAD_LAYOUTS[architecture]
    with torch.device("meta"):
        theirs = getattr(transformers, architecture)(hf_twin(config))
        ours = bert.Bert(config, **heads)
    expected = numel(theirs)
    assert count_parameters(config, **heads)["total"] == expected
    assert numel(ours) == expected


def test_parts_against_transformers_modules():
    """Each part of the count against the transformers module that holds it (BERT-base, meta device)."""
    from transformers import BertForPreTraining

    config = BertConfig.base()
    counts = count_parameters(config, mlm_head=True, pooler=True, nsp_head=True)
    with torch.device("meta"):
        theirs = BertForPreTraining(hf_twin(config))
    layer = theirs.bert.encoder.layer[0]
    assert counts["embedding"] == numel(theirs.bert.embeddings)
    assert counts["attention_per_layer"] == numel(layer.attention)
    assert counts["mlp_per_layer"] == numel(layer.intermediate) + numel(layer.output)
    assert counts["layer"] == numel(layer)
    assert counts["encoder_layers"] == numel(theirs.bert.encoder)
    assert counts["pooler"] == numel(theirs.bert.pooler)
    assert counts["nsp_head"] == numel(theirs.cls.seq_relationship)
    tied_decoder = config.vocab_size * config.hidden_size  # the decoder weight is the token embedding
    assert counts["lm_head"] == numel(theirs.cls.predictions) - tied_decoder


@pytest.mark.parametrize("heads", list(HEAD_LAYOUTS.values()), ids=list(HEAD_LAYOUTS))
def test_count_matches_our_own_modules_for_odd_sizes(heads):
    """A config with nothing at its default: every size enters the count where it should."""
    config = BertConfig(vocab_size=101, hidden_size=24, num_layers=3, num_heads=2, intermediate_size=40,
                        max_position_embeddings=17, type_vocab_size=3)
    assert count_parameters(config, **heads)["total"] == numel(bert.Bert(config, **heads))


TASK_LAYOUTS = {  # transformers class (3 labels) -> our heads, and the transformers module that holds the task head
    "BertForSequenceClassification": (dict(mlm_head=False, pooler=True, classifier_labels=3), "classifier", "classifier"),
    "BertForTokenClassification": (dict(mlm_head=False, pooler=False, tagger_labels=3), "tagger", "classifier"),
    "BertForNextSentencePrediction": (dict(mlm_head=False, pooler=True, nsp_head=True), "nsp_head", "cls"),
}


@pytest.mark.parametrize("architecture", list(TASK_LAYOUTS))
def test_task_heads_against_transformers(architecture):
    """Fine-tuned and NSP models: the total and the head's own count against transformers' model on the same
    tiny config, and model_heads reads the heads off our model."""
    import transformers

    from bert.params import model_heads

    config = BertConfig(vocab_size=101, hidden_size=24, num_layers=3, num_heads=2, intermediate_size=40,
                        max_position_embeddings=17, type_vocab_size=3)
    heads, ours_name, theirs_name = TASK_LAYOUTS[architecture]
    hf = hf_twin(config)
    hf.num_labels = 3
    theirs = getattr(transformers, architecture)(hf)
    ours = bert.Bert(config, **heads)
    counts = count_parameters(config, **model_heads(ours))
    assert counts["total"] == numel(theirs) == numel(ours)
    assert counts[ours_name] == numel(getattr(theirs, theirs_name)) == numel(getattr(ours, ours_name))
    assert counts["pooler"] == (numel(theirs.bert.pooler) if theirs.bert.pooler is not None else 0)
