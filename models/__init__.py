"""fairpack's models: the problem (instances, traces, generators), results and the independent checker.

Public API (imported lazily)::

    from fairpack.models import Instance, load_instance, Allocation, Schedule, Result, result_json

``models`` imports nothing from ``solver`` and no solver library: it says what a problem and a valid answer
are; ``solver`` says how to find one.
"""

from __future__ import annotations

from fairpack._lazy import lazy_names

_PUBLIC = {
    "Instance": ("fairpack.models.types", "Instance"),
    "InstanceError": ("fairpack.models.types", "InstanceError"),
    "ServerClass": ("fairpack.models.types", "ServerClass"),
    "Tenant": ("fairpack.models.types", "Tenant"),
    "Job": ("fairpack.models.types", "Job"),
    "Stage": ("fairpack.models.types", "Stage"),
    "load_instance": ("fairpack.models.io", "load_instance"),
    "instance_from_dict": ("fairpack.models.io", "instance_from_dict"),
    "Allocation": ("fairpack.models.result", "Allocation"),
    "Schedule": ("fairpack.models.result", "Schedule"),
    "Result": ("fairpack.models.result", "Result"),
    "result_json": ("fairpack.models.view", "result_json"),
}


__getattr__, __dir__ = lazy_names(__name__, globals(), _PUBLIC)

__all__ = sorted(_PUBLIC)
