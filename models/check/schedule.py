"""Feasibility of a DAG-job schedule, on the pooled cluster or per machine, re-verified from the instance alone.

A schedule is feasible when every task of every stage of every job appears exactly once, runs for exactly
its stage's duration, starts no earlier than its job's release, starts no earlier than the end of every
task of every parent stage (a barrier), the tasks running at any instant together use no more of any
resource than the whole cluster has (pooled capacity), the tasks of one queue running at any instant are
never more than its running-task cap (a queue also declared under ``tenants`` with ``tasks``:
:meth:`Instance.queues`), and, when fair completion times ``T_k`` are given, every job completes by its ``T_k``.

With input blocks (``Instance.data``) and a placement, a task's duration is its stage's times the factor
of its locality level on its machine (node, rack or remote: ``models.locality``); a schedule without a
placement has no machines for blocks to be on, and its tasks run their stages' durations.

With placement options (``Stage.options``) every task of such a stage names the option it ran under
(``Schedule.option``), runs on a machine whose labels hold the option's selector, for the option's duration,
using the option's own demand where it has one (per machine and pooled);
a stage run under a gang option runs wholly under it, on machines sharing one value of the gang's label, all
its tasks starting together. Every job's utility (``Job.utility_at``) is recomputed from its completion.

A schedule with a placement (``Schedule.server`` / ``Schedule.machine``, from ``placement='servers'``)
must in addition put every task on an existing machine (a server class and a number below its count)
whose capacity holds one task of its stage, and the tasks running on any one machine at any instant
together use no more of any resource than that machine has. Pooled capacity is still checked (it is
implied, but its messages are the ones a pooled reader expects).

Times are compared by the one rule of ``models.tolerance``, the simulator's own: a time ``a`` is no later
than ``b`` when ``settled(a) <= b`` (``a`` minus ``time_tol(a)``, relative to ``|a|`` with an absolute
floor). A task may start once ``settled`` of its release and of its parent stages' last end is at most its
start; a task ending at ``e`` stops using its machine at ``settled(e)`` (so a task may start at another's
end, and a simulator that counts both as one event is judged by the rule it used); a task runs its duration
within ``time_tol`` of its end. Capacities keep their own relative tolerance (``tol``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairpack.models.check.report import ABS_TOL, fmt, task_slack, truncate
from fairpack.models.locality import factors as locality_factors
from fairpack.models.locality import global_machines, task_blocks
from fairpack.models.locality import levels as locality_levels
from fairpack.models.result import Schedule, job_completion, job_utilities, objective_value, schedule_objectives
from fairpack.models.stages import StageTable, stage_table
from fairpack.models.tolerance import CHECK_RTOL, settled_all, time_tols
from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray


@dataclass(frozen=True)
class ScheduleReport:
    """Outcome of :func:`verify_schedule`.

    Attributes
    ----------
    ok : bool
        True when ``violations`` is empty.
    violations : list of str
        Readable violations naming job, stage, task, resource and time; at most ``MAX_MESSAGES`` per
        category followed by a count of the rest.
    completion : ndarray, shape (jobs,)
        Recomputed completion time ``C_k`` of every job (latest end of its listed tasks).
    makespan : float
        ``max_k C_k``.
    avg_jct : float
        ``sum_k w_k (C_k - r_k) / sum_k w_k``.
    peak_usage : ndarray, shape (resources,)
        Highest simultaneous use of every resource.
    job_utility : ndarray, shape (jobs,)
        Every job's utility at its recomputed completion (``Job.utility_at``).
    """

    ok: bool
    violations: list[str]
    completion: FloatArray
    makespan: float
    avg_jct: float
    peak_usage: FloatArray
    job_utility: FloatArray

    @property
    def utility(self) -> float:
        """Total utility of the jobs."""
        return float(self.job_utility.sum())

    def objective(self, name: str, alpha: float = 0.5) -> float:
        """The recomputed value of objective ``name`` (``makespan``, ``avg-jct``, ``mix`` or ``utility``)."""
        return objective_value(self.makespan, self.avg_jct, name, alpha, self.utility)


def _fair_array(
    instance: Instance, fair: Mapping[str, float] | Sequence[float] | FloatArray | None
) -> FloatArray | None:
    if fair is None:
        return None
    if isinstance(fair, Mapping):
        names = {job.name: k for k, job in enumerate(instance.jobs)}
        unknown = sorted(set(fair) - set(names))
        if unknown:
            raise ValueError(f"fair completion times for unknown jobs {unknown}")
        array = np.full(len(instance.jobs), np.inf)
        for name, value in fair.items():
            array[names[name]] = float(value)
        return array
    array = np.asarray(fair, dtype=np.float64).reshape(-1)
    if array.size != len(instance.jobs):
        raise ValueError(f"{array.size} fair completion times for {len(instance.jobs)} jobs")
    return array


class _Stages(Sequence[Any]):
    """The instance's stages in global numbering, each looked up when asked (no list of a million of them)."""

    def __init__(self, instance: Instance, table: StageTable) -> None:
        self.instance, self.table = instance, table

    def __len__(self) -> int:
        return self.table.stages

    def __getitem__(self, g: Any) -> Any:
        if isinstance(g, slice):
            return [self[i] for i in range(*g.indices(len(self)))]
        return self.instance.jobs[int(self.table.job[g])].stages[int(self.table.local[g])]


