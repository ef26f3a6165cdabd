"""The JSON view of a result: the CLI contract (``fairpack solve --json``) and its way back (``fairpack check``).

:func:`result_json` writes the keys every result has (``status``, ``method``, ``backend``, ``objective``,
``bound``, ``gap``, ``build_s``, ``solve_s``, ``wall_s``, ``verified``), then the allocation view (``tenants``,
``nodes`` for hierarchies, ``utilisation``) and/or the schedule view (``makespan``, ``avg_jct``, ``jobs``,
``tasks``). :func:`allocation_from_json` and :func:`schedule_from_json` rebuild an answer from a saved
result, naming the field at fault when a name does not resolve against the instance.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from itertools import pairwise
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np

from fairpack.models.check.compare import number
from fairpack.models.check.hierarchy import demanding_nodes, node_shares
from fairpack.models.hierarchy import tree_of
from fairpack.models.locality import LEVEL_NAMES, NO_INPUT, global_machines, levels, task_blocks
from fairpack.models.metrics import dominant_shares, utilisation
from fairpack.models.result import (
    Allocation,
    Result,
    Schedule,
    UnitKind,
    job_utilities,
    schedule_objectives,
    unit_names,
)
from fairpack.models.saved_tables import (
    FLOAT,
    JOB_FIELDS,
    OTHER,
    Names,
    SavedJobs,
    SavedTasks,
    job_and_stage_names,
    job_entries,
    task_columns,
)
from fairpack.models.stages import stage_table
from fairpack.models.timeline import job_table
from fairpack.models.types import FloatArray, Instance, InstanceError, IntArray


def result_json(instance: Instance, result: Result, *, tables: bool = True, units_shown: int | None = None,
                jobs_shown: int | None = None, schedule_tables: bool = True) -> dict[str, Any]:  # fmt: skip
    """The CLI JSON contract: common keys, then the allocation view and/or the schedule view.

    ``tables=False`` leaves placeholders for ``tenants`` and ``nodes``, which :func:`result_json_text`
    writes as text in bulk; ``schedule_tables=False`` the same for ``jobs`` and ``tasks``
    (:mod:`fairpack.models.view_text`). ``jobs_shown`` (the table's ``--top``) keeps the first jobs' rows only
    and no task rows: what a table shows, not a million rows it does not."""
    data: dict[str, Any] = {
        "status": result.status,
        "method": result.method,
        "backend": result.backend,
        "objective": _finite(result.objective),
        "bound": _finite(result.bound),
        "gap": _finite(result.gap),
        "build_s": round(result.build_s, 6),
        "solve_s": round(result.solve_s, 6),
        "wall_s": round(result.wall_s, 6),
        "verified": result.verified,
        "solver_objective": _finite(result.solver_objective),
        "instance": instance.name,
    }
    if result.message:
        data["message"] = result.message
    if result.violations:
        data["violations"] = list(result.violations)
    if result.warnings:
        data["warnings"] = list(result.warnings)
    if result.allocation is not None:
        data.update(allocation_json(instance, result.allocation, tables=tables, units_shown=units_shown))
    if result.schedule is not None:
        data.update(schedule_json(instance, result.schedule, jobs_shown, tables=schedule_tables))
    data.update({key: _plain(value) for key, value in result.extra.items()})
    return data


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biu" or (value.dtype.kind == "f" and bool(np.isfinite(value).all())):
            return value.tolist()  # nothing to replace: one C call instead of one Python call per element
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def allocation_json(instance: Instance, allocation: Allocation, *, tables: bool = True,
                    units_shown: int | None = None) -> dict[str, Any]:  # fmt: skip
    """``tenants`` (tasks, dominant share, allocation, per-unit tasks) and cluster utilisation.

    Built from whole columns (``tolist`` once per array, one ``nonzero`` over the task matrix): a
    10,000-tenant result renders in a few hundredths of a second instead of a numpy call per tenant.
    ``tables=False``: placeholders for ``tenants`` and ``nodes`` (see :func:`result_json_text`).
    ``units_shown``: each tenant's ``per_server`` lists its first units only, with ``per_server_more`` the
    count of the rest (a table shows a few; ten million machines are not named for it).
    """
    used = utilisation(instance, allocation)
    if not tables:
        data: dict[str, Any] = {"unit_kind": allocation.kind, "integral": allocation.integral, "tenants": _TENANTS,
                                "utilisation": dict(zip(instance.resources, used.tolist(), strict=True))}  # fmt: skip
        if instance.hierarchy is not None:
            data["nodes"] = _NODES
        return data
    resources = instance.resources
    shares = dominant_shares(instance, allocation)
    totals = allocation.tenant_tasks
    amounts = (totals[:, None] * instance.demand).tolist()
    weighted = (shares / instance.weights).tolist()
    per_unit, more = _per_unit(allocation, _unit_namer(instance, allocation.kind), units_shown)
    columns = zip(instance.tenants, _json_counts(totals), shares.tolist(), weighted, amounts, per_unit, strict=True)
    tenants: dict[str, Any] = {
        tenant.name: {
            "tasks": tasks,
            "dominant_share": share,
            "weighted_share": weighted_share,
            "allocation": dict(zip(resources, amount, strict=True)),
            "per_server": per_server,
        }
        for tenant, tasks, share, weighted_share, amount, per_server in columns
    }
    if units_shown is not None:
        for entry, rest in zip(tenants.values(), more, strict=True):
            entry["per_server_more"] = rest
    data = {
        "unit_kind": allocation.kind,
        "integral": allocation.integral,
        "tenants": tenants,
        "utilisation": dict(zip(resources, used.tolist(), strict=True)),
    }
    if instance.hierarchy is not None:
        data["nodes"] = nodes_json(instance, allocation)
    return data


def _unit_namer(instance: Instance, kind: str) -> Callable[[IntArray], list[str]]:
    """The names of units by index (``Instance.machine_names`` order for machines), made only for those asked."""
    if kind != "machine":
        names = unit_names(instance, kind)  # type: ignore[arg-type]
        return lambda units: [names[u] for u in units.tolist()]
    counts = instance.counts
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])

    def name(units: IntArray) -> list[str]:
        server = np.searchsorted(np.cumsum(counts), units, side="right")
        return [instance.servers[c].name if counts[c] == 1 else f"{instance.servers[c].name}[{k}]"
                for c, k in zip(server.tolist(), (units - first[server]).tolist(), strict=True)]  # fmt: skip

    return name


def _positive_cells(allocation: Allocation) -> tuple[IntArray, IntArray, FloatArray]:
    """(tenant, unit, tasks) of every cell with tasks, row-major: grouped by tenant, units ascending."""
    rows, units, values = allocation.cells()
    keep = values > 0
    return rows[keep], units[keep], values[keep]


def _per_unit(allocation: Allocation, namer: Callable[[IntArray], list[str]],
              limit: int | None = None) -> tuple[list[dict[str, float | int]], list[int]]:  # fmt: skip
    """Per tenant (row), ``{unit name: tasks}`` over the units where it runs tasks, in unit order (its first
    ``limit`` units only, if given), and how many units each leaves out."""
    rows, units, values = _positive_cells(allocation)
    tenants = allocation.shape[0]
    bounds = np.searchsorted(rows, np.arange(tenants + 1))
    left_out = [0] * tenants
    if limit is not None:
        rank = np.arange(rows.size) - bounds[rows]
        left_out = np.maximum(np.diff(bounds) - limit, 0).tolist()
        keep = rank < limit
        rows, units, values = rows[keep], units[keep], values[keep]
        bounds = np.searchsorted(rows, np.arange(tenants + 1))
    counts = _json_counts(values)
    labels = namer(units)
    return [dict(zip(labels[a:b], counts[a:b], strict=True)) for a, b in pairwise(bounds.tolist())], left_out


def nodes_json(instance: Instance, allocation: Allocation) -> dict[str, Any]:
    """Every tree node: parent, weight, guarantee, dominant share and resource amounts (preorder)."""
    tree = tree_of(instance)
    consumption, share = node_shares(instance, allocation, tree=tree)
    guarantee = tree.guarantees(demanding_nodes(instance, allocation.kind, allocation.integral, tree=tree))
    amounts = (consumption * instance.total_capacity).tolist()
    names, resources = tree.names, instance.resources
    parent, depth, leaf = tree.parent.tolist(), tree.depth.tolist(), tree.is_leaf.tolist()
    weight, guarantees, shares = tree.weight.tolist(), guarantee.tolist(), share.tolist()
    return {
        names[index]: {
            "parent": names[parent[index]] if parent[index] >= 0 else None,
            "depth": depth[index],
            "leaf": leaf[index],
            "weight": weight[index],
            "guarantee": guarantees[index],
            "dominant_share": shares[index],
            "allocation": dict(zip(resources, amounts[index], strict=True)),
        }
        for index in tree.preorder()
    }


# ------------------------------------------------------------------------------------ the JSON text

# Placeholders for the tables written as text in bulk (NUL cannot be in a validated name): ``tenants`` and
# ``nodes`` by ``result_json_text``, ``jobs`` and ``tasks`` by ``models.view_text``.
_TENANTS, _NODES = "\x00fairpack:tenants\x00", "\x00fairpack:nodes\x00"
JOBS_MARK, TASKS_MARK = "\x00fairpack:jobs\x00", "\x00fairpack:tasks\x00"


def result_json_text(instance: Instance, result: Result) -> str:
    """``json.dumps(result_json(instance, result))``, the same text, several times faster on large answers.

    ``json.dumps`` spends most of a 10,000-leaf tree's answer (6 MB) on ``repr`` of 155,000 floats, a third
    of them distinct, and building the view before it costs as much again in dicts. Here the tenant and
    node tables are written from whole columns: every distinct float written once (told apart by its bits,
    so ``-0.0`` stays itself), and each table filled in by one ``%`` over a row template repeated; the rest
    of the view goes through ``json.dumps``. Where a table cannot be placed exactly, it is ``json.dumps``.
    """
    data = result_json(instance, result, tables=False)
    text = json.dumps(data)
    tables = _tables(instance, result.allocation) if result.allocation is not None else None
    if tables is None:
        return json.dumps(result_json(instance, result))
    for key, marker in (("tenants", _TENANTS), ("nodes", _NODES)):
        if data.get(key) != marker:  # not in this view, or a method's extra entry of that name replaced it
            continue
        placeholder = json.dumps(marker)
        if key not in tables or text.count(placeholder) != 1:
            return json.dumps(result_json(instance, result))
        text = text.replace(placeholder, tables[key], 1)
    return text


def _number_texts(values: FloatArray) -> list[str]:
    """``json.dumps`` of every float in ``values`` (``repr``, or ``NaN``/``Infinity``/``-Infinity``), each
    distinct value (by its bits) written once."""
    values = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    bits, inverse = np.unique(values.view(np.int64), return_inverse=True)
    distinct = bits.view(np.float64)
    texts = np.array(list(map(float.__repr__, distinct.tolist())), dtype=object)
    for position in np.flatnonzero(~np.isfinite(distinct)).tolist():
        texts[position] = json.dumps(float(distinct[position]))
    return texts[inverse.reshape(-1)].tolist()


def _keys(names: list[str]) -> list[str] | None:
    """Every name as a JSON key (``"name": ``), or None when two are the same (a dict would merge them)."""
    if len(set(names)) != len(names):
        return None
    return [encode_basestring_ascii(name) + ": " for name in names]  # json.dumps(name), without its overhead


def _fill(separators: list[str], columns: list[list[str]]) -> str:
    """``{c0 s0 c1 s1 ... ck sk c0 s0 ...}``: the columns interleaved with the constant texts after each one
    (``sk`` ends a row with ``}, ``), one ``join`` over a list filled column by column."""
    count, width = len(columns[0]), 2 * len(columns)
    if not count:
        return "{}"
    pieces: list[str] = [""] * (width * count)
    for position, (column, separator) in enumerate(zip(columns, separators, strict=True)):
        pieces[2 * position :: width] = column
        pieces[2 * position + 1 :: width] = [separator] * count
    return "{" + "".join(pieces)[:-2] + "}"  # the last row's separator ends in ", "


def _separators(fields: list[str], resources: list[str], after: str = "") -> list[str]:
    """The texts after each column of a row ``"name": {"f1": v, ..., "allocation": {"r1": a1, ...}<after>}``:
    the name, the fields before ``allocation``, each resource amount (``after`` may add more fields)."""
    keys = [encode_basestring_ascii(name) for name in [*fields, "allocation"]]
    amounts = [encode_basestring_ascii(name) for name in resources]
    texts = ["{" + keys[0] + ": "] + [", " + key + ": " for key in keys[1:-1]]
    texts += [", " + keys[-1] + ": {" + amounts[0] + ": "] + [", " + amount + ": " for amount in amounts[1:]]
    return [*texts, "}" + after + "}, "]


def _tables(instance: Instance, allocation: Allocation) -> dict[str, str] | None:
    """The JSON texts of ``tenants`` and (for a hierarchy) ``nodes``; None to leave them to ``json.dumps``."""
    tenants = _keys([tenant.name for tenant in instance.tenants])
    resources = list(instance.resources)
    rows, columns, cells = _positive_cells(allocation)
    per_server = _per_server_texts(instance, allocation.kind, rows, columns, cells, len(instance.tenants))
    if tenants is None or per_server is None or _keys(resources) is None:
        return None
    totals = allocation.tenant_tasks
    shares = dominant_shares(instance, allocation)
    floats: list[FloatArray] = [totals, shares, shares / instance.weights, totals[:, None] * instance.demand]
    if instance.hierarchy is not None:
        tree = tree_of(instance)
        order = np.array(tree.preorder(), dtype=np.int64)
        consumption, share = node_shares(instance, allocation, tree=tree)
        guarantee = tree.guarantees(demanding_nodes(instance, allocation.kind, allocation.integral, tree=tree))
        floats += [tree.weight[order], guarantee[order], share[order], (consumption * instance.total_capacity)[order]]
    # Every float of both tables written at once, then cut back into columns (a matrix column by column).
    texts = _number_texts(np.concatenate([np.asarray(block, dtype=np.float64).reshape(-1) for block in floats]))
    columns_of: list[list[str]] = []
    start = 0
    for block in floats:
        size = int(np.size(block))
        part = texts[start : start + size]
        width = block.shape[1] if np.ndim(block) == 2 else 1
        columns_of += [part[c::width] for c in range(width)] if width > 1 else [part]
        start += size
    width = len(resources)
    tasks, share_texts, weighted, *amounts = columns_of[: 3 + width]
    counts = [str(count) if type(count) is int else text for count, text in zip(_json_counts(totals), tasks,
                                                                                 strict=True)]  # fmt: skip
    separators = _separators(["tasks", "dominant_share", "weighted_share"], resources)
    separators[-1:] = ["}, " + encode_basestring_ascii("per_server") + ": ", "}, "]
    tables = {"tenants": _fill(separators, [tenants, counts, share_texts, weighted, *amounts, per_server])}
    if instance.hierarchy is not None:
        if len(set(tree.names)) != len(tree.names):
            return None
        quoted = [encode_basestring_ascii(name) for name in tree.names]
        names = [quoted[index] + ": " for index in order.tolist()]
        node_weight, node_guarantee, node_share, *node_amounts = columns_of[3 + width :]
        parents = [quoted[parent] if parent >= 0 else "null" for parent in tree.parent[order].tolist()]
        depth = list(map(str, tree.depth[order].tolist()))
        leaf = ["true" if value else "false" for value in tree.is_leaf[order].tolist()]
        separators = _separators(["parent", "depth", "leaf", "weight", "guarantee", "dominant_share"], resources)
        tables["nodes"] = _fill(separators, [names, parents, depth, leaf, node_weight, node_guarantee, node_share,
                                             *node_amounts])  # fmt: skip
    return tables


def _per_server_texts(instance: Instance, kind: str, rows: IntArray, units: IntArray, cells: FloatArray,
                      tenants: int) -> list[str] | None:  # fmt: skip
    """Per tenant, the JSON text of ``{"unit name": tasks, ...}`` over its cells (row-major ``rows``/``units``),
    or None when two units have the same name.

    A cluster of ten million machines has as many cells, so nothing here is made per cell in Python: counts are
    written once per distinct value, machine names ``name[k]`` are unique by construction when no server name
    ends in ``]`` (server names are), and a run of consecutive machines of one class holding the same count is
    one ``join`` over their numbers."""
    distinct, inverse = np.unique(cells, return_inverse=True)
    inverse = inverse.reshape(-1)
    texts = [str(count) if type(count) is int else json.dumps(count) for count in _json_counts(distinct)]
    bounds = np.searchsorted(rows, np.arange(tenants + 1)).tolist()
    if kind != "machine" or any(server.name.endswith("]") for server in instance.servers):
        keys = _keys(unit_names(instance, kind))  # type: ignore[arg-type]
        if keys is None:
            return None
        count_texts = np.array(texts, dtype=object)[inverse].tolist()
        labelled = [keys[u] + c for u, c in zip(units.tolist(), count_texts, strict=True)]
        return ["{" + ", ".join(labelled[a:b]) + "}" for a, b in pairwise(bounds)]
    counts = instance.counts
    ends = np.cumsum(counts)
    server = np.searchsorted(ends, units, side="right")
    number = units - (ends - counts)[server]
    # Runs: same tenant, same class, consecutive numbers, same count.
    starts = np.ones(len(units), dtype=bool)
    starts[1:] = ((rows[1:] != rows[:-1]) | (server[1:] != server[:-1]) | (number[1:] != number[:-1] + 1)
                  | (inverse[1:] != inverse[:-1]))  # fmt: skip
    first = np.flatnonzero(starts)
    if 2 * first.size > units.size:  # mostly runs of one cell (Best-Fit scatters): each machine used named once
        return _per_cell_texts(instance, rows, units, inverse, texts, bounds)
    last = np.append(first[1:], len(units))[: len(first)]  # no cells: no runs
    names = [encode_basestring_ascii(s.name) for s in instance.servers]
    pieces: list[str] = []
    for a, b in zip(first.tolist(), last.tolist(), strict=True):
        c, value = int(server[a]), texts[int(inverse[a])]
        if counts[c] == 1:
            pieces.append(f"{names[c]}: {value}")
            continue
        head = names[c][:-1] + "["
        between = f']": {value}, {head}'
        pieces.append(head + between.join(map(str, range(int(number[a]), int(number[a]) + b - a))) + f']": {value}')
    run_bounds = np.searchsorted(first, bounds).tolist()
    return ["{" + ", ".join(pieces[a:b]) + "}" for a, b in pairwise(run_bounds)]


def _per_cell_texts(instance: Instance, rows: IntArray, units: IntArray, inverse: IntArray, texts: list[str],
                    bounds: list[int]) -> list[str]:  # fmt: skip
    """``_per_server_texts`` cell by cell: the name of every machine some cell uses, made once (at most one per
    cell), and one string per cell."""
    used, where = np.unique(units, return_inverse=True)
    counts = instance.counts
    ends = np.cumsum(counts)
    server = np.searchsorted(ends, used, side="right").tolist()
    number = (used - (ends - counts)[server]).tolist()
    names = [s.name for s in instance.servers]
    keys = [encode_basestring_ascii(names[c] if counts[c] == 1 else f"{names[c]}[{k}]") + ": "
            for c, k in zip(server, number, strict=True)]  # fmt: skip
    count_texts = np.array(texts, dtype=object)[inverse].tolist()
    labelled = [keys[u] + c for u, c in zip(where.reshape(-1).tolist(), count_texts, strict=True)]
    return ["{" + ", ".join(labelled[a:b]) + "}" for a, b in pairwise(bounds)]


def _json_counts(values: FloatArray) -> list[float | int]:
    """Task counts as JSON numbers: a whole number (within 1e-9) as an int, anything else as a float."""
    rounded = np.round(values)  # half to even, as Python's round()
    with np.errstate(invalid="ignore"):
        whole = np.abs(values - rounded) < 1e-9  # False for nan and inf, which stay floats
    return [int(r) if w else v for v, r, w in zip(values.tolist(), rounded.tolist(), whole.tolist(), strict=True)]


def allocation_from_json(instance: Instance, data: dict[str, Any]) -> Allocation:
    """Rebuild an ``Allocation`` from a saved result, validating names against the instance (its ``unit_kind`` and
    ``integral`` as the file says)."""
    kind = data.get("unit_kind", "class")
    if kind not in ("class", "machine", "pool"):
        raise InstanceError(f"unknown unit kind {kind!r}", "unit_kind")
    tenants = data.get("tenants") or {}
    if not isinstance(tenants, Mapping):
        raise InstanceError("must be an object: tenant -> its tasks", "tenants")
    return allocation_from_tenants(instance, tenants, kind, bool(data.get("integral", False)))


def allocation_from_tenants(instance: Instance, tenants: Mapping[str, Any], kind: UnitKind,
                            integral: bool) -> Allocation:  # fmt: skip
    """Tasks per tenant and unit from a saved result's ``tenants.*.per_server`` (names resolved against the
    instance), as the allocation's cells: per machine the table is mostly zeros (a key names one tenant and one
    unit, so no pair repeats).

    Raises
    ------
    InstanceError
        An unknown tenant or unit, a ``per_server`` that is not an object, or a count that is not a number.
    """
    names = unit_names(instance, kind)
    index = {name: position for position, name in enumerate(names)}
    tenant_index = {t.name: position for position, t in enumerate(instance.tenants)}
    rows: list[int] = []
    units: list[int] = []
    counts: list[float] = []
    for tenant_name, entry in tenants.items():
        if tenant_name not in tenant_index:
            raise InstanceError(f"unknown tenant {tenant_name!r}", f"tenants.{tenant_name}")
        per_server = entry.get("per_server") if isinstance(entry, Mapping) else None
        if not isinstance(per_server, Mapping):
            raise InstanceError("must be an object: unit -> tasks", f"tenants.{tenant_name}.per_server")
        for unit, count in per_server.items():
            if unit not in index:
                raise InstanceError(f"unknown server {unit!r}", f"tenants.{tenant_name}.per_server.{unit}")
            if number(count) is None:
                raise InstanceError(f"must be a number, got {count!r}", f"tenants.{tenant_name}.per_server.{unit}")
            rows.append(tenant_index[tenant_name])
            units.append(index[unit])
            counts.append(float(count))
    return Allocation.from_cells((len(instance.tenants), len(names)), rows, units, counts, kind=kind,
                                 integral=integral)  # fmt: skip


def job_columns(instance: Instance, schedule: Schedule) -> dict[str, FloatArray]:
    """Every ``jobs`` field (:data:`JOB_FIELDS`) as a column over the instance's jobs; a non-finite value is
    written null (``fair_completion`` is nan past the schedule's ``fair_completion``, or without one)."""
    table = job_table(instance, schedule)
    completion = table["completion"]
    fair = np.full(completion.size, np.nan)
    if schedule.fair_completion is not None:
        known = min(completion.size, schedule.fair_completion.size)
        fair[:known] = schedule.fair_completion[:known]
    columns = {key: table[key] for key in ("arrival", "start", "completion", "queueing_delay", "jct", "slowdown")}
    columns.update(fair_completion=fair, deadline=stage_table(instance).deadline,
                   utility=job_utilities(instance, completion))  # fmt: skip
    return {key: np.asarray(columns[key], dtype=np.float64) for key in JOB_FIELDS}


def schedule_json(instance: Instance, schedule: Schedule, jobs_shown: int | None = None, *, tables: bool = True,
                  columns: dict[str, FloatArray] | None = None) -> dict[str, Any]:  # fmt: skip
    """``makespan``, ``avg_jct``, ``jobs: {name: {completion, fair_completion}}`` and ``tasks``.

    With a per-server placement every task also names its ``server`` (class) and ``machine`` (number
    within the class). With ``jobs_shown``, ``jobs`` holds the first ``jobs_shown`` jobs and ``tasks`` is left
    out (``task_rows`` counts them). ``tables=False``: placeholders for ``jobs`` and ``tasks``, which
    :mod:`fairpack.models.view_text` writes as text. ``columns``: :func:`job_columns` of the schedule, if made.
    """
    columns = job_columns(instance, schedule) if columns is None else columns
    completion = columns["completion"]
    numbers = schedule_objectives(instance, completion)
    utility = columns["utility"]
    shown = len(instance.jobs) if jobs_shown is None else min(max(jobs_shown, 0), len(instance.jobs))
    head = {"makespan": _finite(numbers["makespan"]), "avg_jct": _finite(numbers["avg_jct"]),
            "utility": _finite(float(utility.sum()))}  # fmt: skip
    if not tables and jobs_shown is None:
        return _schedule_numbers(instance, {**head, "jobs": JOBS_MARK, "tasks": TASKS_MARK}, completion)
    names, stage_names = job_and_stage_names(instance)
    rows = zip(*([v if math.isfinite(v) else None for v in columns[key][:shown].tolist()] for key in JOB_FIELDS),
               strict=True)  # fmt: skip
    jobs = {name: dict(zip(JOB_FIELDS, row, strict=True)) for name, row in zip(names[:shown], rows, strict=True)}
    if jobs_shown is not None:
        return _schedule_numbers(instance, {**head, "jobs": jobs, "task_rows": int(schedule.job.size)}, completion)

    count = len(names)

    def stage_name(job: int, stage: int) -> str | int:
        if 0 <= job < count and 0 <= stage < len(stage_names[job]):
            return stage_names[job][stage]
        return stage

    # Names looked up in lists made once: a trace's jobs are columns, and a Job made per task cost most of the view.
    tasks = [
        {
            "job": names[j] if 0 <= j < count else j,
            "stage": stage_name(j, s),
            "index": i,
            "start": _plain(b),
            "end": _plain(e),
        }
        for j, s, i, b, e in zip(
            schedule.job.tolist(), schedule.stage.tolist(), schedule.index.tolist(),
            schedule.start.tolist(), schedule.end.tolist(), strict=True,
        )
    ]  # fmt: skip
    if schedule.server is not None and schedule.machine is not None:
        names = [server.name for server in instance.servers]
        for row, server, machine in zip(tasks, schedule.server.tolist(), schedule.machine.tolist(), strict=True):
            # -1 is a task left unplaced: null, which is how a saved result says so (the checker reports it).
            row["server"] = names[server] if 0 <= server < len(names) else None if server == -1 else server
            row["machine"] = machine
        if instance.data is not None:
            for row, value in zip(tasks, task_levels(instance, schedule).tolist(), strict=True):
                if value != NO_INPUT:
                    row["local"] = LEVEL_NAMES[value]
    if schedule.option is not None:
        for row, option in zip(tasks, schedule.option.tolist(), strict=True):
            if option >= 0:
                row["option"] = option
    return _schedule_numbers(instance, {**head, "jobs": jobs, "tasks": tasks}, completion)


def _schedule_numbers(instance: Instance, view: dict[str, Any], completion: FloatArray) -> dict[str, Any]:
    """``view`` with ``slo_attainment`` when some job has a deadline."""
    deadlines = stage_table(instance).deadline
    if np.isfinite(deadlines).any():
        met = completion <= deadlines * (1 + 1e-9)
        view["slo_attainment"] = float(met[np.isfinite(deadlines)].mean())
    return view


def task_levels(instance: Instance, schedule: Schedule) -> IntArray:
    """Every task's locality level (``LEVEL_NAMES``; ``NO_INPUT`` where it reads no input block or is not
    placed): the view's ``local``."""
    assert schedule.server is not None and schedule.machine is not None
    blocks, offset = task_blocks(instance)
    counts = np.array([len(job.stages) for job in instance.jobs], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(counts)])[:-1]
    job = schedule.job
    real = (job >= 0) & (job < counts.size)
    safe_job = np.where(real, job, 0)
    real &= (schedule.stage >= 0) & (schedule.stage < counts[safe_job])
    g = np.where(real, first[safe_job] + np.where(real, schedule.stage, 0), 0)
    sizes = np.diff(offset)
    real &= (schedule.index >= 0) & (schedule.index < sizes[g])
    block = np.where(real, blocks[offset[g] + np.where(real, schedule.index, 0)], NO_INPUT)
    return levels(instance, block, global_machines(instance, schedule.server, schedule.machine))


