"""DeBERTa-v3 (He et al. 2021, "DeBERTa: Decoding-enhanced BERT with Disentangled Attention"; He et al. 2023,
"DeBERTaV3") against `transformers` on the same random weights: tiny DebertaV2 checkpoints saved by transformers'
own classes load through bert.load_pretrained (config.json's model_type "deberta-v2" picks the family) and give the
same logits, every hidden state and every attention pattern within 1e-5 (padded positions included), in a padded batch whose longest row (32
tokens) is far longer than the tiny configs' 8 position buckets, so that the log buckets are used; the three terms of
the disentangled scores are each transformers' own; strict loading names the tensor; a folder we save loads in
transformers with the same logits; without recording, the fused kernel with the position terms as a bias gives the
same logits.

The reference runs with attn_implementation="eager": transformers' DeBERTa-v2 has no other attention, and eager is
the implementation that returns the attention patterns, so that every one can be compared.
"""
from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

import bert
from bert import attention as attn
from bert.config import BertConfig
from bert.errors import CheckpointError, ConfigError
from bert.hooks import is_per_head
from bert_test_support import TINY_VOCAB, pad_rows, random_rows, randomize_
from family_support import compare, load_saved, run_transformers

TOLERANCE = dict(atol=1e-5, rtol=1e-5)
LAYOUT = [(30, 0), (9, 0), (10, 8)]  # the longest row 32 tokens (with [CLS] and [SEP]); a pair; padding
ARCHITECTURES = ["DebertaV2ForMaskedLM", "DebertaV2ForSequenceClassification", "DebertaV2ForTokenClassification"]
# deberta-v3-base's config.json, small; then exact distances (no buckets) with c2p only; then segments
VARIANTS = {
    "v3": {},
    "c2p-exact": dict(position_buckets=-1, max_relative_positions=12, pos_att_type="c2p"),
    "segments": dict(type_vocab_size=2),
}
CASES = [pytest.param(architecture, "v3", id=architecture) for architecture in ARCHITECTURES] + [
    pytest.param("DebertaV2ForMaskedLM", "c2p-exact", id="DebertaV2ForMaskedLM-c2p-exact"),
    pytest.param("DebertaV2ForSequenceClassification", "segments", id="DebertaV2ForSequenceClassification-segments"),
]


