"""``spacetime-cp``: exact space-time packing of DAG jobs on the pooled cluster with OR-Tools CP-SAT.

Model
-----
* One fixed-size interval per task; the ``n`` identical tasks of a stage are ordered by start
  (``start[k] <= start[k+1]``), which removes ``n!`` symmetric copies of every schedule.
* One ``add_cumulative`` per resource over the pooled capacity (``Instance.total_capacity``); a resource
  whose total demand fits in its capacity can never bind and gets none.
* Barriers: one stage-end variable per multi-task stage (``>=`` every task end; single-task stages use
  their task's end expression directly), and every task of a child stage starts at or after each
  parent stage's end. This needs ``tasks + parent edges`` constraints instead of ``tasks x parent tasks``.
* Releases bound the start domains; a job's completion ``C_k >= `` its sink stages' ends, and ``C_k <= T_k``
  when fair completion times are given (``SolveOptions.extra['fair_completion']``, job name -> T_k).
* Objectives: ``makespan`` (default for a single job), ``avg-jct`` (default for several jobs; weighted
  sum of ``C_k - r_k``), ``mix`` = ``alpha * avg JCT + (1 - alpha) * makespan`` with
  ``alpha = extra['alpha']`` (default 0.5).

Integer scaling (CP-SAT is integral)
------------------------------------
* Time: the tick is ``instance.time_slot / 10**p`` for the smallest ``p <= 6`` that makes every duration
  and release a whole number of ticks. If none does, durations are rounded *up* and releases up to whole
  ticks: schedules stay feasible (a task reserves at least its true duration), but optimality and the
  bound are no longer proven (status ``feasible``/``time_limit``, bound ``None``, a note in ``message``).
* Demands and capacities of each resource are multiplied by the smallest ``10**p`` (``p <= 6``) that
  makes all of them whole; otherwise demands are rounded up and capacity down (feasible, not proven).
* Objective coefficients (``alpha * w_k`` and ``(1 - alpha) * sum w``) are scaled the same way.

Horizon: for ``makespan`` it is the makespan of the better of two serial schedule-generation (SSGS)
list schedules, which also warm-start CP-SAT through hints; for ``avg-jct`` and ``mix`` it is
``max release + sum of durations``, valid because some optimal schedule is semi-active (every task
starts at its release or at another task's end) and so ends by then.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from models.dag import adjacency, topological_order
from models.solution import SCHEDULE_OBJECTIVES, Result, Schedule, Status
from models.types import Instance, InstanceError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Largest power of ten tried when turning fractional data into integers.
MAX_DECIMALS = 6
#: The SSGS heuristic keeps a per-tick resource profile; beyond this many ticks x resources it is skipped.
MAX_PROFILE_CELLS = 20_000_000


def _integer_scale(values: FloatArray, base: float = 1.0) -> tuple[float, bool]:
    """The smallest ``base / 10**p`` (p <= MAX_DECIMALS) of which every value is a whole multiple.

    Returns the unit and whether it is exact (if no power works, the finest unit, inexact).
    """
    finite = values[np.isfinite(values)]
    for power in range(MAX_DECIMALS + 1):
        unit = base / 10**power
        scaled = finite / unit
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return unit, True
    return base / 10**MAX_DECIMALS, False


@dataclass(frozen=True)
class FlatTasks:
    """Every task of every job as flat arrays, plus the stage DAG (global stage numbering)."""

    task_stage: IntArray  # global stage of every task
    task_index: IntArray  # number of the task within its stage
    stage_job: IntArray
    stage_local: IntArray  # index of the stage within its job
    stage_tasks: IntArray
    duration: FloatArray  # per stage
    demand: FloatArray  # per stage, shape (stages, resources)
    release: FloatArray  # per job
    weight: FloatArray  # per job
    edges: IntArray  # shape (edges, 2): (parent stage, child stage)

    @staticmethod
    def of(instance: Instance) -> FlatTasks:
        counts = np.array([len(job.stages) for job in instance.jobs], dtype=np.int64)
        offset = np.concatenate([[0], np.cumsum(counts)])[:-1]
        stages = [stage for job in instance.jobs for stage in job.stages]
        stage_tasks = np.array([stage.tasks for stage in stages], dtype=np.int64)
        task_stage = np.repeat(np.arange(len(stages)), stage_tasks)
        first = np.concatenate([[0], np.cumsum(stage_tasks)])[:-1]
        edges = [
            (int(offset[k]) + p, int(offset[k]) + s)
            for k, job in enumerate(instance.jobs)
            for s, stage in enumerate(job.stages)
            for p in stage.after
        ]
        return FlatTasks(
            task_stage=task_stage,
            task_index=np.arange(task_stage.size) - first[task_stage],
            stage_job=np.repeat(np.arange(len(instance.jobs)), counts),
            stage_local=np.concatenate([np.arange(c) for c in counts]) if len(counts) else np.zeros(0, np.int64),
            stage_tasks=stage_tasks,
            duration=np.array([stage.duration for stage in stages], dtype=np.float64),
            demand=np.array([stage.demand for stage in stages], dtype=np.float64).reshape(-1, len(instance.resources)),
            release=np.array([job.release for job in instance.jobs], dtype=np.float64),
            weight=np.array([job.weight for job in instance.jobs], dtype=np.float64),
            edges=np.array(edges, dtype=np.int64).reshape(-1, 2),
        )

    @property
    def num_stages(self) -> int:
        return int(self.stage_tasks.size)

    def topological_stages(self) -> list[int]:
        """Stages in an order where every parent precedes its children."""
        return topological_order(*adjacency(self.num_stages, self.edges.tolist()))

    def heads_tails(self, duration: Sequence[float] | FloatArray | IntArray) -> tuple[FloatArray, FloatArray]:
        """Per stage: longest path from its job's start to the stage start (head) and from its start to the
        job's end including itself (tail); pure precedence, no resources."""
        order = self.topological_stages()
        parents: list[list[int]] = [[] for _ in range(self.num_stages)]
        children: list[list[int]] = [[] for _ in range(self.num_stages)]
        for parent, child in self.edges.tolist():
            parents[child].append(parent)
            children[parent].append(child)
        dur = np.asarray(duration, dtype=np.float64)
        head = np.zeros(self.num_stages)
        for stage in order:
            head[stage] = max((head[p] + dur[p] for p in parents[stage]), default=0.0)
        tail = np.zeros(self.num_stages)
        for stage in reversed(order):
            tail[stage] = dur[stage] + max((tail[c] for c in children[stage]), default=0.0)
        return head, tail


