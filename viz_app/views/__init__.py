"""Each page's view: one function that turns the page's settings and its result into the page's charts.

The page calls it with the values its widgets read; a lesson's step and the exported handout call it with the
step's state (`Settings.from_state`, which picks a valid value the way the page's widget would). Plain Python: no
Streamlit, no caches. A view returns {name: Chart}; the page lays them out, a lesson lists some of them.
"""
from __future__ import annotations

from viz_app.specs.base import chosen_mask, setting, within  # noqa: F401  (the pages' views read them here until each is a spec)
