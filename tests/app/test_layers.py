"""The app's dependencies point one way (viz_app/__init__.py): bert/ <- pure helpers <- caches <- widgets and
sidebar <- pages. Read from the source: every import, at the top of a module or inside a function (only imports
under `if TYPE_CHECKING:`, which never run, are left out)."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bert", "viz_app")
# The pure helpers: plain Python, no Streamlit (the lessons' own modules included, but not their Streamlit side).
PURE = [
    "viz_app.models", "viz_app.forward", "viz_app.text", "viz_app.params", "viz_app.navigation", "viz_app.tables",
    "viz_app.architecture", "viz_app.sentence_tasks", "viz_app.word_contexts", "viz_app.model_comparison",
    "viz_app.corpus_search", "viz_app.tiny_training", "viz_app.export_html", "viz_app.download",
    "viz_app.label_names", "viz_app.page_context", "viz_app.export_lesson", "viz_app.features", "viz_app.lessons.format",
    "viz_app.lessons.computed", "viz_app.lessons.resolve", "viz_app.lessons.views", "viz_app.lessons.export",
    "viz_app.notebook", "viz_app.head_ablation",
    *sorted(f"viz_app.views.{path.stem}" for path in (ROOT / "viz_app" / "views").glob("*.py") if path.stem != "__init__"),
    "viz_app.access", "viz_app.server_settings", "viz_app.class_room", "viz_app.class_links",
]
WIDGETS = {"viz_app.widgets", "viz_app.analysis_widgets", "viz_app.sidebar", "viz_app.sentence_box", "viz_app.state",
           "viz_app.lessons.session", "viz_app.live_run", "viz_app.pretraining_figures", "viz_app.visitor",
           "viz_app.lessons.following"}


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
    skipped = {id(child) for node in ast.walk(ast.parse(path.read_text())) if _type_checking_only(node)
               for inner in node.body for child in ast.walk(inner)}
    for node in ast.walk(ast.parse(path.read_text())):
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


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: imports_of(name, path, set(files)) for name, path in files.items()}


def _parents(name: str) -> list[str]:
    """Importing a.b.c runs a/__init__ and a/b/__init__ first: those edges are Python's, not a circle."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


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


def test_pure_helpers_and_caches_import_no_widget():
    graph = import_graph()
    for name in [*PURE, "viz_app.cache"]:
        assert not _closure(graph, name) & WIDGETS, name


def _loaded_after_import(modules: list[str]) -> list[str]:
    """What importing `modules` in a fresh interpreter loads of Streamlit and the analyses."""
    code = ("import json, sys; import " + ", ".join(modules) + "; print(json.dumps(sorted(m for m in sys.modules "
            "if m == 'streamlit' or m.startswith(('streamlit.', 'bert.analysis')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


CHART_BUILDERS = sorted(f"viz_app.charts.{path.stem}" for path in (ROOT / "viz_app" / "charts").glob("*.py")
                        if path.stem != "__init__")


def test_text_and_the_chart_builders_import_neither_streamlit_nor_the_analyses():
    assert _loaded_after_import(["viz_app.text", *CHART_BUILDERS]) == []


def test_pure_helpers_import_no_streamlit():
    assert not [m for m in _loaded_after_import(PURE) if m.startswith("streamlit")]
