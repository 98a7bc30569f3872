"""The analyses run end to end on every family (ModernBERT, DeBERTa-v3 and ESM-2 included): the treebank probes (their word features are transformers'
hidden states at the words' pieces), activation patching (the clean and corrupted metrics are transformers'
logits; patching the whole first residual restores the clean run), saliency (over the parts each family sums) and context mixing."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bert
from bert.analysis.attention.mixing import METHODS as MIXING_METHODS, context_mixing, record_for_mixing
from bert.analysis.attention.mixing_parts import recorded_layers
from bert.analysis.attention.value_zeroing import zeroed_outputs
from bert.analysis.attribution.saliency import PARTS, saliency
from bert.analysis.causal.patching import Patch, patched_metric, patching_sweep, prepare_contrast
from bert.analysis.probing.pipeline import ProbeSettings, run_probes
from bert.analysis.probing.treebank import TreebankSentence, read_treebank
from bert.analysis.probing.word_features import extract_word_features
from bert_test_support import synthetic_conllu
from family_support import FAMILIES, build_hf, run_transformers, write_tiny_tokenizer

MASKED_LM = {"roberta": "RobertaForMaskedLM", "distilbert": "DistilBertForMaskedLM", "albert": "AlbertForMaskedLM",
             "electra": "ElectraForMaskedLM", "modernbert": "ModernBertForMaskedLM", "deberta-v2": "DebertaV2ForMaskedLM",
             "eurobert": "EuroBertForMaskedLM", "gte": "GteForMaskedLM", "esm": "EsmForMaskedLM"}  # ELECTRA: the generator, the family's masked-LM
# the parts each family's embedding sums, where not BERT's three: ModernBERT's and DeBERTa-v3's positions enter the
# attention (rotary, relative), DistilBERT has no segments
EMBEDDING_PARTS = {"distilbert": ("token", "position"), "modernbert": ("token",), "deberta-v2": ("token",), "eurobert": ("token",),
                   "gte": ("token", "segment"), "esm": ("token",)}
CLEAN, CORRUPTED, ANSWER, FOIL = "the dog [MASK] at the park .", "her cat [MASK] to the mail .", "barked", "mail"


@pytest.fixture(scope="module", params=(*FAMILIES, "modernbert", "deberta-v2", "eurobert", "gte", "esm"))
def loaded(request, tmp_path_factory, tiny_vocab_file):
    family = request.param
    theirs = build_hf(family, MASKED_LM[family])
    folder = tmp_path_factory.mktemp(family)
    theirs.save_pretrained(folder)
    write_tiny_tokenizer(folder, tiny_vocab_file)
    ours, tokenizer = bert.load_pretrained(str(folder))
    return family, ours, tokenizer, theirs


def _batch(family, ids):
    ids = torch.tensor([ids])
    return ids, torch.zeros_like(ids), torch.ones_like(ids)


def test_word_features_are_transformers_hidden_states_at_the_first_pieces(loaded):
    family, ours, tokenizer, theirs = loaded
    words = ("the", "mailman", "barked")
    features = extract_word_features(ours, tokenizer, [TreebankSentence(words, {})], "first", batch_size=1)
    encoding = tokenizer.encode_words(list(words))
    firsts = [encoding.word_ids.index(word) for word in range(len(words))]  # [1, 2, 4] in WordPiece ("mail", "##man")
    reference = run_transformers(theirs, family, _batch(family, encoding.input_ids))
    states = torch.stack(reference.hidden_states)[:, 0, firsts]  # [layer + 1, word, hidden]
    ours_states = features.sentence(0)
    if ours.final_norm is not None:  # pre-norm: transformers' last hidden state is the final LayerNorm's output
        with torch.no_grad():
            ours_states = torch.cat([ours_states[:-1], ours.final_norm(ours_states[-1:])])
    torch.testing.assert_close(ours_states, states, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_treebank_probes_run_at_every_layer(loaded):
    family, ours, tokenizer, _ = loaded
    report = run_probes(ours, tokenizer, read_treebank(synthetic_conllu(20).encode(), name="synthetic.conllu"),
                        settings=ProbeSettings(seed=1, mdl=False, max_train_words=60), model_name=family)
    assert {"upos", "deprel", "distance", "depth"} <= set(report.tasks)
    for name in ("upos", "distance"):
        assert [row["hidden_states_index"] for row in report.tasks[name].layers] == list(range(ours.config.num_layers + 1))


def test_patching_runs_and_its_metrics_are_transformers_logits(loaded):
    family, ours, tokenizer, theirs = loaded
    contrast = prepare_contrast(tokenizer, CLEAN, CORRUPTED, ANSWER, FOIL)
    for encoding, name in ((contrast.clean, "clean"), (contrast.corrupted, "corrupted")):
        logits = run_transformers(theirs, family, _batch(family, encoding.input_ids)).logits[0, contrast.mask_position]
        expected = float(logits[contrast.answer_id] - logits[contrast.foil_id])
        assert getattr(patching_sweep(ours, contrast, sites=["residual"]), f"{name}_metric") == pytest.approx(expected, abs=1e-4)
    assert patched_metric(ours, contrast, [Patch("residual", 0)]) == pytest.approx(1.0, abs=1e-5)
    result = patching_sweep(ours, contrast, head_layer=1)
    last = ours.config.num_layers
    expected = torch.zeros(len(contrast.clean))
    expected[contrast.mask_position] = 1  # the masked-LM head reads the [MASK] position only
    gap = abs(result.clean_metric - result.corrupted_metric)  # the metric is divided by it: fp32 noise grows as it shrinks
    torch.testing.assert_close(result.residual[last], expected, atol=max(1e-4, 1e-5 / gap), rtol=0)
    assert result.heads.shape == (last, ours.config.num_heads)
    assert result.head_positions.shape == (ours.config.num_heads, len(contrast.clean))


def test_saliency_splits_over_the_parts_the_family_sums(loaded):
    """Integrated gradients on every family: a row per embedding part the model sums (DistilBERT has no segment
    embedding), f(x) is transformers' log p at the [MASK], and the rows add up to f(x) - f(baseline)."""
    family, ours, tokenizer, theirs = loaded
    encoding = tokenizer.encode("the dog [MASK] at the park .")
    result = saliency(ours, tokenizer, encoding, "integrated_gradients", steps=64)
    assert result.parts == EMBEDDING_PARTS.get(family, PARTS)
    assert result.attributions.shape == (len(result.parts), len(encoding.input_ids))
    reference = run_transformers(theirs, family, _batch(family, encoding.input_ids))
    expected = reference.logits[0, result.position].log_softmax(-1)[result.explained.answer_id]
    assert result.score == pytest.approx(float(expected), abs=1e-4)
    difference = result.score - result.baseline_score
    assert result.total == pytest.approx(difference, rel=0.01, abs=1e-3)


