"""One way to keep a widget's value (viz_app/app/state.py): every widget of pages/ and of the page families' widget
modules that holds a value (and of the sidebar) takes its key through `**state.kept(name, ...)`, and `name` is in the registry
(viz_app/app/navigation.py): a URL parameter (`LINK_PARAMS`), a page's own widget (`Page.own_widgets`) or the
sidebar's (`SIDEBAR_WIDGETS`), which gives its default, so the widget takes no `value=`, `index=` or `default=` of
its own. A widget that only fills others (`**state.filling(...)`) keeps nothing. And no page file (pages/) writes `st.session_state` itself.

Read from the source (ast), so that a widget on a branch no test opens is checked too. A key that is a helper's
parameter (`def word_choice(column, label, key, ...)`) or an f-string of one is followed to the helper's calls in the
same file."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from app_helpers import go, no_exception
from viz_app.app.navigation import LINK_PARAMS, OWN_WIDGETS, REGISTRY, SIDEBAR_WIDGETS

ROOT = Path(__file__).resolve().parents[3]
FAMILY_WIDGETS = ("live_run", "training_figures", "successor_runs", "probe_data", "probe_results")  # in viz_app/app/
SCANNED = [*sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "viz_app" / "specs").rglob("*.py")),
           *(ROOT / "viz_app" / "app" / f"{name}.py" for name in FAMILY_WIDGETS),
           ROOT / "viz_app" / "app" / "sidebar.py"]  # and the sidebar, drawn on every page
# Streamlit's widgets that hold a value from one run to the next (buttons, uploads and charts hold none), and the
# app's select_int (viz_app/app/widgets.py), whose second argument is its key
VALUE_WIDGETS = {"slider", "select_slider", "selectbox", "radio", "multiselect", "toggle", "checkbox", "text_input",
                 "text_area", "number_input", "pills", "segmented_control", "color_picker", "date_input", "time_input",
                 "data_editor", "feedback"}
OWN_DEFAULTS = ("value", "index", "default")
SESSION_WRITES = {"update", "setdefault", "pop", "clear", "__setitem__", "__delitem__"}
REGISTERED = set(LINK_PARAMS) | set(OWN_WIDGETS)
# Widgets still kept another way, each to go through state.kept with its default in the registry: the test fails
# when one is fixed (remove it here) as when a new one appears.
KNOWN = {
    "pages/features.py: state.kept(feature_logic.LABEL_KEY.format(sae=name, feature=feature)): a key that cannot be "
    "followed to the registry",
    "pages/features.py: select_slider 'features_factor' gives value=: its default belongs in the registry",
    "viz_app/app/probe_data.py: state.kept(key): a key that cannot be followed to the registry",
    "viz_app/app/probe_data.py: slider key=f'probes_file_count_{digest[:12]}' without state.kept",
    "viz_app/app/probe_data.py: toggle key='probe_run' without state.kept",
    "viz_app/app/probe_results.py: toggle key='probe_show_controls' without state.kept",
    "viz_app/app/probe_results.py: toggle key='probe_show_layer0' without state.kept",
}


def _literal_keys(node: ast.expr, tree: ast.Module, call: ast.Call) -> list[str] | None:
    """The keys an expression can be: a string, or a parameter (or an f-string of one) of the function that draws
    the widget, followed to that function's calls in the file with string arguments. None: it cannot be followed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    name, template = None, None
    if isinstance(node, ast.Name):
        name, template = node.id, "{}"
    elif isinstance(node, ast.JoinedStr) and sum(isinstance(part, ast.FormattedValue) for part in node.values) == 1:
        parts = [part.value if isinstance(part, ast.Constant) else part for part in node.values]
        value = next(part for part in parts if not isinstance(part, str))
        if isinstance(value.value, ast.Name) and value.conversion == -1 and value.format_spec is None:
            name = value.value.id
            template = "".join(part if isinstance(part, str) else "{}" for part in parts)
    function = next((f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and call in ast.walk(f)), None)
    if name is None or function is None or name not in [arg.arg for arg in function.args.args]:
        return None
    index = [arg.arg for arg in function.args.args].index(name)
    keys = []
    for caller in ast.walk(tree):
        if isinstance(caller, ast.Call) and isinstance(caller.func, ast.Name) and caller.func.id == function.name:
            given = [kw.value for kw in caller.keywords if kw.arg == name] or caller.args[index:index + 1]
            if not (given and isinstance(given[0], ast.Constant) and isinstance(given[0].value, str)):
                return None
            keys.append(template.format(given[0].value))
    return keys or None


def _helper(keywords: list[ast.keyword]) -> ast.Call | None:
    """The `**state.kept(...)` or `**state.filling(...)` a widget takes its key from."""
    for keyword in keywords:
        if keyword.arg is None and isinstance(keyword.value, ast.Call) and isinstance(keyword.value.func, ast.Attribute) \
                and keyword.value.func.attr in ("kept", "filling"):
            return keyword.value
    return None


def _widgets(tree: ast.Module) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and (node.func.attr in VALUE_WIDGETS or node.func.attr == "select_int")]


def _kept_keys(call: ast.Call, tree: ast.Module) -> list[str] | None:
    """The keys a widget keeps its value under (select_int's second argument, or state.kept's first)."""
    if call.func.attr == "select_int":
        return _literal_keys(call.args[1], tree, call) if len(call.args) > 1 else None
    helper = _helper(call.keywords)
    return _literal_keys(helper.args[0], tree, call) if helper is not None and helper.args else None


