"""What the teacher decides for the whole server: class mode, the models students may load, the presenter's key.
No Streamlit here.

Three places, read in this order, each overriding the one before (folders add up):

1. a settings file (YAML), named by `--settings FILE` or BERT_INSIDE_SETTINGS=FILE:

       class: true                  # every visitor is a student, except the presenter (default: false)
       presenter_key: a-long-secret # the secret in the presenter's link (default: a new random one per start)
       cached_hub_models: true      # offer the BERTs already in the server's Hugging Face cache (default: true)
       folders:                     # model folders students may load, by the name they see (default: none)
         sentiment: /srv/models/bert-sst2
       request_budget: 60000        # what one computation of a student may cost, in BERT-base token passes
       visitor_budget: 300000       # what a student's computations may cost in an hour, together
       heavy_jobs: 1                # heavy computations the server runs at once (default: cores - 1, at least 1)
       threads: 1                   # PyTorch threads, set once at start (default: cores / (heavy_jobs + 1), at least 1)
       memory_budget: 1000          # MB one computation of a student may hold in the server's memory (default: 1000)

2. environment variables: BERT_INSIDE_CLASS=1, BERT_INSIDE_PRESENTER_KEY=..., BERT_INSIDE_REQUEST_BUDGET=...,
   BERT_INSIDE_VISITOR_BUDGET=..., BERT_INSIDE_HEAVY_JOBS=..., BERT_INSIDE_THREADS=..., BERT_INSIDE_MEMORY_BUDGET=...;
   BERT_INSIDE_STORE=redis://HOST:PORT/DB only there: a lecture hall's processes share their class and hours in
   that store (viz_app/server/class_store.py, scripts/lecture.sh)
3. flags after `--`: `streamlit run viz_app/Home.py -- --class --offer sentiment=/srv/models/bert-sst2
   --presenter-key ... --no-cached-hub-models --settings FILE --request-budget N --visitor-budget N
   --heavy-jobs N --threads N --memory-budget MB` (scripts/start_app.sh passes them on, except the key, which it passes in
   BERT_INSIDE_PRESENTER_KEY: a command line is visible to every user of the machine).

The budgets count BERT-base token passes (bert/costs.py): one forward pass of one token through BERT-base is 1, a
512-token pass 512, a backward pass twice its forward pass, a smaller model's passes less. viz_app/server/budget.py
applies them: above them a student is told the numbers and what to lower, the owner and the presenter confirm.

The defaults are safe: without any of these, visitors from other machines are students (viz_app/server/access.py) and
no folder is offered to them.
"""
from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from bert.errors import BertError
from viz_app.server import safe_yaml

CLASS_VARIABLE = "BERT_INSIDE_CLASS"
SETTINGS_VARIABLE = "BERT_INSIDE_SETTINGS"
KEY_VARIABLE = "BERT_INSIDE_PRESENTER_KEY"
NUMBER_VARIABLES = {"request_budget": "BERT_INSIDE_REQUEST_BUDGET", "visitor_budget": "BERT_INSIDE_VISITOR_BUDGET",
                    "heavy_jobs": "BERT_INSIDE_HEAVY_JOBS", "threads": "BERT_INSIDE_THREADS",
                    "memory_budget": "BERT_INSIDE_MEMORY_BUDGET"}
FILE_KEYS = {"class", "presenter_key", "cached_hub_models", "folders", *NUMBER_VARIABLES}
# a 30-student class on 2 cores: one computation of a student at most ~100 BERT-base passes of 512 tokens (integrated
# gradients with 32 steps at 511 tokens is 51,100), an hour of a student's at most five such (docs/teaching.md)
REQUEST_BUDGET = 60_000
VISITOR_BUDGET = 300_000
# what one computation of a student may hold in the server's memory at once while it runs (its result kept in the
# server's caches included), in MB (bert/costs.py: Cost.peak): value zeroing over 512 tokens with BERT-base holds about
# 960 MB, EAP-IG on a built-in 12-token pair with its faithfulness curves 580 MB; the probes page's default, UD English
# EWT's first 200 sentences of each file, keeps 330 MB of word vectors with BERT-base, 89 MB with MiniLM. The app's
# caches are sized from it (viz_app/cache.py).
MEMORY_BUDGET = 1000
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # a folder's name for students: no "/", unlike a hub id
KEY = re.compile(r"[A-Za-z0-9_-]{8,128}")  # travels in a link: URL-safe, long enough not to be guessed
RESERVED_NAMES = {"folder", "minilm", "minilm-encoder"}  # the picker's own entries


class SettingsError(BertError, ValueError):
    """Server settings that cannot be used; the message says which setting and what to write instead."""


@dataclass(frozen=True)
class ServerSettings:
    class_mode: bool = False  # True: every visitor a student (loopback ones too), except the presenter
    presenter_key: str | None = None  # None: viz_app/server/class_room.py makes a random one per start
    cached_hub_models: bool = True  # students may load the BERTs already in the server's Hugging Face cache
    folders: tuple[tuple[str, str], ...] = ()  # (name students see, folder on the server), in the teacher's order
    request_budget: int = REQUEST_BUDGET  # BERT-base token passes one computation of a student may cost
    visitor_budget: int = VISITOR_BUDGET  # BERT-base token passes a student's computations may cost in an hour
    heavy_jobs: int = 0  # heavy computations at once; 0: the server's cores - 1, at least 1
    threads: int = 0  # PyTorch threads, set once at start (viz_app/server/threads.py); 0: shared out by the cores
    memory_budget: int = MEMORY_BUDGET  # MB one computation of a student may hold at once (its cached result included)

    @property
    def heavy_slots(self) -> int:
        """How many heavy computations run at once: the rest wait their turn, and a core stays for light pages."""
        return self.heavy_jobs or max(1, (os.cpu_count() or 2) - 1)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit the server; say what is wrong instead
        raise SettingsError(f"server flags: {message} (docs/teaching.md lists them)")


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """Built once (every page run reads the settings): parsing does not change it, so threads share it."""
    parser = _Parser(prog="streamlit run viz_app/Home.py --", add_help=False)
    parser.add_argument("--class", dest="class_mode", action="store_true", default=None)
    parser.add_argument("--settings")
    parser.add_argument("--presenter-key")
    parser.add_argument("--offer", action="append", default=[], metavar="NAME=FOLDER")
    parser.add_argument("--no-cached-hub-models", dest="cached_hub_models", action="store_false", default=None)
    for name in NUMBER_VARIABLES:
        parser.add_argument("--" + name.replace("_", "-"), dest=name)
    return parser


