"""Streamlit's page objects for `st.navigation` (viz_app/Home.py), made from the registry (viz_app/app/navigation.py)
once per process and copied for each run.

Making a page object resolves its file on disk, which for every page at every run was about a twentieth of what a
class's step cost a following student's page (docs/benchmarks.md, "A lecture hall"); `st.navigation` marks the page
it chose on its object, so each run gets copies of its own and no run sees another's mark.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from viz_app.app.navigation import DEFAULT_PAGE, GROUPS, OLD_PATHS, PAGES

HOME_PATH = "home"  # reserved by the default page (served at "/"), never linked


@dataclass(frozen=True)
class AppPages:
    """The pages st.navigation takes: those listed under their headings, and the hidden ones (the default page at
    its own name, the old names of moved pages)."""

    groups: dict[str, list[StreamlitPage]]
    hidden: list[StreamlitPage]

    def by_path(self, url_path: str) -> StreamlitPage:
        """The listed page served at `url_path`."""
        return next(page for group in self.groups.values() for page in group if page.url_path == url_path)

    def copied(self) -> AppPages:
        return AppPages({heading: [copy.copy(page) for page in group] for heading, group in self.groups.items()},
                        [copy.copy(page) for page in self.hidden])


def for_this_run() -> AppPages:
    """This run's copies of the process's page objects."""
    return _made().copied()


@functools.cache
def _made() -> AppPages:
    # The default page is served at "/" and reserves its own name without serving it: it takes HOME_PATH, and the
    # same script, hidden, answers at its name ("/prediction"), so a link that names it opens it
    groups = {
        heading: [st.Page(f"../pages/{p.file}", title=p.title, icon=p.icon, default=p.url_path == DEFAULT_PAGE,
                          url_path=HOME_PATH if p.url_path == DEFAULT_PAGE else p.url_path)
                  for p in entries]
        for heading, entries in GROUPS.items()
    }
    home = PAGES[DEFAULT_PAGE]
    by_name = st.Page(f"../pages/{home.file}", title=home.title, icon=home.icon, url_path=DEFAULT_PAGE,
                      visibility="hidden")
    moved = [st.Page(f"../pages/{PAGES[new].file}", title=PAGES[new].title, url_path=old, visibility="hidden")
             for old, new in OLD_PATHS.items()]
    return AppPages(groups, [by_name, *moved])  # made in one run, by whichever of its first runs comes first
