"""Who may load what, through the real Home.py (AppTest): a visitor from another machine is played by replacing the
app's one reading of the address (viz_app/server/visitor.py's `address`); class mode and the presenter's key by the
server's environment variables (viz_app/server/settings.py)."""
from __future__ import annotations

import secrets

import pytest

from app_helpers import as_read, no_exception
from bert import hub
from viz_app.server import singletons
from viz_app.server import visitor
from viz_app.server.access import NOT_OFFERED
from viz_app.lessons.format import parse_lesson

pytestmark = pytest.mark.slow  # every test here runs the app

STUDENT_ADDRESS = "192.168.1.20"
READ_ADDRESS = visitor.address  # the app's own reading (tests/app/conftest.py replaces it for the app tests)


@pytest.fixture
def student(monkeypatch):
    monkeypatch.setattr(visitor, "address", lambda: STUDENT_ADDRESS)


@pytest.fixture
def class_mode(monkeypatch) -> str:
    """Class mode with a presenter key of this test's own (the class is one per key and server)."""
    key = secrets.token_urlsafe(12)
    monkeypatch.setenv("BERT_INSIDE_CLASS", "1")
    monkeypatch.setenv("BERT_INSIDE_PRESENTER_KEY", key)
    return key


def sidebar_labels(at) -> set[str]:
    return {getattr(element, "label", None) for element in at.sidebar} - {None}


def what_a_student_reads(at) -> list[str]:
    """Every text on the page, sidebar included."""
    return [str(element.value) for kind in ("markdown", "caption", "info", "warning", "error", "text")
            for element in at.get(kind)]


def test_a_student_has_no_folder_box_and_no_download(open_app, student, unreachable_hub):
    at = open_app()
    no_exception(at)
    assert at.selectbox(key="model_choice").options == ["MiniLM-L6 + masked-LM head", "MiniLM-L6, encoder only",
                                                        "minilm-trec"]
    assert not {"Folder", "Download a model", "Hugging Face model name"} & sidebar_labels(at)


def test_a_folder_in_a_students_link_is_refused_in_the_same_words_whether_or_not_it_exists(
        open_app, student, unreachable_hub, tiny_mlm_folder, tmp_path):
    not_bert = tmp_path / "secrets"
    not_bert.mkdir()
    (not_bert / "id_rsa").write_text("a key")
    texts = []
    for requested in (str(tiny_mlm_folder), str(not_bert), str(tmp_path / "missing"), "/root/.ssh", "../../etc"):
        at = open_app(model=requested)
        no_exception(at)
        assert at.selectbox(key="model_choice").value == "minilm"  # the default model, loaded
        shown = what_a_student_reads(at)
        assert not any(str(tmp_path) in text or "/root" in text for text in shown), shown
        texts.append([as_read(e.value) for e in at.sidebar.info])
    offered = NOT_OFFERED.format(names="minilm, minilm-encoder, minilm-trec")
    assert texts == [[offered]] * 5


def test_a_student_gets_cached_hub_models_but_never_a_download(open_app, student, local_hub, tmp_path):
    hub.download("org/bert-tiny")  # what the teacher fetched before the class
    at = open_app(model="org/bert-tiny")
    no_exception(at)
    assert at.selectbox(key="model_choice").value == "org/bert-tiny" and not at.sidebar.info
    assert not any(str(tmp_path) in text for text in what_a_student_reads(at))  # the cache's folder is never shown
    at = open_app(model="bert-without-safetensors")  # on the hub, not in the cache: not fetched for a student
    assert at.selectbox(key="model_choice").value == "minilm"  # the default (a cached bert-base-uncased would be)
    assert [as_read(e.value) for e in at.sidebar.info] == [NOT_OFFERED.format(names="org/bert-tiny, minilm, minilm-encoder, "
                                                                         "minilm-trec")]
    assert not list((tmp_path / "hub-cache").glob("models--bert-without-safetensors"))


def test_a_student_loads_a_folder_the_teacher_offers_by_its_name(open_app, student, unreachable_hub,
                                                                  tiny_mlm_folder, monkeypatch):
    monkeypatch.setattr("sys.argv", ["Home.py", "--offer", f"tiny={tiny_mlm_folder}"])
    at = open_app(model="tiny")
    no_exception(at)
    assert at.selectbox(key="model_choice").value == "tiny" and not at.sidebar.info
    assert "tiny" in at.selectbox(key="model_choice").options
    assert "tiny (offered on this server)" in [as_read(caption.value) for caption in at.sidebar.caption]
    assert at.session_state["model_choice"] == "tiny"
    assert not any(str(tiny_mlm_folder) in text for text in what_a_student_reads(at))