def schedule_from_json(instance: Instance, data: dict[str, Any], names: Names | None = None) -> Schedule:
    """Rebuild a ``Schedule`` from a saved result (``tasks`` and ``jobs.*.fair_completion``).

    Job, stage and server names are resolved against the instance; unknown names raise ``InstanceError``.
    When any task names a ``server``, the schedule carries a placement and tasks without one are marked
    unplaced (``-1``). Duplicates, missing tasks, unplaced tasks, machine numbers out of range and
    infeasible times are left for :func:`fairpack.models.check.verify_schedule`.

    Read column by column (``models.saved_tables``; the tables may already be columns, as ``read_result``
    gives them); where some row is not as the columns take it, row by row, which names the field at fault.
    """
    rows = data.get("tasks")
    if not isinstance(rows, list | SavedTasks):
        raise InstanceError("a schedule result needs a 'tasks' list", "tasks")
    names = names or Names.of(instance)
    tasks = rows if isinstance(rows, SavedTasks) else task_columns(rows, names)
    saved_jobs = data.get("jobs") or {}
    jobs = saved_jobs if isinstance(saved_jobs, SavedJobs) else job_entries(saved_jobs, names) \
        if isinstance(saved_jobs, dict) else job_entries({}, names)  # fmt: skip
    if tasks is None:
        return _schedule_from_rows(instance, data, names)
    fair = np.full(len(instance.jobs), np.inf)
    column = JOB_FIELDS.index("fair_completion")
    known = jobs.kind[:, column] == FLOAT if jobs is not None else None  # null or absent: T_k unknown (inf)
    if jobs is None or known is None or (jobs.kind[:, column] == OTHER).any() or \
            np.isnan(jobs.value[known, column]).any():  # fmt: skip
        # A name that is no job, or a value float() must read (or fail on): entry by entry.
        entries = saved_jobs.items() if isinstance(saved_jobs, dict) else () if jobs is None else \
            zip([job_and_stage_names(instance)[0][k] for k in jobs.job.tolist()],
                map(jobs.entry, range(len(jobs))), strict=True)  # fmt: skip
        _fair_from_entries(fair, entries, names)
    else:
        fair[jobs.job[known]] = jobs.value[known, column]
    placed = tasks.placed
    return Schedule(tasks.job, tasks.stage, tasks.index, tasks.start, tasks.end,
                    fair if np.isfinite(fair).any() else None,
                    server=tasks.server if placed else None, machine=tasks.machine if placed else None,
                    option=tasks.option if (tasks.option >= 0).any() else None)  # fmt: skip


