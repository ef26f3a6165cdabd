"""Backend registry: names, algorithms and capabilities, known without importing any solver library.

Adapters (``solver.backends.highs`` and so on) import their solver libraries lazily, inside methods, and
availability is checked with ``importlib.util.find_spec``, so listing backends, checking a request
against them (``solver.registry.check_request``) and ``fairpack --help`` never load a solver.
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairpack.solver.backends.capabilities import ALGORITHMS, CAPABILITIES, DEFAULT_ALGORITHM, backend_capabilities
from fairpack.solver.backends.settings import SolverSettings

if TYPE_CHECKING:
    from fairpack.solver.backends.base import Backend

_ADAPTERS = {
    "highs": ("fairpack.solver.backends.highs", "HighsBackend"),
    "ortools": ("fairpack.solver.backends.ortools", "OrToolsBackend"),
    "cbc": ("fairpack.solver.backends.cbc", "CbcBackend"),
    "cpsat": ("fairpack.solver.backends.cpsat", "CpSatBackend"),
}
#: The Python package each backend needs.
_PACKAGES = {"highs": "highspy", "ortools": "ortools.linear_solver", "cbc": "pulp", "cpsat": "ortools.sat"}

BACKEND_NAMES = tuple(_ADAPTERS)
#: Backends that solve ``solver.lp.LinearProgram`` models (LPs and MILPs).
LP_BACKENDS = ("highs", "ortools", "cbc")
DEFAULT_BACKEND = "highs"

@cache
def _present(package: str) -> bool:
    """Whether ``package`` (dotted names allowed) is installed, without importing it or its parents."""
    top, _, rest = package.partition(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):  # a broken namespace
        return False
    if spec is None:
        return False
    if not rest:
        return True
    parts = rest.split(".")
    return any(
        (Path(location).joinpath(*parts) / "__init__.py").is_file() or Path(location).joinpath(*parts).is_dir()
        for location in spec.submodule_search_locations or ()
    )


def installed() -> list[str]:
    """Backends whose solver package is installed (found, not imported)."""
    return [name for name in _ADAPTERS if _present(_PACKAGES[name])]


def backend_class(name: str) -> type[Backend]:
    from fairpack.solver.backends.base import BackendUnavailable

    if name not in _ADAPTERS:
        raise BackendUnavailable(f"unknown backend {name!r}; choose from {', '.join(_ADAPTERS)}")
    module_name, class_name = _ADAPTERS[name]
    cls: type[Backend] = getattr(importlib.import_module(module_name), class_name)
    return cls


def get_backend(name: str = DEFAULT_BACKEND, algorithm: str | None = None,
                settings: SolverSettings | None = None) -> Backend:  # fmt: skip
    """An instance of the named backend whose solves use ``algorithm`` (None: the backend's defaults) and
    ``settings`` (threads, seed, log).

    Raises ``BackendUnavailable`` if its library is missing.
    """
    from fairpack.solver.backends.base import BackendUnavailable

    if name not in installed():
        raise BackendUnavailable(f"backend {name!r} is not installed")
    return backend_class(name)(algorithm, settings)


installed_backends = installed

_LAZY = {"Backend", "BackendUnavailable", "Session", "SolveOutcome"}


def __getattr__(name: str) -> Any:  # the base types without importing numpy and scipy up front
    if name in _LAZY:
        from fairpack.solver.backends import base

        return getattr(base, name)
    raise AttributeError(f"module 'fairpack.solver.backends' has no attribute {name!r}")


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
    "SolverSettings",
    "backend_capabilities",
    "backend_class",
    "get_backend",
    "installed",
    "installed_backends",
]
