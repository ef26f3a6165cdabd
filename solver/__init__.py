"""fairpack's solvers: ``solve`` an instance with any registered method, verified from the instance alone.

Public API (imported lazily, so ``import solver`` and the CLI start fast)::

    from solver import solve, load_instance, methods
    instance = load_instance("instances/drfh_fig1.yaml")
    result = solve(instance, "drfh")            # a models.result.Result, verified by models.check
    methods()["drfh-int"].describe()            # family, exact, backends, options

fairpack's two top-level packages are ``models`` (the problem and how to judge an answer) and ``solver``
(how answers are found). A module or package of your own named ``models`` that Python finds first would
shadow fairpack's; importing ``solver`` then stops with an error that says which file shadows which.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

__version__ = "0.1.0"


def _check_not_shadowed() -> None:
    """Raise ImportError when ``import models`` would not find the ``models`` package shipped with fairpack."""
    expected = Path(__file__).resolve().parent.parent / "models" / "__init__.py"
    try:
        spec = importlib.util.find_spec("models")
    except (ImportError, ValueError):
        spec = None
    found = None if spec is None or spec.origin is None else Path(spec.origin).resolve()
    if found != expected:
        where = "nothing" if found is None else str(found)
        raise ImportError(
            f"fairpack's 'solver' package needs its own 'models' package ({expected}), but 'import models' "
            f"finds {where}. A module or package named 'models' in your project (or earlier on sys.path) "
            "shadows fairpack's: rename it, or run Python from a directory where it is not importable."
        )


_check_not_shadowed()

_PUBLIC = {
    "solve": ("solver.api", "solve"),
    "methods": ("solver.registry", "methods"),
    "get_method": ("solver.registry", "get_method"),
    "SolveOptions": ("solver.registry", "SolveOptions"),
    "OptionError": ("solver.registry", "OptionError"),
    "load_instance": ("models.io", "load_instance"),
    "result_json": ("models.view", "result_json"),
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        module, attribute = _PUBLIC[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'solver' has no attribute {name!r}")


__all__ = sorted(_PUBLIC)
