"""``spacetime-cp``: exact space-time packing of DAG jobs with OR-Tools CP-SAT, pooled or per machine.

Model
-----
* One fixed-size interval per task; the ``n`` identical tasks of a stage are ordered by start
  (``start[k] <= start[k+1]``), which removes ``n!`` symmetric copies of every schedule.
* One ``add_cumulative`` per resource over the pooled capacity (``Instance.total_capacity``); a resource
  whose total demand fits in its capacity can never bind and gets none.
* ``placement='servers'`` (exact per machine, never an aggregate): every task runs on one machine it fits.
  A task with several possible machines gets a presence literal and an optional interval (sharing its
  start variable) per machine, exactly one literal true; every machine gets one cumulative per resource
  over the intervals that may land on it (and the no-overlap below). The pooled cumulative stays as a
  redundant constraint. Identical machines of a class are symmetric: the ``q``-th task (flat order)
  fitting a class may only use that class's machines ``0 .. q`` (relabelling machines by their first
  task reaches this from any schedule), so a 10-machine class costs far fewer literals than
  ``tasks x 10``. The model grows with tasks x machines; beyond a few hundred of each, expect time limits.
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

Horizon: for ``makespan`` it is the makespan of the best warm start -- two serial schedule-generation
(SSGS) list schedules and the event-driven heuristics (:mod:`solver.spacetime.warmstart`), which also
warm-start CP-SAT through hints; for ``avg-jct`` and ``mix`` it is ``max release + sum of durations``,
valid because some optimal schedule is semi-active (every task starts at its release or at another
task's end) and so ends by then. Every warm start is built per machine for ``servers`` (a pooled
schedule may overload a machine), so the horizon never cuts off a per-machine optimum; its machines are
relabelled by first task to match the symmetry domains before they become hints.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from models.dag import adjacency, longest_paths, topological_order
from models.result import SCHEDULE_OBJECTIVES, Result, Schedule, Status
from models.types import FloatArray, Instance, InstanceError, IntArray
from solver.spacetime.model import placement_fits
from solver.spacetime.warmstart import WARM_HEURISTICS, heuristic_starts, priority_rules, serial_sgs

#: Largest power of ten tried when turning fractional data into integers.
MAX_DECIMALS = 6


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
        return longest_paths(*adjacency(self.num_stages, self.edges.tolist()), duration)


@dataclass(frozen=True)
class _Scaled:
    tick: float
    time_exact: bool
    duration: IntArray  # per stage, ticks
    release: IntArray  # per job, ticks
    demand: IntArray  # per stage x resource
    capacity: IntArray  # pooled: the sum of the machines' capacities
    demand_exact: bool
    machine_capacity: IntArray  # (machines, resources); the pool is one machine
    machine_class: IntArray  # (machines,): server class, -1 for the pool
    machine_number: IntArray  # (machines,): number within the class, -1 for the pool


def _scale(instance: Instance, flat: FlatTasks, placement: str) -> _Scaled:
    times = np.concatenate([flat.duration, flat.release])
    tick, time_exact = _integer_scale(times, instance.time_slot)
    duration = np.ceil(flat.duration / tick - 1e-9).astype(np.int64)
    release = np.ceil(flat.release / tick - 1e-9).astype(np.int64)
    if placement == "servers":
        machine_class = instance.machine_class().astype(np.int64)
        machine_number = np.arange(machine_class.size) - np.searchsorted(machine_class, machine_class)
        capacity = instance.capacity[machine_class]
    else:
        machine_class = machine_number = np.full(1, -1, dtype=np.int64)
        capacity = instance.total_capacity[None, :]
    demand = np.zeros(flat.demand.shape, dtype=np.int64)
    cap = np.zeros(capacity.shape, dtype=np.int64)
    demand_exact = True
    for r in range(capacity.shape[1]):
        unit, exact = _integer_scale(np.concatenate([flat.demand[:, r], capacity[:, r]]))
        demand_exact &= exact
        # Rounding demands up and capacities down keeps every CP-feasible schedule truly feasible.
        demand[:, r] = np.ceil(flat.demand[:, r] / unit - 1e-9).astype(np.int64)
        cap[:, r] = np.floor(capacity[:, r] / unit + 1e-9).astype(np.int64)
    return _Scaled(tick, time_exact, duration, release, demand, cap.sum(axis=0), demand_exact, cap, machine_class,
                   machine_number)  # fmt: skip


def order_machines_by_first_task(machine: IntArray, machine_class: IntArray) -> IntArray:
    """Relabel identical machines so that, within every class, machines are numbered in the order of
    their first task (flat order; unused machines last): the labelling the CP symmetry domains keep."""
    n_machines = machine_class.size
    first = np.full(n_machines, machine.size, dtype=np.int64)
    np.minimum.at(first, machine, np.arange(machine.size))
    order = np.lexsort((np.arange(n_machines), first, machine_class))  # machines are numbered class by class
    relabel = np.empty(n_machines, dtype=np.int64)
    relabel[order] = np.arange(n_machines)
    return relabel[machine]


def _objective_weights(flat: FlatTasks, objective: str, alpha: float) -> tuple[FloatArray, float]:
    """Coefficients of (C_k per job, makespan) in ``W x objective`` where ``W = sum of weights``."""
    total = float(flat.weight.sum())
    if objective == "makespan":
        return np.zeros_like(flat.weight), total
    if objective == "avg-jct":
        return flat.weight.copy(), 0.0
    return alpha * flat.weight, (1 - alpha) * total


# Up to this many tasks every simulated heuristic is a candidate hint: that is what keeps CP-SAT at least as
# good as each of them (5,669 tasks: CP-SAT found no solution of its own in 20 s, so the result is the
# hint). Beyond it all four cost more than they save (about 50 s on a 36,000-task TPC-H mix, Carbyne alone
# 330 s on 190,000 tasks), so only SJF, the cheapest (3.5-8 s on 45,000 tasks) and on TPC-H mixes the
# best of them for avg JCT, is run; without it a 45,000-task mix fell back on a list schedule 39% worse.
HEURISTIC_HINT_TASKS = 40_000
LARGE_HINT_HEURISTICS = ("sjf",)


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


def _meets(start: IntArray | None, flat: FlatTasks, scaled: _Scaled, deadline: IntArray | None) -> bool:
    if start is None:
        return False
    if deadline is None:
        return True
    completion = scaled.release.copy()
    np.maximum.at(completion, flat.stage_job[flat.task_stage], start + scaled.duration[flat.task_stage])
    return bool(np.all(completion <= deadline))


def solve_spacetime_cp(  # noqa: C901  (split into named steps on the psplib-cp branch)
    instance: Instance,
    objective: str | None = None,
    time_limit: float | None = None,
    alpha: float = 0.5,
    fair_completion: dict[str, float] | None = None,
    workers: int = 2,
    seed: int = 0,
    placement: str = "pooled",
) -> Result:
    """Pack all tasks of all DAG jobs in space and time with CP-SAT (see the module docstring).

    Parameters
    ----------
    instance : Instance
        Needs ``jobs``; capacity is the pooled cluster total, or every machine's with ``servers``.
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
    placement : {'pooled', 'servers'}
        The pooled cluster, or every task on one machine it fits (exact per machine).

    Returns
    -------
    Result
        ``schedule`` with real start/end times (and server and machine per task for ``servers``),
        ``solver_objective`` and ``bound`` in real units (the
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
    placement_fits(instance, placement)  # a task that fits no machine is an input error, named
    flat = FlatTasks.of(instance)
    scaled = _scale(instance, flat, placement)
    fair_real, deadline = _fair_ticks(instance, fair_completion, scaled.tick)
    notes = []
    if not scaled.time_exact:
        notes.append(f"durations/releases rounded up to ticks of {scaled.tick:g}: optimality not proven")
    if not scaled.demand_exact:
        notes.append("demands rounded up / capacities down to 1e-6: optimality not proven")
    extra: dict[str, Any] = {"placement": placement}
    # (stages, machines): one task fits the machine, in the scaled integers the model sees.
    fits = np.all(scaled.demand[:, None, :] <= scaled.machine_capacity[None, :, :], axis=2)
    if not np.all(fits.any(axis=1)):
        reason = "after conservative rounding some task fits no machine; the unrounded instance may be feasible"
        return Result("infeasible", "spacetime-cp", "cpsat", build_s=time.perf_counter() - started, message=reason,
                      extra=extra)  # fmt: skip

    # Warm start: the best of two list schedules (critical path first; whole jobs shortest-first) and the
    # event-driven heuristics, all feasible per machine (the pool is one machine).
    head, tail = flat.heads_tails(scaled.duration)
    job_length = np.zeros(len(instance.jobs))
    np.maximum.at(job_length, flat.stage_job, tail)
    found: dict[str, tuple[IntArray, IntArray] | None] = {
        rule: serial_sgs(flat.stage_job, flat.stage_tasks, scaled.duration, scaled.demand.astype(np.float64),
                         scaled.release, flat.edges, priority, scaled.machine_capacity.astype(np.float64), fits)
        for rule, priority in priority_rules(flat.stage_job, tail.astype(np.int64), scaled.release, flat.weight).items()
    }  # fmt: skip
    if scaled.time_exact and scaled.demand_exact:
        names = WARM_HEURISTICS if flat.task_stage.size <= HEURISTIC_HINT_TASKS else LARGE_HINT_HEURISTICS
        found.update(heuristic_starts(instance, scaled.tick, placement, names))
    candidates = {}
    for rule, start_machine in found.items():
        if start_machine is not None and _meets(start_machine[0], flat, scaled, deadline):
            candidates[rule] = (_value(start_machine[0], flat, scaled, objective, alpha), *start_machine)
    best_rule = min(candidates, key=lambda rule: candidates[rule][0]) if candidates else None
    hint = candidates[best_rule][1] if best_rule is not None else None
    hint_machine = None
    if best_rule is not None:
        hint_machine = order_machines_by_first_task(candidates[best_rule][2], scaled.machine_class)

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

    busy = np.flatnonzero(task_duration > 0)
    # Pooled capacity: the constraint itself, or for servers a redundant one (implied by the machines)
    # that gives CP-SAT the aggregate view for its bounds.
    _add_resource_limits(model, [intervals[t] for t in busy], scaled.demand[flat.task_stage[busy]], scaled.capacity)
    task_machine: list[list[tuple[int, Any]]] = []  # per task: (machine, presence literal or None)
    if placement == "servers":
        task_machine = _machine_choices(model, flat, scaled, fits, starts_var, intervals, task_duration)
        if hint_machine is not None:
            for t, choices in enumerate(task_machine):
                for option, literal in choices:
                    if literal is not None:
                        model.add_hint(literal, bool(hint_machine[t] == option))

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
    machine: IntArray | None = None
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        starts_ticks = np.array([solver.value(v) for v in starts_var], dtype=np.int64)
        if task_machine:
            machine = np.array([next(m for m, lit in choices if lit is None or solver.boolean_value(lit))
                                for choices in task_machine], dtype=np.int64)  # fmt: skip
        solver_objective = solver.objective_value * factor + offset
        bound = solver.best_objective_bound * factor + offset if exact else None
        status = (
            "optimal"
            if code == cp_model.OPTIMAL and exact
            else ("feasible" if code == cp_model.OPTIMAL else "time_limit")
        )
        if hint is not None and best_rule is not None and code != cp_model.OPTIMAL:
            # CP-SAT may stop before it has repaired or even loaded the hint; the warm start stays the floor.
            found_value = _value(starts_ticks, flat, scaled, objective, alpha)
            if candidates[best_rule][0] < found_value - 1e-9:
                notes.append(f"CP-SAT's incumbent ({found_value:.6g}) is worse than the {best_rule} warm start; "
                             "returning the warm start")  # fmt: skip
                starts_ticks, machine, solver_objective = hint, hint_machine, candidates[best_rule][0]
    elif code == cp_model.INFEASIBLE:
        status = "infeasible"
        if not exact:
            notes.append("infeasible after conservative rounding; the unrounded instance may be feasible")
    elif hint is not None:  # no CP solution within the limit: fall back on the heuristic schedule
        starts_ticks, machine = hint, hint_machine
        status = "time_limit"
        notes.append(f"CP-SAT found no solution in time; returning the {best_rule} warm start")
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
            *((scaled.machine_class[machine], scaled.machine_number[machine]) if machine is not None and task_machine
              else (None, None)),
        )  # fmt: skip
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
            **extra,
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