def serial_sgs(
    flat: FlatTasks,
    duration: IntArray,
    demand: IntArray,
    capacity: IntArray,
    release: IntArray,
    priority: FloatArray,
) -> IntArray | None:
    """Serial schedule-generation scheme on integer ticks (the classic RCPSP list heuristic).

    Repeatedly takes the eligible stage (all parent stages scheduled) with the smallest ``priority`` and
    places its tasks one by one at the earliest tick where precedence, release and every resource allow.

    Parameters
    ----------
    flat : FlatTasks
        The stage DAG.
    duration, demand, capacity, release : int arrays
        Per stage duration (ticks), per stage demand (stages, resources), pooled capacity per resource,
        per job release (ticks).
    priority : float array, shape (stages,)
        Smaller goes first among eligible stages.

    Returns
    -------
    int array of task start ticks (in ``flat`` task order), or ``None`` if a task cannot fit at all or
    the profile would be too large.
    """
    if np.any(demand > capacity[None, :]):
        return None
    # Every task one after another: a stage's tasks may need several waves, so count tasks, not stages.
    horizon = int(release.max(initial=0) + (duration * flat.stage_tasks).sum() + duration.max(initial=0) + 1)
    n_res = capacity.size
    if horizon * max(n_res, 1) > MAX_PROFILE_CELLS:
        return None
    usage = np.zeros((horizon, n_res), dtype=np.int64)
    stage_end = np.zeros(flat.num_stages, dtype=np.int64)
    first_task = np.concatenate([[0], np.cumsum(flat.stage_tasks)])[:-1]
    start = np.zeros(flat.task_stage.size, dtype=np.int64)
    parents: list[list[int]] = [[] for _ in range(flat.num_stages)]
    children: list[list[int]] = [[] for _ in range(flat.num_stages)]
    for parent, child in flat.edges.tolist():
        parents[child].append(parent)
        children[parent].append(child)
    missing = np.array([len(p) for p in parents])
    eligible = {s for s in range(flat.num_stages) if missing[s] == 0}
    while eligible:
        stage = min(eligible, key=lambda s: (priority[s], s))
        eligible.remove(stage)
        earliest = max([int(release[flat.stage_job[stage]])] + [int(stage_end[p]) for p in parents[stage]])
        d, need = int(duration[stage]), demand[stage]
        end = earliest
        for k in range(int(flat.stage_tasks[stage])):
            t = earliest
            if d > 0 and np.any(need > 0):
                # First window of d ticks from `earliest` where the profile has room for this task.
                room = np.all(usage[earliest:] + need[None, :] <= capacity[None, :], axis=1)
                blocked = np.concatenate([[0], np.cumsum(~room)])
                window = blocked[d:] - blocked[:-d]
                t = earliest + int(np.flatnonzero(window == 0)[0])
                usage[t : t + d] += need
            start[first_task[stage] + k] = t
            end = max(end, t + d)
        stage_end[stage] = end
        for child in children[stage]:
            missing[child] -= 1
            if missing[child] == 0:
                eligible.add(child)
    return start