def hf_deberta_config(**fields):
    """A tiny transformers DebertaV2Config as deberta-v3-base's config.json (relative attention, shared keys, p2c
    and c2p, LayerNorm'd relative embeddings, no position table, no segments), with 8 buckets over 64 positions."""
    import transformers

    v3 = dict(relative_attention=True, position_buckets=8, max_relative_positions=-1, pos_att_type="p2c|c2p",
              share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False, type_vocab_size=0,
              layer_norm_eps=1e-7, hidden_act="gelu")
    sizes = dict(vocab_size=len(TINY_VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40,
                 max_position_embeddings=64, pad_token_id=0, num_labels=3, attn_implementation="eager")
    return transformers.DebertaV2Config(**{**sizes, **v3, **fields})


def build(architecture: str, seed: int = 3, **fields):
    import transformers

    torch.manual_seed(0)
    return randomize_(getattr(transformers, architecture)(hf_deberta_config(**fields)), seed=seed)


def batch(segments: bool = False):
    input_ids, token_type_ids, attention_mask = pad_rows(random_rows(len(TINY_VOCAB), LAYOUT, seed=0))
    return input_ids, token_type_ids if segments else torch.zeros_like(token_type_ids), attention_mask


def loaded(architecture, save_hf_model, **fields):
    theirs = build(architecture, **fields)
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    return ours, theirs


@pytest.mark.parametrize("architecture,variant", CASES)
def test_checkpoint_loads_and_matches_transformers(architecture, variant, save_hf_model, monkeypatch):
    ours, theirs = loaded(architecture, save_hf_model, **VARIANTS[variant])
    assert ours.config.family == "deberta-v2" and ours.embedding.position_embedding is None
    inputs = batch(segments=variant == "segments")
    assert not inputs[2].all() and inputs[0].shape[1] > 2 * ours.config.relative_span // 2  # padded; beyond the exact buckets
    compare(ours, theirs, "deberta-v2", architecture, inputs)
    padded_rows_too(ours, theirs, inputs)
    # nobody records: c2p + p2c go as a bias into the fused kernel, with the same logits
    calls = []
    fused = attn.fused_attention
    monkeypatch.setattr(attn, "fused_attention", lambda *args, **kwargs: calls.append(1) or fused(*args, **kwargs))
    output = {"DebertaV2ForMaskedLM": "mlm", "DebertaV2ForSequenceClassification": "classifier"}.get(architecture, "tagger")
    with torch.no_grad():
        logits = ours(*inputs, output=output)
    assert len(calls) == ours.config.num_layers
    expected = run_transformers(theirs, "deberta-v2", inputs).logits
    keep = inputs[2].bool()
    if output == "classifier":
        torch.testing.assert_close(logits, expected, **TOLERANCE)
    else:
        torch.testing.assert_close(logits[keep], expected[keep], **TOLERANCE)


def padded_rows_too(ours, theirs, inputs):
    """Every hidden state and pattern at every position, padded ones included: transformers' DeBERTa zeroes a padded
    position's embedding and masks its query's whole row (a uniform pattern), and so does ours."""
    reference = run_transformers(theirs, "deberta-v2", inputs)
    with torch.no_grad():
        _, cache = ours.run_with_cache(*inputs, names=lambda name: name.endswith(("embedding.hook_out", ".hook_out", "hook_pattern")))
    torch.testing.assert_close(cache["embedding_out"], reference.hidden_states[0], **TOLERANCE)
    assert reference.hidden_states[0][~inputs[2].bool()].abs().max() == 0
    for layer in range(ours.config.num_layers):
        torch.testing.assert_close(cache["layer_out", layer], reference.hidden_states[layer + 1], **TOLERANCE)
        torch.testing.assert_close(cache["pattern", layer], reference.attentions[layer], **TOLERANCE)


def test_log_buckets_as_transformers():
    """attention.log_buckets against transformers' make_log_bucket_position, for deberta-v3-base's 256 buckets over
    512 positions and the tests' 8 over 64; distances below half the buckets keep their value."""
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    distances = torch.arange(-700, 700)
    for buckets, max_distance in ((256, 512), (8, 64)):
        ours = attn.log_buckets(distances, buckets, max_distance)
        assert torch.equal(ours, make_log_bucket_position(distances, buckets, max_distance))
        near = distances.abs() < buckets // 2
        assert torch.equal(ours[near], distances[near].float())
    index = attn.relative_index(32, 8, 64, 8)
    assert index.min() >= 0 and index.max() < 16 and index[0, 31] < index[0, 3] < index[3, 0] < index[31, 0]


@pytest.fixture(scope="module")
def pair(tmp_path_factory, tiny_vocab_file):
    """(ours, transformers' DebertaV2ForMaskedLM) on the same random weights."""
    theirs = build("DebertaV2ForMaskedLM")
    return load_saved(theirs, tmp_path_factory.mktemp("deberta"), tiny_vocab_file), theirs


def test_three_score_terms_are_transformers_terms_and_sum_to_the_scores(pair):
    """Each layer's c2c, c2p and p2c hooks against transformers' own computation on the same layer input (its
    query and key maps, its disentangled_attention_bias restricted to one term at a time, the same scale
    sqrt(3 * head_dim)); the three hooks add up exactly to hook_scores where neither key nor query is padded, and
    hook_scores holds the lowest score where one is."""
    ours, theirs = pair
    input_ids, token_type_ids, attention_mask = batch()
    with torch.no_grad():
        _, cache = ours.run_with_cache(input_ids, token_type_ids, attention_mask)
        reference = run_transformers(theirs, "deberta-v2", (input_ids, token_type_ids, attention_mask))
    encoder = theirs.deberta.encoder
    heads, seq = ours.config.num_heads, input_ids.shape[1]
    for layer in range(ours.config.num_layers):
        module = encoder.layer[layer].attention.self
        x = reference.hidden_states[layer]
        with torch.no_grad():
            q = module.transpose_for_scores(module.query_proj(x), heads)  # [batch * head, seq, head_dim]
            k = module.transpose_for_scores(module.key_proj(x), heads)
            scale = (q.shape[-1] * 3) ** 0.5
            relative_pos = encoder.get_rel_pos(x)
            terms = {"c2c": torch.bmm(q, k.transpose(-1, -2)) / scale}
            for term in ("c2p", "p2c"):
                module.pos_att_type = [term]
                terms[term] = module.disentangled_attention_bias(q, k, relative_pos, encoder.get_rel_embedding(), 3)
            module.pos_att_type = ["p2c", "c2p"]
        real = attention_mask.bool()
        real_pairs = real[:, None, None, :] & real[:, None, :, None]  # [batch, 1, query, key]: neither padded
        for term, theirs_term in terms.items():
            mine = cache[f"transformer.{layer}.attention.attention.hook_scores_{term}"]
            torch.testing.assert_close(mine, theirs_term.view(-1, heads, seq, seq), **TOLERANCE, msg=lambda m: f"layer {layer} {term}: {m}")
        total = sum(cache[f"transformer.{layer}.attention.attention.hook_scores_{term}"] for term in ("c2c", "c2p", "p2c"))
        scores = cache["scores", layer]
        assert torch.equal(total[real_pairs.expand_as(total)], scores[real_pairs.expand_as(scores)])
        assert (scores[~real_pairs.expand_as(scores)] == torch.finfo(scores.dtype).min).all()  # a padded key or query
    assert bert.hook_name("scores_c2p", 1) == "transformer.1.attention.attention.hook_scores_c2p"
    assert is_per_head(bert.hook_name("scores_p2c", 0))  # position interventions cut its axis 2, as for the scores
    torch.testing.assert_close(cache["relative_embeddings"], encoder.get_rel_embedding(), **TOLERANCE)


def test_zeroing_a_term_is_transformers_without_it(pair, monkeypatch):
    """An intervention that zeroes layer 0's content-to-position term gives the logits of transformers' model whose
    layer 0 has only position-to-content (pos_att_type ["p2c"]) at the same scale, sqrt(3 * head_dim)."""
    from transformers.models.deberta_v2 import modeling_deberta_v2

    ours, theirs = pair
    input_ids, token_type_ids, attention_mask = batch()
    with torch.no_grad():
        changed, _ = ours.run_with_cache(input_ids, token_type_ids, attention_mask, names=[],
                                         interventions={bert.hook_name("scores_c2p", 0): lambda scores, name: torch.zeros_like(scores)})
        unchanged = ours(input_ids, token_type_ids, attention_mask)
    monkeypatch.setattr(modeling_deberta_v2, "scaled_size_sqrt", lambda layer, factor: torch.sqrt(torch.tensor(layer.size(-1) * 3.0)))
    module = theirs.deberta.encoder.layer[0].attention.self
    monkeypatch.setattr(module, "pos_att_type", ["p2c"])
    expected = run_transformers(theirs, "deberta-v2", (input_ids, token_type_ids, attention_mask)).logits
    keep = attention_mask.bool()
    torch.testing.assert_close(changed[keep], expected[keep], **TOLERANCE)
    assert (changed[keep] - unchanged[keep]).abs().max() > 1e-3  # the term mattered


def test_split_pass_reads_the_relative_positions(pair):
    """residual_at and logits_above (the split pass the logit lens and interventions use) give the whole pass's logits."""
    from bert.analysis.features.residuals import logits_above, residual_at

    ours, theirs = pair
    input_ids, token_type_ids, attention_mask = batch()
    hidden = residual_at(ours, 1, input_ids, token_type_ids, attention_mask)
    with torch.no_grad():
        whole = ours(input_ids, token_type_ids, attention_mask)
    keep = attention_mask.bool()
    torch.testing.assert_close(logits_above(ours, 1, hidden, attention_mask)[keep], whole[keep], **TOLERANCE)


def test_released_encoder_without_head_loads(save_hf_model):
    """deberta-v3-base ships the encoder only (DebertaV2Model): it loads without a masked-LM head, and its last
    hidden state is transformers'."""
    theirs = build("DebertaV2Model")
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    assert not ours.has_mlm_head and ours.output_heads == []
    input_ids, token_type_ids, attention_mask = batch()
    with torch.no_grad():
        expected = theirs(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        hidden = ours.encode(input_ids, token_type_ids, attention_mask)
    keep = attention_mask.bool()
    torch.testing.assert_close(hidden[keep], expected[keep], **TOLERANCE)


def test_strict_loading_names_the_tensor(save_hf_model):
    folder = save_hf_model(build("DebertaV2ForMaskedLM"))
    state = load_file(str(folder / "model.safetensors"))
    key = "deberta.encoder.rel_embeddings.weight"
    missing = {k: v for k, v in state.items() if k != key}
    save_file(missing, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="encoder.rel_embeddings.weight"):
        bert.load_pretrained(str(folder))
    save_file({**state, key: state[key][:-2]}, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="rel_embeddings.weight.*shape"):
        bert.load_pretrained(str(folder))
    save_file({**state, "deberta.encoder.conv.conv.weight": torch.zeros(1)}, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="conv.conv.weight"):
        bert.load_pretrained(str(folder))


@pytest.mark.parametrize("field,value", [("conv_kernel_size", 3), ("share_att_key", False), ("position_biased_input", True),
                                          ("relative_attention", False), ("norm_rel_ebd", "none"), ("legacy", False)])
def test_what_deberta_v3_has_not_is_refused_by_name(field, value):
    hf = hf_deberta_config().to_dict() | {field: value}
    with pytest.raises(ConfigError, match=field):
        BertConfig.from_hf_dict(hf)


@pytest.mark.parametrize("fields,words", [
    (dict(shared_layers=True), "not shared or pre-norm"), (dict(embedding_size=8), "no projection"),
    (dict(position_attention=("c2c",)), "among"), (dict(relative_attention=False), "needs relative_attention"),
])
def test_fresh_configs_that_cannot_run_are_refused(fields, words):
    with pytest.raises(ConfigError, match=words):
        BertConfig.of_family("deberta-v2", hidden_size=16, num_heads=2, **fields)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_saved_folder_loads_in_transformers(architecture, save_hf_model, tmp_path, tiny_vocab_file):
    import transformers

    ours, theirs = loaded(architecture, save_hf_model)
    bert.save_hf_folder(ours, tmp_path / "ours", tiny_vocab_file)
    config = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert config["model_type"] == "deberta-v2" and config["architectures"] == [architecture]
    again = getattr(transformers, architecture).from_pretrained(tmp_path / "ours", attn_implementation="eager").eval()
    input_ids, token_type_ids, attention_mask = batch()
    with torch.no_grad():
        expected = theirs(input_ids=input_ids, attention_mask=attention_mask).logits
        got = again(input_ids=input_ids, attention_mask=attention_mask).logits
    torch.testing.assert_close(got, expected, **TOLERANCE)
    assert BertConfig.from_hf_dict(config) == ours.config


def test_a_folder_with_tokenizer_json_loads_whole_and_predicts_as_transformers(tmp_path):
    """A DeBERTa-v3 folder with its SentencePiece tokenizer.json (BERT's special tokens) beside the weights:
    bert.load_pretrained reads both; a typed [MASK] gives transformers' logits for its own tokenizer's ids, on more
    tokens than the buckets tell apart exactly."""
    from tokenizer_support import build_tokenizer

    reference = build_tokenizer("deberta-v2", tmp_path)
    theirs = build("DebertaV2ForMaskedLM", vocab_size=len(reference), pad_token_id=reference.pad_token_id)
    theirs.save_pretrained(tmp_path)
    ours, tokenizer = bert.load_pretrained(str(tmp_path))
    text = "Paris is the [MASK] of France, a country in Europe with many old towns and rivers."
    encoding = tokenizer.encode(text)
    expected = reference(text.replace("[MASK]", reference.mask_token), return_tensors="pt")
    assert encoding.input_ids == expected["input_ids"][0].tolist() and len(encoding) > ours.config.position_buckets
    assert encoding.input_ids[tokenizer.mask_positions(encoding)[0]] == reference.mask_token_id
    ids = torch.tensor([encoding.input_ids])
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), theirs(**expected).logits, **TOLERANCE)


