"""scripts/start_app.sh: the app's flags go after `--`, streamlit's before, and in class mode the links it prints
carry the key the app is given, in its environment and on no command line. Run with stand-ins for the installer,
the download and streamlit."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a bash and a Python process per test

ROOT = Path(__file__).resolve().parents[3]
APP_KEY = "app_key"  # the stand-in streamlit writes BERT_INSIDE_PRESENTER_KEY, as the app would read it, here


@pytest.fixture
def checkout(tmp_path):
    """A copy of the script beside stand-ins: install.sh does nothing, `python3 -m streamlit` prints its arguments
    and writes the presenter's key it finds in its environment to APP_KEY, `python3 -m bert` fails as offline;
    `python3 -m viz_app.server.class_links` is the real one."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "start_app.sh", tmp_path / "scripts")
    (tmp_path / "scripts" / "install.sh").write_text("exit 0\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(
        "#!/usr/bin/env bash\n"
        'if [[ "$2" == streamlit ]]; then shift 2; printf "%s\\n" "$@"; '
        f'printf "%s" "${{BERT_INSIDE_PRESENTER_KEY-}}" > {tmp_path / APP_KEY}; exit 0; fi\n'
        'if [[ "$2" == bert ]]; then exit 3; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    (bin_dir / "python3").chmod(0o755)
    return tmp_path


def start(checkout, *args, env=None) -> tuple[int, list[str], str, str | None]:
    """(exit code, streamlit's arguments, stderr, the presenter's key in the app's environment: None if the app
    was not started)."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("BERT_INSIDE_")}
    environment |= {"PATH": f"{checkout / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT), **(env or {})}
    done = subprocess.run(["bash", str(checkout / "scripts" / "start_app.sh"), *args], capture_output=True, text=True,
                          env=environment, timeout=120)
    key_file = checkout / APP_KEY
    return done.returncode, done.stdout.splitlines(), done.stderr, key_file.read_text() if key_file.exists() else None


def test_without_class_mode_nothing_goes_to_the_app(checkout):
    code, streamlit_args, stderr, app_key = start(checkout, "--server.port", "8600")
    assert code == 0 and streamlit_args == ["run", "viz_app/Home.py", "--server.port", "8600"]
    assert "Presenter" not in stderr and app_key == ""


def test_class_mode_prints_the_links_with_the_key_the_app_gets(checkout):
    code, streamlit_args, stderr, app_key = start(checkout, "--class", "--server.port=8600", "--no-download")
    assert code == 0, stderr
    assert streamlit_args == ["run", "viz_app/Home.py", "--server.port=8600", "--", "--class"]  # no key among them
    assert len(app_key) >= 22  # a random one, in the app's environment
    assert f":8600/lessons?key={app_key}" in stderr and ":8600/lessons?follow=1" in stderr


def test_the_teachers_key_and_host(checkout):
    code, streamlit_args, stderr, app_key = start(checkout, "--server.address", "10.1.2.3", "--no-download",
                                                  env={"BERT_INSIDE_CLASS": "1", "BERT_INSIDE_PRESENTER_KEY": "the-teachers-key"})
    assert code == 0, stderr
    assert streamlit_args == ["run", "viz_app/Home.py", "--server.address", "10.1.2.3"] and app_key == "the-teachers-key"
    assert "http://10.1.2.3:8501/lessons?key=the-teachers-key" in stderr


@pytest.mark.parametrize("flag", [["--presenter-key", "the-flag-key-1"], ["--presenter-key=the-flag-key-1"]])
def test_a_key_given_as_a_flag_reaches_the_app_in_its_environment(checkout, flag):
    code, streamlit_args, stderr, app_key = start(checkout, "--class", *flag, "--no-download",
                                                  env={"BERT_INSIDE_PRESENTER_KEY": "the-environments-key"})
    assert code == 0, stderr
    assert app_key == "the-flag-key-1"  # the flag wins over the variable, as in the app's own settings
    assert not any("the-flag-key-1" in argument for argument in streamlit_args), streamlit_args
    assert streamlit_args == ["run", "viz_app/Home.py", "--", "--class"]
    assert ":8501/lessons?key=the-flag-key-1" in stderr


def test_bad_settings_stop_before_the_app(checkout):
    code, streamlit_args, stderr, app_key = start(checkout, "--class", "--offer", "no-equals-sign", "--no-download")
    assert code == 2 and streamlit_args == [] and app_key is None
    assert stderr.strip().splitlines()[-1].startswith("error: --offer 'no-equals-sign'")


def test_processes_hand_the_class_to_the_lecture_script(checkout):
    """--processes N: install.sh is asked for the lecture hall's tools, then scripts/lecture.sh gets the count, the
    proxy's port, the store and the app's flags (a stand-in that prints them), with the key in its environment."""
    (checkout / "scripts" / "install.sh").write_text(f'printf "%s" "$*" > {checkout / "install_args"}\n')
    (checkout / "scripts" / "lecture.sh").write_text(
        f'printf "%s\\n" "$@"; printf "%s" "${{BERT_INSIDE_PRESENTER_KEY-}}" > {checkout / APP_KEY}\n')
    code, lecture_args, stderr, key = start(checkout, "--class", "--processes", "3", "--server.port", "8600",
                                            "--store", "redis://10.0.0.2:6379/0", "--presenter-key", "a-teacher-key")
    assert code == 0, stderr
    assert (checkout / "install_args").read_text() == "--lecture"
    assert lecture_args == ["--processes", "3", "--port", "8600", "--store", "redis://10.0.0.2:6379/0", "--class"]
    assert key == "a-teacher-key"
