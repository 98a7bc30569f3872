"""The install files: requirements.txt names pyproject.toml's extras and no versions (every version lives in
pyproject.toml), and pyproject.toml's PyTorch range admits the newest release and the oldest that
docs/compatibility.md states was checked."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib", reason="Python 3.11's tomllib reads pyproject.toml")

ROOT = Path(__file__).resolve().parents[1]
NEWEST_TORCH = "2.15.0"  # the newest PyTorch release checked by hand (docs/compatibility.md)


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def requirement_lines() -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def torch_requirement() -> Requirement:
    [torch] = [r for r in map(Requirement, pyproject()["project"]["dependencies"]) if r.name == "torch"]
    return torch


def test_requirements_txt_points_at_pyprojects_extras_and_pins_nothing():
    lines = requirement_lines()
    assert lines == ["-e .[app,builtin-model]"]
    for line in lines:
        assert not re.search(r"==|>=|<=|~=|!=|<|>", line), f"requirements.txt names a version: {line!r}"
    extras = re.fullmatch(r"-e \.\[([a-z,-]+)\]", lines[0]).group(1).split(",")
    assert set(extras) <= set(pyproject()["project"]["optional-dependencies"])


def test_pyprojects_torch_range_admits_the_newest_release_and_the_oldest_stated():
    compatibility = (ROOT / "docs" / "compatibility.md").read_text(encoding="utf-8")
    [oldest] = re.findall(r"^\| (\d+\.\d+\.\d+) \(oldest claimed\)", compatibility, flags=re.MULTILINE)
    torch = torch_requirement()
    assert f"`torch{torch.specifier}`" in compatibility  # the range the document describes is the declared one
    assert torch.specifier.contains(NEWEST_TORCH) and torch.specifier.contains(oldest)