def _add_resource_limits(model: Any, intervals: list[Any], demand: IntArray, capacity: IntArray) -> None:
    """One cumulative per resource that can bind (the items' total demand exceeds ``capacity``).

    Redundant: items needing more than half of a resource can never overlap one another, and a
    no-overlap constraint over them propagates far more strongly than the cumulative alone.
    """
    for r in range(capacity.size):
        use = np.flatnonzero(demand[:, r] > 0)
        if use.size == 0 or demand[use, r].sum() <= capacity[r]:
            continue  # this resource can never bind
        model.add_cumulative([intervals[i] for i in use], [int(demand[i, r]) for i in use], int(capacity[r]))
        large = use[2 * demand[use, r] > capacity[r]]
        if large.size > 1:
            model.add_no_overlap([intervals[i] for i in large])


def _machine_choices(
    model: Any,
    flat: FlatTasks,
    scaled: _Scaled,
    fits: npt.NDArray[np.bool_],
    starts_var: list[Any],
    intervals: list[Any],
    task_duration: IntArray,
) -> list[list[tuple[int, Any]]]:
    """Per-machine placement: every task on exactly one machine it fits; per-machine resource limits.

    A task with several possible machines gets one presence literal and one optional interval (sharing
    its start) per machine, and exactly one literal is true; a task with one possible machine uses its
    own interval. Symmetry: the ``q``-th task (flat order) that fits a class may only use that class's
    machines ``0 .. q`` -- relabelling a class's machines by their first task
    (:func:`order_machines_by_first_task`) maps every schedule to one that does. Tasks that use no
    capacity (zero duration or demand) simply take their first possible machine.

    Returns, per task, its ``(machine, literal)`` choices (``literal`` None when the choice is forced).
    """
    n_classes = int(scaled.machine_class.max(initial=-1)) + 1
    class_first = np.searchsorted(scaled.machine_class, np.arange(n_classes))
    task_fits = fits[flat.task_stage]  # (tasks, machines)
    fits_class = task_fits[:, class_first]  # (tasks, classes)
    earlier: IntArray = np.cumsum(fits_class, axis=0) - fits_class  # tasks before this one that fit the class
    allowed = task_fits & (scaled.machine_number[None, :] <= earlier[:, scaled.machine_class])
    demand = scaled.demand[flat.task_stage]
    uses = (task_duration > 0) & np.any(demand > 0, axis=1)
    per_machine: list[list[tuple[Any, int]]] = [[] for _ in range(scaled.machine_class.size)]
    choices: list[list[tuple[int, Any]]] = []
    for t in range(task_duration.size):
        machines = np.flatnonzero(allowed[t]).tolist()
        if len(machines) == 1 or not uses[t]:
            choices.append([(machines[0], None)])
            if uses[t]:
                per_machine[machines[0]].append((intervals[t], t))
            continue
        row = []
        for m in machines:
            literal = model.new_bool_var(f"p{t}_{m}")
            interval = model.new_optional_fixed_size_interval_var(starts_var[t], int(task_duration[t]), literal,
                                                                   f"o{t}_{m}")  # fmt: skip
            per_machine[m].append((interval, t))
            row.append((m, literal))
        model.add_exactly_one([literal for _, literal in row])
        choices.append(row)
    for m, items in enumerate(per_machine):
        if items:
            tasks = [t for _, t in items]
            _add_resource_limits(model, [iv for iv, _ in items], demand[tasks], scaled.machine_capacity[m])
    return choices
