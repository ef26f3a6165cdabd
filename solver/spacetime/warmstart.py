"""Warm starts for the exact space-time methods (``spacetime`` MILP and ``spacetime-cp``), shared by both.

* :func:`serial_sgs` -- the serial schedule-generation scheme (the classic RCPSP list heuristic) on integer
  time steps (MILP slots or CP ticks), placing every task on a *machine*: the pooled cluster is one machine
  holding the whole capacity, ``placement='servers'`` lists every machine. The schedule is therefore
  feasible per machine, never only in aggregate, and is a valid warm start, horizon and bound for either
  placement.
* :func:`priority_rules` -- the two stage orders tried: longest remaining critical path first, and whole
  jobs shortest-first (by release + critical path over weight).
* :func:`heuristic_starts` -- the event-driven heuristics (``carbyne``, ``sjf``, ``drf-dag``, ``tetris``)
  as start steps and machines, when their starts fall on whole steps (:func:`schedule_starts` converts one
  simulated schedule, such as the fair-share witness of :mod:`fairpack.solver.spacetime.fair`).

Tasks are numbered flat, stage by stage (global stage order, jobs in instance order), and within a stage by
start time: the CP model orders the identical tasks of a stage by start, and the MILP does not care.
"""

from __future__ import annotations

import time

import numpy as np

from fairpack.models.dag import adjacency, reachability
from fairpack.models.result import Schedule
from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray
from fairpack.solver import interrupt

#: The list heuristic keeps a (steps x machines x resources) usage profile; larger instances skip it.
MAX_PROFILE_CELLS = 20_000_000
#: Most steps a start converted by :func:`schedule_starts` may lie at (whole in float64 up to 2**53).
MAX_STEPS = 2**53
#: Event-driven heuristics tried as warm starts.
WARM_HEURISTICS = ("carbyne", "sjf", "drf-dag", "tetris", "drf-strict")


def serial_sgs(
    stage_job: IntArray,
    tasks: IntArray,
    duration: IntArray,
    demand: FloatArray,
    release: IntArray,
    edges: IntArray,
    priority: FloatArray,
    capacity: FloatArray,
    fits: BoolArray | None = None,
    deadline: float | None = None,
) -> tuple[IntArray, IntArray] | None:
    """Serial list scheduling on integer steps: start step and machine of every task (flat order).

    Repeatedly takes the eligible stage (all parent stages scheduled) with the smallest ``priority`` and
    places its tasks one by one at the earliest step, from its job's release and its parents' last end,
    where some machine that fits the task has room for its whole duration (ties: the lowest machine).

    Parameters
    ----------
    stage_job, tasks, duration : int arrays, shape (stages,)
        Job of every stage, its task count and its duration in steps.
    demand : array (stages, resources)
        Per-task demand (integers for CP ticks, reals for MILP slots; compared with a 1e-9 slack).
    release : int array (jobs,)
        Release step of every job.
    edges : int array (edges, 2)
        ``(parent stage, child stage)`` barriers.
    priority : array (stages,)
        Smaller goes first among eligible stages.
    capacity : array (machines, resources)
        Capacity of every machine (one row for the pooled cluster).
    fits : bool array (stages, machines), optional
        Machines one task of a stage may use (default: where its demand fits the capacity).
    deadline : float, optional
        A ``time.perf_counter()`` time after which it gives up (tens of thousands of tasks take seconds).

    Returns
    -------
    ``(start, machine)`` int arrays in flat task order, or ``None`` if the profile would exceed
    ``MAX_PROFILE_CELLS``, a task fits no machine or the deadline passed.
    """
    n_machines, n_res = capacity.shape
    limit = capacity * (1 + 1e-9) + 1e-9
    if fits is None:
        fits = np.all(demand[:, None, :] <= limit[None, :, :], axis=2)
    if not np.all(fits.any(axis=1)):
        return None
    # Every task one after another after the last release always fits, so the profile never runs out.
    span = int(release.max(initial=0) + (duration * tasks).sum() + duration.max(initial=0) + 1)
    if span * n_machines * max(n_res, 1) > MAX_PROFILE_CELLS:
        return None
    usage = np.zeros((span, n_machines, n_res))
    first = np.concatenate([[0], np.cumsum(tasks)])[:-1]
    starts = np.zeros(int(tasks.sum()), dtype=np.int64)
    machines = np.zeros_like(starts)
    stage_end = np.zeros(tasks.size, dtype=np.int64)
    parents: list[list[int]] = [[] for _ in range(tasks.size)]
    children: list[list[int]] = [[] for _ in range(tasks.size)]
    for parent, child in edges.tolist():
        parents[child].append(parent)
        children[parent].append(child)
    missing = [len(p) for p in parents]
    eligible = {s for s in range(tasks.size) if not missing[s]}
    while eligible:
        if deadline is not None and (interrupt.requested() or time.perf_counter() > deadline):
            return None
        stage = min(eligible, key=lambda s: (priority[s], s))
        eligible.remove(stage)
        earliest = max([int(release[stage_job[stage]])] + [int(stage_end[p]) for p in parents[stage]])
        d, need = int(duration[stage]), demand[stage]
        fitting = np.flatnonzero(fits[stage])
        end = earliest
        for k in range(int(tasks[stage])):
            t, machine = earliest, int(fitting[0])
            if d > 0 and np.any(need > 0):
                t, machine = _earliest_fit(usage, limit, need, d, earliest, fitting)
                usage[t : t + d, machine] += need
                # The profile only fills up, so the stage's next (identical) task cannot start earlier.
                earliest = t
            starts[first[stage] + k] = t
            machines[first[stage] + k] = machine
            end = max(end, t + d)
        stage_end[stage] = end
        for child in children[stage]:
            missing[child] -= 1
            if not missing[child]:
                eligible.add(child)
    return starts, machines


