"""Task heads (sequence / pair classification, regression, token classification, next sentence) against
`transformers` on the same random weights, loaded from their checkpoints and saved back for them to load."""
from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

import bert
from bert import CheckpointError, InvalidInputError, MissingHeadError
from bert.checkpoint import save_hf_folder
from bert_test_support import TINY_VOCAB, hf_config, randomize_

TOLERANCE = dict(atol=1e-5, rtol=1e-5)
LABELS = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]

# architecture -> (extra transformers config, our output head, the hook holding its logits)
HEADS = {
    "BertForSequenceClassification": (dict(num_labels=6, id2label=dict(enumerate(LABELS))), "classifier", "classifier.hook_logits"),
    "regression": (dict(num_labels=1, problem_type="regression"), "classifier", "classifier.hook_logits"),
    "BertForTokenClassification": (dict(num_labels=5), "tagger", "tagger.hook_logits"),
    "BertForNextSentencePrediction": ({}, "nsp", "nsp_head.hook_logits"),
}


def reference_class(architecture: str):
    import transformers

    return getattr(transformers, "BertForSequenceClassification" if architecture == "regression" else architecture)


def reference_logits(theirs, batch) -> torch.Tensor:
    input_ids, token_type_ids, attention_mask = batch
    with torch.no_grad():
        return theirs(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).logits


def assert_same_logits(ours: torch.Tensor, theirs: torch.Tensor, attention_mask: torch.Tensor, what: str) -> None:
    assert ours.shape == theirs.shape, f"{what}: shape {tuple(ours.shape)} vs transformers {tuple(theirs.shape)}"
    if ours.dim() == 3:  # per token: what a padded position computes is meaningless in both
        ours, theirs = ours[attention_mask.bool()], theirs[attention_mask.bool()]
    torch.testing.assert_close(ours, theirs, **TOLERANCE, msg=lambda m: f"{what}: {m}")


@pytest.mark.slow
@pytest.mark.parametrize("architecture", list(HEADS))
def test_transformers_task_checkpoint_loads_and_matches(architecture, tiny_hf_config, tiny_batch, save_hf_model):
    extra, method, hook = HEADS[architecture]
    for key, value in extra.items():
        setattr(tiny_hf_config, key, value)
    torch.manual_seed(0)
    theirs = randomize_(reference_class(architecture)(tiny_hf_config), seed=11)
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    batch = tuple(t[:, : tiny_hf_config.max_position_embeddings] for t in tiny_batch)  # has padding and pairs
    expected = reference_logits(theirs, batch)
    with torch.no_grad():  # both on the same path (without gradients: oneDNN-packed weights)
        direct = ours(*batch, output=method)
        recorded, cache = ours.run_with_cache(*batch, output=method)  # every hook: the step-by-step attention
    assert_same_logits(direct, expected, batch[2], f"{architecture} forward(output={method!r})")
    assert_same_logits(recorded, expected, batch[2], f"{architecture} run_with_cache(output={method!r})")
    assert torch.equal(cache[hook], recorded)
    if method != "nsp":
        assert ours.labels == [tiny_hf_config.id2label[i] for i in range(tiny_hf_config.num_labels)]
    if architecture == "regression":
        assert ours.problem_type == "regression" and ours.labels == ["LABEL_0"]


@pytest.mark.parametrize("architecture", list(HEADS))
def test_our_task_folder_loads_in_transformers(architecture, tmp_path, tiny_vocab_file, tiny_batch):
    extra, method, _ = HEADS[architecture]
    config = bert.BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=48, num_layers=2, num_heads=4, intermediate_size=64, max_position_embeddings=32)
    labels = [extra["id2label"][i] for i in range(6)] if "id2label" in extra else extra.get("num_labels")
    heads = {"classifier": dict(classifier_labels=labels, problem_type=extra.get("problem_type")),
             "tagger": dict(tagger_labels=labels), "nsp": dict(nsp_head=True)}[method]
    ours = randomize_(bert.Bert(config, mlm_head=False, **heads), seed=12)
    folder = save_hf_folder(ours, tmp_path / "ours", tiny_vocab_file)
    written = json.loads((folder / "config.json").read_text())
    assert written["architectures"] == [reference_class(architecture).__name__]
    theirs, loading = reference_class(architecture).from_pretrained(folder, attn_implementation="eager", output_loading_info=True)
    assert not loading["missing_keys"] and not loading["mismatched_keys"], loading
    if method != "nsp":
        assert [theirs.config.id2label[i] for i in range(theirs.config.num_labels)] == ours.labels
        assert theirs.config.problem_type == ours.problem_type
    with torch.no_grad():
        assert_same_logits(ours(*tiny_batch, output=method), reference_logits(theirs.eval(), tiny_batch), tiny_batch[2], architecture)
    reloaded, _ = bert.load_pretrained(str(folder))
    assert reloaded.labels == ours.labels and reloaded.problem_type == ours.problem_type


