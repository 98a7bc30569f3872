"""EuroBERT (Boizard et al. 2025) against `transformers` on the same random weights: a tiny checkpoint saved by
transformers' own EuroBert classes loads strictly through bert.load_pretrained and gives the same logits, every
hidden state and every attention pattern within 1e-5 on a padded batch, with grouped-query attention (4 query heads
sharing 2 key-value heads), RMSNorm, SwiGLU and rotary positions; the new components are hook points; its Llama
3-style byte-level BPE (built here with `tokenizers`) gives `tokenizers`' own ids in several scripts.
"""
from __future__ import annotations

import json

import pytest
import torch

import bert
from bert import load_tokenizer
from bert.checkpoint import save_hf_folder
from bert.errors import CheckpointError, ConfigError
from bert_test_support import TINY_LAYOUT, TINY_VOCAB, pad_rows, random_rows, randomize_
from family_support import compare, run_transformers

transformers = pytest.importorskip("transformers")
TOLERANCE = dict(atol=1e-5, rtol=1e-5)
OUTPUT = {"EuroBertForMaskedLM": "mlm", "EuroBertForSequenceClassification": "classifier", "EuroBertForTokenClassification": "tagger"}


def _config(**fields):
    """Tiny, grouped (4 query heads, 2 key-value heads), a rotary base of its released configs' size."""
    sizes = dict(vocab_size=len(TINY_VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=40, max_position_embeddings=64, pad_token_id=0, bos_token_id=2, eos_token_id=3,
                 mask_token_id=4, rope_parameters={"rope_type": "default", "rope_theta": 250000.0}, num_labels=3,
                 attn_implementation="eager")
    return transformers.EuroBertConfig(**(sizes | fields))


def _build(architecture: str, **fields):
    torch.manual_seed(0)
    return randomize_(getattr(transformers, architecture)(_config(**fields)), seed=3)


def _batch():
    input_ids, token_type_ids, attention_mask = pad_rows(random_rows(len(TINY_VOCAB), TINY_LAYOUT, seed=0), 0)
    return input_ids, torch.zeros_like(token_type_ids), attention_mask


@pytest.fixture(scope="module")
def pair(tmp_path_factory, tiny_vocab_file):
    """(ours, transformers' EuroBertForMaskedLM) on the same random weights."""
    from family_support import load_saved

    theirs = _build("EuroBertForMaskedLM")
    return load_saved(theirs, tmp_path_factory.mktemp("eurobert"), tiny_vocab_file), theirs


def test_masked_lm_loads_strictly_and_matches_transformers_on_a_padded_batch(pair):
    ours, theirs = pair
    assert ours.config.family == "eurobert" and ours.config.key_value_head_count == 2 and ours.config.rms_norm
    batch = _batch()
    assert not batch[2].all()  # padded
    compare(ours, theirs, "eurobert", "EuroBertForMaskedLM", batch)
    _assert_counted_as_transformers(ours, theirs)
    input_ids, _, attention_mask = batch
    with torch.no_grad():  # the fused attention path (nobody records the pattern): the same logits
        fused = ours(input_ids, attention_mask=attention_mask)
    torch.testing.assert_close(fused, run_transformers(theirs, "eurobert", batch).logits, **TOLERANCE)


@pytest.mark.parametrize("architecture,fields", [
    ("EuroBertForSequenceClassification", {}),  # "late": every token's logits, averaged over the real tokens
    ("EuroBertForSequenceClassification", {"classifier_pooling": "mean", "attention_bias": True, "mlp_bias": True}),
    ("EuroBertForTokenClassification", {}),
], ids=["sequence-late", "sequence-mean-biases", "tokens"])
def test_task_heads_match_transformers(architecture, fields, save_hf_model):
    theirs = _build(architecture, **fields)
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    assert ours.own_output == OUTPUT[architecture]
    compare(ours, theirs, "eurobert", architecture, _batch())
    _assert_counted_as_transformers(ours, theirs)


def _assert_counted_as_transformers(ours, theirs):
    """bert.count_parameters from the config and the heads: the parameters transformers' model holds."""
    from bert.params import model_heads

    counts = bert.count_parameters(ours.config, **model_heads(ours))
    assert counts["total"] == sum(p.numel() for p in theirs.parameters()) == sum(p.numel() for p in ours.parameters())


def test_grouped_heads_share_keys_and_values_and_the_new_parts_are_hooks(pair):
    """Query heads 0 and 1 read key-value head 0, heads 2 and 3 head 1: their recorded k and v are equal; the
    RMSNorm'd inputs, the SwiGLU gate and the final norm are recorded (an RMSNorm'd row has a root mean square of
    its weight's scale: with the weight set to 1, exactly 1)."""
    ours, _ = pair
    input_ids, _, attention_mask = _batch()
    with torch.no_grad():
        _, cache = ours.run_with_cache(input_ids, attention_mask=attention_mask)
    for kind in ("k", "v"):
        recorded = cache[kind, 1]  # [batch, head, key, head_dim]
        assert recorded.shape[1] == 4
        torch.testing.assert_close(recorded[:, 0], recorded[:, 1])
        torch.testing.assert_close(recorded[:, 2], recorded[:, 3])
        assert not torch.allclose(recorded[:, 1], recorded[:, 2])
    for name in ("transformer.0.attention.hook_in", "transformer.1.residual.hook_in", "transformer.0.residual.hook_gate",
                 "transformer.0.residual.hook_post", "final_norm.hook_out"):
        assert name in cache, name
    layer = ours.transformer[0].attention
    x = cache["transformer.0.hook_out"]  # layer 1's input
    expected = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + ours.config.layer_norm_eps) * ours.transformer[1].attention.layer_norm.weight
    torch.testing.assert_close(cache["transformer.1.attention.hook_in"], expected, **TOLERANCE)
    assert isinstance(layer.layer_norm, torch.nn.RMSNorm) and "embedding.hook_norm" not in cache


