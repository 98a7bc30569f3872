"""The shipped fine-tuned model `minilm-trec`: small, only what differs from minilm-encoder, equal to
`transformers` on the same weights, and right on plain questions it never saw."""
from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

import bert
from bert.pretrained import FINETUNED_FILES

SHIPPED = FINETUNED_FILES["minilm-trec"]
pytestmark = pytest.mark.skipif(not SHIPPED.is_file(), reason=f"{SHIPPED} is not trained yet (recipes/finetune_demo.py trec --ship)")

# Written for this test, not from the TREC files: one plain question per class the model should not miss.
QUESTIONS = {
    "Who wrote the novel Moby Dick?": "HUM",
    "Where is the Eiffel Tower?": "LOC",
    "How many legs does a spider have?": "NUM",
    "Why do leaves change colour in autumn?": "DESC",
    "What does NASA stand for?": "ABBR",
    "What kind of animal is a dolphin?": "ENTY",
}


def test_only_the_top_layers_pooler_and_classifier_ship_in_fp16_under_10_mb():
    tensors = load_file(SHIPPED)
    assert SHIPPED.stat().st_size <= 10 * 2**20
    assert all(t.dtype == torch.float16 for t in tensors.values())
    prefixes = {key.split(".")[0] if not key.startswith("encoder.") else ".".join(key.split(".")[:3]) for key in tensors}
    assert prefixes == {"encoder.layer.4", "encoder.layer.5", "pooler", "classifier"}


def test_loads_as_a_labelled_classifier_and_matches_transformers(minilm_path):
    from transformers import BertForSequenceClassification

    model, tokenizer = bert.load_pretrained("minilm-trec")
    assert model.labels == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    assert model.problem_type == "single_label_classification" and model.has_classifier
    theirs = BertForSequenceClassification.from_pretrained(minilm_path, num_labels=6, attn_implementation="eager").eval()
    overlay = {("" if key.startswith("classifier.") else "bert.") + key: t.float() for key, t in load_file(SHIPPED).items()}
    theirs.load_state_dict(overlay, strict=False)  # the rest is minilm-encoder, already loaded
    for question in QUESTIONS:
        input_ids, token_type_ids = tokenizer.encode(question).tensors()
        with torch.no_grad():
            torch.testing.assert_close(model(input_ids, token_type_ids, output="classifier"), theirs(input_ids=input_ids, token_type_ids=token_type_ids).logits, atol=1e-5, rtol=1e-5)


def test_plain_questions_get_their_type():
    model, tokenizer = bert.load_pretrained("minilm-trec")
    predicted = {}
    for question in QUESTIONS:
        input_ids, token_type_ids = tokenizer.encode(question).tensors()
        with torch.no_grad():
            predicted[question] = model.labels[int(model(input_ids, token_type_ids, output="classifier").argmax())]
    assert predicted == QUESTIONS
