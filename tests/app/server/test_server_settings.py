"""The teacher's server settings (viz_app/server/settings.py): flags, environment and file, and what is refused."""
from pathlib import Path

import pytest

from viz_app.server.settings import ServerSettings, SettingsError, read_settings


@pytest.fixture
def bert_folder(tmp_path):
    folder = tmp_path / "bert-sst2"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def test_defaults_are_safe():
    assert read_settings([], {}) == ServerSettings(class_mode=False, presenter_key=None, cached_hub_models=True, folders=())


def test_class_mode_from_the_flag_or_the_environment():
    assert read_settings(["--class"], {}).class_mode
    assert read_settings([], {"BERT_INSIDE_CLASS": "1"}).class_mode
    assert not read_settings([], {"BERT_INSIDE_CLASS": "0"}).class_mode
    assert read_settings(["--class"], {"BERT_INSIDE_CLASS": "0"}).class_mode  # the flag wins
    with pytest.raises(SettingsError, match="BERT_INSIDE_CLASS"):
        read_settings([], {"BERT_INSIDE_CLASS": "maybe"})


def test_a_settings_file_and_flags_add_up(tmp_path, bert_folder):
    other = bert_folder.parent / "ner"
    other.mkdir()
    (other / "config.json").write_text("{}")
    file = tmp_path / "class.yaml"
    file.write_text(f"class: true\npresenter_key: from-the-file-123\ncached_hub_models: false\n"
                    f"folders:\n  sentiment: {bert_folder}\n")
    settings = read_settings(["--settings", str(file), "--offer", f"ner={other}"], {})
    assert settings == ServerSettings(True, "from-the-file-123", False,
                                      (("sentiment", str(bert_folder)), ("ner", str(other))))
    assert read_settings([], {"BERT_INSIDE_SETTINGS": str(file), "BERT_INSIDE_PRESENTER_KEY": "from-the-env-1"}
                         ).presenter_key == "from-the-env-1"
    assert read_settings(["--settings", str(file), "--presenter-key", "from-a-flag-1"], {}).presenter_key == "from-a-flag-1"


def test_the_presenter_key_from_the_environment_as_the_start_script_passes_it():
    settings = read_settings(["--class"], {"BERT_INSIDE_PRESENTER_KEY": "from-the-env-1"})
    assert settings.class_mode and settings.presenter_key == "from-the-env-1"
    with pytest.raises(SettingsError, match="8 to 128"):
        read_settings([], {"BERT_INSIDE_PRESENTER_KEY": "short"})


@pytest.mark.parametrize("argv, message", [
    (["--offer", "sentiment"], "NAME=FOLDER"),
    (["--offer", "my/model={folder}"], "no '/'"),
    (["--offer", "minilm={folder}"], "not one of"),
    (["--offer", "empty={folder}/missing"], "no config.json"),
    (["--presenter-key", "short"], "8 to 128"),
    (["--presenter-key", "has spaces in it"], "8 to 128"),
    (["--shout"], "unrecognized arguments"),
])
def test_bad_settings_say_what_is_wrong(argv, message, bert_folder):
    with pytest.raises(SettingsError, match=message):
        read_settings([arg.format(folder=bert_folder) for arg in argv], {})


@pytest.mark.parametrize("text, message", [
    ("- a list", "must be a mapping"),
    ("class: sometimes", "true or false"),
    ("folder: {}", "unknown settings"),
    ("folders: [a, b]", "folders must be a mapping"),
    ("class: [unclosed", "not valid YAML"),
])
def test_bad_settings_files(tmp_path, text, message):
    file = tmp_path / "class.yaml"
    file.write_text(text)
    with pytest.raises(SettingsError, match=message):
        read_settings(["--settings", str(file)], {})
    with pytest.raises(SettingsError, match="cannot be read"):
        read_settings(["--settings", str(tmp_path / "missing.yaml")], {})


def test_the_settings_file_in_the_docs(tmp_path, bert_folder):
    text = (Path(__file__).resolve().parents[3] / "docs" / "teaching.md").read_text()
    example = next(block.split("```", 1)[0] for block in text.split("```yaml\n")[1:] if "cached_hub_models" in block)
    file = tmp_path / "class.yaml"
    file.write_text(example.replace("/srv/models/bert-sst2", str(bert_folder)))
    settings = read_settings(["--settings", str(file)], {})
    assert settings.class_mode and settings.presenter_key == "a-long-secret"
    assert settings.folders == (("sentiment", str(bert_folder)),)


def test_the_budgets_from_the_file_the_environment_and_the_flags(tmp_path):
    defaults = read_settings([], {})
    assert (defaults.request_budget, defaults.visitor_budget, defaults.heavy_jobs) == (60_000, 300_000, 0)
    assert defaults.heavy_slots >= 1  # the cores less one, at least one
    file = tmp_path / "class.yaml"
    file.write_text("request_budget: 1000\nvisitor_budget: 5000\nheavy_jobs: 2\n")
    from_file = read_settings(["--settings", str(file)], {})
    assert (from_file.request_budget, from_file.visitor_budget, from_file.heavy_slots) == (1_000, 5_000, 2)
    environment = {"BERT_INSIDE_REQUEST_BUDGET": "2,000", "BERT_INSIDE_HEAVY_JOBS": "3"}
    assert read_settings(["--settings", str(file)], environment).request_budget == 2_000  # the environment wins
    flags = read_settings(["--settings", str(file), "--request-budget", "3000", "--visitor-budget", "0"], environment)
    assert (flags.request_budget, flags.visitor_budget, flags.heavy_slots) == (3_000, 0, 3)  # the flags win


@pytest.mark.parametrize("argv, environment, text", [
    (["--request-budget", "lots"], {}, "request_budget must be a whole number"),
    ([], {"BERT_INSIDE_VISITOR_BUDGET": "-5"}, "visitor_budget must be a whole number"),
    (["--heavy-jobs", "1.5"], {}, "heavy_jobs must be a whole number"),
])
def test_a_budget_that_is_not_a_count_says_so(argv, environment, text):
    with pytest.raises(SettingsError, match=text):
        read_settings(argv, environment)


def test_the_budgets_in_the_docs(tmp_path):
    text = (Path(__file__).resolve().parents[3] / "docs" / "teaching.md").read_text()
    examples = [block.split("```", 1)[0] for block in text.split("```yaml\n")[1:]]
    example = next(example for example in examples if "request_budget" in example)
    file = tmp_path / "class.yaml"
    file.write_text(example)
    settings = read_settings(["--settings", str(file)], {})
    assert (settings.request_budget, settings.visitor_budget, settings.heavy_slots) == (200_000, 1_000_000, 3)
