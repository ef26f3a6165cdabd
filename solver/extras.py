"""Optional dependencies, named by the extra that installs them, checked before any work starts.

fairpack's core (solving, simulating, checking, ``compare``) needs only its dependencies; a few features
need an extra: ``plot`` (``--plot``, the figures: matplotlib), ``bench`` (``fairpack bench``: Parquet
tables, progress bars, Dask; plus what ``plot`` installs) and ``notebooks`` (running the example
notebooks). A feature whose extra is missing is refused up front, naming the command that installs it,
so a long solve never ends in an ImportError.
"""

from __future__ import annotations

import importlib.util

#: Extra -> the importable modules it provides (what :func:`missing` looks for).
EXTRAS: dict[str, tuple[str, ...]] = {
    "plot": ("matplotlib",),
    "bench": ("pyarrow", "tqdm", "matplotlib"),
    "bench-dask": ("dask", "distributed"),
    "notebooks": ("nbclient", "nbformat", "ipykernel", "matplotlib"),
}

#: The extra's name as pip spells it (``bench-dask`` is part of ``bench``).
_PIP_NAME = {"bench-dask": "bench"}


class ExtraMissing(ImportError):
    """An optional dependency is not installed; the message says which extra installs it."""


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    found = []
    for module in EXTRAS[extra]:
        try:
            if importlib.util.find_spec(module) is None:
                found.append(module)
        except (ImportError, ValueError):
            found.append(module)
    return found


def require(extra: str, feature: str) -> None:
    """Raise :class:`ExtraMissing` unless every module of ``extra`` is installed.

    Parameters
    ----------
    extra
        A key of :data:`EXTRAS`.
    feature
        What needs it, for the message (``"--plot"``).
    """
    absent = missing(extra)
    if absent:
        name = _PIP_NAME.get(extra, extra)
        raise ExtraMissing(f"{feature} needs {', '.join(absent)}, which fairpack's '{name}' extra installs: "
                           f"pip install \"fairpack[{name}]\"")