def _earliest_fit(
    usage: FloatArray, limit: FloatArray, need: FloatArray, duration: int, earliest: int, fitting: IntArray
) -> tuple[int, int]:
    """Earliest step from ``earliest`` at which one of the ``fitting`` machines has room for ``need`` during
    ``duration`` steps, and the lowest such machine. The profile is scanned in windows that double, so a
    task that fits soon costs a short scan instead of one over the whole horizon."""
    span = usage.shape[0]
    window = max(4 * duration, 64)
    while True:
        stop = min(span, earliest + window + duration)
        room = np.all(usage[earliest:stop, fitting] + need <= limit[fitting], axis=2)  # (steps, machines)
        blocked = np.concatenate([np.zeros((1, fitting.size), dtype=np.int64), np.cumsum(~room, axis=0)])
        free = (blocked[duration:] - blocked[:-duration]) == 0
        if free.any():
            first_free = np.where(free.any(axis=0), free.argmax(axis=0), np.iinfo(np.int64).max)
            choice = int(np.argmin(first_free))
            return earliest + int(first_free[choice]), int(fitting[choice])
        if stop == span:  # cannot happen: the profile is long enough for every task one after another
            raise RuntimeError("serial_sgs: the task fits nowhere before the end of the profile")
        # Nothing in this window: start the next one where a fit could still begin (the windows overlap
        # by the task's duration, so no start is skipped).
        earliest, window = stop - duration + 1, 2 * window


def priority_rules(stage_job: IntArray, tail: IntArray, release: IntArray, weight: FloatArray) -> dict[str, FloatArray]:
    """Stage priorities for :func:`serial_sgs`: ``critical-path`` and ``shortest-job`` (smaller first)."""
    tail_f = tail.astype(np.float64)
    length = np.zeros(weight.size)
    np.maximum.at(length, stage_job, tail_f)
    rank = np.argsort(np.argsort((release + length) / weight, kind="stable"), kind="stable")
    return {"critical-path": -tail_f, "shortest-job": rank[stage_job] * (tail_f.max(initial=0) + 1) - tail_f}


def heuristic_starts(
    instance: Instance,
    step: float,
    placement: str = "pooled",
    names: tuple[str, ...] = WARM_HEURISTICS,
    deadline: float | None = None,
) -> dict[str, tuple[IntArray, IntArray]]:
    """Start steps and machines (flat task order) of the event-driven heuristics' schedules.

    Only schedules whose starts are whole multiples of ``step`` are returned. Machines are numbered
    globally (classes in order, then the number within the class; ``0`` for the pooled cluster). Their
    schedules are often better than the list schedules on multi-job mixes (Carbyne, SJF). A heuristic
    still running at ``deadline`` (a ``time.perf_counter()`` time) is stopped, and the rest are skipped.
    """
    from fairpack.solver.sim.runs import run_policy
    from fairpack.solver.spacetime.fair import OutOfTime, watched

    found: dict[str, tuple[IntArray, IntArray]] = {}
    for name in names:
        try:
            schedule, _ = run_policy(instance, name, placement=placement, observers=watched(deadline))
        except OutOfTime:
            break
        if interrupt.requested():  # the simulation stopped part way (solver.interrupt): no schedule of every task
            break
        starts = schedule_starts(instance, schedule, step)
        if starts is not None:
            found[name] = starts
    return found