@dataclass(frozen=True)
class _Scaled:
    tick: float
    time_exact: bool
    duration: IntArray  # per stage, ticks
    release: IntArray  # per job, ticks
    demand: IntArray  # per stage x resource
    capacity: IntArray
    demand_exact: bool


def _scale(instance: Instance, flat: FlatTasks) -> _Scaled:
    times = np.concatenate([flat.duration, flat.release])
    tick, time_exact = _integer_scale(times, instance.time_slot)
    duration = np.ceil(flat.duration / tick - 1e-9).astype(np.int64)
    release = np.ceil(flat.release / tick - 1e-9).astype(np.int64)
    capacity = instance.total_capacity
    demand = np.zeros(flat.demand.shape, dtype=np.int64)
    cap = np.zeros(capacity.shape, dtype=np.int64)
    demand_exact = True
    for r in range(capacity.size):
        unit, exact = _integer_scale(np.concatenate([flat.demand[:, r], capacity[r : r + 1]]))
        demand_exact &= exact
        # Rounding demands up and capacity down keeps every CP-feasible schedule truly feasible.
        demand[:, r] = np.ceil(flat.demand[:, r] / unit - 1e-9).astype(np.int64)
        cap[r] = math.floor(capacity[r] / unit + 1e-9)
    return _Scaled(tick, time_exact, duration, release, demand, cap, demand_exact)


def _objective_weights(flat: FlatTasks, objective: str, alpha: float) -> tuple[FloatArray, float]:
    """Coefficients of (C_k per job, makespan) in ``W x objective`` where ``W = sum of weights``."""
    total = float(flat.weight.sum())
    if objective == "makespan":
        return np.zeros_like(flat.weight), total
    if objective == "avg-jct":
        return flat.weight.copy(), 0.0
    return alpha * flat.weight, (1 - alpha) * total


HEURISTIC_HINT_TASKS = 5000  # above this the simulated heuristics cost more than they save as hints


def _value(start: IntArray, flat: FlatTasks, scaled: _Scaled, objective: str, alpha: float) -> float:
    """Objective of a tick schedule, in real time units (true durations, as the checker computes it)."""
    begin = start * scaled.tick
    end = begin + flat.duration[flat.task_stage]
    completion = flat.release.copy()
    np.maximum.at(completion, flat.stage_job[flat.task_stage], end)
    makespan = float(completion.max())
    avg = float(flat.weight @ (completion - flat.release) / flat.weight.sum())
    return {"makespan": makespan, "avg-jct": avg}.get(objective, alpha * avg + (1 - alpha) * makespan)


def _fair_ticks(instance: Instance, fair: Any, tick: float) -> tuple[FloatArray | None, IntArray | None]:
    if not fair:
        return None, None
    names = {job.name: k for k, job in enumerate(instance.jobs)}
    real = np.full(len(instance.jobs), np.inf)
    for name, value in dict(fair).items():
        if name not in names:
            raise InstanceError(f"unknown job {name!r}", f"fair_completion.{name}")
        real[names[name]] = float(value)
    big = np.iinfo(np.int64).max // 4
    ticks = np.where(np.isfinite(real), np.floor(np.where(np.isfinite(real), real, 0) / tick + 1e-9), big)
    return real, ticks.astype(np.int64)


