"""The app's dependencies point one way (viz_app/__init__.py): bert/ <- pure helpers <- caches <- widgets and
sidebar <- pages. Read from the source: every import, at the top of a module or inside a function (only imports
under `if TYPE_CHECKING:`, which never run, are left out); which module is a pure helper and which draws widgets is
read from what it imports of Streamlit, so a new module is checked without being listed anywhere."""
from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("bert", "viz_app")
# What of Streamlit the caches use (a module using only these is no widget module): the cache decorators, a long
# computation's progress bar, the server's options and its sessions.
RUNTIME_ONLY = {"cache_data", "cache_resource", "progress", "get_option", "runtime"}


def module_files() -> dict[str, Path]:
    files = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `name` imports (a `from package import module` counts as the module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    tree = ast.parse(path.read_text())  # one tree: `skipped` holds ids of its nodes
    skipped = {id(child) for node in ast.walk(tree) if _type_checking_only(node)
               for inner in node.body for child in ast.walk(inner)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found |= {target for target in targets if target in known and target != name}
    return found


@functools.cache  # read once per test run
def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: imports_of(name, path, set(files)) for name, path in files.items()}


def _parents(name: str) -> list[str]:
    """Importing a.b.c runs a/__init__ and a/b/__init__ first: those edges are Python's, not a circle."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@pytest.mark.slow  # reads the import graph of every module: seconds
def test_the_imports_of_bert_and_the_app_have_no_circle():
    graph = import_graph()
    circles = []
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph[name]):
            if target in _parents(name):
                continue
            if state.get(target) == "open":
                circles.append(path[path.index(target):] + [target] if target in path else [name, target])
            elif target not in state:
                visit(target, path + [target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(circle) for circle in circles)


def test_the_library_never_imports_the_app():
    graph = import_graph()
    assert not {(name, target) for name, targets in graph.items() if name.startswith("bert")
                for target in targets if target.startswith("viz_app")}


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def streamlit_uses(path: Path) -> set[str]:
    """What the module takes from Streamlit: the names after `st.` and those imported from streamlit; an empty set
    for a module that does not import Streamlit."""
    tree = ast.parse(path.read_text())
    aliases, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {alias.asname or alias.name for alias in node.names if alias.name.split(".")[0] == "streamlit"}
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "streamlit":
            used |= {node.module.split(".", 1)[1].split(".")[0] if "." in node.module else alias.name for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            used.add(node.attr)
    return used or ({"streamlit"} if aliases else set())


@functools.cache
def app_layers() -> tuple[set[str], set[str]]:
    """(pure helpers, widget modules) of viz_app, read from the imports: a pure helper imports no Streamlit, a
    widget module uses more of it than the caches' runtime (RUNTIME_ONLY)."""
    files = {name: path for name, path in module_files().items() if name.startswith("viz_app")}
    uses = {name: streamlit_uses(path) for name, path in files.items()}
    pure = {name for name, used in uses.items() if not used}
    widgets = {name for name, used in uses.items() if used - RUNTIME_ONLY}
    return pure, widgets


def test_the_layers_are_read_from_the_imports():
    """The inference sees what it should: caches and the session runtime are not widgets, a sidebar is."""
    pure, widgets = app_layers()
    assert {"viz_app.cache", "viz_app.server.sessions"} & (pure | widgets) == set()
    assert {"viz_app.app.sidebar", "viz_app.app.state", "viz_app.app.widgets", "viz_app.Home"} <= widgets
    assert {"viz_app.app.navigation", "viz_app.app.url_params", "viz_app.app.forward", "viz_app.app.text"} <= pure
    files = {name: path for name, path in module_files().items() if name.startswith("viz_app")}
    importing = {name for name, path in files.items() if STREAMLIT_IMPORT_LINE.search(path.read_text())}
    assert pure == set(files) - importing  # every module without an import line of Streamlit, read as plain text


STREAMLIT_IMPORT_LINE = re.compile(r"^[ \t]*(?:import|from)[ \t]+streamlit\b", re.MULTILINE)


def test_pure_helpers_and_caches_import_no_widget():
    graph = import_graph()
    pure, widgets = app_layers()
    for name in sorted(pure | {"viz_app.cache", "viz_app.server.sessions"}):
        assert not _closure(graph, name) & widgets, name
    for name in sorted(pure):
        assert not _closure(graph, name) - pure - {n for n in graph if n.startswith("bert")}, name


def _loaded_after_import(modules: list[str]) -> list[str]:
    """What importing `modules` in a fresh interpreter loads of Streamlit and the analyses."""
    code = ("import json, sys; import " + ", ".join(modules) + "; print(json.dumps(sorted(m for m in sys.modules "
            "if m == 'streamlit' or m.startswith(('streamlit.', 'bert.analysis')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


CHART_BUILDERS = sorted(f"viz_app.charts.{path.stem}" for path in (ROOT / "viz_app" / "charts").glob("*.py")
                        if path.stem != "__init__")


@pytest.mark.slow  # a fresh interpreter: seconds
def test_text_and_the_chart_builders_import_neither_streamlit_nor_the_analyses():
    assert _loaded_after_import(["viz_app.app.text", *CHART_BUILDERS]) == []


@pytest.mark.slow  # a fresh interpreter importing every pure helper: ten seconds
def test_pure_helpers_import_no_streamlit():
    pure, _ = app_layers()
    assert not [m for m in _loaded_after_import(sorted(pure)) if m.startswith("streamlit")]


def _package(name: str) -> set[str]:
    """The modules of `name` (a package of viz_app), itself included."""
    return {module for module in import_graph() if module == name or module.startswith(name + ".")}


RUNNER = "viz_app.heavy"  # the one road from a page to the model: joins the specs, the caches and the server's jobs


def test_the_server_imports_no_page_cache_runner_spec_or_widget():
    """viz_app/server/ holds what a server keeps (access, budgets, jobs, the class's store): nothing it reaches
    draws a page, caches a result or runs a computation."""
    graph = import_graph()
    _, widgets = app_layers()
    server = _package("viz_app.server")
    above = ({"viz_app.cache", RUNNER, "viz_app.Home"} | _package("viz_app.specs") | _package("viz_app.lessons")
             | _package("viz_app.export") | (widgets - server))
    reached = {name: sorted(_closure(graph, name) & above) for name in sorted(server)}
    assert {name: found for name, found in reached.items() if found} == {}


def test_the_runner_sits_above_the_caches_the_specs_and_the_server():
    """Only widgets, the lessons' Streamlit parts and Home.py (and pages, which nothing imports) reach the runner."""
    graph = import_graph()
    pure, _ = app_layers()
    below = pure | {"viz_app.cache"} | _package("viz_app.server") | _package("viz_app.specs") | _package("viz_app.charts")
    assert RUNNER in graph and "viz_app.cache" in graph[RUNNER]
    assert sorted(name for name in below if RUNNER in _closure(graph, name)) == []


def test_the_specs_are_plain_python():
    pure, _ = app_layers()
    assert sorted(_package("viz_app.specs") - pure) == []


def test_the_charts_import_no_app_state():
    """A chart builder imports other chart builders and the library, nothing else of the app (no session, no
    server, no cache)."""
    graph = import_graph()
    charts = _package("viz_app.charts")
    reached = {name: sorted(target for target in _closure(graph, name) - charts if target.startswith("viz_app"))
               for name in sorted(charts)}
    assert {name: found for name, found in reached.items() if found} == {}
