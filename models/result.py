"""One result type for exact and heuristic methods alike, and its JSON form (the CLI contract)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from models.types import Instance, InstanceError

FloatArray = npt.NDArray[np.float64]
Status = Literal["optimal", "feasible", "infeasible", "unbounded", "time_limit", "error"]
UnitKind = Literal["class", "machine", "pool"]


@dataclass(frozen=True)
class Allocation:
    """Tasks of every tenant on every placement unit.

    A unit is a whole server class (divisible tasks: identical machines pool exactly), a single machine
    (indivisible tasks must fit on one machine) or the whole cluster as one pool (the DRF setting).
    """

    tasks: FloatArray  # shape (tenants, units)
    kind: UnitKind
    integral: bool = False

    def __post_init__(self) -> None:
        array = np.array(self.tasks, dtype=np.float64)
        array.setflags(write=False)
        object.__setattr__(self, "tasks", array)

    def unit_names(self, instance: Instance) -> list[str]:
        return unit_names(instance, self.kind)

    def unit_capacity(self, instance: Instance) -> FloatArray:
        return unit_capacity(instance, self.kind)

    @property
    def tenant_tasks(self) -> FloatArray:
        return np.asarray(self.tasks.sum(axis=1))


def unit_names(instance: Instance, kind: UnitKind) -> list[str]:
    if kind == "pool":
        return ["pool"]
    if kind == "class":
        return [s.name for s in instance.servers]
    return instance.machine_names()


def unit_capacity(instance: Instance, kind: UnitKind) -> FloatArray:
    """Capacity of every unit, derived from the instance alone."""
    if kind == "pool":
        return instance.total_capacity[None, :]
    if kind == "class":
        return instance.capacity * instance.counts[:, None]
    return instance.capacity[instance.machine_class()]


IntArray = npt.NDArray[np.int64]
#: Objectives of schedule results (``SolveOptions.objective`` / ``--objective``).
SCHEDULE_OBJECTIVES = ("makespan", "avg-jct", "mix")


@dataclass(frozen=True)
class Schedule:
    """Start and end time of every task of every DAG job, one entry per task, and where it ran.

    Attributes
    ----------
    job, stage, index : ndarray of int64, shape (tasks,)
        Job index into ``Instance.jobs``, stage index into that job's ``stages`` and task number
        ``0 .. stage.tasks - 1`` within the stage.
    start, end : ndarray of float64, shape (tasks,)
        Absolute times in the instance's time unit (the same unit as durations and releases).
    fair_completion : ndarray of float64, shape (jobs,), optional
        Deadline ``T_k`` each job had to meet (its fair completion time); ``inf`` where a job has none,
        ``None`` when no job has one.
    server, machine : ndarray of int64, shape (tasks,), optional
        Per-server placement (``placement='servers'``): the server class index into ``Instance.servers``
        and the machine number ``0 .. count - 1`` within that class of every task; ``-1`` marks a task
        left unplaced. ``None`` (both) for a schedule on the pooled cluster.

    Only shapes are validated here; whether the schedule is feasible is for
    :func:`models.check.verify_schedule` to decide from the instance.
    """

    job: IntArray
    stage: IntArray
    index: IntArray
    start: FloatArray
    end: FloatArray
    fair_completion: FloatArray | None = None
    server: IntArray | None = None
    machine: IntArray | None = None

    def __post_init__(self) -> None:
        if (self.server is None) != (self.machine is None):
            raise InstanceError("server and machine go together", "schedule.server")
        size = None
        placed = () if self.server is None else (("server", np.int64), ("machine", np.int64))
        for name, kind in (("job", np.int64), ("stage", np.int64), ("index", np.int64),
                           ("start", np.float64), ("end", np.float64), *placed):  # fmt: skip
            raw = np.asarray(getattr(self, name))
            if raw.ndim != 1:
                raise InstanceError(f"must be one-dimensional, got shape {raw.shape}", f"schedule.{name}")
            fractional = raw.size and not np.issubdtype(raw.dtype, np.integer)
            if kind is np.int64 and fractional and not (np.all(np.isfinite(raw)) and np.all(raw == np.round(raw))):
                raise InstanceError("must hold whole numbers", f"schedule.{name}")
            array = raw.astype(kind)
            if size is None:
                size = array.size
            elif array.size != size:
                raise InstanceError(f"has {array.size} entries, schedule.job has {size}", f"schedule.{name}")
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        if self.fair_completion is not None:
            fair = np.array(self.fair_completion, dtype=np.float64).reshape(-1)
            fair.setflags(write=False)
            object.__setattr__(self, "fair_completion", fair)

    def __len__(self) -> int:
        return int(self.job.size)


def job_completion(instance: Instance, schedule: Schedule) -> FloatArray:
    """Completion time ``C_k`` of every job: the latest end of its tasks (its release if none is listed).

    Rows with a job index out of range or a non-finite end are ignored (the checker reports them).
    """
    completion = np.array([job.release for job in instance.jobs], dtype=np.float64)
    valid = (schedule.job >= 0) & (schedule.job < len(instance.jobs)) & np.isfinite(schedule.end)
    np.maximum.at(completion, schedule.job[valid], schedule.end[valid])
    return completion


def schedule_objectives(instance: Instance, completion: FloatArray) -> dict[str, float]:
    """Makespan and weighted average JCT from job completion times.

    ``makespan = max_k C_k`` (absolute time, measured from 0) and
    ``avg_jct = sum_k w_k (C_k - r_k) / sum_k w_k``: the weighted mean over jobs of completion minus release.
    """
    if not instance.jobs:
        return {"makespan": 0.0, "avg_jct": 0.0}
    weights = np.array([job.weight for job in instance.jobs], dtype=np.float64)
    releases = np.array([job.release for job in instance.jobs], dtype=np.float64)
    return {
        "makespan": float(completion.max()),
        "avg_jct": float(weights @ (completion - releases) / weights.sum()),
    }


def objective_value(makespan: float, avg_jct: float, objective: str, alpha: float = 0.5) -> float:
    """A schedule objective: ``makespan``, ``avg-jct`` or ``mix`` = alpha * avg JCT + (1 - alpha) * makespan."""
    if objective == "makespan":
        return makespan
    if objective == "avg-jct":
        return avg_jct
    if objective == "mix":
        return alpha * avg_jct + (1 - alpha) * makespan
    raise ValueError(f"unknown objective {objective!r}; choose from {', '.join(SCHEDULE_OBJECTIVES)}")


def schedule_json(instance: Instance, schedule: Schedule) -> dict[str, Any]:
    """``makespan``, ``avg_jct``, ``jobs: {name: {completion, fair_completion}}`` and ``tasks``.

    With a per-server placement every task also names its ``server`` (class) and ``machine`` (number
    within the class).
    """
    completion = job_completion(instance, schedule)
    numbers = schedule_objectives(instance, completion)
    fair = schedule.fair_completion
    jobs = {
        job.name: {
            "completion": float(completion[k]),
            "fair_completion": None if fair is None or k >= fair.size else _finite(float(fair[k])),
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
    return {"makespan": numbers["makespan"], "avg_jct": numbers["avg_jct"], "jobs": jobs, "tasks": tasks}


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
        server, machine = row.get("server"), row.get("machine", -1)
        if server is None:  # unplaced (the checker reports it if the schedule has a placement at all)
            server, machine = -1, -1
        elif not isinstance(server, str) or server not in server_index:
            raise InstanceError(f"unknown server {server!r}", f"{field_name}.server")
        elif not isinstance(machine, int) or isinstance(machine, bool):
            raise InstanceError(f"machine must be a whole number, got {machine!r}", f"{field_name}.machine")
        else:
            server = server_index[server]
        servers.append(server)
        machines.append(machine)
    fair = np.full(len(instance.jobs), np.inf)
    saved_jobs = data.get("jobs") or {}
    for name, entry in saved_jobs.items() if isinstance(saved_jobs, dict) else ():
        if name not in job_index:
            raise InstanceError(f"unknown job {name!r}", f"jobs.{name}")
        saved = entry.get("fair_completion") if isinstance(entry, dict) else None
        if saved is not None:
            fair[job_index[name]] = float(saved)
    return Schedule(
        np.array(columns["job"], dtype=np.int64),
        np.array(columns["stage"], dtype=np.int64),
        np.array(columns["index"], dtype=np.int64),
        np.array(columns["start"], dtype=np.float64),
        np.array(columns["end"], dtype=np.float64),
        fair if np.isfinite(fair).any() else None,
        *((np.array(servers, dtype=np.int64), np.array(machines, dtype=np.int64)) if max(servers, default=-1) >= 0
          else (None, None)),
    )  # fmt: skip


@dataclass
class Result:
    """What every method returns; ``verified`` and the recomputed numbers come from ``models.check``."""

    status: Status
    method: str
    backend: str
    objective: float | None = None  # recomputed from the solution, never read back from a solver
    bound: float | None = None
    gap: float | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    verified: bool = False
    allocation: Allocation | None = None
    solver_objective: float | None = None
    message: str = ""
    violations: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    schedule: Schedule | None = None  # DAG-job methods: task start/end times

    def to_json(self, instance: Instance) -> dict[str, Any]:
        """The CLI JSON contract: common keys, then the allocation view and/or the schedule view."""
        data: dict[str, Any] = {
            "status": self.status,
            "method": self.method,
            "backend": self.backend,
            "objective": _finite(self.objective),
            "bound": _finite(self.bound),
            "gap": _finite(self.gap),
            "build_s": round(self.build_s, 6),
            "solve_s": round(self.solve_s, 6),
            "verified": self.verified,
            "solver_objective": _finite(self.solver_objective),
            "instance": instance.name,
        }
        if self.message:
            data["message"] = self.message
        if self.violations:
            data["violations"] = list(self.violations)
        if self.allocation is not None:
            data.update(allocation_json(instance, self.allocation))
        if self.schedule is not None:
            data.update(schedule_json(instance, self.schedule))
        data.update({key: _plain(value) for key, value in self.extra.items()})
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
    from models.metrics import dominant_shares, utilisation

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
    from models.check.hierarchy import demanding_nodes, node_shares
    from models.hierarchy import tree_of

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
