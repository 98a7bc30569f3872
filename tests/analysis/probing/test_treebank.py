"""Treebank reading: the shipped UD English EWT against the conllu package's own parse, multiword tokens and empty
nodes, the column format, and hand-made bad files (each with its message and line)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from bert.analysis.probing.treebank import BUILTIN_FILES, BUILTIN_FOLDER, builtin_treebank, detect_format, read_treebank
from bert.errors import BertError, TreebankError

CONLLU = """# sent_id = s1
# text = I don't know.
1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_
4.1\tknows\tknow\tVERB\tVBZ\t_\t_\t_\t4:conj\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

# sent_id = s2
1\tRain\train\tNOUN\tNN\t_\t0\troot\t_\t_
2\t.\t.\tPUNCT\t.\t_\t1\tpunct\t_\t_
"""


def write(tmp_path: Path, text: str | bytes, name: str = "file.conllu") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("split", list(BUILTIN_FILES))
def test_the_shipped_treebank_reads_as_conllu_parses_it(split):
    import conllu

    treebank = builtin_treebank(split)
    with open(BUILTIN_FOLDER / BUILTIN_FILES[split], encoding="utf-8") as handle:
        reference = [[t for t in sentence if isinstance(t["id"], int)] for sentence in conllu.parse_incr(handle)]
    assert len(treebank) == len(reference) and not treebank.skipped
    for ours, theirs in zip(treebank.sentences, reference):
        assert list(ours.words) == [t["form"] for t in theirs]
        assert list(ours.heads) == [t["head"] for t in theirs]
        assert list(ours.labels["upos"]) == [t["upos"] for t in theirs]
        assert list(ours.labels["xpos"]) == [t["xpos"] for t in theirs]
        assert list(ours.labels["deprel"]) == [t["deprel"] for t in theirs]
    assert treebank.tasks == ["upos", "xpos", "deprel", "arcs", "distance", "depth"]
    assert treebank.num_words == sum(len(r) for r in reference)


def test_multiword_tokens_and_empty_nodes_are_not_words(tmp_path):
    treebank = read_treebank(write(tmp_path, CONLLU))
    first, second = treebank.sentences
    assert first.words == ("I", "do", "n't", "know", ".") and first.heads == (4, 4, 4, 0, 4)
    assert first.labels["upos"] == ("PRON", "AUX", "PART", "VERB", "PUNCT") and first.sent_id == "s1"
    assert first.line == 1 and second.line == 11 and second.words == ("Rain", ".")


def test_uploaded_bytes_and_format_detection(tmp_path):
    assert read_treebank(CONLLU.encode(), name="upload.conllu").sentences[0].words[0] == "I"
    assert detect_format("x.conll", CONLLU) == "conllu"  # 10 columns and numeric ids
    assert detect_format("x.txt", "EU\tNNP\tB-NP\tB-ORG\n") == "columns"
    assert read_treebank(CONLLU.encode(), name="upload.txt").format == "conllu"


def test_column_format_every_label_column_is_a_task(tmp_path):
    text = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\n\nPeter NNP B-NP B-PER\n"
    treebank = read_treebank(write(tmp_path, text, "train.txt"))
    assert treebank.format == "columns" and treebank.label_columns == ("column2", "column3", "column4")
    assert treebank.tasks == ["column2", "column3", "column4"] and not treebank.has_trees
    assert [s.words for s in treebank.sentences] == [("EU", "rejects", "German"), ("Peter",)]
    assert treebank.sentences[0].labels["column4"] == ("B-ORG", "O", "B-MISC") and treebank.sentences[0].line == 3
    named = read_treebank(write(tmp_path, "# global.columns = WORD POS NER\nthe\tDT\tO\ndog\tNN\tO\n", "named.tsv"))
    assert named.label_columns == ("pos", "ner") and named.sentences[0].labels["pos"] == ("DT", "NN")


def row(i, form, head, deprel="dep", upos="NOUN"):
    return f"{i}\t{form}\t{form}\t{upos}\t_\t_\t{head}\t{deprel}\t_\t_"


GOOD = "\n".join([row(1, "good", 0, "root"), row(2, ".", 1, "punct", "PUNCT")])
BAD_SENTENCES = {  # case: (the bad sentence, its message, the line (within the sentence) the message names)
    "wrong column count": ("1\tonly\tthree", "3 tab-separated columns; CoNLL-U has 10", 1),
    "head outside": ("\n".join([row(1, "a", 0), row(2, "b", 7)]), "head 7 is outside the sentence (words 1..2", 2),
    "cycle": ("\n".join([row(1, "a", 0), row(2, "b", 3), row(3, "c", 2)]), "a cycle of heads: words 2 -> 3 -> 2", 2),
    "no root": ("\n".join([row(1, "a", 2), row(2, "b", 1)]), "no root: no word has head 0", 1),
    "two roots": ("\n".join([row(1, "a", 0), row(2, "b", 0)]), "two roots (words 1 and 2)", 2),
    "ids out of order": ("\n".join([row(1, "a", 0), row(3, "b", 1)]), "word id 3 where 2 was due", 2),
    "bad head value": ("\n".join([row(1, "a", 0), row(2, "b", "x")]), "'x' is not a valid value", 2),
    # Python refuses to convert more than 4,300 digits (ValueError, not conllu's ParseException): refused unread
    "5,000-digit word id": ("\n".join([row(1, "a", 0), row("9" * 5000, "b", 1)]),
                            "the word id (column 1) is 5,000 characters long", 2),
    "5,000-digit head": ("\n".join([row(1, "a", 0), row(2, "b", "9" * 5000)]), "the head (column 7) is 5,000 characters long", 2),
}


@pytest.mark.parametrize("case", list(BAD_SENTENCES))
def test_a_bad_sentence_is_left_out_with_its_line_and_reason(tmp_path, case):
    bad, message, line_in_sentence = BAD_SENTENCES[case]
    path = write(tmp_path, GOOD + "\n\n" + GOOD + "\n\n" + bad + "\n")  # the bad sentence starts on line 7
    bad_line = 6 + line_in_sentence
    treebank = read_treebank(path)
    assert len(treebank) == 2 and len(treebank.skipped) == 1
    assert message in treebank.skipped[0].reason and treebank.skipped[0].line == bad_line, treebank.skipped
    assert "1 sentence(s) of file.conllu left out" in treebank.skipped_summary()
    with pytest.raises(TreebankError, match=f"line {bad_line}: .*{re.escape(message)}") as error:  # strict
        read_treebank(path, strict=True)
    assert error.value.line == bad_line
    with pytest.raises(TreebankError, match=f"no usable sentence: line {line_in_sentence}: "):  # nothing usable
        read_treebank(write(tmp_path, bad + "\n", "only_bad.conllu"))


def test_bad_files_raise_typed_errors_naming_the_problem(tmp_path):
    cases = {
        "empty": (b"", "is empty"),
        "blank": (b"\n \n\n", "is empty"),
        "not utf-8": (GOOD.encode() + b"\n\n1\tcaf\xe9\tx\tNOUN\t_\t_\t0\troot\t_\t_\n", "line 4: not UTF-8"),
        "comments only": (b"# just a comment\n", "no usable sentence"),
    }
    for name, (data, message) in cases.items():
        with pytest.raises(TreebankError, match=message) as error:
            read_treebank(write(tmp_path, data, f"{name.replace(' ', '_')}.conllu"))
        assert isinstance(error.value, BertError), name
    with pytest.raises(TreebankError, match="is 59 bytes, over the limit of 10 bytes"):
        read_treebank(write(tmp_path, GOOD), max_bytes=10)
    with pytest.raises(TreebankError, match="upload.conllu is 59 bytes, over the limit of 10 bytes"):
        read_treebank(GOOD.encode(), name="upload.conllu", max_bytes=10)
    with pytest.raises(TreebankError, match="not a file"):
        read_treebank(tmp_path / "missing.conllu")
    columns = "the DT\ndog NN\n\ncat NN extra\n"
    treebank = read_treebank(write(tmp_path, columns, "cols.txt"))
    assert treebank.skipped[0].line == 4 and "3 columns; the file's first token line (line 1) has 2" in treebank.skipped[0].reason


def test_split_is_seeded_and_by_sentence():
    treebank = builtin_treebank("dev")
    train, test = treebank.split(0.2, seed=3)
    again_train, again_test = treebank.split(0.2, seed=3)
    assert train.sentences == again_train.sentences and test.sentences == again_test.sentences
    assert len(test) == round(0.2 * len(treebank)) and len(train) + len(test) == len(treebank)
    assert not {s.line for s in train.sentences} & {s.line for s in test.sentences}
    assert treebank.split(0.2, seed=4)[1].sentences != test.sentences
