"""The architecture, checked by machine: no import cycles, solver libraries imported lazily, a light CLI start.

import-linter (``make test`` runs ``lint-imports``) keeps the layers and who may import a solver library;
these tests add what its contracts do not express.
"""

from __future__ import annotations

import subprocess
import sys

import grimp
import networkx as nx


def test_no_import_cycles_anywhere() -> None:
    # grimp sees every import statement, including those inside functions and under TYPE_CHECKING, so a
    # cycle hidden behind a lazy import shows up here too.
    graph = grimp.build_graph("models", "solver")
    edges = nx.DiGraph()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            edges.add_edge(module, imported)
    cycles = list(nx.simple_cycles(edges))
    assert cycles == [], cycles


def test_listing_methods_imports_no_solver_library() -> None:
    code = (
        "import sys\n"
        "from solver.registry import methods, describe_all\n"
        "describe_all()\n"
        "from solver.backends import installed\n"
        "installed()\n"
        "loaded = sorted(m for m in ('highspy', 'pulp', 'ortools', 'pandas', 'matplotlib', 'dask', 'scipy')"
        " if m in sys.modules)\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", out.stdout
