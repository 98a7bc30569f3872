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
    from bert.analysis.features.corpora import corpus_from_texts
    from bert.analysis.features.neurons import scan_neurons, top_examples
    from bert.data import builtin_sentences

    model, tokenizer = minilm
    at = open_page("features", {"text": SENTENCE, "features_look_at": "MLP neurons", "neurons_layer": "2"})
    neuron = int(at.number_input(key="neurons_neuron").value)
    corpus = corpus_from_texts("first", [s.text for s in builtin_sentences(250)], tokenizer)  # the first screen's corpus
    scan = scan_neurons(model, corpus, 2, tokenizer.pad_id, k=20)
    shown = "\n".join(str(element.proto.body) for element in at.get("html"))
    for example in top_examples(scan, corpus, neuron)[:5]:
        assert f"<code>{example.activation:.2f}</code>" in shown
    histogram = next(f for f in figures(at) if "activations over the corpus" in f["layout"]["title"]["text"])
    assert int(array(histogram["data"][0]["y"]).sum()) == corpus.num_tokens


@pytest.mark.slow
def test_a_model_without_an_sae_gets_the_command_to_train_one(monkeypatch):
    from viz_app.specs import features

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
    from viz_app.server import visitor

    monkeypatch.setattr(visitor, "address", lambda: STUDENT_ADDRESS)


@pytest.mark.slow
def test_a_student_gets_no_index_folder_box(student):
    from viz_app.specs.features import INDEX, corpus_choices

    as_in_a_link = corpus_choices(may_choose_folders=True)[INDEX]  # the URL holds the option's label
    at = open_page("features", {"text": SENTENCE, "features_look_at": "MLP neurons", "neurons_corpus": as_in_a_link})
    assert not any(t.key == "neurons_corpus_index" for t in at.text_input)
    assert not any("corpus index" in option for option in at.selectbox(key="neurons_corpus").options)


@pytest.fixture
def labelled_copy(tmp_path, monkeypatch):
    """A copy of the shipped SAE in the folder the server offers SAEs from (BERT_INSIDE_SAES): (its folder, the
    name the page offers it by)."""
    import shutil

    from bert.analysis.features.shipped import SHIPPED_SAE

    folder = tmp_path / "saes" / "mine"
    folder.mkdir(parents=True)
    for part in ("sae.safetensors", "config.json"):
        shutil.copy(SHIPPED_SAE / part, folder / part)
    monkeypatch.setenv("BERT_INSIDE_SAES", str(tmp_path / "saes"))
    return folder, "mine: after layer 2, 4096 features"  # hidden_states[3]


def heatmap_columns(at) -> list[str]:
    heatmap = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("Sparse-autoencoder features"))
    return list(heatmap["data"][0]["x"])


def open_sae(name: str):
    at = open_page("features", {"text": SENTENCE})
    at.selectbox(key="features_sae").select(name).run()
    no_exception(at)
    return at


@pytest.mark.slow
def test_the_owners_saved_label_shows_in_a_new_session(labelled_copy):
    import json

    folder, name = labelled_copy
    at = open_page("features", {"text": SENTENCE})
    assert not any(b.key == "feature_label_save" for b in at.button)  # the shipped SAE: never written to
    at.selectbox(key="features_sae").select(name).run()
    feature = int(at.number_input(key="features_feature").value)
    at.text_input(key=f"feature_label:{name}:{feature}").input("barking <dogs>").run()
    at.button(key="feature_label_save").click().run()
    no_exception(at)
    assert json.loads((folder / "labels.json").read_text(encoding="utf-8")) == {str(feature): "barking <dogs>"}
    fresh = open_sae(name)  # another visitor's session
    assert int(fresh.number_input(key="features_feature").value) == feature
    assert f"f{feature} · barking &lt;dogs&gt;" in heatmap_columns(fresh)


@pytest.mark.slow
def test_a_student_sees_the_saved_labels_and_cannot_write(labelled_copy, student):
    folder, name = labelled_copy
    at = open_sae(name)
    feature = int(at.number_input(key="features_feature").value)
    (folder / "labels.json").write_text(f'{{"{feature}": "kept by the owner"}}', encoding="utf-8")
    at.run()
    assert f"f{feature} · kept by the owner" in heatmap_columns(at)
    assert not any(b.key == "feature_label_save" for b in at.button)
    at.text_input(key=f"feature_label:{name}:{feature}").input("mine only").run()
    assert f"f{feature} · mine only" in heatmap_columns(at)  # for this browser session
    assert (folder / "labels.json").read_text(encoding="utf-8") == f'{{"{feature}": "kept by the owner"}}'
    (folder / "labels.json").write_text("{broken", encoding="utf-8")
    at.run()
    no_exception(at)
    assert "labels.json of mine is not JSON" in texts(at).replace("\\", "") and str(folder.parent) not in texts(at)


@pytest.mark.slow
def test_a_student_reads_the_training_files_name_never_its_folder(labelled_copy, student):
    import json

    folder, name = labelled_copy
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps(config | {"data": "/srv/teacher/corpora/wiki.txt"}), encoding="utf-8")
    at = open_sae(name)
    assert "trained on wiki.txt" in texts(at) and "/srv/teacher" not in texts(at)
    deep = b"[" * 200_000  # a labels file nested 200 kB deep: one line, no traceback
    at.file_uploader(key=f"feature_labels_upload:{name}").set_value(("deep.json", deep, "application/json")).run()
    no_exception(at)
    assert "That labels file cannot be used: deep.json is nested too deeply" in texts(at).replace("\\", "")


def test_training_data_by_role():
    from viz_app.server.access import Role
    from viz_app.specs.features import training_data

    assert training_data("/srv/teacher/corpora/wiki.txt", Role.OWNER) == "/srv/teacher/corpora/wiki.txt"
    assert training_data("/srv/teacher/corpora/wiki.txt", Role.PRESENTER) == "/srv/teacher/corpora/wiki.txt"
    assert training_data("/srv/teacher/corpora/wiki.txt", Role.STUDENT) == "wiki.txt"
    assert training_data("C:\\corpora\\wiki.txt", Role.STUDENT) == "wiki.txt"
    assert training_data("", Role.STUDENT) == "an unnamed text"
