"""Every page of the registry (viz_app/app/navigation.py) with a tiny random model of each of BERT's family, opened as a
visitor opens a folder (the `model=` link parameter): the page works, or it says in one line why it cannot apply
to that model (one segment, no next-sentence head, no masked-LM head). Never an exception.

The models are built by `transformers`' own classes (tests/families/family_support.py): hidden 32, 2 layers (ALBERT
one layer applied three times), the tiny WordPiece vocabulary, 256 positions (the built-in corpus's lines spelt in
it are longer than 64 tokens). One AppTest per model is moved from page to page, as
a visitor would.
"""
from __future__ import annotations

import pytest

from app_helpers import HOME, PAGES, TIMEOUT, go, no_exception, texts
from families.family_support import build_hf, write_tiny_tokenizer

# name -> (family, transformers class, config fields): each family's pre-training heads. ALBERT's has the
# sentence-order head (two classes, as in the published checkpoints); ELECTRA's discriminator has no masked-LM head
# (the prediction page shows which words look replaced instead); ModernBERT (Warner et al. 2024): rotary positions,
# pre-norm layers, local attention in layers 1 and 2 of its four; DeBERTa-v3 (He et al. 2023): relative positions, with
# and without a masked-LM head (the released v3 checkpoints have none).
MODELS = {
    "roberta": ("roberta", "RobertaForMaskedLM", {}),
    "distilbert": ("distilbert", "DistilBertForMaskedLM", {}),
    "albert": ("albert", "AlbertForPreTraining", {"num_labels": 2}),
    "electra-discriminator": ("electra", "ElectraForPreTraining", {}),
    "electra-generator": ("electra", "ElectraForMaskedLM", {}),
    "modernbert": ("modernbert", "ModernBertForMaskedLM", {}),
    "deberta": ("deberta-v2", "DebertaV2ForMaskedLM", {}),
    "deberta-classifier": ("deberta-v2", "DebertaV2ForSequenceClassification", {}),  # as released: no masked-LM head
}
QUERY = {"text": "the dog barked at the [MASK].", "pair": "the cat went to the park."}
NO_MLM_HEAD = "This model has no masked-LM head, so there is no prediction to analyse."
NO_SENTENCE_HEAD = "This model has no sentence-level head."
# (model, page) -> the one line the page shows instead of its charts
CANNOT = {
    ("distilbert", "embeddings"): "This model has no segment embeddings",
    ("electra-discriminator", "logit_lens"): NO_MLM_HEAD,
    ("electra-discriminator", "head_ablation"): NO_MLM_HEAD,
    ("electra-discriminator", "saliency"): NO_MLM_HEAD,
    ("electra-discriminator", "causal_tracing"): "This model has no masked-LM head, so it makes no guess to trace.",
    ("deberta-classifier", "prediction"): "This model has no masked-LM head, so it cannot guess masked words",
    **{("deberta-classifier", page): NO_MLM_HEAD for page in ("logit_lens", "head_ablation", "saliency")},
    ("deberta-classifier", "causal_tracing"): "This model has no masked-LM head, so it makes no guess to trace.",
    ("deberta-classifier", "embeddings"): "This model has no position or segment embeddings: every attention layer adds scores",
    ("modernbert", "embeddings"): "This model has no position or segment embeddings: it rotates each position",
    ("deberta", "embeddings"): "This model has no position or segment embeddings: every attention layer adds scores",
    **{(name, "sentence_tasks"): NO_SENTENCE_HEAD
       for name in ("roberta", "distilbert", "electra-discriminator", "electra-generator", "modernbert", "deberta")},
}
# (model, page) -> what the page shows where a family does something of its own
SHOWS = {
    ("roberta", "embeddings"): "This model has one segment embedding, added to every token alike",
    ("albert", "sentence_tasks"): "Are A and B in their order?",
    ("electra-discriminator", "prediction"): "Which words look replaced?",  # its replaced-token head, in place of guesses
    ("modernbert", "prediction"): "Local attention: layers 0, 3, 6, … see the whole input, the others only the 4",
    ("deberta", "attention"): "Positions enter every attention layer as relative distances",  # the sidebar's note
    ("modernbert", "mixing"): "Only the attention weights here: the decompositions follow BERT's post-LN layers",
    **{(name, "corpus_search"): "Searching " for name in MODELS},  # the built-in corpus indexed: 256 positions
}


@pytest.fixture(scope="module")
def family_folders(tmp_path_factory, tiny_vocab_file):
    """name -> a saved folder (weights, config.json, the tiny vocabulary), built once for the module."""
    folders = {}
    for name, (family, architecture, fields) in MODELS.items():
        folder = tmp_path_factory.mktemp(name)
        positions = 256 + (2 if family == "roberta" else 0)
        build_hf(family, architecture, max_position_embeddings=positions, **fields).save_pretrained(folder)
        write_tiny_tokenizer(folder, tiny_vocab_file)
        folders[name] = folder
    return folders


@pytest.fixture(scope="module")
def apps():
    return {}


@pytest.mark.slow  # about 30 s for the 95 pages
@pytest.mark.parametrize("page", list(PAGES))
@pytest.mark.parametrize("name", list(MODELS))
def test_every_page_works_or_says_why(apps, family_folders, name, page):
    from streamlit.testing.v1 import AppTest

    if name not in apps:
        at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
        at.query_params.update({"model": str(family_folders[name]), **QUERY})
        at.run()
        no_exception(at)
        assert not [error.value for error in at.sidebar.error], name  # the model loaded
        apps[name] = at
    at = go(apps[name], page)
    no_exception(at)
    shown = texts(at)
    assert "Traceback" not in shown and 'File "' not in shown, (name, page)
    if (name, page) in CANNOT:
        assert CANNOT[name, page] in shown, (name, page)
    else:
        assert not [element.value for element in at.warning if "has no" in str(element.value)], (name, page)
    if (name, page) in SHOWS:
        assert SHOWS[name, page] in shown, (name, page)
