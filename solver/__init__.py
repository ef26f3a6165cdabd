"""How answers are found: ``solve`` an instance with any registered method, verified from the instance alone.

The public face is :mod:`fairpack` (``import fairpack``); this package holds the method families
(``drfh``, ``hdrf``, ``spacetime``), the simulator (``sim``), the backends, the CLI and the bench. Its
public names are imported lazily, so the CLI starts fast::

    from fairpack.solver import solve, load_instance, methods
"""

from __future__ import annotations

from fairpack._lazy import lazy_names
from fairpack._version import __version__

_PUBLIC = {
    "solve": ("fairpack.solver.api", "solve"),
    "simulate": ("fairpack.solver.api", "simulate"),
    "methods": ("fairpack.solver.registry", "methods"),
    "get_method": ("fairpack.solver.registry", "get_method"),
    "SolveOptions": ("fairpack.solver.registry", "SolveOptions"),
    "OptionError": ("fairpack.solver.registry", "OptionError"),
    "load_instance": ("fairpack.models.io", "load_instance"),
    "result_json": ("fairpack.models.view", "result_json"),
}


__getattr__, __dir__ = lazy_names(__name__, globals(), _PUBLIC, also=("__version__",))

__all__ = ["__version__", *sorted(_PUBLIC)]
