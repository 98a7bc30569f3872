"""Shared links, the model picker's hub-cache listing, and several sessions at once on one shared model."""
from __future__ import annotations

import hashlib
import json
import threading

import numpy as np
import pytest
import torch

from app_helpers import array, as_read, figures, go, no_exception, texts
from viz_app import cache
from viz_app.app import forward, models, sidebar
from viz_app.specs import recorded


@pytest.mark.slow
def test_a_shared_link_reopens_the_same_view(open_app):
    at = open_app("attention", text="Paris is the capital of France.", pair="It is big.", layer=4, head=11, hide_special=1, focus=3)
    no_exception(at)
    assert at.main.text_area(key="text").value == "Paris is the capital of France."
    assert at.main.text_input(key="pair").value == "It is big."
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (4, 11)
    assert at.toggle(key="hide_special").value is True
    assert at.selectbox(key="focus").value == 3
    assert "Layer 4, head 11" in figures(at)[0]["layout"]["title"]["text"]
    assert at.query_params == {"model": "minilm", "text": "Paris is the capital of France.", "pair": "It is big.", "layer": "4", "head": "11", "hide_special": "1", "focus": "3"}


@pytest.mark.slow
def test_nonsense_in_the_url_is_ignored(open_app):
    at = open_app("attention", layer="many", head=99, masks="x,2", truncate="perhaps", top_k=-4)
    no_exception(at)
    assert at.selectbox(key="layer").value == 0 and at.selectbox(key="head").value == 0
    assert figures(at)


@pytest.mark.slow
def test_new_sentence_resets_masks_and_updates_url(open_app):
    at = open_app(text="dogs bark loudly", masks="2")
    assert at.session_state["masks"] == [2]
    at.main.text_area(key="text").input("cats purr softly").run()
    no_exception(at)
    assert at.session_state["masks"] == []
    assert at.query_params["text"] == "cats purr softly" and "masks" not in at.query_params


def _fake_snapshot(cache_dir, repo_id: str, model_type: str = "bert", weights: bool = True):
    repo = cache_dir / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123456789abcdef0123456789abcdef01234567")
    (snapshot / "config.json").write_text(json.dumps({"model_type": model_type}))
    if weights:
        (snapshot / "model.safetensors").write_bytes(b"not really weights")
    return snapshot


def test_cached_hub_models_bert_base_first(tmp_path):
    _fake_snapshot(tmp_path, "prajjwal1/bert-tiny")
    _fake_snapshot(tmp_path, "bert-base-uncased")
    _fake_snapshot(tmp_path, "gpt2", model_type="gpt2")
    _fake_snapshot(tmp_path, "bert-no-weights", weights=False)
    found = models.cached_bert_models(tmp_path)
    assert [c.source for c in found] == ["bert-base-uncased", "prajjwal1/bert-tiny"]
    assert found[0].folder.endswith("snapshots/0123456789abcdef0123456789abcdef01234567")
    choices = [c.source for c in models.model_choices(tmp_path)]
    assert choices[0] == "bert-base-uncased" and "minilm-encoder" in choices and choices[-1] == models.FOLDER
    assert models.cached_bert_models(tmp_path / "nowhere") == []


def test_the_picker_shows_names_that_fit_the_sidebar_and_the_full_name_under_it(open_app):
    at = open_app()
    no_exception(at)
    picker = at.selectbox(key="model_choice")
    builtin = [c for c in models.model_choices() if c.folder is None and c.source != models.FOLDER]
    assert picker.options[: len(builtin)] == [c.name for c in builtin]
    assert all(len(c.name) <= models.PICKER_WIDTH for c in builtin), [c.name for c in builtin]
    assert picker.value == "minilm" and "MiniLM-L6 + masked-LM head (built in)" in [as_read(c.value) for c in at.sidebar.caption]
    assert sidebar.PAGE_LINKS_WRAP in [element.proto.body for element in at.get("html")]  # page titles wrap, uncut


@pytest.mark.slow
def test_picker_offers_bert_base_first_and_a_broken_cache_entry_gets_a_message(open_app, tmp_path, monkeypatch):
    _fake_snapshot(tmp_path, "bert-base-uncased")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    at = open_app()
    picker = at.selectbox(key="model_choice")
    assert picker.options[0].startswith("bert-base-uncased")
    assert picker.value == "bert-base-uncased"  # offered first and chosen for a new session
    no_exception(at)
    assert any("Could not load 'bert-base-uncased'" in as_read(e.value) for e in at.sidebar.error)  # the fake has no real weights
    assert "Pick another model" in texts(at)
    picker.select(models.default_source()).run()
    no_exception(at)
    assert not at.sidebar.error and at.query_params["model"] == models.default_source()
    assert "a small model trained by this project" in texts(at) and "python -m bert download bert-base-uncased" in texts(at)


