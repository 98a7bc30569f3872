"""The app's logic that needs no Streamlit: input preparation, recording, labels, text, the module tree."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bert import count_parameters
from bert.hooks import EMBEDDING_PARTS
from bert.pieces import byte_level_bpe
from bert_test_support import FLOAT32_EPS, float32_tolerance
from viz_app.specs import architecture
from viz_app.app import forward, models, text
from viz_app.charts.attention import _pool
from viz_app.charts.base import token_labels
from viz_app.app.text import chip_labels, escape_markdown
from viz_app.specs import attention as attention_view


@pytest.fixture(scope="module")
def encoder():
    return models.load(models.ModelKey.of("minilm-encoder"))


def test_prepare_input_masks_and_typed_masks(encoder):
    prepared = forward.prepare_input(encoder.tokenizer, "The [MASK] barked at the mailman.", None, [3, 0, 2, 99, -1], False, 512)
    assert prepared.base.tokens[:4] == ["[CLS]", "the", "[MASK]", "barked"]
    assert prepared.typed_masks == (2,)
    assert prepared.masks == (3,)  # [CLS] (0), the typed mask (2) and out-of-range positions are dropped
    assert prepared.masked.tokens[3] == "[MASK]" and prepared.base.tokens[3] == "barked"
    assert prepared.all_masks == (2, 3)
    assert 0 not in prepared.maskable and prepared.maskable[-1] == len(prepared.base) - 2


def test_recorded_pass_keeps_what_a_plain_recording_keeps(tiny_model, tiny_batch, monkeypatch):
    """The app's one pass (the hooks forward.record keeps) records no pattern, so every layer takes the fused
    kernel; it writes q, k and the MLP activations straight into [layer, ...] tensors, with the numbers of
    run_with_cache keeping every hook (the step-by-step path, so to float rounding), and the patterns computed
    from its q and k are those that path records."""
    from bert import attention

    input_ids, token_type_ids, _ = tiny_batch
    logit_mask = torch.zeros_like(input_ids, dtype=torch.bool)
    logit_mask[:, 1:3] = True
    names = forward.recorded_names(tiny_model.config.num_layers)
    calls = []
    fused = attention.fused_attention
    monkeypatch.setattr(attention, "fused_attention", lambda *args, **kwargs: calls.append(1) or fused(*args, **kwargs))
    with torch.inference_mode():
        logits, recorded = tiny_model.run_with_cache(input_ids, token_type_ids, names=names, logit_mask=logit_mask)
        assert len(calls) == tiny_model.config.num_layers
        plain_logits = tiny_model(input_ids, token_type_ids, logit_mask=logit_mask)
        _, cache = tiny_model.run_with_cache(input_ids, token_type_ids)
    torch.testing.assert_close(logits, plain_logits, rtol=0, atol=0)  # the same fused pass, recorded or not
    for kind in ("mlp_post", "q", "k"):
        stacked = recorded.stack(kind)
        assert recorded[kind, 1].data_ptr() == stacked[1].data_ptr()  # written into one tensor as the pass went
        torch.testing.assert_close(stacked, cache.stack(kind), rtol=1e-5, atol=1e-5)
    # the scores are sums of head_size products, added in other orders here; a softmax turns a change of delta in
    # every score into at most 2·delta in a weight (first order), plus the weight's own rounding
    head_size = tiny_model.config.hidden_size // tiny_model.config.num_heads
    delta = float32_tolerance(cache.stack("scores").abs().max().item(), head_size)
    for row in range(input_ids.shape[0]):
        patterns = forward.patterns_of(recorded.stack("q")[:, row].numpy(), recorded.stack("k")[:, row].numpy())
        np.testing.assert_allclose(patterns, cache.stack("pattern")[:, row].numpy(), rtol=0, atol=2 * delta + 4 * FLOAT32_EPS)
    for part, name in EMBEDDING_PARTS.items():
        torch.testing.assert_close(recorded[name], cache[name], rtol=0, atol=0)


@pytest.mark.parametrize(
    "text_in, kind",
    [("", "empty"), (" \n ", "empty"), ("\x00\x07", "no_tokens"), ("word " * 600, "too_long"), ("x" * 100_001, "too_many_characters")],
)
def test_prepare_input_problems_say_what_to_do(encoder, text_in, kind):
    with pytest.raises(forward.InputProblem) as problem:
        forward.prepare_input(encoder.tokenizer, text_in, None, [], False, 512)
    assert problem.value.kind == kind
    assert problem.value.message.rstrip("”").endswith(".") and len(problem.value.message) < 300


def test_truncation_is_explicit(encoder):
    prepared = forward.prepare_input(encoder.tokenizer, "word " * 600, None, [], True, 512)
    assert len(prepared.base) == 512 and prepared.base.truncated == 602 - 512


def test_both_passes_take_the_fused_path_and_match_bert_predict(tiny_mlm_folder, monkeypatch):
    """The pass of the prediction and attention pages (q and k only) and the one that also keeps the MLP
    activations and the embeddings record no pattern, so every layer of both takes the fused attention kernel;
    their candidates are the same to the last bit, and those of bert.predict.predict_masks on the same input."""
    from bert import attention
    from bert.predict import predict_masks

    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    prepared = forward.prepare_input(loaded.tokenizer, "the dog [MASK] at the cat", None, [], False, 64)
    calls = []
    fused = attention.fused_attention
    monkeypatch.setattr(attention, "fused_attention", lambda *args, **kwargs: calls.append(1) or fused(*args, **kwargs))
    light = forward.record(loaded.model, loaded.tokenizer, prepared, activations=False)
    assert len(calls) == loaded.model.config.num_layers and light.neurons is None and light.embeddings is None
    assert light.attention.shape == (loaded.model.config.num_layers, loaded.model.config.num_heads, 8, 8)
    full = forward.record(loaded.model, loaded.tokenizer, prepared)
    assert len(calls) == 2 * loaded.model.config.num_layers and full.neurons is not None
    np.testing.assert_array_equal(light.attention, full.attention)
    [expected] = predict_masks(loaded.model, loaded.tokenizer, prepared.masked, top_k=forward.TOP_K_STORED)
    np.testing.assert_array_equal(light.masks[0].probabilities, full.masks[0].probabilities)
    for result in (light, full):
        [mask] = result.masks
        assert mask.position == expected.position
        assert mask.tokens[:5] == tuple(c.token for c in expected.candidates[:5])
        np.testing.assert_allclose(mask.probabilities, [c.probability for c in expected.candidates], atol=1e-5)


def test_the_patterns_are_computed_once_and_read_only(encoder):
    prepared = forward.prepare_input(encoder.tokenizer, "The dog barked.", None, [], False, 512)
    result = forward.record(encoder.model, encoder.tokenizer, prepared, activations=False)
    assert result.attention is result.attention and not result.attention.flags.writeable
    np.testing.assert_allclose(result.attention.sum(-1), 1.0, atol=1e-5)


def test_record_keeps_what_the_pages_need(encoder):
    prepared = forward.prepare_input(encoder.tokenizer, "The dog barked.", "It ran.", [2], False, 512)
    result = forward.record(encoder.model, encoder.tokenizer, prepared)
    seq, config = len(prepared.base), encoder.model.config
    assert result.attention.shape == (config.num_layers, config.num_heads, seq, seq)
    assert result.neurons.shape == (config.num_layers, seq, config.intermediate_size)
    assert set(result.embeddings) == {"token", "position", "segment"}
    shapes = architecture.hook_shapes(encoder.model, encoder.tokenizer, prepared.masked)
    assert shapes["transformer.0.attention.attention.hook_pattern"] == (1, config.num_heads, seq, seq)
    output_heads = ("pooler.", "nsp_head.", "classifier.", "tagger.")  # hooks off the masked-LM path
    assert len(shapes) == len([name for name in encoder.model.hook_names() if not name.startswith(output_heads)])
    assert result.masks == ()  # no MLM head: no predictions, but everything else
    stats = attention_view.head_statistics(result)
    assert stats.shape == (config.num_layers, config.num_heads)
    np.testing.assert_allclose(stats["cls"], result.attention[..., 0].mean(-1), rtol=1e-5)
    assert result.tokens[2] == "[MASK]" and result.original_tokens[2] == "dog"
    np.testing.assert_allclose(result.embeddings["segment"][-1], encoder.model.embedding.token_type_embedding.weight[1].detach().numpy())


def test_predictions_rank_the_original_token(tiny_mlm_folder):
    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    prepared = forward.prepare_input(loaded.tokenizer, "the dog barked at the cat", None, [2], False, 64)
    result = forward.record(loaded.model, loaded.tokenizer, prepared)
    [mask] = result.masks
    assert mask.position == 2 and mask.original == "dog"
    assert np.all(np.diff(mask.probabilities) <= 0) and len(mask.tokens) == forward.TOP_K_STORED
    # rank and probability of the original, against a direct forward pass
    import torch

    with torch.inference_mode():
        ids, types = prepared.masked.tensors()
        probabilities = loaded.model(ids, types)[0, 2].softmax(-1)
    dog = loaded.tokenizer.token_to_id("dog")
    assert mask.original_probability == pytest.approx(float(probabilities[dog]), rel=1e-5)
    assert mask.original_rank == int((probabilities > probabilities[dog]).sum()) + 1


def test_labels_are_unique_and_escaped():
    labels = token_labels(["the", "<", "the", "b>", "the"])
    assert labels == ["the", "&lt;", "the\u200b", "b&gt;", "the\u200b\u200b"]
    chips = chip_labels(["[CLS]", "*", "the", "the", "$x$", "[SEP]"], [1, 2, 3, 4])
    assert chips == {1: "\\*", 2: "the", 3: "the\u200b", 4: "\\$x\\$"}
    assert escape_markdown("<b>[a](b)</b>") == "\\<b\\>\\[a\\]\\(b\\)\\</b\\>"


def test_detokenize_and_filled_in_sentence():
    pieces = [("the", "the", False), ("mail", "mail", False), ("man", "man", True), (".", ".", False), ("(", "(", False), ("x", "x", False), (")", ")", False)]
    assert text.detokenize(pieces) == "the mailman. (x)"
    result = forward.ForwardResult(
        tokens=["[CLS]", "the", "[MASK]", "barked", "[SEP]", "it", "[MASK]", "[SEP]"],
        original_tokens=[], token_type_ids=[], special=[True, False, False, False, True, False, False, True],
        masks=(forward.MaskResult(2, ("dog",), np.ones(1), (False,)), forward.MaskResult(6, ("##s",), np.ones(1), (True,))),
        neurons=np.zeros(0),
    )
    assert text.filled_in_sentence(result) == "the **dog** barked / it**s**"
    roberta = forward.ForwardResult(  # byte-level pieces: "Ġ" starts a word, bytes decoded; </s></s> between sentences
        tokens=["<s>", "The", "<mask>", "Ġbark", "ed", "</s>", "</s>", "It", "Ġwas", "ĠcafÃ©", "<mask>", "</s>"],
        original_tokens=[], token_type_ids=[0] * 12, special=[True, False, False, False, False, True, True] + [False] * 4 + [True],
        masks=(forward.MaskResult(2, ("Ġdog",), np.ones(1), (False,)), forward.MaskResult(10, ("s",), np.ones(1), (True,))),
        pieces=byte_level_bpe(),
    )
    assert text.filled_in_sentence(roberta) == "The **dog** barked / It was café**s**"


def test_pooling_keeps_rows_summing_to_one():
    rng = np.random.default_rng(0)
    pattern = rng.random((2, 3, 100, 100))
    pattern /= pattern.sum(-1, keepdims=True)
    pooled = _pool(pattern, 32)
    assert pooled.shape == (2, 3, 32, 32)
    np.testing.assert_allclose(pooled.sum(-1), 1, atol=1e-12)


def test_module_tree_counts_every_parameter_once(encoder):
    model = encoder.model
    prepared = forward.prepare_input(encoder.tokenizer, "Hello there.", None, [], False, 512)
    shapes = architecture.hook_shapes(model, encoder.tokenizer, prepared.masked)
    rows = architecture.module_rows(model, shapes)
    assert rows[0].parameters == sum(p.numel() for p in model.parameters())
    assert rows[0].parameters == count_parameters(model.config, mlm_head=False, pooler=model.pooler is not None)["total"]
    by_path = {row.path: row for row in rows}
    layer = by_path["transformer.0"].parameters
    assert by_path["transformer.1"].parameters == layer * (model.config.num_layers - 1)  # the summary row
    assert by_path["transformer"].parameters == layer * model.config.num_layers
    assert by_path["transformer.0.residual.hook_post"].activation == f"[1, {len(prepared.base)}, {model.config.intermediate_size}]"
    tree = architecture.tree_text(rows)
    assert tree.splitlines()[0].startswith("Bert") and "├─ embedding: BertEmbedding" in tree


@pytest.mark.parametrize("heads, rows", [
    (dict(mlm_head=True, classifier_labels=["a", "b", "c"]), ["lm_head", "pooler", "classifier"]),
    (dict(mlm_head=False, tagger_labels=["O", "B-PET"]), ["tagger"]),
    (dict(mlm_head=False, nsp_head=True), ["pooler", "nsp_head"]),
])
def test_the_arithmetic_has_a_row_per_head_and_its_total_is_the_models(heads, rows):
    """Against the model's own tensors: each head's row is its modules' size, and the total is the model's."""
    from bert import Bert, BertConfig

    model = Bert(BertConfig(vocab_size=50, hidden_size=8, num_layers=1, num_heads=2, intermediate_size=16, max_position_embeddings=16), **heads)
    table = architecture.parameter_arithmetic(model)
    ours = table.columns[2]
    by_what = dict(zip(table["what"], table[ours]))
    head_rows = [row for row in architecture.HEAD_ROWS if row[0] in by_what]
    assert [key for _, _, key in head_rows] == rows
    owned = {name: sum(p.numel() for p in getattr(model, name).parameters()) for name in rows}
    if "lm_head" in owned:
        owned["lm_head"] -= model.config.vocab_size * model.config.hidden_size  # its matrix is the embedding's, counted there
    assert [by_what[what] for what, _, _ in head_rows] == [owned[name] for name in rows]
    assert table[ours].iloc[-1] == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("heads", [dict(classifier_labels=["a", "b", "c"]), dict(tagger_labels=["O", "B-PET"]),
                                   dict(nsp_head=True)])
def test_every_hook_point_of_a_model_with_a_sentence_head_gets_its_shape(heads, tiny_vocab_file):
    """hook_shapes records the encoder and the MLM head, then the sentence heads' hooks, with the shapes their own
    own forward passes (output="classifier", "tagger", "nsp") give."""
    from bert import Bert, BertConfig, BertTokenizer

    tokenizer = BertTokenizer.from_vocab(tiny_vocab_file)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=8, num_layers=1, num_heads=2, intermediate_size=16,
                        max_position_embeddings=16)
    model = Bert(config, **heads).eval()
    prepared = forward.prepare_input(tokenizer, "the dog barked.", None, [], False, 16)
    shapes = architecture.hook_shapes(model, tokenizer, prepared.masked)
    rows = architecture.module_rows(model, shapes, first_layer_only=False)
    hooks = [row for row in rows if row.activation]
    assert len(hooks) == len(model.hook_names()) and all(row.activation != "not reached" for row in hooks)
    ids, types = prepared.masked.tensors()
    method, hook = {"classifier_labels": ("classifier", "classifier.hook_logits"), "tagger_labels": ("tagger", "tagger.hook_logits"),
                    "nsp_head": ("nsp", "nsp_head.hook_logits")}[next(iter(heads))]
    assert shapes[hook] == tuple(model(ids, types, output=method).shape)


def test_the_tree_says_what_the_outline_s_two_odd_names_compute_and_their_checkpoint_names(tiny_mlm_folder):
    """`attention.mlp` is the heads' output projection and `residual` the MLP block: said beside each in the tree,
    and each module's checkpoint name is the one transformers' BertForMaskedLM gives the same tensor."""
    import transformers

    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    rows = {r.path: r for r in architecture.module_rows(loaded.model, {}, first_layer_only=False)}
    layers = range(loaded.model.config.num_layers)
    assert all("output projection" in rows[f"transformer.{i}.attention.mlp"].note for i in layers)
    assert all("MLP block" in rows[f"transformer.{i}.residual"].note for i in layers)
    theirs = transformers.BertForMaskedLM.from_pretrained(str(tiny_mlm_folder))
    state = theirs.state_dict()  # the encoder's under `bert.`, which the key table leaves out
    checked = [path for path, row in rows.items() if row.checkpoint]
    for path in checked:  # the same tensors: transformers' module of that name holds our module's own tensors
        ours = dict(loaded.model.get_submodule(path).named_parameters(recurse=False))
        same = [(state[key], ours[name]) for name in ours for key in (f"bert.{rows[path].checkpoint}.{name}",
                                                                     f"{rows[path].checkpoint}.{name}") if key in state]
        assert same, path
        for tensor, mine in same:
            torch.testing.assert_close(tensor, mine.detach().float())
    assert len(checked) == len({name.rpartition(".")[0] for name, _ in loaded.model.named_parameters()})
    assert rows["transformer.0.attention.mlp"].checkpoint == "encoder.layer.0.attention.output.dense"
    assert "(the heads' output projection, not an MLP)" in architecture.tree_text(list(rows.values()))


def test_tied_unembedding_is_counted_once(tiny_mlm_folder):
    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    rows = {r.path: r for r in architecture.module_rows(loaded.model, {})}
    assert "tied to embedding.token_embedding.weight" in rows["lm_head.unembedding"].note
    assert rows["lm_head.unembedding"].parameters == loaded.model.config.vocab_size  # its bias only
    assert rows[""].parameters == sum(p.numel() for p in loaded.model.parameters())


def test_the_sidebar_says_where_the_model_runs_in_plain_words(monkeypatch, tiny_model):
    import torch

    assert models.summarize(tiny_model).one_line().endswith("runs on the CPU")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    assert models.device_in_words(torch.device("cuda", 0)) == "the GPU (NVIDIA H100 80GB HBM3)"
    assert models.device_in_words(torch.device("mps")) == "the Apple GPU"


def test_the_app_packs_its_model_and_the_tree_still_shows_the_outline(tiny_mlm_folder):
    """The app asks for weight packing (a CPU speed pass: packed copies, not only the library's default oneDNN
    product); the module tree it draws is the plain model's all the same."""
    import bert
    from bert.packed_linear import PackedLinear

    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    plain, _ = bert.load_pretrained(str(tiny_mlm_folder), cpu_kernels=False)
    assert type(loaded.model.lm_head.unembedding) is PackedLinear and type(plain.lm_head.unembedding) is torch.nn.Linear
    assert all(m.reorder for m in loaded.model.modules() if isinstance(m, PackedLinear))
    rows = architecture.module_rows(loaded.model, {}, first_layer_only=False)
    assert rows == architecture.module_rows(plain, {}, first_layer_only=False)
    assert "PackedLinear" not in architecture.tree_text(rows) and "unembedding: Linear(" in architecture.tree_text(rows)