def test_an_offered_folder_typed_by_its_path_travels_by_its_name(open_app, unreachable_hub, tiny_mlm_folder,
                                                                monkeypatch):
    """The teacher at the server types the path of a folder it offers into the folder box: the picker takes the
    offered entry, so the link (and a presenter's class step) names the folder as students see it, and a student
    opening that link gets the folder, not the default model with "not offered" (a student's link may name no path)."""
    monkeypatch.setattr("sys.argv", ["Home.py", "--offer", f"tiny={tiny_mlm_folder}"])
    at = open_app()
    at.selectbox(key="model_choice").set_value("folder").run()
    at.text_input(key="model_folder").input(f"{tiny_mlm_folder}/").run()
    no_exception(at)
    assert at.selectbox(key="model_choice").value == "tiny" and at.query_params["model"] == "tiny"
    monkeypatch.setattr(visitor, "address", lambda: STUDENT_ADDRESS)
    shared = open_app(model=at.query_params["model"])
    no_exception(shared)
    assert shared.selectbox(key="model_choice").value == "tiny" and not shared.sidebar.info


def test_the_compare_page_offers_a_student_no_folder(open_app, student, unreachable_hub, tiny_mlm_folder):
    at = open_app("compare_models", compare_with="folder", compare_folder=str(tiny_mlm_folder))
    no_exception(at)
    assert "folder" not in at.selectbox(key="compare_with").options
    assert not [t for t in at.text_input if t.key == "compare_folder"]
    assert any(info.value.startswith("This server does not offer that model") for info in at.info)
    assert not any(str(tiny_mlm_folder) in text for text in what_a_student_reads(at))


def test_the_person_at_the_server_still_types_a_folder_and_downloads(open_app, unreachable_hub, tiny_mlm_folder):
    at = open_app(model=str(tiny_mlm_folder))
    no_exception(at)
    assert at.selectbox(key="model_choice").value == "folder"
    assert at.text_input(key="model_folder").value == str(tiny_mlm_folder)
    assert {"Folder", "Download a model"} <= sidebar_labels(at) and not at.sidebar.info
    assert not at.error  # the folder's model loaded


def test_a_visitor_whose_address_cannot_be_read_is_a_student(open_app, monkeypatch, unreachable_hub, tiny_mlm_folder):
    monkeypatch.setattr(visitor, "address", READ_ADDRESS)  # AppTest has no connection: no address to read
    at = open_app(model=str(tiny_mlm_folder))
    no_exception(at)
    assert at.selectbox(key="model_choice").value == "minilm"
    assert not {"Folder", "Download a model"} & sidebar_labels(at)
    assert [as_read(e.value) for e in at.sidebar.info] == [NOT_OFFERED.format(names="minilm, minilm-encoder, minilm-trec")]


def test_class_mode_makes_the_person_at_the_server_a_student(open_app, class_mode, unreachable_hub, tiny_mlm_folder):
    at = open_app(model=str(tiny_mlm_folder))
    no_exception(at)
    assert at.selectbox(key="model_choice").value == "minilm"
    assert not {"Folder", "Download a model"} & sidebar_labels(at)
    assert [as_read(e.value) for e in at.sidebar.info] == [NOT_OFFERED.format(names="minilm, minilm-encoder, minilm-trec")]


def test_only_the_presenters_key_moves_the_class(open_app, class_mode, unreachable_hub):
    room = singletons.class_room(class_mode)
    wrong = open_app("lessons", key="not-the-key-at-all")
    no_exception(wrong)
    assert "key" not in wrong.query_params  # a key never stays in the address bar
    wrong.button(key="lesson_start").click().run()  # a student may still walk a lesson on their own screen
    no_exception(wrong)
    assert room.current is None and room.version == 0
    assert not any("Students open" in m.value for m in wrong.markdown)

    presenter = open_app("lessons", key=class_mode)
    no_exception(presenter)
    assert "key" not in presenter.query_params
    assert any("/lessons?follow=1" in m.value for m in presenter.markdown)  # the students' link, shown to the presenter
    presenter.button(key="lesson_start").click().run()
    assert (room.current.lesson.name, room.current.step) == ("fill_in_the_blank", 0)
    presenter.button(key="lesson_next").click().run()
    no_exception(presenter)
    assert room.current.step == 1 and room.version == 2
    presenter.button(key="lesson_leave").click().run()
    assert room.current is None


def test_a_student_takes_the_step_of_a_lesson_the_presenter_loaded_from_a_file(open_app, class_mode, unreachable_hub):
    lesson = parse_lesson(OWN_LESSON, "own", source="own.yaml")
    singletons.class_room(class_mode).show(class_mode, lesson, 1, model="minilm")
    at = open_app("lessons", follow=1)  # the students' link: the class is on step 2, on the attention page
    no_exception(at)
    assert (at.session_state["text"], at.session_state["layer"], at.session_state["head"]) == (
        "Bees make honey in the spring.", 2, 3)
    panel = " ".join(m.value for m in at.markdown)
    assert "**Following the class** · Our own lesson · step 2 of 2" in panel and "Look at layer two" in panel
    # (the switch to the step's page is the browser's part: tests/browser/test_class_following.py)


OWN_LESSON = """
title: Our own lesson
about: Written by the teacher.
state:
  text: "Bees make honey in the spring."
steps:
  - title: First
    page: prediction
    text: A first look.
  - title: Second
    page: attention
    state: {layer: 2, head: 3}
    text: Look at layer two.
"""