def test_saved_folder_loads_in_transformers_with_the_same_logits(pair, tmp_path):
    ours, theirs = pair
    folder = tmp_path / "ours"
    save_hf_folder(ours, folder)
    again = transformers.EuroBertForMaskedLM.from_pretrained(folder, attn_implementation="eager")
    hf = json.loads((folder / "config.json").read_text())
    assert hf["model_type"] == "eurobert" and hf["num_key_value_heads"] == 2 and hf["architectures"] == ["EuroBertForMaskedLM"]
    input_ids, _, attention_mask = _batch()
    with torch.no_grad():
        torch.testing.assert_close(again(input_ids=input_ids, attention_mask=attention_mask).logits,
                                   theirs(input_ids=input_ids, attention_mask=attention_mask).logits, **TOLERANCE)


def test_strict_loading_names_the_tensor(pair, tmp_path, save_hf_model):
    from safetensors.torch import load_file, save_file

    folder = save_hf_model(_build("EuroBertForMaskedLM"))
    state = load_file(folder / "model.safetensors")
    del state["model.layers.1.mlp.up_proj.weight"]
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match="layers.1.mlp.up_proj.weight"):
        bert.load_pretrained(str(folder))


@pytest.mark.parametrize("fields,words", [
    ({"rope_parameters": {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}}, "rotary scaling"),
    ({"head_dim": 16}, "head_dim 16"),
    ({"tie_word_embeddings": True}, "tie_word_embeddings"),
])
def test_what_it_cannot_run_is_refused_by_name(fields, words):
    hf = {"model_type": "eurobert", "hidden_size": 32, "num_attention_heads": 4, **fields}
    with pytest.raises(ConfigError, match=words):
        bert.BertConfig.from_hf_dict(hf)


def test_config_json_both_ways_and_released_field_names():
    """transformers' own config.json reads to the fields its model has, and writes back to what it read; a released
    folder's rope_theta (before rope_parameters) reads too."""
    hf = _config().to_dict()
    config = bert.BertConfig.from_hf_dict(hf)
    assert (config.key_value_head_count, config.global_rope_theta, config.activation, config.classifier_pooling) == (2, 250000.0, "silu", "late")
    written = config.to_hf_dict()
    for key, value in written.items():
        assert hf[key] == value, key
    older = {"model_type": "eurobert", "rope_theta": 500000.0, "clf_pooling": "bos"}
    config = bert.BertConfig.from_hf_dict(older)
    assert (config.global_rope_theta, config.classifier_pooling, config.key_value_head_count) == (500000.0, "cls", 12)


