"""The notebooks in docs/notebooks/ run headless (nbclient, a fresh ipykernel) against the built-in model, top to
bottom, without a cell error, and draw their figures; they are stored without outputs."""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))
PLOTLY = "application/vnd.plotly.v1+json"


def test_the_tour_is_there_and_stored_without_outputs():
    assert ROOT / "docs" / "notebooks" / "tour.ipynb" in NOTEBOOKS
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{path.name} is stored with outputs"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_runs_without_a_cell_error(path, minilm_path, monkeypatch):
    """A cell that raises fails the test (nbclient's CellExecutionError names the cell); this checkout's packages
    are the ones the kernel imports."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    figures = [output for output in outputs if PLOTLY in output.get("data", {})]
    views = sum("notebook." in cell.source and cell.source.rstrip().splitlines()[-1].startswith("notebook.")
                for cell in notebook.cells if cell.cell_type == "code")
    assert len(figures) == views > 0  # every view cell drew its figure inline

