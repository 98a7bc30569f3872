"""The text users read speaks of the project, not of how it was made.

Users have the repository, not its history: no numbered work sessions, no issue numbers, none of the notes the
project started from ("seed 000", "seeds/000") and no `../shared` folder beside the checkout. The text cites
papers and the project's own files instead. Scanned: README.md and docs/; every Markdown, YAML and text file of
bert/, viz_app/, pages/, recipes/, bench/ and tests/ (model cards, data notes, lessons); the docstrings, string
literals and comments of their Python files and of scripts/ (this file's own examples aside); the `--help` of `python -m bert`, of every subcommand and of `python -m viz_app.export.lesson`.
A failure names the file (or command) and line.
"""
from __future__ import annotations

import ast
import contextlib
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE_FOLDERS = ("bert", "viz_app", "pages", "recipes", "bench", "scripts", "tests")
SELF = Path(__file__).resolve()  # this scan: its examples of what it catches are the point
TEXT_SUFFIXES = {".md", ".yaml", ".yml", ".txt", ".sh", ".toml"}
# Third-party text shipped unchanged beside its data (the treebank's own README and licence): not ours to edit.
THIRD_PARTY = {"bert/data/ud_english_ewt/README.md", "bert/data/ud_english_ewt/LICENSE.txt"}

# What gives the project's making away, and what to write instead. \s+ so that a line break cannot hide a match.
FORBIDDEN = [
    (re.compile(r"\b[Ss]essions?\s+[0-9]+"), "a numbered work session: give the date instead"),
    (re.compile(r"(?i)\b(?:this|an? earlier|a later|the (?:next|previous|last))\s+session\b|"
                r"\bother\s+sessions'\s+jobs\b|\b(?:two|three|four|five|six|seven|eight|several)\s+other\s+sessions\b"),
     "a work session: give the date instead (a browser's Streamlit session: say 'this browser session')"),
    (re.compile(r"(?i)\bissues?\s+#?[0-9]+"), "an issue number: say what the text means, cite a paper or file"),
    (re.compile(r"(?i)\bthe\s+issue'?s\b"), "the issue tracker: say what the target or list is"),
    (re.compile(r"(?i)\bthe\s+issue\s+(?:lists|asks|says|names|wants|requires)\b"),
     "the issue tracker: say what the target or list is"),
    (re.compile(r"(?i)\bthe\s+lead\s+(?:registers|merges|lands|asks|wants|adds|will)\b"),
     "the project's lead: say what the code does"),
    (re.compile(r"(?i)\bseeds?\s+0[0-9]{2}\b"), "the project's source notes: cite the paper (Devlin et al. 2019, ...)"),
    (re.compile(r"(?i)\bseeds/0"), "the project's source notes: cite the paper instead"),
    (re.compile(r"(?i)\bseed\s+(?:files?|notes?|documents?)\b"), "the project's source notes: cite the paper instead"),
    (re.compile(r"\.\./shared\b"), "a folder users do not have: take the path as an argument or environment variable"),
    (re.compile(r"(?i)\bwork\s+periods?\b"), "a work period: give the date instead"),
    (re.compile(r"(?i)\bother\s+helpers\b"), "the project's workers: say 'other jobs' and give the load"),
]


def offences(text: str, where: str, first_line: int = 1) -> list[str]:
    """'where:line: matched words (what to do)' for every forbidden phrase in `text`, whose first line is first_line."""
    found = []
    for pattern, advice in FORBIDDEN:
        for match in pattern.finditer(text):
            line = first_line + text.count("\n", 0, match.start())
            found.append(f"{where}:{line}: {' '.join(match.group(0).split())!r} ({advice})")
    return found


def python_texts(path: Path) -> list[tuple[str, int]]:
    """(text, first line) of every docstring, string literal (f-strings' literal parts too) and comment."""
    source = path.read_text(encoding="utf-8")
    texts = [(node.value, node.lineno) for node in ast.walk(ast.parse(source, filename=str(path)))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    comments = [(token.string, token.start[0]) for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT]
    return texts + comments


def text_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for folder in CODE_FOLDERS:
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in TEXT_SUFFIXES and p.is_file())
    return [p for p in files if p.exists() and p.relative_to(ROOT).as_posix() not in THIRD_PARTY]


def python_files() -> list[Path]:
    return [p for folder in CODE_FOLDERS for p in sorted((ROOT / folder).rglob("*.py")) if p != SELF]


def report(found: list[str]) -> str:
    return f"{len(found)} place(s) speak of how the project was made, not of the project:\n" + "\n".join(found)


def test_documents_and_text_files():
    files = text_files()
    assert ROOT / "README.md" in files and any(p.parent.name == "weights" for p in files)  # the scan reaches them
    found = [hit for path in files
             for hit in offences(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert not found, report(found)


@pytest.mark.slow  # parses every Python file of the project: ten seconds
def test_docstrings_strings_and_comments():
    files = python_files()
    assert len(files) > 50 and ROOT / "viz_app" / "Home.py" in files
    found = [hit for path in files for text, line in python_texts(path)
             for hit in offences(text, path.relative_to(ROOT).as_posix(), line)]
    assert not found, report(found)


def help_texts() -> dict[str, str]:
    """The --help output of `python -m bert` and of each of its subcommands, run in this process, and of the app's
    `python -m viz_app.export.lesson`."""
    from bert.__main__ import main
    from viz_app.export.lesson import parser as export_lesson_parser

    def help_of(*args: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            main([*args, "--help"])
        return out.getvalue()

    top = help_of()
    commands = re.search(r"\{([a-z_,-]+)\}", top).group(1).split(",")
    return {"python -m bert --help": top, **{f"python -m bert {c} --help": help_of(c) for c in commands},
            "python -m viz_app.export.lesson --help": export_lesson_parser().format_help()}


def test_command_line_help(monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")  # argparse wraps at the terminal's width; one line per paragraph here
    helps = help_texts()
    assert {"python -m bert predict --help", "python -m bert pretrain --help", "python -m bert finetune --help"} <= set(helps)
    found = [hit for command, text in helps.items() for hit in offences(text, command)]
    assert not found, report(found)


@pytest.mark.parametrize("text", [
    "Measured in session 5, with the packed weights.",
    "Issue 9 quoted ROLE-88 4.5%",
    "above the issue's 60% target",
    "the order of the outline in seeds/000",
    "Seed 000 asks it",
    "(seeds 003, 004)",
    "(default: ../shared/external beside the repository)",
    "the same commands in an earlier session ran at",
    "three more runs this session gave 13.1 s",
    "on a machine shared with seven other sessions: load average 8",
    "on the 2-core VM shared with other helpers' work",
    "measured in the last work period",
    "in session\n4's first runs",
    "Hook points: every name the issue lists",
    "(the lead registers them in Home.py itself)",
])
def test_the_scan_catches_the_making(text):
    assert offences(text, "example")


@pytest.mark.parametrize("text", [
    "Random seed 0 and seed 1234 (torch.manual_seed)",
    "many app sessions share one model, each session gets its own results",
    "st.session_state holds the widgets; every session reads the cache",
    "the issue is that a longer input is refused",
    "2026-11-25, 2-core AMD EPYC VM, other jobs sharing it",
    "a folder on a shared disk: /shared/run",
    "the lead singer; it took the lead",
])
def test_the_scan_leaves_ordinary_words(text):
    assert not offences(text, "example")


def test_a_hit_names_file_and_line():
    assert offences("first line\nsecond line, issue 12\n", "README.md", first_line=10) == [
        "README.md:11: 'issue 12' (an issue number: say what the text means, cite a paper or file)"
    ]
