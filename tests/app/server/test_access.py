"""Who may load what (viz_app/server/access.py): roles from the visitor's address, the picker per role, and what a
requested model name resolves to; the address as viz_app/server/visitor.py reads it from the browser's connection."""

import pytest

from viz_app.server import visitor
from viz_app.server.access import NOT_OFFERED, SERVER_LOG, Role, failure, is_loopback, picker_choices, resolve, role_of
from viz_app.app.models import FOLDER, ModelChoice
from viz_app.server.settings import ServerSettings

MACHINE = [  # what models.model_choices() lists on a machine with one cached hub BERT
    ModelChoice("bert-base-uncased", "bert-base-uncased", "local Hugging Face cache", "/home/t/.cache/hf/snap/abc"),
    ModelChoice("minilm", "MiniLM-L6 + masked-LM head", "built in"),
    ModelChoice("minilm-encoder", "MiniLM-L6, encoder only", "built in, no MLM head"),
    ModelChoice(FOLDER, "A local Hugging Face folder…"),
]
SETTINGS = ServerSettings(folders=(("sentiment", "/srv/models/bert-sst2"),))


@pytest.mark.parametrize("address, loopback", [
    (None, False), ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("192.168.1.20", False), ("10.0.0.5", False), ("::ffff:192.168.1.20", False), ("fe80::1%eth0", False),
    ("2001:db8::7", False), ("not an address", False), ("", False),
])
def test_loopback(address, loopback):
    assert is_loopback(address) is loopback


READ_ADDRESS = visitor.address  # the app's own reading (tests/app/conftest.py replaces it for the app tests)


@pytest.mark.parametrize("ip_address, headers, expected", [
    (None, {"Host": "localhost:8501"}, "127.0.0.1"),  # Streamlit says None for a browser on the server's machine
    ("192.168.1.20", {"Host": "192.168.1.5:8501"}, "192.168.1.20"),
    ("127.0.0.2", {"Host": "127.0.0.2:8501"}, "127.0.0.2"),
    (None, {}, None),  # no connection, no request: a student
])
def test_the_address_is_the_connections(ip_address, headers, expected):
    assert visitor.address_of(ip_address, headers) == expected


def test_without_a_running_server_there_is_no_address():
    assert READ_ADDRESS() is None  # no script run here: a student, as a visitor without a request would be


def test_roles():
    assert role_of("127.0.0.1", class_mode=False, presenter=False) is Role.OWNER
    assert role_of(None, class_mode=False, presenter=False) is Role.STUDENT  # no address to read: fail closed
    assert role_of("192.168.1.20", class_mode=False, presenter=False) is Role.STUDENT
    assert role_of("192.168.1.20", class_mode=False, presenter=True) is Role.STUDENT  # no presenter outside a class
    assert role_of("::1", class_mode=True, presenter=False) is Role.STUDENT  # class mode: local visitors too
    assert role_of("192.168.1.20", class_mode=True, presenter=True) is Role.PRESENTER
    assert Role.OWNER.may_choose_any_model and Role.PRESENTER.may_choose_any_model
    assert not Role.STUDENT.may_choose_any_model


def test_students_pick_among_the_offered_models_only():
    student = picker_choices(MACHINE, SETTINGS, Role.STUDENT)
    assert [c.source for c in student] == ["bert-base-uncased", "minilm", "minilm-encoder", "sentiment"]
    assert all("/" not in c.label for c in student)  # no server path in what the picker shows
    no_hub = picker_choices(MACHINE, ServerSettings(cached_hub_models=False), Role.STUDENT)
    assert [c.source for c in no_hub] == ["minilm", "minilm-encoder"]
    owner = picker_choices(MACHINE, SETTINGS, Role.OWNER)
    assert [c.source for c in owner] == ["sentiment", "bert-base-uncased", "minilm", "minilm-encoder", FOLDER]


