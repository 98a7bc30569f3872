"""The generated tasks (bert/data/variable_tasks.py), pair files (bert/data/variable_pairs.py) and
`python -m bert das`: what each pair holds, the line of every bad row, the JSON and exit status 2 for bad input."""
from __future__ import annotations

import json
import random

import pytest

from bert.__main__ import main
from bert.data.variable_pairs import read_pairs
from bert.data.variable_tasks import TASKS, task_pairs
from bert.errors import DataFileError


@pytest.mark.parametrize("task", list(TASKS))
def test_a_generated_pair_differs_in_the_variables_word_only(task):
    pairs = task_pairs(task)
    assert len(pairs) >= 500
    answers = {"number-pp": {"singular": "is", "plural": "are"}, "number-rc": {"singular": "is", "plural": "are"},
               "gender-pronoun": {"male": "he", "female": "she"}, "city-country": {"germany": "Germany", "canada": "Canada"}}[task]
    for pair in random.Random(0).sample(pairs, 300):
        assert pair.base.count("[MASK]") == pair.source.count("[MASK]") == 1
        different = [(a, b) for a, b in zip(pair.base.lower().split(), pair.source.lower().split()) if a != b]
        assert different == [(pair.base_word, pair.source_word)]
        assert pair.base.lower().split()[pair.subject] == pair.base_word  # the template's subject: here, the variable's word
        assert pair.base_value != pair.source_value
        assert (pair.base_answer, pair.source_answer) == (answers[pair.base_value], answers[pair.source_value])


@pytest.mark.parametrize("task", list(TASKS))
def test_every_sampled_pair_lines_up_in_bert_word_pieces(task, minilm_path):
    import bert
    from bert.analysis.causal.interchange import prepare_pairs

    tokenizer = bert.load_tokenizer(minilm_path)
    usable, unusable = prepare_pairs(tokenizer, random.Random(1).sample(task_pairs(task), 400), 512)
    assert unusable == 0 and all(p.differs < p.mask or task == "gender-pronoun" for p in usable)
    assert all(p.subject == p.differs for p in usable)  # every subject is one word piece, and the word that differs


def test_the_subject_is_its_last_word_piece(minilm_path):
    """A subject of several word pieces ("kroxldyphivc": k ##ro ##x ##ld ##yp ##hi ##vc in BERT's vocabulary) before
    the word that differs: the subject role is its last piece, index 8 after [CLS] and "the"; a pair without a named
    subject (a file's) takes the first word that differs."""
    import bert
    from bert.analysis.causal.interchange import prepare_pairs
    from bert.data.variable_pairs import VariablePair

    tokenizer = bert.load_tokenizer(minilm_path)
    named = VariablePair("the kroxldyphivc dog [MASK] old .", "the kroxldyphivc dogs [MASK] old .", "is", "are", subject=1)
    (pair,), _ = prepare_pairs(tokenizer, [named], 512)
    assert pair.base.tokens[2:10] == ["k", "##ro", "##x", "##ld", "##yp", "##hi", "##vc", "dog"]
    assert (pair.position("subject"), pair.position("differs"), pair.position("mask")) == (8, 9, 10)
    unnamed = VariablePair("the dog kroxldyphivc [MASK] old .", "the dog zroxldyphivc [MASK] old .", "is", "are")
    (pair,), _ = prepare_pairs(tokenizer, [unnamed], 512)
    assert pair.base.tokens[3:10] == ["k", "##ro", "##x", "##ld", "##yp", "##hi", "##vc"] and pair.source.tokens[3] == "z"
    assert (pair.position("subject"), pair.position("differs")) == (9, 3)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_pair_files_in_both_formats(tmp_path):
    tsv = write(tmp_path, "p.tsv", "base\tsource\tbase_answer\tsource_answer\n"
                                   "The dog [MASK] old .\tThe dogs [MASK] old .\tis\tare\n\n"
                                   "The king said [MASK] left .\tThe queen said [MASK] left .\the\tshe\n")
    pairs = read_pairs(tsv)
    assert [(p.base_word, p.source_word, p.base_value, p.line) for p in pairs] == [("dog", "dogs", "is", 2), ("king", "queen", "he", 4)]
    jsonl = write(tmp_path, "p.jsonl", json.dumps({"base": "The dog [MASK] old .", "source": "The dogs [MASK] old .",
                                                   "base_answer": "is", "source_answer": "are"}) + "\n")
    assert read_pairs(jsonl)[0].source_answer == "are"