APP_ENTRIES = ("Home.py", "lecture_hall.py")  # the scripts `streamlit run` starts the app from


def server_settings() -> ServerSettings:
    """This server's settings: its flags after `--` (`streamlit run viz_app/Home.py -- --class`, or the lecture
    hall's viz_app/lecture_hall.py), the environment, the settings file. Raises SettingsError."""
    started_as_app = Path(sys.argv[0]).name in APP_ENTRIES  # under `streamlit run`; not in tests, which set variables
    return read_settings(sys.argv[1:] if started_as_app else [], os.environ)


def read_settings(argv: Sequence[str], environ: Mapping[str, str]) -> ServerSettings:
    """The server's settings from its flags (`sys.argv[1:]`), the environment and the settings file.
    Raises SettingsError naming the setting that is wrong."""
    flags = _parser().parse_args(list(argv))
    file_path = flags.settings or environ.get(SETTINGS_VARIABLE)
    values = _read_file(Path(file_path).expanduser()) if file_path else {}
    if environ.get(CLASS_VARIABLE):
        values["class"] = _yes(environ[CLASS_VARIABLE], CLASS_VARIABLE)
    if environ.get(KEY_VARIABLE):
        values["presenter_key"] = environ[KEY_VARIABLE]
    if flags.class_mode is not None:
        values["class"] = True
    if flags.presenter_key is not None:
        values["presenter_key"] = flags.presenter_key
    if flags.cached_hub_models is not None:
        values["cached_hub_models"] = False
    for name, variable in NUMBER_VARIABLES.items():
        given = getattr(flags, name) or environ.get(variable)
        if given:
            values[name] = given
    folders = dict(values.get("folders") or {})
    for offer in flags.offer:
        name, sep, folder = offer.partition("=")
        if not sep:
            raise SettingsError(f"--offer {offer!r}: write NAME=FOLDER, e.g. --offer sentiment=/srv/models/bert-sst2")
        folders[name.strip()] = folder.strip()
    return ServerSettings(
        class_mode=bool(values.get("class", False)),
        presenter_key=_key(values.get("presenter_key")),
        cached_hub_models=bool(values.get("cached_hub_models", True)),
        folders=tuple((_name(name), _folder(name, folder)) for name, folder in folders.items()),
        request_budget=_count(values.get("request_budget", REQUEST_BUDGET), "request_budget"),
        visitor_budget=_count(values.get("visitor_budget", VISITOR_BUDGET), "visitor_budget"),
        heavy_jobs=_count(values.get("heavy_jobs", 0), "heavy_jobs"),
        threads=_count(values.get("threads", 0), "threads"),
        memory_budget=_count(values.get("memory_budget", MEMORY_BUDGET), "memory_budget"),
    )


def _read_file(path: Path) -> dict:
    try:
        data = safe_yaml.load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise SettingsError(f"the settings file {path} cannot be read: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise SettingsError(f"the settings file {path} is not valid YAML: {error}") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise SettingsError(f"the settings file {path} must be a mapping (class: ..., folders: ...)")
    unknown = set(data) - FILE_KEYS
    if unknown:
        raise SettingsError(f"the settings file {path} has unknown settings {sorted(unknown)}; known: {sorted(FILE_KEYS)}")
    for flag in ("class", "cached_hub_models"):
        if flag in data and not isinstance(data[flag], bool):
            raise SettingsError(f"the settings file {path}: {flag} must be true or false, not {data[flag]!r}")
    if not isinstance(data.get("folders") or {}, dict):
        raise SettingsError(f"the settings file {path}: folders must be a mapping, name: /path/to/folder")
    return data


def _yes(value: str, variable: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{variable}={value!r}: write 1 (on) or 0 (off)")


def _count(value, name: str) -> int:
    """A whole number, 0 or more, from the file (an int) or a flag or variable (its text)."""
    text = str(value).replace("_", "").replace(",", "")
    if isinstance(value, bool) or not text.isdigit() or len(text) > 15:
        raise SettingsError(f"{name} must be a whole number of 0 or more (e.g. {name}: 60000), not {value!r}")
    return int(text)


def _key(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not KEY.fullmatch(value):
        raise SettingsError("the presenter key must be 8 to 128 letters, digits, '-' or '_' (it travels in a link)")
    return value


def _name(name) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name) or name.lower() in RESERVED_NAMES:
        raise SettingsError(f"the offered folder name {name!r} must be 1 to 64 letters, digits, '.', '_' or '-' "
                            f"(no '/'), and not one of {sorted(RESERVED_NAMES)}")
    return name


def _folder(name: str, folder) -> str:
    if not isinstance(folder, str) or not folder.strip():
        raise SettingsError(f"the offered folder {name!r} needs a path")
    path = Path(folder).expanduser()
    if not (path / "config.json").is_file():
        raise SettingsError(f"the offered folder {name!r} ({path}) has no config.json: is it a BERT folder?")
    return str(path.resolve())
