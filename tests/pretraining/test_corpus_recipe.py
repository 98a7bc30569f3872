"""The corpus recipe (recipes/corpus/): evaluation sentences kept out, chatterbot's YAML read by PyYAML, the build's
merge step end to end on hand-made cached sources (no download)."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "recipes"))

from corpus import SOURCES, Excluder, dedup_key  # noqa: E402
from corpus.build import main  # noqa: E402
from corpus.exclude import external_sentences  # noqa: E402
from corpus.sources.chatterbot import conversations  # noqa: E402

EXTERNAL = Path(os.environ.get("BERT_INSIDE_EXTERNAL") or Path(__file__).resolve().parents[3] / "shared" / "external")


HEADER = "pattern\tconstr_id\tsent_id\tcorrect_number\tform\tclass\ttype\tprefix\tn_attr\tpunct\tfreq\tlen_context\tlen_prefix\tsent\n"
SENTENCE = "The keys to the old cabinet are on the table . <eos>"


@pytest.fixture
def external(tmp_path):
    """A tiny folder laid out like the published data (BERT_INSIDE_EXTERNAL): one agreement pair, two Ettinger items, one LAMA record, and
    a file the option does not read."""
    folder = tmp_path / "external"
    (folder / "goldberg2019_gulordava_agreement").mkdir(parents=True)
    (folder / "goldberg2019_gulordava_agreement" / "generated.tab").write_text(
        HEADER + f"p\t1\t1\tplur\tare\tcorrect\toriginal\tThe keys\t1\tFalse\t9\t5\t6\t{SENTENCE}\n"
        f"p\t1\t1\tplur\tis\twrong\toriginal\tThe keys\t1\tFalse\t9\t5\t6\t{SENTENCE}\n")
    inputs = folder / "ettinger2020_psycholinguistic_cloze" / "inputs"
    inputs.mkdir(parents=True)
    (inputs / "role-contextlist").write_text("The teacher graded which essays the students had [MASK]\n")
    (inputs / "cprag-contextlist").write_text(
        "\"Checkmate,\" Rosaline announced with glee. She was getting to be really good at [MASK]\n")
    (folder / "lama_squad").mkdir()
    (folder / "lama_squad" / "test.jsonl").write_text(
        '{"masked_sentences": ["Von Miller plays in [MASK] position for the Denver Broncos."], "obj_label": "x"}\n')
    (folder / "notes.md").write_text("The keys to the garden shed are lost somewhere here.\n")  # not read
    return folder


def test_external_sentences_reads_the_benchmarks_and_lama_split_into_sentences(external):
    found = external_sentences(external)
    assert found["LAMA"] == ["Von Miller plays in [MASK] position for the Denver Broncos."]
    benchmarks = found["benchmarks"]
    for sentence in ["the keys to the old cabinet [MASK] on the table .",  # Goldberg: lower-cased, the verb masked
                     "The teacher graded which essays the students had [MASK].",
                     "\"Checkmate,\" Rosaline announced with glee.", "She was getting to be really good at [MASK]."]:
        assert sentence in benchmarks
    assert not any("garden shed" in sentence for sentence in benchmarks)


def test_the_build_leaves_out_copies_of_external_sentences(tmp_path, external):
    """Two cached sources (the merge reads them; nothing is downloaded), merged with --exclude-external."""
    out = tmp_path / "corpus"
    sources = out / ".cache" / "sources"
    sources.mkdir(parents=True)
    lines = {
        "harvard-sentences": ["The teacher graded which essays the students had marked in red ink.",  # filled-in cloze
                              "The birch canoe slid on the smooth planks."],
        "sotu": ["He said the keys to the old cabinet are on the table, and left.",  # Goldberg's sentence inside
                 "She was getting to be really good at it.",  # the second sentence of an Ettinger item, filled in
                 "Von Miller plays in the linebacker position for the Denver Broncos.",
                 "The keys to the garden shed are lost somewhere here.",  # only in a file the option ignores
                 "Taxes fell last year in most of the country."],
    }
    from corpus.build import CODE_HASH

    for name, text in lines.items():
        (sources / f"{name}.txt").write_text("\n".join(text) + "\n")
        (sources / f"{name}.json").write_text(
            f'{{"name": "{name}", "package": "p", "version": "1", "licence": "l", "note": "n", "raw_lines": 2, '
            f'"code": "{CODE_HASH}"}}')
    main(["--out", str(out), "--only", "harvard-sentences", "sotu", "--exclude", "--exclude-external", str(external)])
    kept = sorted((out / "train.txt").read_text().split("\n") + (out / "heldout.txt").read_text().split("\n"))
    assert [line for line in kept if line] == [
        "Taxes fell last year in most of the country.",
        "The birch canoe slid on the smooth planks.",
        "The keys to the garden shed are lost somewhere here.",
    ]
    assert ": 4 lines" in (out / "SOURCES.md").read_text()


def test_without_the_option_nothing_external_is_left_out(tmp_path, external):
    excluder = Excluder([])
    assert not excluder.hit(dedup_key("The keys to the old cabinet are on the table."))
    for sentences in external_sentences(external).values():
        for sentence in sentences:
            excluder.add(sentence)
    assert excluder.hit(dedup_key("The keys to the old cabinet are on the table."))
    assert excluder.hit(dedup_key("Yes. She was getting to be really good at chess, I think."))
    assert not excluder.hit(dedup_key("She was getting to be really good."))


def test_the_real_external_folder_is_read_when_present():
    if not EXTERNAL.is_dir():
        pytest.skip(f"the published data is not at {EXTERNAL} (set BERT_INSIDE_EXTERNAL to its folder)")
    found = external_sentences(EXTERNAL)
    assert len(found["benchmarks"]) > 500 and len(found["LAMA"]) > 100


def test_chatterbot_conversations_come_from_pyyaml():
    text = (
        "categories:\n- greetings\nconversations:\n"
        "- - Hello\n  - Hi there, how are you?\n"
        "- - 'Tell me a joke'\n  - 'a long joke that YAML\n    folds onto one line '\n"
        "- A slip, this entry is not a list\n  - 'so YAML reads it as one string'\n"
    )
    assert list(conversations(text)) == [
        ["Hello", "Hi there, how are you?"],
        ["Tell me a joke", "a long joke that YAML folds onto one line"],
    ]


def test_every_source_has_a_unique_name_in_build_order():
    names = [source.name for source in SOURCES]
    assert len(names) == len(set(names)) == 24
    assert names[:2] == ["wordnet-examples", "wordnet-glosses"] and names[-1] == "mobydick"
