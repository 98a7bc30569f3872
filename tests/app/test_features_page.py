"""The Features page in AppTest on the built-in model and its shipped sparse autoencoder: the heatmap's numbers are
the library's encoding of the sentence, the [MASK] guess before and after is the library's, a label names the
feature, the neuron view's examples are the one-pass scan's, and a model without an SAE gets the command to train one."""
from __future__ import annotations

import numpy as np
import pytest

from app_helpers import array, figures, no_exception, open_page, texts

SENTENCE = "The [MASK] barked at the mailman."


@pytest.fixture(scope="module")
def minilm():
    from bert import load_pretrained

    return load_pretrained("minilm")


@pytest.fixture(scope="module")
def shipped(minilm):
    from bert.analysis.features.sae import load_sae
    from bert.analysis.features.shipped import SHIPPED_SAE

    return load_sae(SHIPPED_SAE, minilm[0])


@pytest.mark.slow
def test_features_of_the_sentence_and_the_mask_guess(minilm, shipped):
    from bert.analysis.features.feature_pages import mask_guess_change
    from bert.analysis.features.sae import encode_tokens

    model, tokenizer = minilm
    at = open_page("features", {"text": SENTENCE, "features_factor": "0.0"})
    heatmap = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("Sparse-autoencoder features"))
    z = encode_tokens(shipped, model, tokenizer.encode(SENTENCE)).numpy()
    columns = [int(label.split(" ")[0][1:]) for label in heatmap["data"][0]["x"]]
    np.testing.assert_allclose(array(heatmap["data"][0]["z"]), z[:, columns], atol=1e-4)
    assert columns[0] == int(z.max(0).argmax())  # strongest first
    feature = int(at.number_input(key="features_feature").value)
    assert feature == columns[0]
    guess = next(f for f in figures(at) if "before and after" in f["layout"]["title"]["text"])
    expected = mask_guess_change(model, tokenizer, tokenizer.encode(SENTENCE), shipped, feature, 0.0)
    np.testing.assert_allclose(array(guess["data"][0]["y"]), expected.before, atol=1e-5)
    np.testing.assert_allclose(array(guess["data"][1]["y"]), expected.after, atol=1e-5)
    assert f"Where feature {feature} fires most" in texts(at)


@pytest.mark.slow
def test_a_label_names_the_feature_in_the_heatmap():
    at = open_page("features", {"text": SENTENCE})
    feature = int(at.number_input(key="features_feature").value)
    box = next(t for t in at.text_input if t.key.startswith("feature_label:"))
    box.input("barking <dogs>").run()
    no_exception(at)
    heatmap = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("Sparse-autoencoder features"))
    assert f"f{feature} · barking &lt;dogs&gt;" in heatmap["data"][0]["x"]


@pytest.mark.slow
def test_the_neuron_view_shows_the_one_pass_scan(minilm):
    from bert.analysis.features.corpora import load_corpus
    from bert.analysis.features.neurons import scan_neurons, top_examples

    model, tokenizer = minilm
    at = open_page("features", {"text": SENTENCE, "features_look_at": "MLP neurons", "neurons_layer": "2"})
    neuron = int(at.number_input(key="neurons_neuron").value)
    corpus = load_corpus("builtin", tokenizer)
    scan = scan_neurons(model, corpus, 2, tokenizer.pad_id, k=20)
    shown = "\n".join(str(element.proto.body) for element in at.get("html"))
    for example in top_examples(scan, corpus, neuron)[:5]:
        assert f"<code>{example.activation:.2f}</code>" in shown
    histogram = next(f for f in figures(at) if "activations over the corpus" in f["layout"]["title"]["text"])
    assert int(array(histogram["data"][0]["y"]).sum()) == corpus.num_tokens


@pytest.mark.slow
def test_a_model_without_an_sae_gets_the_command_to_train_one(monkeypatch):
    from viz_app import features

    monkeypatch.setattr(features, "offered_saes", lambda source: {})
    at = open_page("features", {"text": SENTENCE})
    assert "No sparse autoencoder is offered for this model" in texts(at)
    assert "python -m bert sae train --model minilm" in texts(at)


INDEX_SENTENCES = ["The river bank was muddy after the rain.", "She paid the money into the bank.",
                   "Birds sang in the tall trees.", "He ran to the station."]


@pytest.mark.slow
def test_the_owner_reads_a_corpus_index_as_the_corpus(minilm, tmp_path):
    from bert.analysis.corpus.corpus_search import build_index

    model, tokenizer = minilm
    spans = [[(15, 19, "noun")], None, [(0, 5, "noun")], [(3, 6, "verb")]]
    folder = build_index(model, tokenizer, INDEX_SENTENCES, layers=[0], parts_of_speech=spans).save(tmp_path / "index")
    at = open_page("features", {"text": SENTENCE, "features_look_at": "MLP neurons", "neurons_layer": "2"})
    at.selectbox(key="neurons_corpus").select("index").run()
    assert "Type the folder of a corpus index" in texts(at)
    at.text_input(key="neurons_corpus_index").input(str(folder)).run()
    no_exception(at)
    assert "Where neuron" in texts(at) and "(index)" in texts(at)
    shown = "\n".join(str(element.proto.body) for element in at.get("html"))
    assert any(sentence.split()[1] in shown for sentence in INDEX_SENTENCES)
    assert any("POS of its top examples" in f["layout"]["title"]["text"] for f in figures(at))
    at.text_input(key="neurons_corpus_index").input(str(tmp_path / "nothing")).run()
    assert "holds no corpus index" in texts(at)


STUDENT_ADDRESS = "192.168.1.20"


@pytest.fixture
def student(monkeypatch):
    from viz_app import visitor

    monkeypatch.setattr(visitor, "address", lambda: STUDENT_ADDRESS)


@pytest.mark.slow
def test_a_student_gets_no_index_folder_box(student):
    from viz_app.features import INDEX, corpus_choices

    as_in_a_link = corpus_choices(may_choose_folders=True)[INDEX]  # the URL holds the option's label
    at = open_page("features", {"text": SENTENCE, "features_look_at": "MLP neurons", "neurons_corpus": as_in_a_link})
    assert not any(t.key == "neurons_corpus_index" for t in at.text_input)
    assert not any("corpus index" in option for option in at.selectbox(key="neurons_corpus").options)