def _widget_problems(call: ast.Call, tree: ast.Module) -> list[str]:
    widget = call.func.attr
    if widget == "select_int":  # widgets.select_int(label, key, ...) keeps its value through state.kept
        keys = _kept_keys(call, tree)
        return [] if keys and set(keys) <= REGISTERED else [f"select_int {ast.unparse(call.args[1])}: a key not in the registry"]
    helper = _helper(call.keywords)
    if helper is None:
        key = next((kw.value for kw in call.keywords if kw.arg == "key"), None)
        if key is None:
            return [f"{widget} without a key: its value is lost when the visitor changes page"]
        return [f"{widget} key={ast.unparse(key)} without state.kept"]
    if helper.func.attr == "filling":
        return []
    keys = _kept_keys(call, tree)
    if keys is None:
        shown = ast.unparse(helper.args[0]) if helper.args else ""
        return [f"state.kept({shown}): a key that cannot be followed to the registry"]
    problems = [f"{widget} {key!r}: a key not in the registry" for key in keys if key not in REGISTERED]
    problems += [f"{widget} {keys[0]!r} gives {kw.arg}=: its default belongs in the registry"
                 for kw in call.keywords if kw.arg in OWN_DEFAULTS]
    return problems


def _writes_session_state(node: ast.AST) -> bool:
    """`st.session_state[...] = ...`, `del st.session_state[...]` or `st.session_state.update(...)` and its kin."""
    def is_state(target: ast.AST) -> bool:
        return isinstance(target, ast.Attribute) and target.attr == "session_state"

    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return any(isinstance(t, (ast.Subscript, ast.Attribute)) and is_state(t.value) for t in targets)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SESSION_WRITES \
        and is_state(node.func.value)


def problems(source: str, name: str, page: bool = True) -> set[str]:
    """What a page's source (`page`: a page file, which writes no session state) does against the one way to keep
    a widget's value, one line each."""
    tree = ast.parse(source)
    found = set()
    for call in _widgets(tree):
        found |= {f"{name}: {problem}" for problem in _widget_problems(call, tree)}
    for node in ast.walk(tree):
        if page and _writes_session_state(node):
            found.add(f"{name}: st.session_state written in a page")
    return found


def test_every_widget_keeps_its_value_one_way_with_its_default_in_the_registry():
    found = set()
    for path in SCANNED:
        name = str(path.relative_to(ROOT))
        found |= problems(path.read_text(encoding="utf-8"), name, page=name.startswith("pages/"))
    assert found - KNOWN == set(), "widgets that keep a value another way, or pages that write session state"
    assert KNOWN - found == set(), "fixed: remove these from KNOWN"


OLD_WAY = '''
import streamlit as st
from viz_app.app import state, widgets

shown = st.slider("Rows", 1, 50, value=10, key="rows_shown")
kind = st.radio("Kind", ["a", "b"], **state.kept("kind_picked"))
depth = st.toggle("Deep", **state.kept("stats_pairs"), value=True)
layer = widgets.select_int("Layer", "layer_picked", [0, 1])
if "top_k" not in st.session_state:
    st.session_state["top_k"] = 5
st.session_state.update(units="words")
'''


def test_a_page_written_the_old_way_is_caught():
    """Each way around the one mechanism, in a page written as before: a key without state.kept (its value lost on
    a page switch), keys not in the registry, a default of the page's own, session-state writes."""
    assert problems(OLD_WAY, "old.py") == {
        "old.py: slider key='rows_shown' without state.kept",
        "old.py: radio 'kind_picked': a key not in the registry",
        "old.py: toggle 'stats_pairs' gives value=: its default belongs in the registry",
        "old.py: select_int 'layer_picked': a key not in the registry",
        "old.py: st.session_state written in a page",
    }


def test_a_helpers_key_is_followed_to_its_calls():
    source = '''
def picker(label, key):
    return st.selectbox(label, [1, 2], **state.kept(f"{key}_source"))

picker("A", "probes")
picker("B", "nowhere")
'''
    assert problems(source, "p.py") == {"p.py: selectbox 'nowhere_source': a key not in the registry"}


def test_every_own_widget_listed_is_a_widget_kept_outside_the_link():
    """The registry lists no page widget that no widget keeps, and none that is also a URL parameter."""
    kept = set()
    for path in SCANNED:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        kept |= {key for call in _widgets(tree) for key in _kept_keys(call, tree) or ()}
    assert set(OWN_WIDGETS) - kept == set()
    assert set(OWN_WIDGETS) & set(LINK_PARAMS) == set()
    assert len(SIDEBAR_WIDGETS) + sum(len(page.own_widgets) for page in REGISTRY) == len(OWN_WIDGETS)  # each listed once


@pytest.mark.slow
def test_the_sidebars_widgets_keep_their_value_from_page_to_page(open_app):
    """The chart format and the download box's name, now kept through state.kept: chosen on one page, still chosen
    on the next, and the format reaches every chart's toolbar (and the link, as a URL parameter)."""
    at = open_app("prediction", text="The [MASK] barked.")
    no_exception(at)
    assert at.sidebar.radio(key="image_format").value == "png"
    assert at.text_input(key="download_repo_id").value == OWN_WIDGETS["download_repo_id"]
    at.sidebar.radio(key="image_format").set_value("svg")
    at.text_input(key="download_repo_id").set_value("google-bert/bert-base-cased")
    at.run()
    go(at, "architecture")
    no_exception(at)
    assert at.sidebar.radio(key="image_format").value == "svg"
    assert at.text_input(key="download_repo_id").value == "google-bert/bert-base-cased"
    toolbars = [json.loads(chart.proto.config)["toImageButtonOptions"]["format"] for chart in at.get("plotly_chart")]
    assert toolbars and set(toolbars) == {"svg"}
    assert at.query_params["image_format"] == "svg"
