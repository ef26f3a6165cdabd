"""The architecture, checked by machine: no import cycles, solver libraries imported lazily, a light CLI start
and a CLI that imports only what its command uses.

import-linter (``make test`` runs ``lint-imports``) keeps the layers and who may import a solver library;
these tests add what its contracts do not express.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]


#: Methods of the core data types that call the modules built on them (``Instance.build``, ``.to_yaml``,
#: ``Result.to_frame``): each import sits inside the method, declared here, and is the only way back.
LATE_BOUND = {
    ("fairpack.models.types", "fairpack.models.build"),
    ("fairpack.models.types", "fairpack.models.io"),
    ("fairpack.models.result", "fairpack.models.frames"),
}


def test_no_import_cycles_anywhere() -> None:
    # grimp sees every import statement, including those inside functions and under TYPE_CHECKING, so a
    # cycle hidden behind a lazy import shows up here too; the declared methods above are the exception. No
    # cache (.grimp_cache/ in the working directory), which two test processes at once would both write.
    graph = grimp.build_graph("fairpack", cache_dir=None)
    edges = nx.DiGraph()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if (module, imported) in LATE_BOUND:
                details = graph.get_import_details(importer=module, imported=imported)
                assert details and all(d["line_contents"].startswith("from ") for d in details), details
                continue
            edges.add_edge(module, imported)
    cycles = list(nx.simple_cycles(edges))
    assert cycles == [], cycles


def test_late_bound_imports_are_inside_methods() -> None:
    # grimp strips indentation: read the lines themselves to see each declared import is inside a function.
    graph = grimp.build_graph("fairpack", cache_dir=None)
    for importer, imported in LATE_BOUND:
        details = graph.get_import_details(importer=importer, imported=imported)
        assert details, (importer, imported)
        source = (ROOT / importer.split(".", 1)[1].replace(".", "/")).with_suffix(".py").read_text().splitlines()
        for detail in details:
            assert source[detail["line_number"] - 1].startswith("        from "), detail


def test_listing_methods_imports_no_solver_library() -> None:
    code = (
        "import sys\n"
        "from fairpack.solver.registry import methods, describe_all\n"
        "describe_all()\n"
        "from fairpack.solver.backends import installed\n"
        "installed()\n"
        "loaded = sorted(m for m in ('highspy', 'pulp', 'ortools', 'pandas', 'matplotlib', 'dask', 'scipy')"
        " if m in sys.modules)\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "", out.stdout


def _modules_loaded_by(argv: list[str], watched: tuple[str, ...]) -> list[str]:
    """Which of ``watched`` a fresh process has imported after running ``fairpack argv`` (exit 0)."""
    code = (
        "import contextlib, io, sys\n"
        "from fairpack.solver.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(sys.argv[1:]) == 0\n"
        f"print(','.join(m for m in {watched!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True,
                         timeout=120)  # fmt: skip
    return [name for name in out.stdout.strip().split(",") if name]


@pytest.mark.parametrize(
    ("instance", "method", "scipy"), [("drfh_fig1.yaml", "drfh", "scipy.optimize"), ("hdrf_fig4.yaml", "hdrf", "scipy")]
)
def test_solving_from_the_cli_imports_only_what_the_method_uses(instance: str, method: str, scipy: str) -> None:
    # Verifying the answer needs no scipy.optimize (only the Pareto property check does; 0.4-0.5 s to import),
    # and nothing here plots, reads tables or calls another solver library. H-DRF on a pooled cluster (this
    # one) builds no LP, so it needs no scipy at all (scipy.sparse alone takes 0.2-0.4 s to import).
    path = str(ROOT / "instances" / instance)
    watched = (scipy, "highspy", "matplotlib", "pandas", "dask", "pulp", "ortools", "networkx")
    if method == "drfh":
        watched = watched[:1] + watched[2:]  # its LP is solved by HiGHS
    assert _modules_loaded_by(["solve", path, "--method", method, "--json"], watched) == []


def test_checking_a_saved_result_imports_no_scipy_and_no_solver_library(tmp_path: Path) -> None:
    # The independent checker stands on numpy alone: scipy.sparse comes in with the Pareto LP, not with checking.
    saved = tmp_path / "result.json"
    path = str(ROOT / "instances" / "drfh_fig1.yaml")
    subprocess.run([sys.executable, "-m", "fairpack", "solve", path, "-o", str(saved)], capture_output=True,
                   check=True, timeout=120)  # fmt: skip
    watched = ("scipy", "highspy", "pulp", "ortools", "matplotlib", "pandas")
    assert _modules_loaded_by(["check", path, str(saved)], watched) == []
