"""Answers as pandas DataFrames: a result's tenants, hierarchy nodes, jobs or tasks, one row each.

The rows are the CLI's JSON view (:func:`fairpack.models.view.result_json`) laid flat, so a frame and
``--json`` never disagree: ``tenants`` (tasks, dominant and weighted share, then one column per resource
of the allocation), ``nodes`` (hierarchy nodes: parent, depth, weight, guarantee, dominant share, then the
resources), ``jobs`` (completion, fair completion time ``T_k``, deadline, utility; simulations add
arrival, start and queueing delay) and ``tasks`` (job, stage, index, start, end, and server, machine,
option and locality where known).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fairpack.models.types import Instance
from fairpack.models.view import result_json

if TYPE_CHECKING:
    import pandas as pd

    from fairpack.models.result import Result

#: What :func:`result_frame` can lay out, in the order a default is looked for.
TABLES = ("tenants", "nodes", "jobs", "tasks")


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pandas is a dependency; a broken environment still gets a clear word
        raise ImportError("Result.to_frame needs pandas: pip install pandas") from None
    return pandas


def _flat(row: dict[str, Any], nested: tuple[str, ...]) -> dict[str, Any]:
    """``row`` with each mapping under ``nested`` spread into columns of its own (``cpu``, ``mem``)."""
    out = {key: value for key, value in row.items() if key not in nested}
    for key in nested:
        value = row.get(key)
        if isinstance(value, dict):
            out.update(value)
    return out


def result_frame(instance: Instance, result: Result, table: str | None = None) -> pd.DataFrame:
    """One of ``result``'s tables as a DataFrame (see the module docstring); ``table=None`` picks ``nodes``
    for a hierarchy, ``tenants`` for other allocations and ``jobs`` for schedules."""
    pd = _pandas()
    view = result_json(instance, result)
    available = [name for name in TABLES if isinstance(view.get(name), dict | list)]
    if table is None:
        if not available:
            raise ValueError(f"this result ({result.status}) has no table: {result.message or 'no answer'}")
        table = "nodes" if "nodes" in available else available[0]
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; choose from {', '.join(TABLES)}")
    if table not in available:
        raise ValueError(f"this result has no {table} (it has {', '.join(available) or 'none'})")
    rows = view[table]
    if table == "tasks":
        return pd.DataFrame(rows)
    key = {"tenants": "tenant", "nodes": "node", "jobs": "job"}[table]
    records = [{key: name, **_flat(row, ("allocation",))} for name, row in rows.items()]
    frame = pd.DataFrame(records)
    if table == "tenants" and "per_server" in frame.columns:
        frame = frame.drop(columns=["per_server"])
    return frame.set_index(key)