@pytest.mark.slow
def test_pretraining_from_a_fresh_config_updates_every_part(tmp_path, tokenizer):
    """Two steps of the project's pre-training loop on a fresh DeBERTa-v3 config: every tensor learns, the shared
    relative-position embeddings and their LayerNorm too."""
    from bert.pretraining.data import DataConfig
    from bert.pretraining.trainer import TrainConfig, train

    torch.manual_seed(0)
    config = BertConfig.of_family("deberta-v2", vocab_size=len(TINY_VOCAB), hidden_size=16, num_layers=2, num_heads=2,
                                  intermediate_size=32, max_position_embeddings=32, position_buckets=4, pad_token_id=tokenizer.pad_id)
    model = bert.Bert(config, mlm_head=True)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    corpus = tmp_path / "train.txt"
    corpus.write_text("\n\n".join("\n".join(["the dog barked at the mail man", "her cat went to the park"] * 2) for _ in range(4)) + "\n")
    metrics = train(model, tokenizer, corpus, None, tmp_path / "run",
                    TrainConfig(steps=2, warmup_steps=0, learning_rate=1e-2, eval_every=2, checkpoint_every=2),
                    DataConfig(max_length=16, batch_size=4))
    assert metrics["step"] == 2 and torch.isfinite(torch.tensor(metrics["train_loss"]))
    assert [name for name, p in model.named_parameters() if torch.equal(p, before[name])] == []


