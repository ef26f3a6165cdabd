"""Every notebook in ``notebooks/`` is committed without outputs, runs top to bottom without error, and draws
its plots inline (Jupyter's own backend: no notebook forces a headless one such as ``Agg``).

CI (``CI`` set in the environment, as ``.ci/run`` has it) must run them: there a missing notebook
dependency fails the test instead of skipping it.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


#: A notebook line that would force a backend: ``matplotlib.use(...)``, ``%matplotlib agg``, ``MPLBACKEND``.
FORCED_BACKEND = re.compile(r"matplotlib\.use\(|^\s*%matplotlib\s+(?!inline)|MPLBACKEND", re.I | re.M)


def _ids(paths: list[Path]) -> list[str]:
    return [path.name for path in paths]


def _require(module: str, reason: str | None = None) -> ModuleType:
    """The module; skipped when it is missing, except on CI, where the notebooks must run."""
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=reason)


def _code(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell.get("cell_type") == "code"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_does_not_force_a_backend(notebook: Path) -> None:
    forced = [match.group(0) for source in _code(notebook) for match in FORCED_BACKEND.finditer(source)]
    assert not forced, f"{notebook.name} forces a matplotlib backend ({forced}): plots must render inline"


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
    nbformat = _require("nbformat")
    nbclient = _require("nbclient")
    _require("ipykernel")
    _require("matplotlib", reason="the notebooks plot with matplotlib (the 'bench' extra)")
    manager = _require("jupyter_client.manager")

    # The kernel must be this interpreter, so it sees the same installed packages as the tests. The
    # 'python3' kernelspec ipykernel installs into the venv says argv[0] == 'python', which jupyter_client
    # already maps to sys.executable, but a 'python3' spec elsewhere on the Jupyter path (user or system
    # wide, found by name) may name another interpreter. Installing a kernelspec from a test would change
    # the machine, so instead pin argv[0] of the spec this kernel manager uses (the spec is cached on it).
    km = manager.AsyncKernelManager(kernel_name="python3")
    assert km.kernel_spec is not None, "no 'python3' kernelspec found (is ipykernel installed?)"
    km.kernel_spec.argv[0] = sys.executable

    nb = nbformat.read(notebook, as_version=4)
    # One more cell at the end reports the backend the notebook left matplotlib with.
    nb.cells.append(nbformat.v4.new_code_cell("import matplotlib\nprint('backend:', matplotlib.get_backend())"))
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
    outputs = [output for cell in nb.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    backend = "".join(output.get("text", "") for output in nb.cells[-1].outputs)
    assert "inline" in backend.lower(), f"{notebook.name} left matplotlib on {backend.strip()!r}, not inline"
    images = [output for output in outputs if "image/png" in output.get("data", {})]
    assert images, f"{notebook.name} drew no plot inline"
