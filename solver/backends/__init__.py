"""Backend registry: names, algorithms and capabilities, known without importing any solver library.

Adapters (``solver.backends.highs`` and so on) import their solver libraries lazily, inside methods, and
availability is checked with ``importlib.util.find_spec``, so listing backends, checking a request
against them (``solver.registry.check_request``) and ``fairpack --help`` never load a solver.
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solver.backends.base import Backend

_ADAPTERS = {
    "highs": ("solver.backends.highs", "HighsBackend"),
    "ortools": ("solver.backends.ortools", "OrToolsBackend"),
    "cbc": ("solver.backends.cbc", "CbcBackend"),
    "cpsat": ("solver.backends.cpsat", "CpSatBackend"),
}
#: The Python package each backend needs.
_PACKAGES = {"highs": "highspy", "ortools": "ortools.linear_solver", "cbc": "pulp", "cpsat": "ortools.sat"}

BACKEND_NAMES = tuple(_ADAPTERS)
#: Backends that solve ``solver.lp.LinearProgram`` models (LPs and MILPs).
LP_BACKENDS = ("highs", "ortools", "cbc")
DEFAULT_BACKEND = "highs"

#: Algorithms per backend, default first.
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "highs": ("simplex", "ipm", "pdlp"),
    "ortools": ("glop", "pdlp", "scip"),
    "cbc": ("cbc",),
    "cpsat": ("cpsat",),
}
#: The algorithm a backend uses when none is given, for an LP or a MILP.
DEFAULT_ALGORITHM: dict[tuple[str, str], str] = {
    ("highs", "lp"): "simplex", ("highs", "milp"): "simplex",
    ("ortools", "lp"): "glop", ("ortools", "milp"): "scip",
    ("cbc", "lp"): "cbc", ("cbc", "milp"): "cbc",
    ("cpsat", "lp"): "cpsat", ("cpsat", "milp"): "cpsat",
}  # fmt: skip

_LP = frozenset({"lp", "duals", "time_limit"})
#: What each (backend, algorithm) offers: ``lp``/``milp`` (model classes), ``duals`` (row duals of an
#: optimal LP), ``incremental`` (a session that keeps its basis between solves), ``warm_start`` (a MILP
#: start), ``time_limit``, ``cp`` (CP-SAT models).
CAPABILITIES: dict[tuple[str, str], frozenset[str]] = {
    ("highs", "simplex"): _LP | {"milp", "incremental", "warm_start"},
    ("highs", "ipm"): _LP | {"incremental"},
    ("highs", "pdlp"): _LP | {"incremental"},
    ("ortools", "glop"): _LP,
    ("ortools", "pdlp"): _LP,
    ("ortools", "scip"): frozenset({"lp", "milp", "warm_start", "time_limit"}),
    ("cbc", "cbc"): _LP | {"milp", "warm_start"},
    ("cpsat", "cpsat"): frozenset({"cp", "time_limit", "warm_start"}),
}


def backend_capabilities(backend: str, algorithm: str | None = None) -> frozenset[str]:
    """What ``backend`` offers with ``algorithm`` (its default algorithm when None; the union for MILPs)."""
    if backend not in ALGORITHMS:
        return frozenset()
    if algorithm is None:
        lp = CAPABILITIES[(backend, DEFAULT_ALGORITHM[(backend, "lp")])]
        return lp | CAPABILITIES[(backend, DEFAULT_ALGORITHM[(backend, "milp")])]
    return CAPABILITIES.get((backend, algorithm), frozenset())


@cache
def _present(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a parent package missing, or a broken namespace
        return False


def installed() -> list[str]:
    """Backends whose solver package is installed (found, not imported)."""
    return [name for name in _ADAPTERS if _present(_PACKAGES[name])]


def backend_class(name: str) -> type[Backend]:
    from solver.backends.base import BackendUnavailable

    if name not in _ADAPTERS:
        raise BackendUnavailable(f"unknown backend {name!r}; choose from {', '.join(_ADAPTERS)}")
    module_name, class_name = _ADAPTERS[name]
    cls: type[Backend] = getattr(importlib.import_module(module_name), class_name)
    return cls


def get_backend(name: str = DEFAULT_BACKEND, algorithm: str | None = None) -> Backend:
    """An instance of the named backend whose solves use ``algorithm`` (None: the backend's defaults).

    Raises ``BackendUnavailable`` if its library is missing.
    """
    from solver.backends.base import BackendUnavailable

    if name not in installed():
        raise BackendUnavailable(f"backend {name!r} is not installed")
    return backend_class(name)(algorithm)


installed_backends = installed

_LAZY = {"Backend", "BackendUnavailable", "Session", "SolveOutcome"}


def __getattr__(name: str) -> Any:  # the base types without importing numpy and scipy up front
    if name in _LAZY:
        from solver.backends import base

        return getattr(base, name)
    raise AttributeError(f"module 'solver.backends' has no attribute {name!r}")


__all__ = [
    "ALGORITHMS",
    "BACKEND_NAMES",
    "CAPABILITIES",
    "DEFAULT_ALGORITHM",
    "DEFAULT_BACKEND",
    "LP_BACKENDS",
    "Backend",
    "BackendUnavailable",
    "Session",
    "SolveOutcome",
    "backend_capabilities",
    "backend_class",
    "get_backend",
    "installed",
    "installed_backends",
]