def test_cost_counts_the_position_terms():
    """DeBERTa-v3-base's work per token: BERT-base's 12 hidden x hidden matrices per layer, plus two terms that each
    multiply hidden numbers with 2 * 256 relative positions."""
    from bert.costs import relative_size

    assert relative_size(BertConfig.deberta_v3_base()) == pytest.approx((12 * 768**2 + 2 * 512 * 768) / (12 * 768**2))
    assert relative_size(BertConfig.deberta_v3_base(position_attention=())) == 1.0


@pytest.mark.slow
def test_finetuning_a_checkpoint_saves_a_classifier_transformers_reads(save_hf_model, tmp_path, tokenizer):
    """The project's fine-tuning loop gives a DeBERTa-v3 encoder a fresh classifier (ContextPooler's dense + GELU,
    then `classifier`), trains it and saves it; transformers' DebertaV2ForSequenceClassification reads the folder
    and gives our logits."""
    import random

    import transformers

    from bert.finetuning.data import Example
    from bert.finetuning.train import FinetuneConfig, finetune

    ours, _ = bert.load_pretrained(str(save_hf_model(build("DebertaV2Model"))))
    ours.add_output_heads(classifier_labels=["pet", "place"])
    rng = random.Random(1)
    words = ["the", "dog", "cat", "barked", "at", "mail", "park", "and", "her", "went", "to", "is", "of"]
    examples = [Example(" ".join(rng.choice(words) for _ in range(rng.randint(3, 6))) + f" {key}", None, label, f"toy:{i}")
                for i, (key, label) in enumerate([("dog", "pet"), ("park", "place")] * 6)]
    finetune(ours, tokenizer, examples, examples[:4], tmp_path / "out",
             FinetuneConfig(epochs=1, batch_size=4, max_length=16, learning_rate=1e-3, patience=0))
    reloaded, _ = bert.load_pretrained(str(tmp_path / "out" / "model"))
    theirs = transformers.DebertaV2ForSequenceClassification.from_pretrained(tmp_path / "out" / "model").eval()
    assert reloaded.labels == ["pet", "place"] and theirs.config.id2label == {0: "pet", 1: "place"}
    ids = torch.tensor([tokenizer.encode("the dog went to the park").input_ids])
    with torch.no_grad():
        torch.testing.assert_close(reloaded(ids, output="classifier"), theirs(input_ids=ids).logits, **TOLERANCE)