def _schedule_from_rows(instance: Instance, data: dict[str, Any], names: Names) -> Schedule:
    """:func:`schedule_from_json` row by row: the first row at fault raises, naming its field."""
    job_index, stage_index, server_index = names.jobs, names.stages, names.servers
    rows = data.get("tasks")
    assert isinstance(rows, list)  # read_result gives columns only where every row resolves
    columns: dict[str, list[Any]] = {"job": [], "stage": [], "index": [], "start": [], "end": []}
    servers: list[int] = []
    machines: list[int] = []
    options: list[int] = []
    for position, row in enumerate(rows):
        field_name = f"tasks[{position}]"
        if not isinstance(row, dict):
            raise InstanceError("each task must be an object", field_name)
        missing = [key for key in columns if key not in row]
        if missing:
            raise InstanceError(f"missing {missing}", field_name)
        if row["job"] not in job_index:
            raise InstanceError(f"unknown job {row['job']!r}", f"{field_name}.job")
        job = job_index[row["job"]]
        if str(row["stage"]) not in stage_index[job]:
            raise InstanceError(f"job {row['job']!r} has no stage {row['stage']!r}", f"{field_name}.stage")
        try:
            values = [int(row["index"]), float(row["start"]), float(row["end"])]
        except (TypeError, ValueError):
            raise InstanceError("index, start and end must be numbers", field_name) from None
        columns["job"].append(job)
        columns["stage"].append(stage_index[job][str(row["stage"])])
        for key, value in zip(("index", "start", "end"), values, strict=True):
            columns[key].append(value)
        server, machine, option = _placement_of(row, field_name, server_index)
        servers.append(server)
        machines.append(machine)
        options.append(option)
    fair = np.full(len(instance.jobs), np.inf)
    saved_jobs = data.get("jobs") or {}
    _fair_from_entries(fair, saved_jobs.items() if isinstance(saved_jobs, dict) else (), names)
    placed = max(servers, default=-1) >= 0
    return Schedule(
        np.array(columns["job"], dtype=np.int64),
        np.array(columns["stage"], dtype=np.int64),
        np.array(columns["index"], dtype=np.int64),
        np.array(columns["start"], dtype=np.float64),
        np.array(columns["end"], dtype=np.float64),
        fair if np.isfinite(fair).any() else None,
        server=np.array(servers, dtype=np.int64) if placed else None,
        machine=np.array(machines, dtype=np.int64) if placed else None,
        option=np.array(options, dtype=np.int64) if max(options, default=-1) >= 0 else None,
    )


