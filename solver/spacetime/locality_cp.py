"""The exact yardstick for data locality: CP-SAT with per-machine durations (small instances).

Every task picks one machine it fits; its duration follows from the machine (the stage's duration times
the factor of its locality level there: ``models.locality``). Machines hold their capacity per resource at
every instant (one cumulative per machine and resource), stages are barriers, jobs start at their release.
The objective is the weighted average JCT (``avg-jct``) or the makespan. CP-SAT proves optimality on
small instances; on larger ones it returns its best schedule and its proven bound.

Durations, releases, demands and capacities must be whole numbers after scaling by ``10^p`` for some
``p <= MAX_DECIMALS`` (locality factors such as 1.3 times durations such as 10 are); otherwise the model
would round and optimality would not be exact, so it refuses. This model lives apart from
``solver.spacetime.cp`` (no fair caps, no warm starts or LNS): it is the yardstick of the locality study,
the method ``locality-cp`` (:func:`solve_locality_cp`; every job's fair completion time ``T_k`` is reported
beside it, not enforced) and the reference of ``benchmarks/sweeps/delay.toml``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fairpack.models.locality import factors, levels, task_blocks
from fairpack.models.result import Result, Schedule, Status
from fairpack.models.types import FloatArray, Instance, InstanceError, IntArray
from fairpack.solver import interrupt
from fairpack.solver.spacetime import sat
from fairpack.solver.spacetime.units import integer_scale, to_units

#: Largest power of ten the times and amounts may be scaled by to become whole numbers.
MAX_DECIMALS = 4
#: The most (task, machine) pairs the model holds: each is a literal and an optional interval, built in Python
#: before CP-SAT starts (and before its time limit counts), so a larger instance is refused up front.
MAX_PAIRS = 200_000


@dataclass(frozen=True)
class LocalityOptimum:
    """The yardstick's answer: a schedule (real times), its objective, CP-SAT's proven bound and status."""

    schedule: Schedule
    objective: float
    bound: float
    optimal: bool
    status: str
    solve_s: float


def _whole(values: FloatArray, what: str) -> tuple[IntArray, float]:
    """``values`` as integers in the coarsest unit ``10^-p`` (``p <= MAX_DECIMALS``) that makes them whole, by
    the rule of every integer model (:mod:`fairpack.solver.spacetime.units`); returns them and ``10^p``. Refused when no
    such unit exists: this model would round, and its optimum would no longer be exact."""
    unit, exact = integer_scale(values, decimals=MAX_DECIMALS)
    if not exact:
        raise InstanceError(f"{what} are not whole multiples of 10^-{MAX_DECIMALS}: locality-cp models them as "
                            "integers and would round (no longer exact); use spacetime-cp --placement servers "
                            "(which rounds its ticks and says so) or round them", "jobs")  # fmt: skip
    return to_units(values, unit)[0], round(1 / unit)


def _barriers(model: Any, instance: Instance, counts: IntArray, start: list[Any], end: list[Any], horizon: int) -> None:
    """Every task of a stage starts after every task of each parent stage ends."""
    first = np.concatenate([[0], np.cumsum(counts)])
    offset = np.concatenate([[0], np.cumsum([len(job.stages) for job in instance.jobs])])
    for k, job in enumerate(instance.jobs):
        for s, stage in enumerate(job.stages):
            g = int(offset[k] + s)
            for parent in stage.after:
                p = int(offset[k] + parent)
                stage_end = model.new_int_var(0, horizon, f"done{p}_{g}")
                model.add_max_equality(stage_end, end[first[p] : first[p + 1]])
                for t in range(first[g], first[g + 1]):
                    model.add(start[t] >= stage_end)


def locality_optimum(instance: Instance, objective: str = "avg-jct", time_limit: float = 30.0,
                     workers: int = 1, seed: int = 0) -> LocalityOptimum:  # fmt: skip
    """Solve ``instance`` exactly with per-machine durations (module docstring); CP-SAT must find a schedule."""
    found = _solve(instance, objective, time_limit, workers, seed)
    if found.schedule is None or found.bound is None:
        raise RuntimeError(f"CP-SAT found no schedule ({found.status})")
    return LocalityOptimum(found.schedule, found.objective, found.bound, found.optimal, found.status, found.solve_s)


@dataclass(frozen=True)
class _Found:
    """What CP-SAT returned: a schedule (None if it found none), its objective and bound in real units."""

    schedule: Schedule | None
    objective: float
    bound: float | None
    optimal: bool
    status: str
    solve_s: float
    build_s: float


def _check_size(tasks: int, machines: int) -> None:
    if tasks * machines > MAX_PAIRS:
        raise InstanceError(f"locality-cp gives every task a choice of every machine: {tasks:,} tasks x "
                            f"{machines:,} machines = {tasks * machines:,} pairs, above its limit of {MAX_PAIRS:,} "
                            "(spacetime-cp --placement servers groups identical machines; or use the delay or fair "
                            "policies)", "servers")  # fmt: skip


def _solve(instance: Instance, objective: str, time_limit: float | None, workers: int, seed: int) -> _Found:
    from ortools.sat.python import cp_model

    if objective not in ("avg-jct", "makespan"):
        raise ValueError(f"objective must be avg-jct or makespan, got {objective!r}")
    if not instance.jobs:
        raise InstanceError("the locality yardstick needs DAG jobs", "jobs")
    started = time.perf_counter()
    jobs = instance.jobs
    stages = [stage for job in jobs for stage in job.stages]
    stage_job = np.repeat(np.arange(len(jobs)), [len(job.stages) for job in jobs])
    counts = np.array([stage.tasks for stage in stages], dtype=np.int64)
    task_stage = np.repeat(np.arange(len(stages)), counts)
    task_index = np.arange(task_stage.size) - np.repeat(np.cumsum(counts) - counts, counts)
    machines = int(instance.counts.sum())
    _check_size(task_stage.size, machines)
    machine_class = instance.machine_class()
    capacity = instance.capacity[machine_class]
    demand = np.array([stage.demand for stage in stages]).reshape(len(stages), -1)
    # Real duration of every (task, machine): stage duration x locality factor there.
    blocks, _ = task_blocks(instance)
    grid_task, grid_machine = np.meshgrid(np.arange(task_stage.size), np.arange(machines), indexing="ij")
    level = levels(instance, blocks[grid_task], grid_machine)
    base = np.array([stage.duration for stage in stages])[task_stage]
    duration = base[:, None] * factors(instance, level)
    release = np.array([job.release for job in jobs])
    times, scale_time = _whole(np.concatenate([duration.ravel(), release]), "durations and releases")
    ticks, release_ticks = times[: duration.size].reshape(duration.shape), times[duration.size :]
    amounts, _ = _whole(np.concatenate([demand.ravel(), capacity.ravel()]), "demands and capacities")
    int_demand = amounts[: demand.size].reshape(demand.shape)
    int_capacity = amounts[demand.size :].reshape(capacity.shape)
    fits = np.all(demand[task_stage][:, None, :] <= capacity[None, :, :] + 1e-12, axis=2)
    if not fits.any(axis=1).all():
        raise InstanceError("a task fits no machine", "jobs")
    horizon = int(release_ticks.max(initial=0) + np.where(fits, ticks, 0).max(axis=1).sum())

    model = cp_model.CpModel()
    start = [model.new_int_var(int(release_ticks[stage_job[g]]), horizon, f"s{t}") for t, g in enumerate(task_stage)]
    end = [model.new_int_var(0, horizon, f"e{t}") for t in range(task_stage.size)]
    chosen: list[list[tuple[int, Any]]] = []
    per_machine: list[list[tuple[Any, int]]] = [[] for _ in range(machines)]  # (interval, task)
    for t in range(task_stage.size):
        options = []
        for m in np.flatnonzero(fits[t]).tolist():
            literal = model.new_bool_var(f"x{t}_{m}")
            interval = model.new_optional_fixed_size_interval_var(start[t], int(ticks[t, m]), literal, f"i{t}_{m}")
            model.add(end[t] == start[t] + int(ticks[t, m])).only_enforce_if(literal)
            options.append((m, literal))
            per_machine[m].append((interval, t))
        model.add_exactly_one([literal for _, literal in options])
        chosen.append(options)
    for m, entries in enumerate(per_machine):
        for r in range(len(instance.resources)):
            used = [(iv, int(int_demand[task_stage[t], r])) for iv, t in entries if int_demand[task_stage[t], r] > 0]
            if used:
                model.add_cumulative([iv for iv, _ in used], [d for _, d in used], int(int_capacity[m, r]))
    offset = np.concatenate([[0], np.cumsum([len(job.stages) for job in jobs])])
    _barriers(model, instance, counts, start, end, horizon)
    completion = [model.new_int_var(0, horizon, f"c{k}") for k in range(len(jobs))]
    task_job = stage_job[task_stage]
    for k in range(len(jobs)):
        model.add_max_equality(completion[k], [end[t] for t in np.flatnonzero(task_job == k).tolist()])
    weights = np.array([job.weight for job in jobs])
    int_weights, _ = _whole(weights, "job weights")
    if objective == "makespan":
        makespan = model.new_int_var(0, horizon, "makespan")
        model.add_max_equality(makespan, completion)
        model.minimize(makespan)
    else:
        model.minimize(sum(int(w) * c for w, c in zip(int_weights.tolist(), completion, strict=True)))
    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(float(time_limit) - (time.perf_counter() - started), 0.0)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    build_s = time.perf_counter() - started
    status = sat.run(solver, model)
    name = solver.status_name(status)
    total_weight = float(weights.sum())
    assert total_weight > 0

    def real(value: float) -> float:
        if objective == "makespan":
            return value / scale_time
        return (value / scale_time - float(int_weights @ release_ticks) / scale_time) / float(int_weights.sum())

    solve_s = time.perf_counter() - started - build_s
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        bound = real(solver.best_objective_bound) if status == cp_model.UNKNOWN else None
        return _Found(None, math.nan, bound, False, name, solve_s, build_s)
    begin = np.array([solver.value(v) for v in start], dtype=np.int64)
    machine = np.array([next(m for m, lit in options if solver.boolean_value(lit)) for options in chosen])
    finish = begin + ticks[np.arange(task_stage.size), machine]
    first_machine = np.concatenate([[0], np.cumsum(instance.counts)])[:-1]
    server = machine_class[machine]
    schedule = Schedule(stage_job[task_stage], task_stage - offset[stage_job[task_stage]], task_index,
                        begin / scale_time, finish / scale_time, None, server,
                        machine - first_machine[server])  # fmt: skip
    return _Found(schedule, real(solver.objective_value), real(solver.best_objective_bound),
                  status == cp_model.OPTIMAL, name, solve_s, build_s)  # fmt: skip


def solve_locality_cp(instance: Instance, objective: str, time_limit: float | None = None, workers: int = 1,
                      seed: int = 0) -> Result:  # fmt: skip
    """The yardstick as the method ``locality-cp``: a ``Result`` with the schedule (every task on a machine),
    CP-SAT's proven bound, and every job's fair completion time ``T_k`` reported (never enforced: the
    yardstick has no fair caps).

    Status ``optimal`` when CP-SAT proves it, ``time_limit`` with the incumbent (or none) when the limit came
    first, ``infeasible`` when no schedule exists (a task fits no machine is refused before, as bad input).
    """
    from fairpack.solver.spacetime.fair import fair_share, share_deadline, unfinished

    started = time.perf_counter()
    deadline = None if time_limit is None else started + float(time_limit)
    share = fair_share(instance, "servers", None, share_deadline("report", deadline))
    fair_s = time.perf_counter() - started
    left = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
    found = _solve(instance, objective, left, workers, seed)
    notes = [] if share is not None else [f"T_k not reported: the fair-share schedule {unfinished()}"]
    schedule = found.schedule
    if schedule is not None and share is not None:
        schedule = replace(schedule, fair_completion=np.asarray(share.completion, dtype=np.float64))
    status: Status
    if found.optimal:
        status = "optimal"
    elif found.status == "INFEASIBLE":
        status = "infeasible"
    elif found.status in ("FEASIBLE", "UNKNOWN"):
        status = "time_limit"
        why = "was interrupted" if interrupt.requested() else "stopped at the time limit"
        notes.append(f"CP-SAT {why} ({found.status.lower()})")
    else:
        status = "error"
        notes.append(f"CP-SAT returned {found.status}")
    return Result(status, "locality-cp", "cpsat", bound=found.bound, build_s=fair_s + found.build_s,
                  solve_s=found.solve_s, solver_objective=None if schedule is None else found.objective,
                  schedule=schedule, message="; ".join(notes),
                  extra={"placement": "servers", "fair_cap": False, "objective_name": objective,
                         "cp_status": found.status})  # fmt: skip

