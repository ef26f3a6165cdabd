"""Backend registry. Adapters import their solver libraries lazily, so listing them is free."""

from __future__ import annotations

import importlib

from solver.backends.base import Backend, BackendUnavailable, Capabilities, SolveOutcome

_ADAPTERS = {
    "highs": ("solver.backends.highs", "HighsBackend"),
    "ortools": ("solver.backends.ortools", "OrToolsBackend"),
    "cbc": ("solver.backends.cbc", "CbcBackend"),
}

BACKEND_NAMES = tuple(_ADAPTERS)
DEFAULT_BACKEND = "highs"


def backend_class(name: str) -> type[Backend]:
    if name not in _ADAPTERS:
        raise BackendUnavailable(f"unknown backend {name!r}; choose from {', '.join(_ADAPTERS)}")
    module_name, class_name = _ADAPTERS[name]
    cls: type[Backend] = getattr(importlib.import_module(module_name), class_name)
    return cls


def get_backend(name: str = DEFAULT_BACKEND) -> Backend:
    """An instance of the named backend; raises ``BackendUnavailable`` if its library is missing."""
    cls = backend_class(name)
    if not cls.available():
        raise BackendUnavailable(f"backend {name!r} is not installed")
    return cls()


def installed_backends() -> list[str]:
    return [name for name in _ADAPTERS if backend_class(name).available()]


__all__ = [
    "BACKEND_NAMES",
    "DEFAULT_BACKEND",
    "Backend",
    "BackendUnavailable",
    "Capabilities",
    "SolveOutcome",
    "backend_class",
    "get_backend",
    "installed_backends",
]