def verify_schedule(
    instance: Instance,
    schedule: Schedule,
    fair_completion: Mapping[str, float] | Sequence[float] | FloatArray | None = None,
    tol: float = CHECK_RTOL,
    require_placement: bool = False,
    unfinished: Sequence[int] = (),
) -> ScheduleReport:
    """Re-verify a schedule from the instance alone and recompute makespan, completions and avg JCT.

    Parameters
    ----------
    instance : Instance
        Jobs, stages and the cluster; capacity is the pooled total ``instance.total_capacity``.
    schedule : Schedule
        One row per task.
    fair_completion : mapping job name -> T_k, or array of shape (jobs,), optional
        Deadlines to check ``C_k <= T_k`` against (``inf`` = none); defaults to
        ``schedule.fair_completion``.
    tol : float
        Resource use may exceed a capacity ``C`` by ``max(tol * C, ABS_TOL)``. Times follow the one time
        rule of ``models.tolerance`` (see the module docstring), whatever ``tol`` is.
    require_placement : bool
        The schedule claims per-server placement (``placement='servers'``): a schedule without one
        is a violation. A schedule that carries a placement is checked per machine either way.
    unfinished : sequence of int
        Jobs a simulated policy never finished (e.g. tasks larger than any slot): their missing tasks are
        not violations, but each must indeed miss a task.

    Returns
    -------
    ScheduleReport
        ``ok`` iff every task is listed exactly once (rows with unknown job/stage/index are reported and
        ignored), ends ``duration`` after it starts, starts at or after its job's release and after every
        task of every parent stage ends, the pooled usage never exceeds capacity, every placed task fits
        its machine and no machine is ever over capacity, and ``C_k <= T_k``.
    """
    jobs = instance.jobs
    n_res = len(instance.resources)
    violations: list[str] = []

    # Flat numbering of stages and tasks: stage g = stage_offset[job] + stage, task = task_offset[g] + index.
    # The arrays of ``models.stages`` (built from the jobs once per instance, or handed over by a bulk trace read).
    table = stage_table(instance)
    stage_counts = np.diff(table.offset)
    stage_offset = table.offset[:-1]
    stages = _Stages(instance, table)
    stage_job = table.job
    tasks_per_stage = table.tasks
    task_offset = np.concatenate([[0], np.cumsum(tasks_per_stage)])
    duration = table.duration
    demand = table.demand.reshape(-1, n_res)
    release = table.release

    def task_name(g: int, index: int) -> str:
        return f"job {jobs[stage_job[g]].name} stage {stages[g].name} task {index}"

    job, stage, index = schedule.job, schedule.stage, schedule.index
    start, end = schedule.start, schedule.end

    # 1. Rows must name a real task, with finite times.
    valid = (job >= 0) & (job < len(jobs))
    safe_job = np.where(valid, job, 0)
    valid &= (stage >= 0) & (stage < stage_counts[safe_job]) if len(jobs) else valid
    g_all = np.where(valid, stage_offset[safe_job] + np.where(valid, stage, 0), 0) if len(jobs) else job * 0
    valid &= (index >= 0) & (index < tasks_per_stage[g_all]) if stages else valid
    bad_rows = [
        f"row {row}: no task (job {job[row]}, stage {stage[row]}, index {index[row]}) in the instance"
        for row in np.flatnonzero(~valid)
    ]
    finite = np.isfinite(start) & np.isfinite(end)
    bad_rows += [
        f"row {row}: start {start[row]} / end {end[row]} not finite" for row in np.flatnonzero(valid & ~finite)
    ]
    violations += truncate("task row", bad_rows)
    rows = np.flatnonzero(valid & finite)
    g = g_all[rows]
    task_id = task_offset[g] + index[rows]
    b, e = start[rows], end[rows]

    # 2. Every task exactly once.
    seen = np.bincount(task_id, minlength=int(task_offset[-1]))
    task_stage = np.repeat(np.arange(len(stages)), tasks_per_stage)
    task_index = np.arange(int(task_offset[-1])) - task_offset[task_stage]
    excused = np.zeros(len(jobs), dtype=bool)
    excused[np.asarray(list(unfinished), dtype=np.int64)] = True
    absent = seen == 0
    missing_job = stage_job[task_stage]
    violations += truncate(
        "missing-task",
        [f"{task_name(int(task_stage[t]), int(task_index[t]))} is missing"
         for t in np.flatnonzero(absent & ~excused[missing_job])],
    )  # fmt: skip
    complete = np.ones(len(jobs), dtype=bool)
    complete[missing_job[absent]] = False
    violations += truncate("unfinished", [f"job {jobs[k].name} is called unfinished but every task ran"
                                          for k in np.flatnonzero(excused & complete)])  # fmt: skip
    violations += truncate(
        "duplicate-task",
        [
            f"{task_name(int(task_stage[t]), int(task_index[t]))} is listed {seen[t]} times"
            for t in np.flatnonzero(seen > 1)
        ],
    )

    # 3. Durations and releases. With input blocks (``Instance.data``) and a placement, a task runs its
    # stage's duration times the factor of its locality level on its machine (``models.locality``).
    d = duration[g]
    if instance.has_options or schedule.option is not None:
        d, found = _option_rules(instance, schedule, rows, g, task_name, tol)
        violations += found
    if instance.data is not None and schedule.server is not None and schedule.machine is not None:
        blocks, _ = task_blocks(instance)
        machine_of = global_machines(instance, schedule.server[rows], schedule.machine[rows])
        d = d * locality_factors(instance, locality_levels(instance, blocks[task_id], machine_of))
    wrong = np.abs((e - b) - d) > time_tols(np.maximum(np.abs(b), np.abs(e)))
    violations += truncate(
        "duration",
        [
            f"{task_name(int(g[r]), int(index[rows[r]]))} runs {fmt(e[r] - b[r])} but its duration is {fmt(d[r])}"
            for r in np.flatnonzero(wrong)
        ],
    )
    r_job = release[stage_job[g]]
    early = b < settled_all(r_job)
    violations += truncate(
        "release",
        [
            f"{task_name(int(g[r]), int(index[rows[r]]))} starts at {fmt(b[r])} before its job's release "
            f"{fmt(r_job[r])}"
            for r in np.flatnonzero(early)
        ],
    )

    # 4. Barrier precedence: the first start of a stage is after the last end of each parent stage.
    stage_first = np.full(len(stages), np.inf)
    stage_last = np.full(len(stages), -np.inf)
    np.minimum.at(stage_first, g, b)
    np.maximum.at(stage_last, g, e)
    if table.edges.size:
        edge = table.edges
        parent_end, child_start = stage_last[edge[:, 0]], stage_first[edge[:, 1]]
        present = np.isfinite(parent_end) & np.isfinite(child_start)
        broken = present & (child_start < settled_all(np.where(present, parent_end, 0.0)))
        violations += truncate(
            "precedence",
            [
                f"job {jobs[stage_job[edge[k, 1]]].name}: stage {stages[edge[k, 1]].name} starts at "
                f"{fmt(child_start[k])} before parent stage {stages[edge[k, 0]].name} ends at {fmt(parent_end[k])}"
                for k in np.flatnonzero(broken)
            ],
        )
        # A stage that ran waited for every task of its parents: a parent task left out (a job called unfinished)
        # cannot have ended before it.
        ran = np.bincount(g, minlength=len(stages))
        short = (ran[edge[:, 1]] > 0) & (ran[edge[:, 0]] < tasks_per_stage[edge[:, 0]])
        violations += truncate(
            "precedence",
            [
                f"job {jobs[stage_job[edge[k, 1]]].name}: stage {stages[edge[k, 1]].name} ran, but parent stage "
                f"{stages[edge[k, 0]].name} ran only {ran[edge[k, 0]]} of its {tasks_per_stage[edge[k, 0]]} tasks"
                for k in np.flatnonzero(short)
            ],
        )

    # 5. Pooled capacity; a task run under an option with its own demand uses that demand.
    need = demand[g]
    if schedule.option is not None and instance.has_option_demands:
        need = _option_demand(list(stages), g, schedule.option[rows], need)
    sweep = _sweep(b, e, need, np.zeros(rows.size, dtype=np.int64))
    peak = np.maximum(sweep[3].max(axis=0), 0.0) if rows.size else np.zeros(n_res)
    violations += truncate(
        "capacity",
        [f"resource {instance.resources[res]}: {fmt(used)} in use at time {fmt(at)} exceeds capacity {fmt(cap)}"
         for _, res, used, at, cap in _overloads(*sweep[:3], instance.total_capacity[None, :], tol)],
    )  # fmt: skip

    # 5a. Queues' running-task caps, at every instant (the same event sweep, one unit per queue).
    violations += _queue_cap_violations(instance, stage_job[g], b, e, tol)

    # 5b. Per-machine placement and capacity.
    if schedule.server is not None and schedule.machine is not None:
        violations += _machine_violations(
            instance, schedule.server[rows], schedule.machine[rows], g, b, e, need, task_name, index[rows], tol
        )
    elif require_placement and rows.size:  # no task ran: nothing to place (a saved empty run names no server)
        violations.append("the schedule has no per-server placement (placement 'servers' needs a machine per task)")

    # 6. Completion times and fair completion deadlines; utilities from the instance's points.
    completion = job_completion(instance, Schedule(job[rows], stage[rows], index[rows], b, e))
    numbers = schedule_objectives(instance, completion)
    utility = job_utilities(instance, completion)
    fair = _fair_array(instance, fair_completion if fair_completion is not None else schedule.fair_completion)
    if fair is not None:
        late = settled_all(completion) > fair
        violations += truncate(
            "fair-completion",
            [
                f"job {jobs[k].name} completes at {fmt(completion[k])} after its fair completion time {fmt(fair[k])}"
                for k in np.flatnonzero(late)
            ],
        )
    return ScheduleReport(
        ok=not violations,
        violations=violations,
        completion=completion,
        makespan=numbers["makespan"],
        avg_jct=numbers["avg_jct"],
        peak_usage=peak,
        job_utility=utility,
    )