def test_neobert_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="NeoBERT.*remote code"):
        bert.BertConfig.from_hf_dict({"model_type": "neobert"})


# ---- the tokenizer: Llama 3's scheme (a regex split, then byte-level BPE), built with `tokenizers` ----
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                r"|\s+(?!\S)|\s+")
SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|mask|>"]
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",  # Latin
    "Der Bär läuft über die Straße, n'est-ce pas? It's 2026!",
    "Москва — столица России, а Київ — України.",  # Cyrillic
    "اللغة العربية جميلة جدا.",  # Arabic
    "東京は日本の首都です。北京是中国的首都。",  # CJK
    "Emoji: 🙂🚀 and 👩‍🔬 in one line.",  # emoji, a joiner sequence
    "numbers 1234567 and   spaces\n\nnew lines",
]


@pytest.fixture(scope="module")
def llama3_folder(tmp_path_factory):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(SENTENCES * 3, trainer)
    bos, eos = SPECIAL[0], SPECIAL[1]
    tokenizer.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} $B:1 {eos}:1",
                                      special_tokens=[(bos, tokenizer.token_to_id(bos)), (eos, tokenizer.token_to_id(eos))]),
    ])
    folder = tmp_path_factory.mktemp("llama3_bpe")
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "config.json").write_text(json.dumps({"model_type": "eurobert", "max_position_embeddings": 512}))
    return folder, tokenizer


def test_tokenizer_ids_equal_tokenizers_own_in_several_scripts(llama3_folder):
    folder, reference = llama3_folder
    ours = load_tokenizer(folder)
    assert (ours.cls_token, ours.sep_token, ours.mask_token) == tuple(SPECIAL[:2]) + (SPECIAL[2],)
    for text in SENTENCES:
        assert ours.encode(text).input_ids == reference.encode(text).ids, text
    for text, pair in zip(SENTENCES, SENTENCES[1:]):
        assert ours.encode(text, pair).input_ids == reference.encode(text, pair).ids, (text, pair)
    encoding = ours.encode("Paris is the [MASK] of France.")
    assert encoding.input_ids[encoding.tokens.index("<|mask|>")] == reference.token_to_id("<|mask|>")
    assert ours.encode("über").display_tokens()[1] == "über"  # bytes shown as the characters they spell


@pytest.mark.parametrize("direction", ["noise", "denoise"])
def test_circuit_edges_through_shared_keys_equal_whole_patched_passes(pair, tiny_vocab_file, direction):
    """The circuit graph gives each query head its group's key and value maps: patching every edge alone through
    EncoderParts equals the whole patched pass (logit difference of a contrast the two runs move apart)."""
    from bert.analysis.causal.patching import prepare_contrast
    from bert.analysis.circuits.edge_scores import exact_edge_metrics, pair_runs, patched_metrics
    from bert.analysis.circuits.encoder_parts import EncoderParts
    from bert.analysis.circuits.graph import CircuitGraph

    ours, _ = pair
    tokenizer = bert.BertTokenizer.from_vocab(tiny_vocab_file)
    clean, corrupted = "the dog [MASK] at the park .", "her cat [MASK] to the mail ."
    first = prepare_contrast(tokenizer, clean, corrupted, "dog", "cat")
    with torch.no_grad():
        change = (ours(*first.clean.tensors()) - ours(*first.corrupted.tensors()))[0, first.mask_position]
    contrast = prepare_contrast(tokenizer, clean, corrupted, int(change.argmax()), int(change.argmin()))
    parts, graph = EncoderParts.of(ours), CircuitGraph.of(ours.config)
    runs = pair_runs(parts, graph, contrast, "logit-difference")
    whole = patched_metrics(parts, graph, runs, "logit-difference", direction, torch.eye(len(graph), dtype=torch.bool), batch_size=len(graph))
    run, _ = runs.oriented(direction)
    assert (whole - runs.metrics[run]).abs().max() > 1e-3  # the patches move the metric
    torch.testing.assert_close(exact_edge_metrics(parts, graph, runs, "logit-difference", direction, batch_size=7), whole, atol=1e-5, rtol=0)