@pytest.fixture
def classifier_folder(save_hf_model):
    from transformers import BertForSequenceClassification

    config = hf_config(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=40, num_labels=3)
    return save_hf_model(randomize_(BertForSequenceClassification(config), seed=13))


def edit(folder, state_change=None, config_change=None) -> None:
    if state_change:
        state = load_file(folder / "model.safetensors")
        state_change(state)
        save_file(state, folder / "model.safetensors")
    if config_change:
        config = json.loads((folder / "config.json").read_text())
        config_change(config)
        (folder / "config.json").write_text(json.dumps(config))


def test_missing_classifier_tensor_names_the_key(classifier_folder):
    edit(classifier_folder, lambda state: state.pop("classifier.bias"))
    with pytest.raises(CheckpointError, match="missing") as error:
        bert.load_pretrained(str(classifier_folder))
    assert "classifier.bias" in str(error.value)


def test_missing_pooler_under_a_sequence_classifier_names_the_key(classifier_folder):
    edit(classifier_folder, lambda state: state.pop("bert.pooler.dense.weight"))
    with pytest.raises(CheckpointError, match="pooler.dense.weight"):
        bert.load_pretrained(str(classifier_folder))


def test_unexpected_head_tensor_names_the_key(classifier_folder):
    edit(classifier_folder, lambda state: state.update({"classifier.extra.weight": torch.zeros(2)}))
    with pytest.raises(CheckpointError, match="unexpected") as error:
        bert.load_pretrained(str(classifier_folder))
    assert "classifier.extra.weight" in str(error.value)


@pytest.mark.parametrize("architectures", [None, [], ["BertModel"], ["BertForSequenceClassification", "BertForTokenClassification"]])
def test_classifier_without_a_clear_architecture_says_what_to_set(classifier_folder, architectures):
    edit(classifier_folder, config_change=lambda config: config.update(architectures=architectures))
    with pytest.raises(CheckpointError, match="BertForSequenceClassification") as error:
        bert.load_pretrained(str(classifier_folder))
    assert "BertForTokenClassification" in str(error.value)


def test_id2label_that_disagrees_with_the_weights(classifier_folder):
    edit(classifier_folder, config_change=lambda config: config.update(id2label={"0": "a", "1": "b"}))
    with pytest.raises(CheckpointError, match="id2label has 2 labels, but classifier.weight has 3 rows"):
        bert.load_pretrained(str(classifier_folder))


def test_missing_heads_raise_before_running(tiny_model, tiny_batch):
    assert tiny_model.labels is None and not tiny_model.has_classifier and not tiny_model.has_tagger
    for method in ("classifier", "tagger"):
        with pytest.raises(MissingHeadError, match="fine-tune"):
            tiny_model(*tiny_batch, output=method)
        with pytest.raises(MissingHeadError):
            tiny_model.run_with_cache(*tiny_batch, output=method)
    with pytest.raises(InvalidInputError, match="output must be one of"):
        tiny_model.run_with_cache(*tiny_batch, output="summarise")


def test_run_with_cache_records_only_the_chosen_heads_path(tiny_model, tiny_batch):
    nsp, cache = tiny_model.run_with_cache(*tiny_batch, output="nsp")
    assert nsp.shape == (tiny_batch[0].shape[0], 2)
    assert cache["pooler.hook_out"].shape == (tiny_batch[0].shape[0], tiny_model.config.hidden_size)
    assert "nsp_head.hook_logits" in cache and "lm_head.hook_logits" not in cache
    assert [bert.hook_name(kind) for kind in ("pooled", "nsp_logits", "classifier_logits", "tagger_logits")] == [
        "pooler.hook_out", "nsp_head.hook_logits", "classifier.hook_logits", "tagger.hook_logits"]
    _, cache = tiny_model.run_with_cache(*tiny_batch)
    assert "lm_head.hook_logits" in cache and "nsp_head.hook_logits" not in cache


def test_add_output_heads_gives_an_encoder_a_fresh_classifier_and_keeps_the_pooler():
    torch.manual_seed(0)
    config = bert.BertConfig(vocab_size=30, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, classifier_dropout=0.3)
    encoder = bert.Bert(config, mlm_head=False, pooler=True)
    pooler = encoder.pooler.dense.weight.clone()
    encoder.add_output_heads(classifier_labels=["neg", "pos"])
    assert torch.equal(encoder.pooler.dense.weight, pooler)
    assert encoder.labels == ["neg", "pos"] and encoder.problem_type == "single_label_classification"
    assert encoder.classifier.dropout.p == 0.3 and torch.all(encoder.classifier.bias == 0)
    assert "classifier.hook_logits" in encoder.hook_names()
    with pytest.raises(InvalidInputError, match="already has a task head"):
        encoder.add_output_heads(tagger_labels=3)
    with pytest.raises(InvalidInputError, match="not both"):
        bert.Bert(config, classifier_labels=2, tagger_labels=2)