def _sweep(
    start: FloatArray, end: FloatArray, demand: FloatArray, unit: IntArray
) -> tuple[FloatArray, FloatArray, IntArray, FloatArray]:
    """Usage right after every event on every unit (the pool, or one machine), by an event sweep.

    Start (+demand) and end (-demand) events are sorted by unit, then time; a task's end counts at
    ``settled(end)`` (the time rule of ``models.tolerance``, never before its start), and at equal times
    ends come first, so a task may start when another ends, as the simulator decides it. Returns
    ``(usage, time, unit, peak)``: usage, time and unit of every sorted event, and the peak per unit.
    """
    n_units = int(unit.max(initial=-1)) + 1
    # A task shorter than the resolution is an instant: its end is not moved before its start (a negative
    # usage in between would hide an overload).
    times = np.concatenate([start, np.maximum(settled_all(end), start)])
    kind = np.concatenate([np.ones(start.size), np.zeros(start.size)])  # 0 = end, sorted before 1 = start
    units = np.concatenate([unit, unit])
    order = np.lexsort((kind, times, units))
    usage = np.cumsum(np.concatenate([demand, -demand])[order], axis=0)
    units = units[order]
    # Each unit's events sum to zero; subtracting the running total where a unit begins removes the
    # rounding noise of the units before it.
    first = np.searchsorted(units, np.arange(n_units))
    before = np.vstack([np.zeros((1, demand.shape[1])), usage])[first]
    usage -= before[units]
    peak = np.zeros((n_units, demand.shape[1]))
    if units.size:  # events are sorted by unit: the peak of each unit's run of rows (ufunc.at is far slower)
        starts = np.flatnonzero(np.concatenate([[True], units[1:] != units[:-1]]))
        peak[units[starts]] = np.maximum(np.maximum.reduceat(usage, starts, axis=0), 0.0)
    return usage, times[order], units, peak


def _overloads(
    usage: FloatArray, times: FloatArray, units: IntArray, capacity: FloatArray, tol: float
) -> list[tuple[int, int, float, float, float]]:
    """``(unit, resource, usage, time, capacity)`` for the first overloaded event of each (unit, resource, time).

    ``usage``, ``times`` and ``units`` per event come from :func:`_sweep`; ``capacity`` is per unit.
    """
    limit = capacity + np.maximum(tol * capacity, ABS_TOL)
    over_event, over_res = np.nonzero(usage > limit[units])
    found = []
    reported: set[tuple[int, int, float]] = set()
    for event, res in zip(over_event.tolist(), over_res.tolist(), strict=True):
        key = (int(units[event]), res, float(times[event]))
        if key in reported:
            continue
        reported.add(key)
        found.append((key[0], res, float(usage[event, res]), key[2], float(capacity[key[0], res])))
    return found


def _queue_cap_violations(instance: Instance, job_of_row: IntArray, start: FloatArray, end: FloatArray,
                          tol: float) -> list[str]:  # fmt: skip
    """Queues running more tasks at once than their cap (``tasks`` of the tenant of that name): the first
    instant of each, with its count there and its peak. Only queues with a finite cap are swept."""
    queues = instance.queues()
    capped = np.isfinite(queues.cap)
    if not capped.any() or job_of_row.size == 0:
        return []
    queue = queues.of_job[job_of_row]
    rows = np.flatnonzero(capped[queue])
    usage, times, units, peak = _sweep(start[rows], end[rows], np.ones((rows.size, 1)), queue[rows])
    cap = queues.cap
    limit = cap + task_slack(np.where(capped, cap, 0.0), tol)
    over = np.flatnonzero(usage[:, 0] > limit[units])
    found = []
    for q in np.unique(units[over]).tolist():
        first = int(over[np.argmax(units[over] == q)])  # events are sorted by queue, then time
        at = (units == q) & (times == times[first])  # every start at that instant counted
        found.append(f"queue {queues.names[q]!r}: {fmt(usage[at, 0].max())} tasks run at time {fmt(times[first])}, "
                     f"over its cap of {fmt(cap[q])} running tasks (most at once: {fmt(peak[q, 0])})")  # fmt: skip
    return truncate("queue-cap", found)


def _machine_violations(
    instance: Instance,
    server: IntArray,
    machine: IntArray,
    g: IntArray,
    start: FloatArray,
    end: FloatArray,
    demand: FloatArray,
    task_name: Callable[[int, int], str],
    index: IntArray,
    tol: float,
) -> list[str]:
    """Placement violations of the valid rows: unplaced tasks, tasks too big for their machine, overloads
    (``demand``: each row's task demand)."""
    counts = instance.counts
    n_classes = counts.size
    safe = np.clip(server, 0, n_classes - 1)
    placed = (server >= 0) & (server < n_classes) & (machine >= 0) & (machine < counts[safe])
    unplaced = [
        f"{task_name(int(g[r]), int(index[r]))} is not placed on a machine"
        if server[r] < 0
        else f"{task_name(int(g[r]), int(index[r]))} is on server {server[r]} machine {machine[r]}, which does "
        f"not exist"
        for r in np.flatnonzero(~placed)
    ]
    violations = truncate("placement", unplaced)
    rows = np.flatnonzero(placed)
    machine_id = (np.concatenate([[0], np.cumsum(counts)])[:-1][server[rows]] + machine[rows]).astype(np.int64)
    machine_capacity = instance.capacity[instance.machine_class()]
    names = instance.machine_names()
    need = demand[rows]
    cap = machine_capacity[machine_id]
    too_big = np.flatnonzero(np.any(need > cap + np.maximum(tol * cap, ABS_TOL), axis=1))
    violations += truncate(
        "machine-fit",
        [f"{task_name(int(g[rows[r]]), int(index[rows[r]]))} does not fit machine {names[machine_id[r]]}"
         for r in too_big],
    )  # fmt: skip
    sweep = _sweep(start[rows], end[rows], need, machine_id)
    violations += truncate(
        "machine-capacity",
        [f"machine {names[m]}: resource {instance.resources[res]}: {fmt(used)} in use at time {fmt(at)} "
         f"exceeds its capacity {fmt(c)}"
         for m, res, used, at, c in _overloads(*sweep[:3], machine_capacity, tol)],
    )  # fmt: skip
    return violations


def _option_demand(stages: list[Any], g: IntArray, chosen: IntArray, need: FloatArray) -> FloatArray:
    """Each row's task demand: its option's own where the row names an option that has one, else ``need``."""
    out = np.array(need, dtype=np.float64)
    for r in range(g.size):
        options = stages[int(g[r])].options
        o = int(chosen[r])
        if 0 <= o < len(options) and options[o].demand is not None:
            out[r] = options[o].demand
    return out


def _option_rules(
    instance: Instance, schedule: Schedule, rows: IntArray, g: IntArray, task_name: Callable[[int, int], str],
    tol: float,
) -> tuple[FloatArray, list[str]]:
    """Durations of the valid rows under the options they name, and the option violations.

    A task of a stage with options must name one (``Schedule.option``) and run on a machine whose labels hold
    the option's selector; its duration is the option's. A stage run under a gang option runs wholly under
    it: every task names that option, every machine has the same value of the gang's label, and every task
    starts at the same time. Tasks of stages without options name none.
    """
    stages = [stage for job in instance.jobs for stage in job.stages]
    counts = np.array([len(stage.options) for stage in stages], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    options = [option for stage in stages for option in stage.options]
    base = np.array([stage.duration for stage in stages], dtype=np.float64)
    chosen = np.full(rows.size, -1, dtype=np.int64) if schedule.option is None else schedule.option[rows]
    index = schedule.index[rows]
    violations: list[str] = []
    has = counts[g] > 0
    named = has & (chosen >= 0) & (chosen < counts[g])
    violations += truncate("option", [
        f"{task_name(int(g[r]), int(index[r]))} names no option of its stage (it has {counts[g[r]]})"
        if has[r] else f"{task_name(int(g[r]), int(index[r]))} names option {chosen[r]}, but its stage has none"
        for r in np.flatnonzero((has & ~named) | (~has & (chosen != -1)))])  # fmt: skip
    flat = np.where(named, first[g] + np.where(named, chosen, 0), -1)
    duration = np.where(named, np.array([o.duration for o in options] + [0.0])[flat], base[g])
    if schedule.server is None or schedule.machine is None:
        if has.any():
            violations.append("stages with placement options need a machine for every task (the schedule has none)")
        return duration, violations
    counts_class = instance.counts
    server, machine = schedule.server[rows], schedule.machine[rows]
    placed = named & (server >= 0) & (server < counts_class.size)
    placed &= (machine >= 0) & (machine < counts_class[np.clip(server, 0, counts_class.size - 1)])
    labels = [dict(s.labels) for s in instance.servers]
    off = [r for r in np.flatnonzero(placed).tolist()
           if any(labels[server[r]].get(k) != v for k, v in options[flat[r]].on)
           or (options[flat[r]].same and options[flat[r]].same not in labels[server[r]])]  # fmt: skip
    violations += truncate("option-labels", [
        f"{task_name(int(g[r]), int(index[r]))} runs option {chosen[r]} on server {instance.servers[server[r]].name}, "
        f"whose labels {labels[server[r]]} do not hold its selector {dict(options[flat[r]].on)}"
        + (f" and label {options[flat[r]].same!r}" if options[flat[r]].same else "") for r in off])  # fmt: skip
    violations += _gang_violations(instance, g, flat, chosen, options, server, schedule.start[rows], labels,
                                   placed, tol)  # fmt: skip
    return duration, violations


def _gang_violations(instance: Instance, g: IntArray, flat: IntArray, chosen: IntArray, options: list[Any],
                     server: IntArray, start: FloatArray, labels: list[dict[str, str]], placed: BoolArray,
                     tol: float) -> list[str]:  # fmt: skip
    """A stage with a task under a gang option runs wholly under it, in one label group, all tasks at once."""
    gang = np.array([bool(options[f].same) if f >= 0 else False for f in flat.tolist()], dtype=bool)
    names = [f"{instance.jobs[k].name} stage {st.name}" for k, job in enumerate(instance.jobs) for st in job.stages]
    found = []
    for stage in np.unique(g[gang]).tolist():
        mine = np.flatnonzero(g == stage)
        kinds = sorted(set(flat[mine].tolist()))
        if len(kinds) > 1:
            found.append(f"job {names[stage]}: a gang option runs the whole stage, but its tasks name options "
                         f"{sorted(set(chosen[mine].tolist()))}")  # fmt: skip
            continue
        key = options[kinds[0]].same
        values = {labels[server[r]].get(key) for r in mine.tolist() if placed[r]}
        if len(values) > 1:
            found.append(f"job {names[stage]}: gang tasks on machines with different {key!r} values {sorted(values)}")
        spread = float(start[mine].max() - start[mine].min())
        if spread > tol * max(1.0, float(np.abs(start[mine]).max())):
            found.append(f"job {names[stage]}: gang tasks start at different times ({fmt(float(start[mine].min()))} "
                         f"to {fmt(float(start[mine].max()))})")  # fmt: skip
    return truncate("gang", found)