def _heuristic_starts(instance: Instance, flat: FlatTasks, scaled: _Scaled) -> dict[str, IntArray]:
    """Start ticks (flat task order) of the event-driven heuristics' schedules, as extra warm starts.

    Their schedules are often better than the list schedules above on multi-job mixes (Carbyne, SJF).
    Tasks of a stage are renumbered by start time, matching the model's ordering of identical tasks.
    """
    from solver.dag.policies import run_policy

    first = np.concatenate([[0], np.cumsum(flat.stage_tasks)])[:-1]
    offset = np.concatenate([[0], np.cumsum([len(job.stages) for job in instance.jobs])])[:-1]
    found: dict[str, IntArray] = {}
    for name in ("carbyne", "sjf", "drf-dag", "tetris"):
        schedule, _ = run_policy(instance, name)
        ticks = schedule.start / scaled.tick
        if not np.allclose(ticks, np.round(ticks), atol=1e-6):
            continue
        stage = offset[schedule.job] + schedule.stage
        order = np.lexsort((ticks, stage))
        starts = np.zeros(flat.task_stage.size, dtype=np.int64)
        rank = np.arange(order.size) - first[stage[order]]
        starts[first[stage[order]] + rank] = np.round(ticks[order]).astype(np.int64)
        found[name] = starts
    return found


def _meets(start: IntArray | None, flat: FlatTasks, scaled: _Scaled, deadline: IntArray | None) -> bool:
    if start is None:
        return False
    if deadline is None:
        return True
    completion = scaled.release.copy()
    np.maximum.at(completion, flat.stage_job[flat.task_stage], start + scaled.duration[flat.task_stage])
    return bool(np.all(completion <= deadline))


