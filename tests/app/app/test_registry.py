"""A page is its file in pages/ plus one entry in viz_app/app/navigation.py: the two agree, and what the app derives from
the entries (the navigation, the sentence box, the URL parameters, the lessons' pages and views) covers every page."""
from __future__ import annotations

import ast
from pathlib import Path

from viz_app.app import navigation
from viz_app.lessons import format as lesson_format
from viz_app.lessons import views as lesson_views
from viz_app.specs.catalog import SPECS
from viz_app.app.url_params import SHARED

ROOT = Path(__file__).resolve().parents[3]


def test_every_page_file_has_one_entry_and_every_entry_a_file():
    files = sorted(path.name for path in (ROOT / "pages").glob("*.py"))
    entries = sorted(page.file for page in navigation.REGISTRY)
    assert entries == files, f"files without an entry: {set(files) - set(entries)}; entries without a file: {set(entries) - set(files)}"
    assert len(navigation.PAGES) == len(navigation.REGISTRY)  # one address per page
    assert navigation.DEFAULT_PAGE in navigation.PAGES


def test_the_navigation_lists_every_entry_under_its_group():
    listed = [page for group in navigation.GROUPS.values() for page in group]
    assert sorted(listed, key=lambda p: p.url_path) == sorted(navigation.REGISTRY, key=lambda p: p.url_path)
    assert all(page.group == group for group, pages in navigation.GROUPS.items() for page in pages)


def test_lessons_open_every_page_but_their_own_and_draw_those_with_a_spec():
    assert set(lesson_format.PAGES) == set(navigation.PAGES) - {"lessons"}
    with_spec = {page.url_path for page in navigation.REGISTRY if page.spec}
    assert set(lesson_views.BUILDERS) == with_spec and len(with_spec) >= 8
    assert all(callable(builder) for builder in lesson_views.BUILDERS.values())


def test_each_spec_is_named_by_its_page_address_and_listed_once():
    """A page's spec is found from its name alone: viz_app/specs/<url_path>.py, in the catalog, with the protocol's
    parts (viz_app/specs/base.py)."""
    named = {page.url_path: page.spec for page in navigation.REGISTRY if page.spec}
    assert named and all(url == spec for url, spec in named.items())
    assert set(SPECS) == set(named)
    for name, spec in SPECS.items():
        module = ROOT / "viz_app" / "specs" / f"{name}.py"
        assert (module.is_file() or (module.with_suffix("") / "__init__.py").is_file()) and spec.NAME == name
        assert all(callable(getattr(spec, part)) for part in ("Settings", "computations", "view"))
        assert spec.LESSON_CHARTS


def test_every_page_parameter_is_a_link_parameter_with_a_valid_default():
    for page in navigation.REGISTRY:
        for name, param in page.params.items():
            assert navigation.LINK_PARAMS[name] is param, (page.url_path, name)
            if param.choices:
                defaults = param.default if isinstance(param.default, list) else [param.default]
                assert set(defaults) <= set(param.choices), (page.url_path, name)
            if param.default is not None and not isinstance(param.default, list):
                assert param.parse(param.dump(param.default)) == param.default, (page.url_path, name)


def _calls(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            yield node


def _kept_keys(path: Path) -> set[str]:
    """The literal keys a file's widgets keep with `state.kept("...")`."""
    return {call.args[0].value for call in _calls(path)
            if getattr(call.func, "attr", getattr(call.func, "id", None)) == "kept" and call.args
            and isinstance(call.args[0], ast.Constant)}


def test_every_widget_keeps_its_value_through_state_kept():
    """One mechanism: no widget binds itself to the URL (`bind=`) or asks for `persist_state` itself; each goes
    through viz_app/app/state.py's `kept`, which keeps every registry parameter in the link."""
    files = [*(ROOT / "pages").glob("*.py"), *(ROOT / "viz_app").rglob("*.py")]
    spelt = {f"{path.relative_to(ROOT)}:{call.lineno}" for path in files if path.name != "state.py"
             for call in _calls(path) for keyword in call.keywords if keyword.arg in ("bind", "persist_state")}
    assert not spelt, f"use **state.kept(key) instead of bind=/persist_state= at {sorted(spelt)}"


def test_each_page_declares_the_url_parameters_its_widgets_keep():
    """A page's widget that keeps a link parameter reads one of its own entry's parameters or a shared one, so a
    lesson step and a link may set it, with the same default."""
    assert {"top_k", "layer", "head", "statistic"} <= _kept_keys(ROOT / "pages" / "prediction.py") | _kept_keys(ROOT / "pages" / "attention.py")
    for page in navigation.REGISTRY:
        kept = _kept_keys(ROOT / "pages" / page.file) & set(navigation.LINK_PARAMS)
        undeclared = kept - set(page.params) - set(SHARED)
        assert not undeclared, f"{page.file} keeps {sorted(undeclared)} in the URL; add them to its entry's params"


def test_the_pages_without_a_sentence_box_come_from_their_entries():
    assert navigation.NO_SENTENCE_BOX == {"probes", "head_statistics", "word_contexts", "how_bert_was_trained",
                                          "causal_tracing", "circuits", "variable"}