def _parameters_digest(model) -> str:
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()


@pytest.mark.slow
def test_two_sessions_get_their_own_results_and_the_shared_model_is_never_changed(open_app):
    first = open_app("attention", text="The cat sat on the mat.", layer=2)
    loaded = cache.load_model(models.ModelKey.of(models.default_source()))
    before = _parameters_digest(loaded.model)
    second = open_app("attention", text="Colourless green ideas sleep furiously.", layer=5)
    first.run()
    second.run()
    tokens_first = [t.replace("\u200b", "") for t in figures(first)[0]["data"][0]["x"]]
    tokens_second = [t.replace("\u200b", "") for t in figures(second)[0]["data"][0]["x"]]
    assert tokens_first[1:4] == ["the", "cat", "sat"] and tokens_second[1:3] == ["colour", "##less"]
    assert first.selectbox(key="layer").value == 2 and second.selectbox(key="layer").value == 5
    assert _parameters_digest(loaded.model) == before and not loaded.model.training


@pytest.mark.slow
def test_concurrent_forward_passes_match_sequential_ones():
    """The shared model in many threads at once (as Streamlit serves sessions): each gets its own recording."""
    loaded = models.load(models.ModelKey.of("minilm-encoder"))
    sentences = ["The cat sat on the mat.", "Dogs bark.", "A much longer sentence about the weather in spring.", "Hi!"]
    prepared = [forward.prepare_input(loaded.tokenizer, s, None, [], False, 512) for s in sentences]
    expected = [forward.record(loaded.model, loaded.tokenizer, p) for p in prepared]
    results = [None] * len(prepared) * 3
    torch.set_num_threads(1)

    def work(i):
        results[i] = forward.record(loaded.model, loaded.tokenizer, prepared[i % len(prepared)])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(results))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, result in enumerate(results):
        reference = expected[i % len(prepared)]
        assert result.tokens == reference.tokens
        np.testing.assert_allclose(result.attention, reference.attention, atol=1e-6)
        np.testing.assert_allclose(result.neurons, reference.neurons, atol=1e-5)


def _input_key(at) -> tuple:
    """What the caches are asked for the input this browser session's page was served: the model's key and the input
    prepared from its sentence, pair, masks and cut."""
    key = models.ModelKey.of(at.selectbox(key="model_choice").value)
    text, pair = at.text_area(key="text").value, at.text_input(key="pair").value
    tokenizer = cache.load_model(key).tokenizer
    return key, forward.prepare_input(tokenizer, text, pair, at.session_state["masks"], False, 512)


@pytest.mark.slow
def test_the_forward_pass_is_shared_read_only_and_each_input_gets_its_own(open_app):
    from bert.pretrained import MINILM_HEAD_FILE

    if not MINILM_HEAD_FILE.is_file():
        pytest.skip(f"{MINILM_HEAD_FILE} (MiniLM's MLM head) is not there yet")
    cat, ideas = "The cat sat on the [MASK].", "Colourless green [MASK] sleep furiously."
    first, second, third = open_app("attention", text=cat), open_app("attention", text=ideas), open_app("attention", text=cat)
    for at in (first, second, third):
        no_exception(at)
    keys = [_input_key(at) for at in (first, second, third)]
    computation, work = recorded.FULL  # the pass the MLM and embeddings pages read (the attention page's has no neurons)
    a, b, again = (cache.computed_shared(computation.name, *key, computation.cache_key(work), work, computation) for key in keys)
    assert again is a, "the same input in another session is served the same record, not a copy"
    assert b is not a and a.tokens[1:4] == ("the", "cat", "sat") and b.tokens[1:3] == ("colour", "##less")

    arrays = [a.attention, a.neurons, *a.embeddings.values(), *(m.probabilities for m in a.masks)]
    stats = cache.head_statistics(*keys[0], a)
    arrays += list(stats.means.values())
    for values in arrays:
        assert not values.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            values[...] = 0
    with pytest.raises(TypeError):
        a.embeddings["token"] = None

    # what each session's page draws is its own sentence's forward pass, as recorded directly
    loaded = cache.load_model(keys[0][0])
    for at, result, text in ((first, a, cat), (second, b, ideas)):
        direct = forward.record(loaded.model, loaded.tokenizer, forward.prepare_input(loaded.tokenizer, text, None, [], False, 512))
        np.testing.assert_allclose(result.attention, direct.attention, atol=1e-6)
        pattern = next(trace for trace in figures(at)[0]["data"] if trace["type"] == "heatmap")
        np.testing.assert_allclose(array(pattern["z"]), direct.attention[0, 0], atol=1e-6)
        assert [m.tokens for m in result.masks] == [m.tokens for m in direct.masks]