def test_the_cached_pass_is_keyed_by_the_prepared_input_and_tokenizes_nothing(monkeypatch):
    """The recorded pass (viz_app/specs/recorded.py, kept by cache.computed_shared) reads the input the sentence box
    prepared: no tokenizer call on a miss, and an input prepared again from the same text, pair, masks and cut is
    the same cache entry."""
    from bert.tokenizer import BertTokenizer
    from viz_app import cache
    from viz_app.specs.recorded import FULL

    key = models.ModelKey.of("minilm-encoder")
    tokenizer = cache.load_model(key).tokenizer
    text = "A sentence that no other test sends to the cache, about seven herons."
    prepared, again = (forward.prepare_input(tokenizer, text, None, [3], False, 512) for _ in range(2))
    assert prepared is not again and prepared.key == again.key
    calls = []
    for method in ("encode", "encode_plain", "tokenize"):
        if hasattr(BertTokenizer, method):
            monkeypatch.setattr(BertTokenizer, method, lambda *args, _name=method, **kwargs: calls.append(_name))
    computation, work = FULL
    result = cache.computed_shared(computation.name, key, prepared, computation.cache_key(work), work, computation)
    assert calls == [] and result.tokens == tuple(prepared.masked.tokens) and result.tokens[3] == "[MASK]"
    assert cache.computed_shared(computation.name, key, again, computation.cache_key(work), work, computation) is result
