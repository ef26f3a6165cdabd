"""fairpack's models: the problem (instances, traces, generators), results and the independent checker.

Public API (imported lazily)::

    from models import Instance, load_instance, Allocation, Schedule, Result, result_json

``models`` imports nothing from ``solver`` and no solver library: it says what a problem and a valid answer
are; ``solver`` says how to find one.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "Instance": ("models.types", "Instance"),
    "InstanceError": ("models.types", "InstanceError"),
    "ServerClass": ("models.types", "ServerClass"),
    "Tenant": ("models.types", "Tenant"),
    "Job": ("models.types", "Job"),
    "Stage": ("models.types", "Stage"),
    "load_instance": ("models.io", "load_instance"),
    "instance_from_dict": ("models.io", "instance_from_dict"),
    "Allocation": ("models.result", "Allocation"),
    "Schedule": ("models.result", "Schedule"),
    "Result": ("models.result", "Result"),
    "result_json": ("models.view", "result_json"),
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        module, attribute = _PUBLIC[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'models' has no attribute {name!r}")


__all__ = sorted(_PUBLIC)
