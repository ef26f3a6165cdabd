"""Public names imported on first use: the ``__getattr__`` and ``__dir__`` of a package's public face."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(package: str, namespace: dict[str, Any], public: Mapping[str, tuple[str, str]],
               also: Iterable[str] = ()) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:  # fmt: skip
    """``(__getattr__, __dir__)`` for ``package``: each name of ``public`` (name -> (module, attribute)) is
    imported when first asked for and kept in ``namespace`` (the package's globals), so the package imports
    fast; ``dir()`` and tab completion list the public API and ``also`` (subpackages, ``__version__``), not
    the helpers the package's own code imports."""
    shown = sorted({*public, *also})

    def __getattr__(name: str) -> Any:
        if name in public:
            module, attribute = public[name]
            value = getattr(importlib.import_module(module), attribute)
            namespace[name] = value  # later look-ups skip this function
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return list(shown)

    return __getattr__, __dir__
