"""Every notebook in ``notebooks/`` is committed without outputs and runs top to bottom without error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def _ids(paths: list[Path]) -> list[str]:
    return [path.name for path in paths]


def test_notebooks_exist() -> None:
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_outputs_stripped(notebook: Path) -> None:
    # Plain json, so this check needs none of the notebook dependencies.
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    dirty = [
        f"cell {index} (outputs: {len(cell.get('outputs') or [])}, execution_count: {cell.get('execution_count')})"
        for index, cell in enumerate(cells)
        if cell.get("cell_type") == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{notebook.name} has stored outputs; clear all outputs before committing (Jupyter: 'Clear Outputs of "
        f"All Cells', or `jupyter nbconvert --clear-output --inplace notebooks/{notebook.name}`): " + "; ".join(dirty)
    )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_executes(notebook: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib", reason="the notebooks plot with matplotlib (the 'bench' extra)")
    manager = pytest.importorskip("jupyter_client.manager")

    # The kernel must be this interpreter, so it sees the same installed packages as the tests. The
    # 'python3' kernelspec ipykernel installs into the venv says argv[0] == 'python', which jupyter_client
    # already maps to sys.executable, but a 'python3' spec elsewhere on the Jupyter path (user or system
    # wide, found by name) may name another interpreter. Installing a kernelspec from a test would change
    # the machine, so instead pin argv[0] of the spec this kernel manager uses (the spec is cached on it).
    km = manager.AsyncKernelManager(kernel_name="python3")
    assert km.kernel_spec is not None, "no 'python3' kernelspec found (is ipykernel installed?)"
    km.kernel_spec.argv[0] = sys.executable

    nb = nbformat.read(notebook, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        km=km,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook.parent)}},
    )
    try:
        # The client only shuts down kernels of managers it created; this one is ours, so ask it to.
        client.execute(cleanup_kc=True)
    except nbclient.exceptions.CellExecutionError as error:
        pytest.fail(f"{notebook.name} failed to run:\n{error}", pytrace=False)
