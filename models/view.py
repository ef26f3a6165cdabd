"""The JSON view of a result: the CLI contract (``fairpack solve --json``) and its way back (``fairpack check``).

:func:`result_json` writes the keys every result has (``status``, ``method``, ``backend``, ``objective``,
``bound``, ``gap``, ``build_s``, ``solve_s``, ``wall_s``, ``verified``), then the allocation view (``tenants``,
``nodes`` for hierarchies, ``utilisation``) and/or the schedule view (``makespan``, ``avg_jct``, ``jobs``,
``tasks``). :func:`allocation_from_json` and :func:`schedule_from_json` rebuild an answer from a saved
result, naming the field at fault when a name does not resolve against the instance.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from models.check.hierarchy import demanding_nodes, node_shares
from models.hierarchy import tree_of
from models.locality import LEVEL_NAMES, NO_INPUT, global_machines, levels, task_blocks
from models.metrics import dominant_shares, utilisation
from models.result import (
    Allocation,
    Result,
    Schedule,
    job_completion,
    job_utilities,
    schedule_objectives,
    unit_names,
)
from models.types import Instance, InstanceError


def result_json(instance: Instance, result: Result) -> dict[str, Any]:
    """The CLI JSON contract: common keys, then the allocation view and/or the schedule view."""
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
        data.update(allocation_json(instance, result.allocation))
    if result.schedule is not None:
        data.update(schedule_json(instance, result.schedule))
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
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def allocation_json(instance: Instance, allocation: Allocation) -> dict[str, Any]:
    """``tenants`` (tasks, dominant share, allocation, per-unit tasks) and cluster utilisation."""
    names = allocation.unit_names(instance)
    shares = dominant_shares(instance, allocation)
    totals = allocation.tenant_tasks
    tenants: dict[str, Any] = {}
    for i, tenant in enumerate(instance.tenants):
        amounts = totals[i] * instance.demand[i]
        row = allocation.tasks[i]
        tenants[tenant.name] = {
            "tasks": _number(totals[i]),
            "dominant_share": float(shares[i]),
            "weighted_share": float(shares[i] / tenant.weight),
            "allocation": {r: float(a) for r, a in zip(instance.resources, amounts, strict=True)},
            "per_server": {names[u]: _number(row[u]) for u in np.flatnonzero(row > 0)},
        }
    used = utilisation(instance, allocation)
    data: dict[str, Any] = {
        "unit_kind": allocation.kind,
        "integral": allocation.integral,
        "tenants": tenants,
        "utilisation": {r: float(u) for r, u in zip(instance.resources, used, strict=True)},
    }
    if instance.hierarchy is not None:
        data["nodes"] = nodes_json(instance, allocation)
    return data


def nodes_json(instance: Instance, allocation: Allocation) -> dict[str, Any]:
    """Every tree node: parent, weight, guarantee, dominant share and resource amounts (preorder)."""
    tree = tree_of(instance)
    consumption, share = node_shares(instance, allocation, tree=tree)
    guarantee = tree.guarantees(demanding_nodes(instance, allocation.kind, allocation.integral, tree=tree))
    amounts = consumption * instance.total_capacity
    nodes: dict[str, Any] = {}
    for index in tree.preorder():
        parent = int(tree.parent[index])
        nodes[tree.names[index]] = {
            "parent": tree.names[parent] if parent >= 0 else None,
            "depth": int(tree.depth[index]),
            "leaf": bool(tree.is_leaf[index]),
            "weight": float(tree.weight[index]),
            "guarantee": float(guarantee[index]),
            "dominant_share": float(share[index]),
            "allocation": {r: float(a) for r, a in zip(instance.resources, amounts[index], strict=True)},
        }
    return nodes


def _number(value: float) -> float | int:
    rounded = round(float(value))
    return int(rounded) if abs(value - rounded) < 1e-9 else float(value)


def allocation_from_json(instance: Instance, data: dict[str, Any]) -> Allocation:
    """Rebuild an ``Allocation`` from a saved result, validating names against the instance."""
    kind = data.get("unit_kind", "class")
    if kind not in ("class", "machine", "pool"):
        raise InstanceError(f"unknown unit kind {kind!r}", "unit_kind")
    names = unit_names(instance, kind)
    index = {name: position for position, name in enumerate(names)}
    tenant_index = {t.name: position for position, t in enumerate(instance.tenants)}
    tasks = np.zeros((len(instance.tenants), len(names)))
    for tenant_name, entry in (data.get("tenants") or {}).items():
        if tenant_name not in tenant_index:
            raise InstanceError(f"unknown tenant {tenant_name!r}", f"tenants.{tenant_name}")
        for unit, count in (entry.get("per_server") or {}).items():
            if unit not in index:
                raise InstanceError(f"unknown server {unit!r}", f"tenants.{tenant_name}.per_server.{unit}")
            tasks[tenant_index[tenant_name], index[unit]] = float(count)
    return Allocation(tasks, kind, bool(data.get("integral", False)))


def schedule_json(instance: Instance, schedule: Schedule) -> dict[str, Any]:
    """``makespan``, ``avg_jct``, ``jobs: {name: {completion, fair_completion}}`` and ``tasks``.

    With a per-server placement every task also names its ``server`` (class) and ``machine`` (number
    within the class).
    """
    completion = job_completion(instance, schedule)
    numbers = schedule_objectives(instance, completion)
    utility = job_utilities(instance, completion)
    fair = schedule.fair_completion
    jobs = {
        job.name: {
            "completion": float(completion[k]),
            "fair_completion": None if fair is None or k >= fair.size else _finite(float(fair[k])),
            "deadline": _finite(job.deadline),
            "utility": float(utility[k]),
        }
        for k, job in enumerate(instance.jobs)
    }

    def stage_name(job: int, stage: int) -> str | int:
        if 0 <= job < len(instance.jobs) and 0 <= stage < len(instance.jobs[job].stages):
            return instance.jobs[job].stages[stage].name
        return stage

    tasks = [
        {
            "job": instance.jobs[j].name if 0 <= j < len(instance.jobs) else j,
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
            row["server"] = names[server] if 0 <= server < len(names) else server
            row["machine"] = machine
        if instance.data is not None:
            _locality_column(instance, schedule, tasks)
    if schedule.option is not None:
        for row, option in zip(tasks, schedule.option.tolist(), strict=True):
            if option >= 0:
                row["option"] = option
    view = {"makespan": numbers["makespan"], "avg_jct": numbers["avg_jct"], "utility": float(utility.sum()),
            "jobs": jobs, "tasks": tasks}  # fmt: skip
    deadlines = np.array([job.deadline for job in instance.jobs])
    if np.isfinite(deadlines).any():
        met = completion <= deadlines * (1 + 1e-9)
        view["slo_attainment"] = float(met[np.isfinite(deadlines)].mean())
    return view


def _locality_column(instance: Instance, schedule: Schedule, tasks: list[dict[str, Any]]) -> None:
    """``local``: node, rack or remote for every placed task that reads an input block."""
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
    level = levels(instance, block, global_machines(instance, schedule.server, schedule.machine))
    for row, value in zip(tasks, level.tolist(), strict=True):
        if value != NO_INPUT:
            row["local"] = LEVEL_NAMES[value]


def schedule_from_json(instance: Instance, data: dict[str, Any]) -> Schedule:
    """Rebuild a ``Schedule`` from a saved result (``tasks`` and ``jobs.*.fair_completion``).

    Job, stage and server names are resolved against the instance; unknown names raise ``InstanceError``.
    When any task names a ``server``, the schedule carries a placement and tasks without one are marked
    unplaced (``-1``). Duplicates, missing tasks, unplaced tasks, machine numbers out of range and
    infeasible times are left for :func:`models.check.verify_schedule`.
    """
    job_index = {job.name: k for k, job in enumerate(instance.jobs)}
    stage_index = [{stage.name: s for s, stage in enumerate(job.stages)} for job in instance.jobs]
    server_index = {server.name: c for c, server in enumerate(instance.servers)}
    rows = data.get("tasks")
    if not isinstance(rows, list):
        raise InstanceError("a schedule result needs a 'tasks' list", "tasks")
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
    for name, entry in saved_jobs.items() if isinstance(saved_jobs, dict) else ():
        if name not in job_index:
            raise InstanceError(f"unknown job {name!r}", f"jobs.{name}")
        saved = entry.get("fair_completion") if isinstance(entry, dict) else None
        if saved is not None:
            fair[job_index[name]] = float(saved)
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