def solve_spacetime_cp(
    instance: Instance,
    objective: str | None = None,
    time_limit: float | None = None,
    alpha: float = 0.5,
    fair_completion: dict[str, float] | None = None,
    workers: int = 2,
    seed: int = 0,
) -> Result:
    """Pack all tasks of all DAG jobs in space and time with CP-SAT (see the module docstring).

    Parameters
    ----------
    instance : Instance
        Needs ``jobs``; capacity is the pooled cluster total.
    objective : {'makespan', 'avg-jct', 'mix'}, optional
        Default ``makespan`` for one job, ``avg-jct`` for several.
    time_limit : float, optional
        Seconds for CP-SAT; ``None`` means no limit.
    alpha : float
        Weight of the average JCT in ``mix``, in [0, 1].
    fair_completion : mapping job name -> T_k, optional
        Deadlines ``C_k <= T_k`` (e.g. each job's completion under its DRF fair share).
    workers : int
        CP-SAT search workers (kept at 2 or fewer on the shared machine).
    seed : int
        CP-SAT random seed, for reproducible runs.

    Returns
    -------
    Result
        ``schedule`` with real start/end times, ``solver_objective`` and ``bound`` in real units (the
        bound only when the integer scaling is exact), status ``optimal``, ``time_limit`` (incumbent
        returned), ``infeasible`` or ``error``. ``objective``/``verified``/``gap`` are filled by ``solve()``.
    """
    from ortools.sat.python import cp_model

    started = time.perf_counter()
    if not instance.jobs:
        raise InstanceError("spacetime-cp needs DAG jobs", "jobs")
    objective = objective or ("makespan" if len(instance.jobs) == 1 else "avg-jct")
    if objective not in SCHEDULE_OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose from {', '.join(SCHEDULE_OBJECTIVES)}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    flat = FlatTasks.of(instance)
    scaled = _scale(instance, flat)
    fair_real, deadline = _fair_ticks(instance, fair_completion, scaled.tick)
    notes = []
    if not scaled.time_exact:
        notes.append(f"durations/releases rounded up to ticks of {scaled.tick:g}: optimality not proven")
    if not scaled.demand_exact:
        notes.append("demands rounded up / capacities down to 1e-6: optimality not proven")

    # Warm start: the better of two list schedules (critical path first; whole jobs shortest-first).
    head, tail = flat.heads_tails(scaled.duration)
    job_length = np.zeros(len(instance.jobs))
    np.maximum.at(job_length, flat.stage_job, tail)
    job_rank = np.argsort(np.argsort((scaled.release + job_length) / flat.weight, kind="stable"), kind="stable")
    rules = {"critical-path": -tail, "shortest-job": job_rank[flat.stage_job] * (tail.max(initial=0) + 1) - tail}
    candidates = {}
    for rule, priority in rules.items():
        starts = serial_sgs(flat, scaled.duration, scaled.demand, scaled.capacity, scaled.release, priority)
        if _meets(starts, flat, scaled, deadline):
            assert starts is not None
            candidates[rule] = (_value(starts, flat, scaled, objective, alpha), starts)
    if scaled.time_exact and scaled.demand_exact and flat.task_stage.size <= HEURISTIC_HINT_TASKS:
        for rule, starts in _heuristic_starts(instance, flat, scaled).items():
            if _meets(starts, flat, scaled, deadline):
                candidates[rule] = (_value(starts, flat, scaled, objective, alpha), starts)
    best_rule = min(candidates, key=lambda rule: candidates[rule][0]) if candidates else None
    hint = candidates[best_rule][1] if best_rule is not None else None

    task_duration = scaled.duration[flat.task_stage]
    # Serialising every task after the last release is always feasible, so no optimum ends later.
    sum_horizon = int(scaled.release.max(initial=0) + task_duration.sum())
    horizon = sum_horizon
    if objective == "makespan" and hint is not None:
        horizon = int((hint + task_duration).max(initial=0))  # some optimum is no longer than the heuristic

    model = cp_model.CpModel()
    job_of_task = flat.stage_job[flat.task_stage]
    earliest = scaled.release[job_of_task] + head[flat.task_stage].astype(np.int64)
    latest = horizon - tail[flat.task_stage].astype(np.int64)
    if deadline is not None:
        # Every task must also end before its job's deadline, through the tail of its stage.
        latest = np.minimum(latest, deadline[job_of_task] - tail[flat.task_stage].astype(np.int64))
    if np.any(latest < earliest):
        reason = "a job cannot finish within the horizon/deadline even without resource limits"
        return Result("infeasible", "spacetime-cp", "cpsat", build_s=time.perf_counter() - started, message=reason)
    starts_var = [
        model.new_int_var(int(lo), int(hi), f"s{t}") for t, (lo, hi) in enumerate(zip(earliest, latest, strict=True))
    ]
    intervals = [model.new_fixed_size_interval_var(starts_var[t], int(task_duration[t]), f"i{t}")
                 for t in range(len(starts_var))]  # fmt: skip
    first_task = np.concatenate([[0], np.cumsum(flat.stage_tasks)])[:-1]

    # Stage ends: an expression for single-task stages, a variable >= every task end otherwise.
    stage_end: list[Any] = []
    for stage in range(flat.num_stages):
        tasks = range(int(first_task[stage]), int(first_task[stage] + flat.stage_tasks[stage]))
        d = int(scaled.duration[stage])
        if len(tasks) == 1:
            stage_end.append(starts_var[tasks[0]] + d)
            continue
        for earlier, later in itertools.pairwise(tasks):
            model.add(starts_var[earlier] <= starts_var[later])  # identical tasks: symmetry breaking
        lo = int(earliest[tasks[0]]) + d
        end = model.new_int_var(lo, max(lo, int(latest[tasks[0]]) + d), f"e{stage}")
        model.add(end >= starts_var[tasks[-1]] + d)  # the last task starts last, so ends last
        stage_end.append(end)
    for parent, child in flat.edges.tolist():
        for t in range(int(first_task[child]), int(first_task[child] + flat.stage_tasks[child])):
            model.add(starts_var[t] >= stage_end[parent])

    for r in range(scaled.capacity.size):
        use = np.flatnonzero((scaled.demand[flat.task_stage, r] > 0) & (task_duration > 0))
        if use.size == 0 or scaled.demand[flat.task_stage[use], r].sum() <= scaled.capacity[r]:
            continue  # this resource can never bind
        model.add_cumulative([intervals[t] for t in use], [int(scaled.demand[flat.task_stage[t], r]) for t in use],
                             int(scaled.capacity[r]))  # fmt: skip
        # Redundant: tasks needing more than half of a resource can never overlap one another, and a
        # no-overlap constraint over them propagates far more strongly than the cumulative alone.
        large = use[2 * scaled.demand[flat.task_stage[use], r] > scaled.capacity[r]]
        if large.size > 1:
            model.add_no_overlap([intervals[t] for t in large])

    has_child = np.zeros(flat.num_stages, dtype=bool)
    has_child[flat.edges[:, 0]] = True
    job_completion = []
    for k in range(len(instance.jobs)):
        sinks = np.flatnonzero((flat.stage_job == k) & ~has_child)
        lo = int(scaled.release[k] + job_length[k])
        hi = horizon if deadline is None else min(horizon, int(deadline[k]))
        completion = model.new_int_var(lo, max(lo, hi), f"C{k}")
        for stage in sinks.tolist():
            model.add(completion >= stage_end[stage])
        job_completion.append(completion)
    makespan = model.new_int_var(0, horizon, "M")
    for completion in job_completion:
        model.add(makespan >= completion)

    job_coef, makespan_coef = _objective_weights(flat, objective, alpha)
    unit, coef_exact = _integer_scale(np.concatenate([job_coef, [makespan_coef]]))
    int_job = np.round(job_coef / unit).astype(np.int64)
    int_makespan = round(makespan_coef / unit)
    model.minimize(sum(int(c) * v for c, v in zip(int_job, job_completion, strict=True) if c) + int_makespan * makespan)
    # objective (real) = tick * unit * cp_value / W - (weighted releases term)
    factor = scaled.tick * unit / float(flat.weight.sum())
    offset = -float(job_coef @ flat.release) / float(flat.weight.sum())
    if not coef_exact:
        notes.append("objective coefficients rounded to 1e-6")

    if hint is not None:
        for t, value in enumerate(hint.tolist()):
            model.add_hint(starts_var[t], int(value))

    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(float(time_limit) - (time.perf_counter() - started), 0.01)
    solver.parameters.num_workers = max(1, min(int(workers), 2))
    solver.parameters.random_seed = int(seed)
    # Measured on J30 with 2 workers: the overload checker and hard precedences in the cumulative
    # propagator roughly halve the hardest sampled instance (j3013_1: 6-12 s -> 4-5 s); adding
    # timetable edge finding made it slower (8-23 s).
    solver.parameters.use_overload_checker_in_cumulative = True
    solver.parameters.use_hard_precedences_in_cumulative = True
    build_s = time.perf_counter() - started
    solve_started = time.perf_counter()
    code = solver.solve(model)
    solve_s = time.perf_counter() - solve_started

    exact = scaled.time_exact and scaled.demand_exact and coef_exact
    status: Status
    starts_ticks: IntArray | None = None
    bound: float | None = None
    solver_objective: float | None = None
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        starts_ticks = np.array([solver.value(v) for v in starts_var], dtype=np.int64)
        solver_objective = solver.objective_value * factor + offset
        bound = solver.best_objective_bound * factor + offset if exact else None
        status = (
            "optimal"
            if code == cp_model.OPTIMAL and exact
            else ("feasible" if code == cp_model.OPTIMAL else "time_limit")
        )
    elif code == cp_model.INFEASIBLE:
        status = "infeasible"
        if not exact:
            notes.append("infeasible after conservative rounding; the unrounded instance may be feasible")
    elif hint is not None:  # no CP solution within the limit: fall back on the heuristic schedule
        starts_ticks = hint
        status = "time_limit"
        notes.append(f"CP-SAT found no solution in time; returning the {best_rule} list schedule")
    else:
        status = "time_limit" if time_limit is not None else "error"
        notes.append(f"CP-SAT status {solver.status_name(code)}")

    schedule = None
    if starts_ticks is not None:
        begin: FloatArray = starts_ticks.astype(np.float64) * scaled.tick
        schedule = Schedule(
            flat.stage_job[flat.task_stage],
            flat.stage_local[flat.task_stage],
            flat.task_index,
            begin,
            begin + flat.duration[flat.task_stage],  # true durations, so the checker sees them exactly
            fair_real,
        )
    return Result(
        status=status,
        method="spacetime-cp",
        backend="cpsat",
        bound=bound,
        build_s=build_s,
        solve_s=solve_s,
        solver_objective=solver_objective,
        message="; ".join(notes),
        schedule=schedule,
        extra={
            "objective_name": objective,
            "alpha": alpha,
            "tick": scaled.tick,
            "horizon": horizon * scaled.tick,
            "tasks_total": int(flat.task_stage.size),
            "heuristic": best_rule,
            "heuristic_objective": candidates[best_rule][0] if best_rule is not None else None,
            "cp_status": solver.status_name(code),
        },
    )