def schedule_starts(instance: Instance, schedule: Schedule, step: float) -> tuple[IntArray, IntArray] | None:
    """A simulated schedule as start steps and machines in flat task order (None unless every start is a
    whole multiple of ``step``). Machines are numbered globally, ``0`` for the pooled cluster."""
    counts = [len(job.stages) for job in instance.jobs]
    offset = np.concatenate([[0], np.cumsum(counts)])[:-1].astype(np.int64)
    machine_offset = np.concatenate([[0], np.cumsum(instance.counts)])[:-1]
    with np.errstate(over="ignore"):  # a start of 1e15 in steps of 1e-300 is inf steps: refused just below
        steps = schedule.start / step
    # Whole steps only, and only as many as an integer holds exactly (inf steps matched np.round(inf) and
    # were cast to garbage, with a RuntimeWarning).
    if not (np.all(np.abs(steps) <= MAX_STEPS) and np.allclose(steps, np.round(steps), atol=1e-6)):
        return None
    # Sorted by global stage, then start: position in this order is the flat task number.
    order = np.lexsort((steps, offset[schedule.job] + schedule.stage))
    starts = np.round(steps[order]).astype(np.int64)
    machines = np.zeros_like(starts)
    if schedule.server is not None and schedule.machine is not None:
        machines = machine_offset[schedule.server[order]] + schedule.machine[order]
    return starts, machines



#: Above this many stages the transitive successor counts (a stages x stages matrix) are skipped.
MAX_SUCCESSOR_STAGES = 2_000


def more_priority_rules(num_stages: int, edges: IntArray, duration: IntArray, tail: IntArray) -> dict[str, FloatArray]:
    """Three more classic RCPSP orders for :func:`serial_sgs` (smaller first), beside :func:`priority_rules`.

    * ``latest-finish``: the latest finish time (the horizon minus what must follow the stage's end);
    * ``rank-weight``: the greatest duration plus the durations of the direct successors (GRPW);
    * ``most-successors``: the most stages that (transitively) wait for this one, ties by critical path
      (skipped above ``MAX_SUCCESSOR_STAGES`` stages).
    """
    tail_f = tail.astype(np.float64)
    weight = duration.astype(np.float64).copy()
    np.add.at(weight, edges[:, 0], duration[edges[:, 1]].astype(np.float64))
    rules = {"latest-finish": -(tail_f - duration), "rank-weight": -weight}
    if num_stages <= MAX_SUCCESSOR_STAGES:
        below = reachability(*adjacency(num_stages, edges.tolist()))
        rules["most-successors"] = -below.sum(axis=1) - tail_f / (tail_f.max(initial=0) + 1)
    return rules


def justify(
    stage_job: IntArray,
    tasks: IntArray,
    duration: IntArray,
    demand: FloatArray,
    release: IntArray,
    edges: IntArray,
    capacity: FloatArray,
    fits: BoolArray | None,
    start: IntArray,
    rounds: int = 3,
    deadline: float | None = None,
) -> tuple[IntArray, IntArray] | None:
    """Forward-backward improvement (justification) of a schedule: the best forward ``(start, machine)``
    found by makespan, or None when no pass improved on ``start``.

    A backward pass schedules the stages on the reversed DAG, latest-finishing first, as late as they can
    go (as early as they can in reversed time); a forward pass then schedules them in the order of their
    backward starts, as early as they can go, releases included. Both are :func:`serial_sgs` passes, so the
    result is feasible per machine like any of its schedules. Passes repeat while the makespan shrinks (and
    stop at ``deadline``, a ``time.perf_counter()`` time).
    """
    stage_of = np.repeat(np.arange(tasks.size), tasks)
    reverse = edges[:, ::-1].copy()
    no_release = np.zeros_like(release)
    best: tuple[IntArray, IntArray] | None = None
    best_span = int((start + duration[stage_of]).max(initial=0))
    current = start
    for _ in range(rounds):
        finish = np.zeros(tasks.size, dtype=np.int64)
        np.maximum.at(finish, stage_of, current + duration[stage_of])
        backward = serial_sgs(stage_job, tasks, duration, demand, no_release, reverse, -finish.astype(np.float64),
                              capacity, fits, deadline)  # fmt: skip
        if backward is None:
            break
        back_end = np.zeros(tasks.size, dtype=np.int64)
        np.maximum.at(back_end, stage_of, backward[0] + duration[stage_of])
        # A stage's real start mirrors its backward end: the later it ends there, the earlier it goes here.
        forward = serial_sgs(stage_job, tasks, duration, demand, release, edges, -back_end.astype(np.float64),
                             capacity, fits, deadline)  # fmt: skip
        if forward is None:
            break
        span = int((forward[0] + duration[stage_of]).max(initial=0))
        if span >= best_span:
            break
        best, best_span, current = forward, span, forward[0]
    return best