@pytest.mark.parametrize("name, text, message", [
    ("p.tsv", "base\tsource\tbase_answer\n", "line 1: the header lacks source_answer"),
    ("p.tsv", "base\tsource\tbase_answer\tsource_answer\na [MASK] .\tb [MASK] .\tis\t\n", "line 2: source_answer is missing"),
    ("p.tsv", "base\tsource\tbase_answer\tsource_answer\na [MASK] .\tb [MASK] .\tis\tis\n", "line 2: base_answer and source_answer are both"),
    ("p.tsv", "base\tsource\tbase_answer\tsource_answer\na [MASK] .\tb c [MASK] .\tis\tare\n", "line 2: base and source must have the same words"),
    ("p.tsv", "base\tsource\tbase_answer\tsource_answer\na\tb\tc\n", "line 2: 3 columns where the header has 4"),
    ("p.jsonl", '{"base": "a [MASK]", "source": "b [MASK]", "base_answer": "is", "source_answer": "are"}\n{"base": \n', "line 2: not JSON"),
    ("p.jsonl", "[1, 2]\n", "line 1: a JSON object"),
    ("p.tsv", "", "is empty"),
])
def test_a_bad_pair_file_names_its_line(tmp_path, name, text, message):
    with pytest.raises(DataFileError, match=message):
        read_pairs(write(tmp_path, name, text))


def tiny_pairs_file(tmp_path):
    rows = ["base\tsource\tbase_answer\tsource_answer"]
    for template in ("the {w} [MASK] at the park .", "her {w} [MASK] to the mail ."):
        for a in "abcdef":
            for b in "ghijkl":
                rows.append(f"{template.format(w=a)}\t{template.format(w=b)}\tis\tof")
                rows.append(f"{template.format(w=b)}\t{template.format(w=a)}\tof\tis")
    return write(tmp_path, "tiny.tsv", "\n".join(rows) + "\n")


def test_das_command_writes_the_documented_json(tiny_mlm_folder, tmp_path, capsys):
    out = tmp_path / "das.json"
    assert main(["das", "--model", str(tiny_mlm_folder), "--pairs", str(tiny_pairs_file(tmp_path)), "--layer", "1",
                 "--position", "mask", "--method", "das", "--dims", "2", "--steps", "2", "--max-pairs", "16",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result) == ["model", "task", "method", "layer", "position", "dims", "pairs", "iia", "control_iia",
                            "selectivity", "log_odds"]
    assert (result["method"], result["layer"], result["position"], result["dims"]) == ("das", 1, "mask", 2)
    assert list(result["pairs"]) == ["train", "test", "dropped", "unusable"] and result["pairs"]["train"] <= 16
    assert list(result["iia"]) == ["train", "test"] and list(result["control_iia"]) == ["test"]
    assert result["selectivity"] == pytest.approx(result["iia"]["test"] - result["control_iia"]["test"])
    assert capsys.readouterr().out.startswith("cost: at most ")  # the price comes first


def test_das_at_the_subject_is_the_librarys_align_there(tiny_mlm_folder, tmp_path):
    """--position subject reaches align's subject role: a file's pairs take the first word that differs (one piece)."""
    import bert
    from bert.analysis.causal.alignment import AlignmentSettings, align

    out, pairs = tmp_path / "subject.json", tiny_pairs_file(tmp_path)
    assert main(["das", "--model", str(tiny_mlm_folder), "--pairs", str(pairs), "--layer", "1", "--position", "subject",
                 "--method", "mean-diff", "--max-pairs", "12", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    model, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    expected = align(model, tokenizer, read_pairs(pairs), "transformer.1.hook_out", 2,  # "[CLS] the a ...": token 2
                     AlignmentSettings(method="mean-diff", max_pairs=12))
    assert result["position"] == "subject" and result["iia"] == expected.iia and result["control_iia"] == expected.control_iia


def test_das_sweep_writes_one_row_per_layer(tiny_mlm_folder, tmp_path):
    out = tmp_path / "sweep.json"
    assert main(["das", "--model", str(tiny_mlm_folder), "--pairs", str(tiny_pairs_file(tmp_path)), "--sweep",
                 "--method", "mean-diff", "--max-pairs", "12", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["layers"] == [0, 1] and result["positions"] == ["mask", "differs", "subject"]
    for grid in ("iia", "control_iia", "selectivity", "log_odds"):
        assert [len(row) for row in result[grid]] == [3, 3]


@pytest.mark.parametrize("case, expected", [
    ("no layer", "give --layer L"), ("position", "--position must be a token index or one of mask, differs, subject"),
    ("dims", "dims must be from 1"), ("layer", "layer 7 is not a layer"), ("bad file", "line 2:"),
])
def test_das_bad_input_exits_2_with_one_line(tiny_mlm_folder, tmp_path, capsys, case, expected):
    pairs = str(tiny_pairs_file(tmp_path))
    arguments = {
        "no layer": ["--pairs", pairs],
        "position": ["--pairs", pairs, "--layer", "0", "--position", "verb"],
        "dims": ["--pairs", pairs, "--layer", "0", "--dims", "0"],
        "layer": ["--pairs", pairs, "--layer", "7"],
        "bad file": ["--pairs", str(write(tmp_path, "bad.tsv", "base\tsource\tbase_answer\tsource_answer\nthe dog [MASK] .\tthe dogcat [MASK] .\tis\tof\n")),
                     "--layer", "0"],
    }[case]
    assert main(["das", "--model", str(tiny_mlm_folder), *arguments]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines
