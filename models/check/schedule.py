"""Feasibility of a DAG-job schedule on the pooled cluster, re-verified from the instance alone.

A schedule is feasible when every task of every stage of every job appears exactly once, runs for exactly
its stage's duration, starts no earlier than its job's release, starts no earlier than the end of every
task of every parent stage (a barrier), the tasks running at any instant together use no more of any
resource than the whole cluster has (pooled capacity: no per-machine placement in this check), and,
when fair completion times ``T_k`` are given, every job completes by its ``T_k``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from models.check.report import ABS_TOL, _fmt, _truncate
from models.solution import (
    FloatArray,
    Schedule,
    job_completion,
    objective_value,
    schedule_objectives,
)
from models.types import Instance


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
    """

    ok: bool
    violations: list[str]
    completion: FloatArray
    makespan: float
    avg_jct: float
    peak_usage: FloatArray

    def objective(self, name: str, alpha: float = 0.5) -> float:
        """The recomputed value of objective ``name`` (``makespan``, ``avg-jct`` or ``mix``)."""
        return objective_value(self.makespan, self.avg_jct, name, alpha)


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


def verify_schedule(
    instance: Instance,
    schedule: Schedule,
    fair_completion: Mapping[str, float] | Sequence[float] | FloatArray | None = None,
    tol: float = 1e-6,
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
        Times may be off by ``tol * max(1, |t|)``; resource use may exceed a capacity ``C`` by
        ``max(tol * C, ABS_TOL)``.

    Returns
    -------
    ScheduleReport
        ``ok`` iff every task is listed exactly once (rows with unknown job/stage/index are reported and
        ignored), ends ``duration`` after it starts, starts at or after its job's release and after every
        task of every parent stage ends, the pooled usage never exceeds capacity, and ``C_k <= T_k``.
    """
    jobs = instance.jobs
    n_res = len(instance.resources)
    violations: list[str] = []

    # Flat numbering of stages and tasks: stage g = stage_offset[job] + stage, task = task_offset[g] + index.
    stage_counts = np.array([len(job.stages) for job in jobs], dtype=np.int64)
    stage_offset = np.concatenate([[0], np.cumsum(stage_counts)])[:-1]
    stages = [stage for job in jobs for stage in job.stages]
    stage_job = np.repeat(np.arange(len(jobs)), stage_counts)
    tasks_per_stage = np.array([stage.tasks for stage in stages], dtype=np.int64)
    task_offset = np.concatenate([[0], np.cumsum(tasks_per_stage)])
    duration = np.array([stage.duration for stage in stages], dtype=np.float64)
    demand = np.array([stage.demand for stage in stages], dtype=np.float64).reshape(-1, n_res)
    release = np.array([job.release for job in jobs], dtype=np.float64)

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
    violations += _truncate("task row", bad_rows)
    rows = np.flatnonzero(valid & finite)
    g = g_all[rows]
    task_id = task_offset[g] + index[rows]
    b, e = start[rows], end[rows]

    # 2. Every task exactly once.
    seen = np.bincount(task_id, minlength=int(task_offset[-1]))
    task_stage = np.repeat(np.arange(len(stages)), tasks_per_stage)
    task_index = np.arange(int(task_offset[-1])) - task_offset[task_stage]
    violations += _truncate(
        "missing-task",
        [f"{task_name(int(task_stage[t]), int(task_index[t]))} is missing" for t in np.flatnonzero(seen == 0)],
    )
    violations += _truncate(
        "duplicate-task",
        [
            f"{task_name(int(task_stage[t]), int(task_index[t]))} is listed {seen[t]} times"
            for t in np.flatnonzero(seen > 1)
        ],
    )

    # 3. Durations and releases.
    d = duration[g]
    wrong = np.abs((e - b) - d) > tol * np.maximum(1.0, d)
    violations += _truncate(
        "duration",
        [
            f"{task_name(int(g[r]), int(index[rows[r]]))} runs {_fmt(e[r] - b[r])} but its duration is {_fmt(d[r])}"
            for r in np.flatnonzero(wrong)
        ],
    )
    r_job = release[stage_job[g]]
    early = b < r_job - tol * np.maximum(1.0, np.abs(r_job))
    violations += _truncate(
        "release",
        [
            f"{task_name(int(g[r]), int(index[rows[r]]))} starts at {_fmt(b[r])} before its job's release "
            f"{_fmt(r_job[r])}"
            for r in np.flatnonzero(early)
        ],
    )

    # 4. Barrier precedence: the first start of a stage is after the last end of each parent stage.
    stage_first = np.full(len(stages), np.inf)
    stage_last = np.full(len(stages), -np.inf)
    np.minimum.at(stage_first, g, b)
    np.maximum.at(stage_last, g, e)
    parents = [(int(stage_offset[k]) + p, int(stage_offset[k]) + s)
               for k, job_ in enumerate(jobs) for s, st in enumerate(job_.stages) for p in st.after]  # fmt: skip
    if parents:
        edge = np.array(parents, dtype=np.int64)
        parent_end, child_start = stage_last[edge[:, 0]], stage_first[edge[:, 1]]
        present = np.isfinite(parent_end) & np.isfinite(child_start)
        broken = present & (child_start < parent_end - tol * np.maximum(1.0, np.abs(parent_end)))
        violations += _truncate(
            "precedence",
            [
                f"job {jobs[stage_job[edge[k, 1]]].name}: stage {stages[edge[k, 1]].name} starts at "
                f"{_fmt(child_start[k])} before parent stage {stages[edge[k, 0]].name} ends at {_fmt(parent_end[k])}"
                for k in np.flatnonzero(broken)
            ],
        )

    # 5. Pooled capacity: sweep the start (+demand) and end (-demand) events in time order. At equal times
    # ends come first, so a task may start exactly when another ends; times within tol count as equal.
    capacity = instance.total_capacity
    peak = np.zeros(n_res)
    if rows.size:
        times = np.concatenate([b, e])
        kind = np.concatenate([np.ones(rows.size), np.zeros(rows.size)])  # 0 = end, sorted before 1 = start
        change = np.concatenate([demand[g], -demand[g]])
        rounded = np.round(times / max(tol, 1e-12)) * max(tol, 1e-12)
        order = np.lexsort((kind, rounded))
        usage = np.cumsum(change[order], axis=0)
        peak = np.maximum(usage.max(axis=0), 0.0)
        limit = capacity + np.maximum(tol * capacity, ABS_TOL)
        over_event, over_res = np.nonzero(usage > limit[None, :])
        messages = []
        reported: set[tuple[int, float]] = set()
        for event, res in zip(over_event.tolist(), over_res.tolist(), strict=True):
            at = float(times[order[event]])
            if (res, at) in reported:
                continue
            reported.add((res, at))
            messages.append(
                f"resource {instance.resources[res]}: {_fmt(usage[event, res])} in use at time {_fmt(at)} "
                f"exceeds capacity {_fmt(capacity[res])}"
            )
        violations += _truncate("capacity", messages)

    # 6. Completion times and fair completion deadlines.
    completion = job_completion(instance, Schedule(job[rows], stage[rows], index[rows], b, e))
    numbers = schedule_objectives(instance, completion)
    fair = _fair_array(instance, fair_completion if fair_completion is not None else schedule.fair_completion)
    if fair is not None:
        late = completion > fair + tol * np.maximum(1.0, np.abs(np.where(np.isfinite(fair), fair, 0.0)))
        violations += _truncate(
            "fair-completion",
            [
                f"job {jobs[k].name} completes at {_fmt(completion[k])} after its fair completion time {_fmt(fair[k])}"
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
    )
