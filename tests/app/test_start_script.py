"""scripts/start_app.sh: the app's flags go after `--`, streamlit's before, and in class mode the links it prints
carry the key the app is given. Run with stand-ins for the installer, the download and streamlit."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a bash and a Python process per test

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path):
    """A copy of the script beside stand-ins: install.sh does nothing, `python3 -m streamlit` prints its arguments,
    `python3 -m bert` fails as offline; `python3 -m viz_app.class_links` is the real one."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "start_app.sh", tmp_path / "scripts")
    (tmp_path / "scripts" / "install.sh").write_text("exit 0\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(
        "#!/usr/bin/env bash\n"
        'if [[ "$2" == streamlit ]]; then shift 2; printf "%s\\n" "$@"; exit 0; fi\n'
        'if [[ "$2" == bert ]]; then exit 3; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    (bin_dir / "python3").chmod(0o755)
    return tmp_path


def start(checkout, *args, env=None):
    environment = {name: value for name, value in os.environ.items() if not name.startswith("BERT_INSIDE_")}
    environment |= {"PATH": f"{checkout / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT), **(env or {})}
    done = subprocess.run(["bash", str(checkout / "scripts" / "start_app.sh"), *args], capture_output=True, text=True,
                          env=environment, timeout=120)
    return done.returncode, done.stdout.splitlines(), done.stderr


def test_without_class_mode_nothing_goes_to_the_app(checkout):
    code, streamlit_args, stderr = start(checkout, "--server.port", "8600")
    assert code == 0 and streamlit_args == ["run", "viz_app/Home.py", "--server.port", "8600"]
    assert "Presenter" not in stderr


def test_class_mode_prints_the_links_with_the_key_the_app_gets(checkout):
    code, streamlit_args, stderr = start(checkout, "--class", "--server.port=8600", "--no-download")
    assert code == 0, stderr
    assert streamlit_args[:4] == ["run", "viz_app/Home.py", "--server.port=8600", "--"]
    app_args = streamlit_args[4:]
    assert app_args[0] == "--class" and app_args[1] == "--presenter-key"
    key = app_args[2]
    assert len(key) >= 22
    assert f":8600/lessons?key={key}" in stderr and ":8600/lessons?follow=1" in stderr


def test_the_teachers_key_and_host(checkout):
    code, streamlit_args, stderr = start(checkout, "--server.address", "10.1.2.3", "--no-download",
                                         env={"BERT_INSIDE_CLASS": "1", "BERT_INSIDE_PRESENTER_KEY": "the-teachers-key"})
    assert code == 0, stderr
    assert streamlit_args[-3:] == ["--", "--presenter-key", "the-teachers-key"]
    assert "http://10.1.2.3:8501/lessons?key=the-teachers-key" in stderr


def test_bad_settings_stop_before_the_app(checkout):
    code, streamlit_args, stderr = start(checkout, "--class", "--offer", "no-equals-sign", "--no-download")
    assert code == 2 and streamlit_args == []
    assert stderr.strip().splitlines()[-1].startswith("error: --offer 'no-equals-sign'")
