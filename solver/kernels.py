"""A compiled loop's two kernels: the C extension built at install, or the same code compiled by numba.

The FIFO simulator's event loop (``solver.sim.compiled_loop``) and Best-Fit's two-resource search
(``solver.drfh.ratio_index``) each have both, with the same arguments and the same results to the last bit. The
extension is preferred where it was built: it loads in a millisecond, where importing numba and loading its cached
machine code costs a fresh process about 0.45 s of CPU.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__all__ = ["KERNELS", "built", "pick"]

#: The kernels, by the name :func:`pick` takes (and 'auto').
KERNELS = ("c", "numba")


def built(extension: str) -> bool:
    """Whether the C extension ``extension`` (a module name) was built, found without loading it."""
    return importlib.util.find_spec(extension) is not None


def pick(name: str, extension: str, fallback: str, attribute: str) -> Any:
    """``attribute`` of kernel ``name``: of module ``extension`` for 'c', of ``fallback`` (numba's) for 'numba',
    and for 'auto' the extension's where it was built, else numba's.

    The modules are imported by name: the extension has no Python source for import-linter's graph to follow, and
    numba's module is imported only when it runs.

    Raises
    ------
    ValueError
        An unknown name.
    ImportError
        'c' asked for and the extension was not built.
    """
    if name not in (*KERNELS, "auto"):
        raise ValueError(f"kernel must be one of {', '.join((*KERNELS, 'auto'))}, got {name!r}")
    if name != "numba":
        try:
            module = importlib.import_module(extension)
        except ImportError:
            if name == "c":
                raise
        else:
            return getattr(module, attribute)
    return getattr(importlib.import_module(fallback), attribute)
