"""Each page's view: one function that turns the page's settings and its result into the page's charts.

The page calls it with the values its widgets read; a lesson's step and the exported handout call it with the
step's state (`Settings.from_state`, which picks a valid value the way the page's widget would). Plain Python: no
Streamlit, no caches. A view returns {name: Chart}; the page lays them out, a lesson lists some of them.
"""
from __future__ import annotations

from typing import Any, Mapping

from viz_app.app.navigation import LINK_PARAMS


def setting(state: Mapping[str, Any], key: str):
    """The value a link or a step sets for `key`, else its default."""
    return state.get(key, LINK_PARAMS[key].default)


def within(value, count: int, default: int) -> int:
    """`value` if it is one of 0 .. count - 1 (a layer, a head), else `default`."""
    return value if isinstance(value, int) and 0 <= value < count else default


def chosen_mask(requested, masks: tuple[int, ...]) -> int | None:
    """The [MASK] a page analyses: the requested position if it is a mask, else the first; None without masks."""
    return requested if requested in masks else (masks[0] if masks else None)