def test_context_mixing_runs_on_every_family(loaded):
    """Every mixing method on every family (ALBERT's one layer is applied at each depth): a finite [layer, query,
    key] matrix, and a layer recomputed from its recorded parts with no value zeroed is transformers' layer."""
    family, ours, tokenizer, theirs = loaded
    if ours.config.gated_mlp and not ours.config.pre_norm:  # GTE: the decompositions refused in words, the weights run
        input_ids, token_type_ids, _ = _batch(family, tokenizer.encode(CLEAN).input_ids)
        _, cache = record_for_mixing(ours, input_ids, token_type_ids)
        assert np.isfinite(context_mixing(ours, cache, "attention").layers).all()
        with pytest.raises(bert.errors.InvalidInputError, match="this model's MLP is gated"):
            context_mixing(ours, cache, "value-zeroing")
        return
    if ours.config.pre_norm:
        pytest.skip("the decompositions take a post-LN layer apart; ModernBERT's refusal: tests/families/test_modernbert.py")
    ids = tokenizer.encode("the dog [MASK] at the park .").input_ids
    input_ids, token_type_ids, _ = _batch(family, ids)
    _, cache = record_for_mixing(ours, input_ids, token_type_ids)
    reference = run_transformers(theirs, family, _batch(family, ids))
    for recorded in recorded_layers(ours, cache):
        unchanged = zeroed_outputs(recorded, recorded.x.new_ones(1, len(ids)))[0]
        torch.testing.assert_close(unchanged, reference.hidden_states[recorded.layer + 1][0], atol=1e-5, rtol=1e-5)
    for method in MIXING_METHODS:
        layers = context_mixing(ours, cache, method).layers
        assert layers.shape == (ours.config.num_layers, len(ids), len(ids)) and np.isfinite(layers).all(), method