@pytest.mark.parametrize("requested", ["/root/.ssh", "/tmp/does-not-exist", "/srv/models/bert-sst2",
                                       "google-bert/bert-large-cased", "../../etc", "folder"])
def test_a_student_asking_for_anything_else_gets_the_default_and_one_neutral_line(requested):
    choices = picker_choices(MACHINE, SETTINGS, Role.STUDENT)
    resolution = resolve(requested, choices, Role.STUDENT)
    assert resolution.choice.source == "bert-base-uncased" and resolution.folder is None
    assert resolution.refused == NOT_OFFERED.format(names="bert-base-uncased, minilm, minilm-encoder, sentiment")
    assert "/" not in resolution.refused  # the teacher's folder by its name, never its path


def test_a_student_opens_an_offered_model_by_its_name():
    choices = picker_choices(MACHINE, SETTINGS, Role.STUDENT)
    sentiment = resolve("sentiment", choices, Role.STUDENT)
    assert (sentiment.choice.folder, sentiment.refused) == ("/srv/models/bert-sst2", None)
    assert resolve("minilm", choices, Role.STUDENT).choice.source == "minilm"
    assert resolve("", choices, Role.STUDENT) == resolve("bert-base-uncased", choices, Role.STUDENT)


def test_the_owner_and_the_presenter_may_open_any_folder():
    for role in (Role.OWNER, Role.PRESENTER):
        resolution = resolve("/home/teacher/my-bert", picker_choices(MACHINE, SETTINGS, role), role)
        assert (resolution.choice.source, resolution.folder, resolution.refused) == (FOLDER, "/home/teacher/my-bert", None)


def test_a_teachers_folder_named_by_its_path_opens_by_its_offered_name():
    """A lesson's `model: /srv/models/bert-sst2` opened by the presenter moves the class to "sentiment": the name
    is what every following student's address bar then holds, never the path."""
    for role in (Role.OWNER, Role.PRESENTER):
        for spelling in ("/srv/models/bert-sst2", "/srv/models/bert-sst2/", "/srv/models/../models/bert-sst2"):
            resolution = resolve(spelling, picker_choices(MACHINE, SETTINGS, role), role)
            assert (resolution.choice.source, resolution.folder, resolution.refused) == ("sentiment", None, None)


def test_a_steps_link_names_the_loaded_model_never_the_folder_the_step_wrote():
    from viz_app.lessons.resolve import ResolvedStep

    step = ResolvedStep(number=1, total=1, title="T", text="", question="", answer="", notice="", page="attention",
                        state={"model": "/srv/models/bert-sst2", "text": "A b.", "layer": 2})
    assert step.query("sentiment") == {"model": "sentiment", "text": "A b.", "layer": "2"}
    assert step.link("http://h:8501", "sentiment") == "http://h:8501/attention?model=sentiment&text=A+b.&layer=2"
    assert step.query(None)["model"] == "/srv/models/bert-sst2"  # no model loaded (an export's own key): the step's


def test_without_a_cached_hub_model_the_default_is_the_builtin_one():
    builtin_only = [c for c in MACHINE if c.folder is None]
    resolution = resolve("/etc", picker_choices(builtin_only, ServerSettings(), Role.STUDENT), Role.STUDENT)
    assert resolution.choice.source == "minilm"
    assert resolution.refused == "This server does not offer that model; it offers: minilm, minilm-encoder."


def test_a_failure_on_the_server_names_its_cause_to_the_owner_and_presenter_only(caplog):
    error = OSError("cannot read /srv/models/bert-sst2/config.json")
    assert failure(error, Role.OWNER) == failure(error, Role.PRESENTER) == str(error)
    with caplog.at_level("WARNING", logger="viz_app.server.access"):
        assert failure(error, Role.STUDENT) == SERVER_LOG == failure("anything else", Role.STUDENT)
    assert str(error) in caplog.text  # the person running the server still reads why