def _fair_from_entries(fair: FloatArray, entries: Iterable[tuple[str, Any]], names: Names) -> None:
    """``fair`` with each saved ``jobs.*.fair_completion`` read as ``float`` (an unknown job raises)."""
    for name, entry in entries:
        if name not in names.jobs:
            raise InstanceError(f"unknown job {name!r}", f"jobs.{name}")
        saved = entry.get("fair_completion") if isinstance(entry, dict) else None
        if saved is not None:
            fair[names.jobs[name]] = float(saved)


def _placement_of(row: dict[str, Any], field_name: str, server_index: dict[str, int]) -> tuple[int, int, int]:
    """A saved task's server class, machine number and option (``-1`` each when absent)."""
    server, machine = row.get("server"), row.get("machine", -1)
    if server is None:  # unplaced (the checker reports it if the schedule has a placement at all)
        server, machine = -1, -1
    elif not isinstance(server, str) or server not in server_index:
        raise InstanceError(f"unknown server {server!r}", f"{field_name}.server")
    elif not isinstance(machine, int) or isinstance(machine, bool):
        raise InstanceError(f"machine must be a whole number, got {machine!r}", f"{field_name}.machine")
    else:
        server = server_index[server]
    option = row.get("option", -1)
    if isinstance(option, bool) or not isinstance(option, int):
        raise InstanceError(f"option must be a whole number, got {option!r}", f"{field_name}.option")
    return server, machine, option
