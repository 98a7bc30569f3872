"""The Features page's chart builders and helpers, without Streamlit: the numbers behind each chart, escaping of
user text, the strongest features, the offered SAEs and an uploaded corpus's limits."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from bert.analysis.features.corpora import corpus_from_texts
from bert.analysis.features.neurons import NeuronExample
from bert_test_support import TWO_SENTENCE_CONLLU
from viz_app.specs import features as feature_logic
from viz_app.charts import features as charts


def test_strongest_features_are_the_peaks_that_fire():
    z = np.array([[0.0, 2.0, 0.0, 0.5], [0.0, 0.1, 0.0, 3.0], [0.0, 0.0, 0.0, 0.0]])
    assert charts.strongest_features(z, 5).tolist() == [3, 1]  # feature 0 and 2 never fire
    assert charts.strongest_features(z, 1).tolist() == [3]


def test_heatmap_shows_the_chosen_columns_with_labels_and_escaped_tokens():
    z = np.arange(12, dtype=float).reshape(3, 4)
    chart = charts.token_feature_heatmap(z, ["[CLS]", "<b>", "[SEP]"], np.array([3, 0]), 3, {3: "html & tags"})
    go.Figure(chart.figure.to_dict())  # plotly's validation accepts it
    np.testing.assert_array_equal(chart.data.to_numpy(), z[:, [3, 0]])
    assert list(chart.data.columns) == ["f3", "f0"]
    trace = chart.figure.data[0]
    assert "&lt;b&gt;" in trace.y[1] and trace.x[0] == "f3 · html &amp; tags"


def test_histogram_keeps_the_counts_and_bins():
    edges, counts = np.linspace(0, 3, 4), np.array([5, 0, 2])
    chart = charts.activation_histogram(edges, counts, "neuron 7")
    assert chart.data["tokens"].tolist() == [5, 0, 2] and chart.data["bin_start"].tolist() == [0, 1, 2]
    assert "above 3.0" in chart.caption
    assert charts.activation_histogram(edges, counts, "feature 2", active_only=True).caption == ""


def test_guess_change_and_promoted_tokens_carry_their_numbers():
    chart = charts.guess_change_chart(["dog", "<cat>"], np.array([0.5, 0.1]), np.array([0.2, 0.3]), "feature 4 off")
    go.Figure(chart.figure.to_dict())
    assert chart.data[["before", "after"]].to_numpy().tolist() == [[0.5, 0.2], [0.1, 0.3]]
    assert "&lt;cat&gt;" in chart.figure.data[0].x[1]
    promoted = charts.promoted_tokens_chart(["bark", "##s"], np.array([2.0, 1.0]), 4)
    assert promoted.data["token"].tolist() == ["bark", "##s"]
    mix = charts.tag_mix_chart({"NOUN": (0.75, 0.2), "VERB": (0.25, 0.1)}, "neuron 3", "upos")
    assert mix.data["top_examples"].tolist() == [0.75, 0.25] and mix.data["corpus"].tolist() == [0.2, 0.1]


def test_example_html_marks_the_token_and_escapes_the_sentence(tokenizer):
    corpus = corpus_from_texts("t", ["the <dog> barked", "her cat"], tokenizer)
    position = corpus.encodings[0].tokens.index("dog")
    html = feature_logic.example_html(NeuronExample("the <dog> barked", position, "dog", 1.5, 0), corpus)
    assert html == "<code>1.50</code> the &lt;<mark><b>dog</b></mark>&gt; barked"
    last = len(corpus.encodings[1]) - 1
    assert feature_logic.example_html(NeuronExample("her cat", last, "[SEP]", 0.25, 1), corpus).endswith(
        "her cat <mark><b>[SEP]</b></mark>")


def test_uploaded_corpus_limits_say_what_to_change(tokenizer, monkeypatch):
    assert feature_logic.uploaded_corpus("the dog\nher cat\n", "mine.txt", tokenizer, 64).num_tokens == 8
    assert "no sentences" in feature_logic.uploaded_corpus("\n \n", "x.txt", tokenizer, 64)
    monkeypatch.setattr(feature_logic, "MAX_LINES", 1)
    assert "limit is 1 sentences" in feature_logic.uploaded_corpus("the dog\nher cat", "x.txt", tokenizer, 64)
    assert "too long" in feature_logic.uploaded_corpus("the dog " * 40, "x.txt", tokenizer, 16)


def test_offered_saes_shipped_and_the_teachers_folder(tmp_path, monkeypatch):
    from bert.analysis.features.sae import SaeConfig

    monkeypatch.setenv(feature_logic.SAE_FOLDERS_VARIABLE, str(tmp_path))
    for name, model in (("mine", "my-bert"), ("other", "another-bert")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(SaeConfig(model, "", 2, 8, 16, 2, True).to_json())
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    assert list(feature_logic.offered_saes("my-bert")) == ["mine: after layer 1, 16 features"]  # hidden_states[2]
    assert "--model my-bert --hidden-states-index 3" in feature_logic.train_command("my-bert", 3)


def test_a_neuron_on_a_treebank_gets_the_deprel_mix_beside_the_upos_mix(tiny_mlm_folder):
    from bert.analysis.features.corpora import corpus_from_treebank
    from bert.analysis.features.neurons import scan_neurons, tag_mix
    from bert.analysis.probing.treebank import read_treebank
    from bert.pretrained import load_folder
    from viz_app.specs.features import MAX_TAGS, neuron_view

    model, tokenizer = load_folder(tiny_mlm_folder)
    corpus = corpus_from_treebank("tiny", read_treebank(TWO_SENTENCE_CONLLU.encode(), name="t.conllu").sentences, tokenizer)
    scan = scan_neurons(model.eval(), corpus, 1, tokenizer.pad_id, k=4)
    mixes = {column: tag_mix(scan, corpus, 5, column) for column in corpus.tags}
    assert set(mixes) == {"upos", "deprel"}
    shown = neuron_view(5, 1, scan, mixes)
    assert set(shown) == {"histogram", "tag_mix:upos", "tag_mix:deprel"}
    for column in ("upos", "deprel"):
        chart = shown[f"tag_mix:{column}"]
        assert chart.data["tag"].tolist() == list(mixes[column])[:MAX_TAGS]
        assert chart.data["top_examples"].tolist() == [mixes[column][t][0] for t in chart.data["tag"]]
        assert column.upper() in chart.figure.layout.title.text
    assert "nmod:poss" in shown["tag_mix:deprel"].data["tag"].tolist()
    many = {f"tag{i}": (0.0, 0.01) for i in range(40)}
    assert len(neuron_view(5, 1, scan, {"deprel": many})["tag_mix:deprel"].data) == MAX_TAGS
    assert set(neuron_view(5, 1, scan, {})) == {"histogram"}  # plain text: no tags


def test_the_index_corpus_is_offered_only_to_who_may_choose_folders():
    assert feature_logic.INDEX in feature_logic.corpus_choices(may_choose_folders=True)
    assert feature_logic.INDEX not in feature_logic.corpus_choices(may_choose_folders=False)
    assert feature_logic.UPLOAD in feature_logic.corpus_choices(may_choose_folders=False)


def test_who_may_keep_labels_with_an_sae_and_which_labels_a_page_shows(tmp_path):
    from bert.analysis.features.shipped import SHIPPED_SAE
    from viz_app.server.access import Role

    assert feature_logic.may_save_labels(Role.OWNER, tmp_path)
    assert not feature_logic.may_save_labels(Role.OWNER, SHIPPED_SAE)  # inside the package
    assert not feature_logic.may_save_labels(Role.STUDENT, tmp_path)
    assert not feature_logic.may_save_labels(Role.PRESENTER, tmp_path)
    assert feature_logic.saved_labels(tmp_path, 8) == ({}, None)
    (tmp_path / "labels.json").write_text('{"9": "x"}')
    labels, problem = feature_logic.saved_labels(tmp_path, 8)
    assert labels == {} and "feature 9 is outside" in problem and str(tmp_path.parent) not in problem
    assert feature_logic.uploaded_labels(None, "", 8) == ({}, None)
    assert feature_logic.uploaded_labels(b'{"3": " dogs "}', "mine.json", 8) == ({3: "dogs"}, None)
    labels, problem = feature_logic.uploaded_labels(b"[1, 2]", "mine.json", 8)
    assert labels == {} and "mine.json must be a JSON object" in problem
    state = {"feature_label:a:3": "dogs", "feature_label:a:4": "  ", "feature_label:b:5": "cats",
             "feature_label:a:b:6": "other", "features_shown": 24}
    assert feature_logic.typed_labels(state, "a") == {3: "dogs"}
