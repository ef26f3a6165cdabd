"""``spacetime-cp``: exact space-time packing of DAG jobs with OR-Tools CP-SAT, pooled or per machine.

Model (:class:`SpacetimeCp`, built in named steps: ``variables``, ``constraints``, ``objective``, ``hint``)
----------------------------------------------------------------------------------------------------
* One fixed-size interval per task; the ``n`` identical tasks of a stage are ordered by start
  (``start[k] <= start[k+1]``), which removes ``n!`` symmetric copies of every schedule.
* One ``add_cumulative`` per resource over the pooled capacity (``Instance.total_capacity``); a resource
  whose total demand fits in its capacity can never bind and gets none. For ``makespan`` the pooled
  cumulatives also hold an interval from the makespan to the horizon that uses the whole capacity, so
  the cumulative's energy reasoning pushes the makespan up directly (OR-Tools' RCPSP sample does this).
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
* Releases and critical paths bound the start domains; a job's completion ``C_k >=`` its sink stages'
  ends, and ``C_k <= T_k`` when fair completion times are given (``fair_completion``, job name -> T_k).
* Objectives: ``makespan`` (default for a single job), ``avg-jct`` (default for several jobs; weighted
  sum of ``C_k - r_k``), ``mix`` = ``alpha * avg JCT + (1 - alpha) * makespan``.

Search, within one time budget for the whole call (build, warm start and solve)
-------------------------------------------------------------------------------
1. Warm start: list schedules (serial SGS) under five priority rules, each improved by forward-backward
   justification, and the event-driven heuristics (:mod:`fairpack.solver.spacetime.warmstart`); every candidate is
   checked in ticks, the best becomes the hint and, for ``makespan``, the horizon.
2. CP-SAT on the whole model (a share of the budget when LNS follows; the whole budget otherwise).
3. If not proven optimal: large neighbourhood search (:mod:`fairpack.solver.spacetime.lns`) from the incumbent.
4. Proof: CP-SAT on the whole model again, restricted to objectives better than the incumbent; if that is
   infeasible, the incumbent is optimal. The bound is the best either full solve proved.

Integer scaling (CP-SAT is integral)
------------------------------------
* Time: the tick is ``instance.time_slot / 10**p`` for the smallest ``p <= 6`` that makes every duration
  and release a whole number of ticks, up to a relative ``1e-9`` (float noise such as ``1.000000001`` is
  one tick, not a rounding up). If none does, durations and releases are rounded *up* to ticks of the
  finest such size: schedules stay feasible in real time (a task reserves at least its true duration),
  but optimality and the bound are no longer proven (status ``feasible``/``time_limit``, bound ``None``,
  a note in ``message``). Ticks are also coarsened (inexactly) until the longest possible schedule is at
  most ``MAX_HORIZON_TICKS`` ticks, so a tiny ``time.slot`` cannot make the integers overflow.
* Demands and capacities of each resource are multiplied by the smallest ``10**p`` (``p <= 6``) that
  makes all of them whole; otherwise demands are rounded up and capacity down (feasible, not proven).
* Objective coefficients (``alpha * w_k`` and ``(1 - alpha) * sum w``) are scaled the same way.
* A fair completion time becomes the last whole tick at or before it (again up to float noise).

Sizes: more than ``MAX_TASKS`` tasks is refused up front (every task is a CP-SAT interval and a Python
object; 175,000 tasks already took 7.6 GB), naming the limit.

Horizon: for ``makespan`` it is the makespan of the best warm start (priority-rule list schedules
improved by forward-backward justification, and the event-driven heuristics of
:mod:`.warmstart`, which also warm-start CP-SAT through hints); for ``avg-jct`` and ``mix`` it is
``max release + sum of durations``, valid because some optimal schedule is semi-active (every task starts
at its release or at another task's end) and so ends by then. Every warm start is built per machine for
``servers`` (a pooled schedule may overload a machine), so the horizon never cuts off a per-machine
optimum; its machines are relabelled by first task to match the symmetry domains before they become hints.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fairpack.models.dag import adjacency, longest_paths
from fairpack.models.result import SCHEDULE_OBJECTIVES, Result, Schedule, Status
from fairpack.models.types import BoolArray, FloatArray, Instance, InstanceError, IntArray
from fairpack.solver import interrupt, progress
from fairpack.solver.sim.fairshare import given_completion_times
from fairpack.solver.spacetime import decompose as decomposition
from fairpack.solver.spacetime import sat
from fairpack.solver.spacetime.bounds import job_lower_bounds, objective_lower_bound, stage_work
from fairpack.solver.spacetime.fair import FairMode, fair_share, no_fair_share, share_deadline, unfinished
from fairpack.solver.spacetime.lns import LNS_MAX_TASKS, LnsStats, improve
from fairpack.solver.spacetime.model import placement_fits
from fairpack.solver.spacetime.units import integer_scale, time_unit, to_units
from fairpack.solver.spacetime.warmstart import (
    WARM_HEURISTICS,
    heuristic_starts,
    justify,
    more_priority_rules,
    priority_rules,
    schedule_starts,
    serial_sgs,
)

#: Most tasks for which CP-SAT builds the LP relaxation of a weighted-completion model (:func:`_linearization`).
LP_MAX_TASKS = 1_000
#: Most tasks spacetime-cp models (each one a CP-SAT interval and Python objects; 175,000 took 7.6 GB).
MAX_TASKS = 200_000
#: Under a time limit, the share of the time left after the warm start that LNS may use at most (it stops
#: earlier when it stalls); the rest goes to the full solve that proves or improves its incumbent.
LNS_SHARE = 0.5
#: Up to this many tasks every simulated heuristic is a candidate hint: that is what keeps CP-SAT at least
#: as good as each of them (5,669 tasks: CP-SAT found no solution of its own in 20 s, so the result is the
#: hint). Beyond it all four cost more than they save (about 50 s on a 36,000-task TPC-H mix, Carbyne alone
#: 330 s on 190,000 tasks), so only SJF, the cheapest (3.5-8 s on 45,000 tasks) and on TPC-H mixes the
#: best of them for avg JCT, is run; without it a 45,000-task mix fell back on a list schedule 39% worse.
HEURISTIC_HINT_TASKS = 40_000
LARGE_HINT_HEURISTICS = ("sjf",)
#: Seconds per task each heuristic may need (measured upper ends on the one simulator: Carbyne 23 s on
#: 8,000 tasks, drf-dag 15 s and drf-strict 5.8 s on 35,000, SJF 8 s on 45,000). Under a time limit a
#: heuristic is started only if this estimate fits in a quarter of the time left, so the warm start
#: cannot eat the budget.
HEURISTIC_S_PER_TASK = {"carbyne": 3e-3, "sjf": 2e-4, "drf-dag": 5e-4, "tetris": 5e-4, "drf-strict": 2e-4}
#: Under a time limit, the share of the time left that the list schedules after the first may take together
#: (one still running then gives up): on 36,000 tasks each takes seconds.
LIST_SHARE = 0.3
#: Under a time limit, the share of the time left that the simulated heuristics may take together (each one
#: still running then is stopped).
HEURISTICS_SHARE = 0.3
#: Forward-backward justification of the list schedules is run up to this many tasks.
JUSTIFY_MAX_TASKS = 5_000
#: Under a time limit, the share of the time left after the list schedules and heuristics that the activity-list
#: genetic algorithm (:mod:`fairpack.solver.spacetime.rcpsp_ga`) may take for pooled makespan (it stops earlier when it
#: stalls or meets the lower bound); 0 turns it off.
GA_SHARE = 0.5
#: Most stages, tasks and profile ticks (every task one after another) the genetic algorithm is run on: it
#: watches the clock only between generations, and a generation decodes each of its 80 children 3-9 times, each
#: decoding quadratic in the stages and scanning the profile tick by tick (J120, 122 stages and ~600 ticks:
#: about 5 ms a generation).
GA_MAX_STAGES = 300
GA_MAX_TASKS = 2_000
GA_MAX_TICKS = 50_000


@dataclass(frozen=True)
class Deadline:
    """The end of the time budget of one call (``None``: no limit), shared by every phase."""

    end: float | None

    @staticmethod
    def after(seconds: float | None) -> Deadline:
        return Deadline(None if seconds is None else time.perf_counter() + float(seconds))

    def left(self) -> float:
        """Seconds left (infinite without a limit, never negative; none once interrupted)."""
        if interrupt.requested():
            return 0.0
        return float("inf") if self.end is None else max(self.end - time.perf_counter(), 0.0)

    def until(self, share: float) -> float:
        """The moment ``share`` of the time left from now has passed (infinite without a limit; now once
        interrupted)."""
        if interrupt.requested():
            return time.perf_counter()
        return float("inf") if self.end is None else time.perf_counter() + share * self.left()


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


#: Largest integer a scaled demand or capacity may reach (exact in float64 and far from int64 overflow).
MAX_RESOURCE_UNITS = 2**53


def _scale(instance: Instance, flat: FlatTasks, placement: str) -> _Scaled:
    longest = float(flat.release.max(initial=0) + flat.duration @ flat.stage_tasks)
    tick, time_exact = time_unit(np.concatenate([flat.duration, flat.release]), longest, instance.time_slot)
    if placement == "servers":
        machine_class = instance.machine_class().astype(np.int64)
        machine_number = np.arange(machine_class.size) - np.searchsorted(machine_class, machine_class)
        capacity = instance.capacity[machine_class]
    else:
        machine_class = machine_number = np.full(1, -1, dtype=np.int64)
        capacity = instance.total_capacity[None, :]
    # A capacity of at least every task's demand together never binds, so it is clipped there (exactly):
    # 1e308 would otherwise overflow the integers.
    capacity = np.minimum(capacity, (flat.demand * flat.stage_tasks[:, None]).sum(axis=0)[None, :])
    demand = np.zeros(flat.demand.shape, dtype=np.int64)
    cap = np.zeros(capacity.shape, dtype=np.int64)
    demand_exact = True
    for r in range(capacity.shape[1]):
        unit, exact = integer_scale(np.concatenate([flat.demand[:, r], capacity[:, r]]))
        while max(float(capacity[:, r].max(initial=0)), float(flat.demand[:, r].max(initial=0))) / unit > (
            MAX_RESOURCE_UNITS
        ):
            unit, exact = unit * 10, False
        demand_exact &= exact
        # Rounding demands up and capacities down keeps every CP-feasible schedule truly feasible.
        demand[:, r] = to_units(flat.demand[:, r], unit)[0]
        cap[:, r] = to_units(capacity[:, r], unit, up=False)[0]
    return _Scaled(tick, time_exact, to_units(flat.duration, tick)[0], to_units(flat.release, tick)[0], demand,
                   cap.sum(axis=0), demand_exact, cap, machine_class, machine_number)  # fmt: skip


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


def _fair_ticks(instance: Instance, fair: Any, tick: float) -> tuple[FloatArray | None, IntArray | None]:
    if not fair:
        return None, None
    real = given_completion_times(instance, fair)
    finite = np.isfinite(real)
    ticks = np.full(real.size, np.iinfo(np.int64).max // 4, dtype=np.int64)
    ticks[finite] = to_units(real[finite], tick, up=False)[0]  # the last whole tick at or before T_k
    return real, ticks


def checked_objective(instance: Instance, objective: str | None, alpha: float) -> str:
    """The objective to solve (default ``makespan`` for one job, ``avg-jct`` for several), validated."""
    if not instance.jobs:
        raise InstanceError("spacetime-cp needs DAG jobs", "jobs")
    objective = objective or ("makespan" if len(instance.jobs) == 1 else "avg-jct")
    if objective not in SCHEDULE_OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose from {', '.join(SCHEDULE_OBJECTIVES)}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    return objective


@dataclass(frozen=True)
class _Problem:
    """An instance as the CP model sees it: flat tasks, integer ticks and units, windows' ingredients."""

    instance: Instance
    flat: FlatTasks
    scaled: _Scaled
    objective: str
    alpha: float
    placement: str
    fair_real: FloatArray | None
    deadline: IntArray | None  # per job, ticks (None: no fair completion times)
    fits: BoolArray  # (stages, machines), in the scaled integers
    head: IntArray  # per stage, ticks
    tail: IntArray
    notes: tuple[str, ...]

    @staticmethod
    def of(instance: Instance, objective: str | None, alpha: float, fair: Any, placement: str) -> _Problem:
        objective = checked_objective(instance, objective, alpha)
        tasks = sum(stage.tasks for job in instance.jobs for stage in job.stages)
        if tasks > MAX_TASKS:
            raise InstanceError(f"{tasks:,} tasks: spacetime-cp models every task as a CP-SAT interval and "
                                f"takes at most MAX_TASKS = {MAX_TASKS:,}; use a DAG heuristic (sjf, carbyne)",
                                "jobs")  # fmt: skip
        placement_fits(instance, placement)  # a task that fits no machine is an input error, named
        flat = FlatTasks.of(instance)
        scaled = _scale(instance, flat, placement)
        fair_real, deadline = _fair_ticks(instance, fair, scaled.tick)
        notes = []
        if not scaled.time_exact:
            notes.append(f"durations/releases rounded up to ticks of {scaled.tick:g}: optimality not proven")
        if not scaled.demand_exact:
            notes.append("demands rounded up / capacities down to 1e-6: optimality not proven")
        head, tail = flat.heads_tails(scaled.duration)
        fits = np.all(scaled.demand[:, None, :] <= scaled.machine_capacity[None, :, :], axis=2)
        return _Problem(instance, flat, scaled, objective, alpha, placement, fair_real, deadline, fits,
                        np.rint(head).astype(np.int64), np.rint(tail).astype(np.int64), tuple(notes))  # fmt: skip

    def with_fair(self, completion: FloatArray, enforce: bool) -> _Problem:
        """This problem with fair completion times ``T_k`` (per job): deadlines when ``enforce``, else only
        reported on the schedule."""
        real, ticks = _fair_ticks(self.instance, dict(zip([job.name for job in self.instance.jobs],
                                                          completion.tolist(), strict=True)), self.scaled.tick)
        return replace(self, fair_real=real, deadline=ticks if enforce else None)

    @property
    def num_tasks(self) -> int:
        return int(self.flat.task_stage.size)

    @property
    def task_duration(self) -> IntArray:
        return self.scaled.duration[self.flat.task_stage]

    @property
    def job_of_task(self) -> IntArray:
        return self.flat.stage_job[self.flat.task_stage]

    @property
    def exact(self) -> bool:
        return self.scaled.time_exact and self.scaled.demand_exact

    def completions(self, start: IntArray) -> IntArray:
        """Completion tick of every job (its release if it has no task)."""
        completion = self.scaled.release.copy()
        np.maximum.at(completion, self.job_of_task, start + self.task_duration)
        return completion

    def value(self, start: IntArray) -> float:
        """Objective of a tick schedule, in real time units (true durations, as the checker computes it)."""
        flat = self.flat
        end = start * self.scaled.tick + flat.duration[flat.task_stage]
        completion = flat.release.copy()
        np.maximum.at(completion, self.job_of_task, end)
        makespan = float(completion.max())
        avg = float(flat.weight @ (completion - flat.release) / flat.weight.sum())
        mix = self.alpha * avg + (1 - self.alpha) * makespan
        return {"makespan": makespan, "avg-jct": avg}.get(self.objective, mix)

    def feasible(self, start: IntArray, machine: IntArray) -> bool:
        """Whether a tick schedule keeps releases, barriers, fair deadlines and every machine's capacity."""
        flat, duration = self.flat, self.task_duration
        if start.shape != (self.num_tasks,) or np.any(start < self.scaled.release[self.job_of_task]):
            return False
        stage_end = np.zeros(flat.num_stages, dtype=np.int64)
        np.maximum.at(stage_end, flat.task_stage, start + duration)
        first_start = np.full(flat.num_stages, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first_start, flat.task_stage, start)
        if np.any(first_start[flat.edges[:, 1]] < stage_end[flat.edges[:, 0]]):
            return False
        if self.deadline is not None and np.any(self.completions(start) > self.deadline):
            return False
        if machine.shape != start.shape or not np.all(self.fits[flat.task_stage, machine]):
            return False
        return within_capacity(start, start + duration, self.scaled.demand[flat.task_stage], machine,
                                self.scaled.machine_capacity)  # fmt: skip


def within_capacity(begin: IntArray, end: IntArray, demand: IntArray, machine: IntArray,
                     capacity: IntArray) -> bool:  # fmt: skip
    """Whether tasks ``[begin, end)`` with ``demand`` on ``machine`` never exceed any machine's capacity."""
    busy = end > begin
    times = np.concatenate([end[busy], begin[busy]])
    change = np.concatenate([-demand[busy], demand[busy]])
    where = np.concatenate([machine[busy], machine[busy]])
    starts_last = np.concatenate([np.zeros(busy.sum(), dtype=np.int64), np.ones(busy.sum(), dtype=np.int64)])
    order = np.lexsort((starts_last, times, where))  # per machine by time, ends before starts
    # Every machine's changes sum to zero, so one running sum over the machines in turn is each one's use.
    use = np.cumsum(change[order], axis=0)
    return bool(np.all(use <= capacity[where[order]]))


@dataclass(frozen=True)
class _Hint:
    rule: str
    start: IntArray
    machine: IntArray
    value: float  # real objective


def _list_schedules(problem: _Problem, deadline: Deadline) -> dict[str, tuple[IntArray, IntArray]]:
    """Serial-SGS schedules under every priority rule, each also justified (forward-backward)."""
    flat, scaled = problem.flat, problem.scaled
    rules = priority_rules(flat.stage_job, problem.tail, scaled.release, flat.weight)
    rules.update(more_priority_rules(flat.num_stages, flat.edges, scaled.duration, problem.tail))
    args = (flat.stage_job, flat.stage_tasks, scaled.duration, scaled.demand.astype(np.float64), scaled.release,
            flat.edges)  # fmt: skip
    capacity = scaled.machine_capacity.astype(np.float64)
    found: dict[str, tuple[IntArray, IntArray]] = {}
    until = deadline.until(LIST_SHARE)
    for rule, priority in rules.items():
        if found and deadline.left() <= 0:
            break
        # The first one runs to its end even past the limit: without it there may be no answer at all (on a
        # loaded machine the fair-share schedule can take the whole of a short limit before it starts).
        stop = None if not found else until  # infinite without a limit: then only Ctrl-C stops it
        schedule = serial_sgs(*args, priority, capacity, problem.fits, stop)
        if schedule is None:
            continue
        found[rule] = schedule
        if problem.num_tasks <= JUSTIFY_MAX_TASKS and deadline.left() > 0:
            better = justify(*args, capacity, problem.fits, schedule[0], deadline=until)
            if better is not None:
                found[f"{rule}+justified"] = better
    return found


def _heuristic_schedules(problem: _Problem, deadline: Deadline,
                         skip: tuple[str, ...] = ()) -> dict[str, tuple[IntArray, IntArray]]:  # fmt: skip
    """The event-driven heuristics' schedules in ticks (but ``skip``), each started only if it fits the time
    left."""
    if not problem.exact:
        return {}
    names = WARM_HEURISTICS if problem.num_tasks <= HEURISTIC_HINT_TASKS else LARGE_HINT_HEURISTICS
    found: dict[str, tuple[IntArray, IntArray]] = {}
    until = deadline.until(HEURISTICS_SHARE)  # together; the estimates below are rough on a loaded machine
    for name in (n for n in names if n not in skip):
        if HEURISTIC_S_PER_TASK[name] * problem.num_tasks > deadline.left() / 4:
            continue
        found.update(heuristic_starts(problem.instance, problem.scaled.tick, problem.placement, (name,),
                                      None if np.isinf(until) else until))  # fmt: skip
    return found


def _ga_applies(problem: _Problem, deadline: Deadline) -> bool:
    """The genetic algorithm searches pooled makespan on whole ticks under a time limit, up to
    :data:`GA_MAX_STAGES` stages, :data:`GA_MAX_TASKS` tasks and :data:`GA_MAX_TICKS` ticks, without fair
    deadlines or with one job's: it shortens the makespan, so a lone job finishes no later than the feasible
    seed it starts from, while with several jobs a shorter makespan may make one of them late."""
    return (GA_SHARE > 0 and deadline.end is not None and problem.objective == "makespan"
            and problem.placement == "pooled" and problem.scaled.time_exact
            and (problem.deadline is None or problem.deadline.size == 1)
            and problem.flat.num_stages <= GA_MAX_STAGES and problem.num_tasks <= GA_MAX_TASKS
            and problem.scaled.release.max(initial=0) + problem.task_duration.sum() <= GA_MAX_TICKS)  # fmt: skip


def _evolved(problem: _Problem, deadline: Deadline, seeds: list[IntArray], seed: int) -> IntArray | None:
    """The genetic algorithm's best schedule from the feasible warm starts ``seeds`` (the best seed when it found
    nothing shorter; None where it does not apply). :func:`_warm_start` keeps it only if it beats every seed."""
    if not seeds or not _ga_applies(problem, deadline):
        return None
    from fairpack.solver.spacetime.rcpsp_ga import Rcpsp, evolve  # numba: imported only where it runs

    flat, scaled = problem.flat, problem.scaled
    rcpsp = Rcpsp(scaled.duration, flat.stage_tasks, scaled.demand, scaled.capacity, scaled.release[flat.stage_job],
                  flat.edges)  # fmt: skip
    # Critical paths (releases included) and each resource's work bound the makespan from below.
    work = (scaled.duration * flat.stage_tasks) @ scaled.demand
    positive = scaled.capacity > 0
    lower = max(int((rcpsp.release + problem.head + problem.tail).max(initial=0)),
                int(np.ceil(work[positive] / scaled.capacity[positive]).max(initial=0)))  # fmt: skip
    start, _, _ = evolve(rcpsp, seeds, deadline.until(GA_SHARE), seed, lower)
    return start


def _warm_start(problem: _Problem, deadline: Deadline, witness: dict[str, tuple[IntArray, IntArray]] | None = None,
                seed: int = 0) -> _Hint | None:  # fmt: skip
    """The best tick-feasible warm start by the objective (``None`` if none is feasible); ``witness`` holds
    the fair-share schedule when it was computed (then not simulated again). For pooled makespan the
    genetic algorithm (``seed``) improves on the best of them (:func:`_evolved`)."""
    found = _list_schedules(problem, deadline)
    found.update(_heuristic_schedules(problem, deadline, tuple(witness or ())))
    found.update(witness or {})
    best: _Hint | None = None
    feasible = {}
    for rule, (start, machine) in found.items():
        # Heuristic schedules come from real time: checked in ticks before they may set a horizon.
        if problem.feasible(start, machine):
            feasible[rule] = start
            value = problem.value(start)
            if best is None or value < best.value - 1e-12:
                best = _Hint(rule, start, machine, value)
    evolved = _evolved(problem, deadline, list(feasible.values()), seed)
    if evolved is not None and best is not None and problem.feasible(evolved, np.zeros_like(evolved)):
        value = problem.value(evolved)
        if value < best.value - 1e-12:
            best = _Hint("ga", evolved, np.zeros_like(evolved), value)
    if best is not None:
        return _Hint(best.rule, best.start, order_machines_by_first_task(best.machine, problem.scaled.machine_class),
                     best.value)  # fmt: skip
    return None


def _horizon(problem: _Problem, hint: _Hint | None) -> int:
    # Serialising every task after the last release is always feasible, so no optimum ends later.
    horizon = int(problem.scaled.release.max(initial=0) + problem.task_duration.sum())
    if problem.objective == "makespan" and hint is not None:
        horizon = int((hint.start + problem.task_duration).max(initial=0))  # some optimum is no longer
    return horizon


def _windows(problem: _Problem, horizon: int) -> tuple[IntArray, IntArray]:
    """Earliest and latest start tick of every task (release + head, horizon or deadline - tail)."""
    stage, job = problem.flat.task_stage, problem.job_of_task
    earliest = problem.scaled.release[job] + problem.head[stage]
    latest = horizon - problem.tail[stage]
    if problem.deadline is not None:
        # Every task must also end before its job's deadline, through the tail of its stage.
        latest = np.minimum(latest, problem.deadline[job] - problem.tail[stage])
    return earliest, latest


class SpacetimeCp:
    """The CP-SAT model of a problem, built by named steps (:meth:`build` runs them in order).

    ``variables``: a start and a fixed-size interval per task, stage ends, job completions, the makespan;
    ``constraints``: barriers and symmetry, resources (pooled and per machine), completions;
    ``objective``: the weighted completions and makespan in integers; ``hint``: a warm start.
    """

    def __init__(self, problem: _Problem, horizon: int, window: tuple[IntArray, IntArray]) -> None:
        from ortools.sat.python import cp_model

        self.problem = problem
        self.horizon = horizon
        self.earliest, self.latest = window
        self.model = cp_model.CpModel()
        self.start: list[Any] = []
        self.interval: list[Any] = []
        self.stage_end: list[Any] = []
        self.completion: list[Any] = []
        self.makespan: Any = None
        self.choices: list[list[tuple[int, Any]]] = []  # per task: (machine, literal or None) for servers
        self.job_coef = np.zeros(0, dtype=np.int64)
        self.makespan_coef = 0
        self.factor, self.offset, self.coef_exact = 1.0, 0.0, True
        self._relaxation: tuple[FloatArray, FloatArray, FloatArray] | None = None

    def build(self) -> SpacetimeCp:
        self.variables()
        self.constraints()
        self.objective()
        return self

    def variables(self) -> None:
        p = self.problem
        duration = p.task_duration
        self.start = [self.model.new_int_var(int(lo), int(hi), f"s{t}")
                      for t, (lo, hi) in enumerate(zip(self.earliest, self.latest, strict=True))]  # fmt: skip
        self.interval = [self.model.new_fixed_size_interval_var(self.start[t], int(duration[t]), f"i{t}")
                         for t in range(p.num_tasks)]  # fmt: skip
        first = self._first_task()
        for stage in range(p.flat.num_stages):
            tasks = range(int(first[stage]), int(first[stage] + p.flat.stage_tasks[stage]))
            d = int(p.scaled.duration[stage])
            if len(tasks) == 1:  # a single task's end is an expression, not a variable
                self.stage_end.append(self.start[tasks[0]] + d)
                continue
            lo = int(self.earliest[tasks[0]]) + d
            self.stage_end.append(self.model.new_int_var(lo, max(lo, int(self.latest[tasks[-1]]) + d), f"e{stage}"))
        # A job ends no earlier than its critical path or its pooled work after its release (whole ticks).
        release, critical, work = self.relaxation()
        earliest_end = np.ceil(job_lower_bounds(release, critical, work) * (1 - 1e-12)).astype(np.int64)
        for k in range(len(p.instance.jobs)):
            lo = int(earliest_end[k])
            hi = self.horizon if p.deadline is None else min(self.horizon, int(p.deadline[k]))
            self.completion.append(self.model.new_int_var(lo, max(lo, hi), f"C{k}"))
        self.makespan = self.model.new_int_var(0, self.horizon, "M")

    def constraints(self) -> None:
        self._barriers()
        self._resources()
        for k, completion in enumerate(self.completion):
            self.model.add(self.makespan >= completion)
            for stage in np.flatnonzero((self.problem.flat.stage_job == k) & self._sinks()).tolist():
                self.model.add(completion >= self.stage_end[stage])

    def objective(self) -> None:
        self.scale_objective()
        terms = [int(c) * v for c, v in zip(self.job_coef, self.completion, strict=True) if c]
        self.model.minimize(sum(terms) + self.makespan_coef * self.makespan)

    def scale_objective(self) -> SpacetimeCp:
        """The objective's integer coefficients and its conversion to real units (no variables needed)."""
        p = self.problem
        job_coef, makespan_coef = _objective_weights(p.flat, p.objective, p.alpha)
        unit, self.coef_exact = integer_scale(np.concatenate([job_coef, [makespan_coef]]))
        self.job_coef = np.round(job_coef / unit).astype(np.int64)
        self.makespan_coef = round(makespan_coef / unit)
        # objective (real) = tick * unit * cp_value / W - (weighted releases term)
        total = float(p.flat.weight.sum())
        self.factor = p.scaled.tick * unit / total
        self.offset = -float(job_coef @ p.flat.release) / total
        return self

    def hint(self, start: IntArray, machine: IntArray | None) -> None:
        self.model.clear_hints()
        for variable, value in zip(self.start, start.tolist(), strict=True):
            self.model.add_hint(variable, int(value))
        if machine is not None:
            for t, choices in enumerate(self.choices):
                for option, literal in choices:
                    if literal is not None:
                        self.model.add_hint(literal, bool(machine[t] == option))

    @property
    def exact(self) -> bool:
        return self.problem.exact and self.coef_exact

    def relaxation(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Releases, critical paths and pooled work per resource of every job, in ticks (for the bounds of
        ``solver.spacetime.bounds``)."""
        if self._relaxation is not None:
            return self._relaxation
        p = self.problem
        job_length = np.zeros(len(p.instance.jobs), dtype=np.int64)
        np.maximum.at(job_length, p.flat.stage_job, p.tail)
        capacity = p.scaled.machine_capacity.sum(axis=0).astype(np.float64)
        work = stage_work(p.flat.stage_job, len(p.instance.jobs), p.flat.stage_tasks.astype(np.float64),
                          p.scaled.duration.astype(np.float64), p.scaled.demand.astype(np.float64),
                          capacity)  # fmt: skip
        self._relaxation = (p.scaled.release.astype(np.float64), job_length.astype(np.float64), work)
        return self._relaxation

    def precedence_bound(self) -> int:
        """A lower bound on the integer objective: every job's critical path and pooled work, and SRPT per
        resource (``solver.spacetime.bounds``); floored, since the objective is a whole number."""
        release, critical, work = self.relaxation()
        value = objective_lower_bound(release, critical, work, self.job_coef.astype(np.float64),
                                      float(self.makespan_coef))  # fmt: skip
        return math.floor(value * (1 - 1e-12))

    def integer_value(self, start: IntArray) -> int:
        """The model's objective (integer units) of a tick schedule."""
        completion = self.problem.completions(start)
        return int(self.job_coef @ completion + self.makespan_coef * completion.max(initial=0))

    def real(self, value: float) -> float:
        return value * self.factor + self.offset

    def _first_task(self) -> IntArray:
        return np.concatenate([[0], np.cumsum(self.problem.flat.stage_tasks)])[:-1]

    def _sinks(self) -> BoolArray:
        has_child = np.zeros(self.problem.flat.num_stages, dtype=bool)
        has_child[self.problem.flat.edges[:, 0]] = True
        return ~has_child

    def _barriers(self) -> None:
        """Identical tasks in start order; stage ends after their last task; children after parents."""
        flat, first = self.problem.flat, self._first_task()
        for stage in np.flatnonzero(flat.stage_tasks > 1).tolist():
            tasks = range(int(first[stage]), int(first[stage] + flat.stage_tasks[stage]))
            for earlier, later in itertools.pairwise(tasks):
                self.model.add(self.start[earlier] <= self.start[later])  # identical tasks: symmetry breaking
            # The last task starts last, so ends last.
            self.model.add(self.stage_end[stage] >= self.start[tasks[-1]] + int(self.problem.scaled.duration[stage]))
        for parent, child in flat.edges.tolist():
            for t in range(int(first[child]), int(first[child] + flat.stage_tasks[child])):
                self.model.add(self.start[t] >= self.stage_end[parent])

    def _resources(self) -> None:
        p = self.problem
        busy = np.flatnonzero(p.task_duration > 0)
        # Pooled capacity: the constraint itself, or for servers a redundant one (implied by the machines)
        # that gives CP-SAT the aggregate view for its bounds.
        full = None
        if p.objective == "makespan":
            # Nothing runs after the makespan: an interval [M, horizon) holding the whole capacity.
            size = self.model.new_int_var(0, self.horizon, "tail_size")
            full = self.model.new_interval_var(self.makespan, size, self.horizon, "after_makespan")
        add_resource_limits(self.model, [self.interval[t] for t in busy], p.scaled.demand[p.flat.task_stage[busy]],
                             p.scaled.capacity, full)  # fmt: skip
        if p.placement == "servers":
            self.choices = _machine_choices(self.model, p.flat, p.scaled, p.fits, self.start, self.interval,
                                            p.task_duration)  # fmt: skip


@dataclass
class _Outcome:
    """What the search found: the best schedule (ticks), its integer value and the proven bound."""

    start: IntArray | None = None
    machine: IntArray | None = None
    value: int | None = None
    bound: int | None = None
    proven: bool = False
    infeasible: bool = False
    status: str = "UNKNOWN"  # CP-SAT's status of the first full solve
    source: str = ""  # where the schedule came from: a warm-start rule, "cp-sat", "lns" or "proof"
    lns: LnsStats = field(default_factory=LnsStats)
    solve_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)  # search-specific keys for the result's extra

    def offer(self, start: IntArray, machine: IntArray | None, value: int, source: str) -> None:
        if self.value is None or value < self.value:
            self.start, self.machine, self.value, self.source = start, machine, value, source

    def raise_bound(self, bound: int) -> None:
        self.bound = bound if self.bound is None else max(self.bound, bound)
        if self.value is not None and self.bound >= self.value:
            self.proven = True


def _linearization(problem: _Problem) -> int | None:
    """CP-SAT's ``linearization_level`` for ``problem`` (None: CP-SAT's default).

    For ``makespan`` proving that nothing shorter exists is a tree search over the cumulatives, and the LP
    relaxation only slows it: on the hardest J30 instances (one worker) 20-90 thousand conflicts and
    2-15 s without it, against 90-220 thousand and 8-30+ s with it. Weighted completion times keep it on
    models of at most :data:`LP_MAX_TASKS` tasks: above that, building the relaxation of the cumulatives in
    each CP-SAT worker takes about a millisecond per task, during which CP-SAT does not watch its clock (a
    5-query TPC-H mix, 4,512 tasks: 9-10 s of loading, a 10 s limit ended after 18.8 s with nothing found),
    while without it the same model loads at once and yields schedules within the limit.
    """
    if problem.objective == "makespan" or problem.flat.task_stage.size > LP_MAX_TASKS:
        return 0
    return None


def _progress_callback(cp: SpacetimeCp) -> Any:
    """A CP-SAT solution callback that reports each incumbent and, through ``on_bound``, each better bound
    (in real units) to :mod:`fairpack.solver.progress`, which keeps at most one line every few seconds."""
    from ortools.sat.python import cp_model

    class Watch(cp_model.CpSolverSolutionCallback):
        incumbent: float | None = None
        bound: float | None = None

        def on_solution_callback(self) -> None:
            self.incumbent = cp.real(self.objective_value)
            self.bound = cp.real(self.best_objective_bound)
            progress.report("spacetime-cp", self.incumbent, self.bound)

        def on_bound(self, bound: float) -> None:
            self.bound = cp.real(bound)
            progress.report("spacetime-cp", self.incumbent, self.bound)

    return Watch()


def _full_solve(cp: SpacetimeCp, until: float, workers: int, seed: int, below: int | None = None,
                verbose: bool = False) -> tuple[Any, Any]:  # fmt: skip
    """CP-SAT on the whole model until ``until`` (optionally only objectives ``< below``): solver, status.

    ``verbose`` streams CP-SAT's search log (to the process's stdout, which the CLI sends to stderr).
    """
    from ortools.sat.python import cp_model

    model = cp.model
    if below is not None:
        model = cp.model.clone()
        model.proto.objective.domain.extend([-(2**62), below - 1])
    solver = cp_model.CpSolver()
    if np.isfinite(until):
        solver.parameters.max_time_in_seconds = max(until - time.perf_counter(), 0.01)
    solver.parameters.num_workers = max(1, int(workers))
    solver.parameters.random_seed = int(seed)
    solver.parameters.log_search_progress = verbose
    level = _linearization(cp.problem)
    if level is not None:
        solver.parameters.linearization_level = level
        if level == 0 and workers > 1:  # the portfolio's full-problem worker would be default_lp (level 1)
            solver.parameters.subsolvers.append("no_lp")
    if progress.active() is None:
        return solver, sat.run(solver, model)
    watch = _progress_callback(cp)
    solver.best_bound_callback = watch.on_bound
    return solver, sat.run(solver, model, watch)


def _read(cp: SpacetimeCp, solved: tuple[Any, Any], outcome: _Outcome, source: str, restricted: bool = False) -> str:
    """Take a full solve's schedule and bound into ``outcome``; returns CP-SAT's status name."""
    solver, code = solved
    status = solver.status_name(code)
    if status in ("OPTIMAL", "FEASIBLE"):
        start = np.array([solver.value(v) for v in cp.start], dtype=np.int64)
        machine = None
        if cp.choices:
            machine = np.array([next(m for m, lit in choices if lit is None or solver.boolean_value(lit))
                                for choices in cp.choices], dtype=np.int64)  # fmt: skip
        outcome.offer(start, machine, round(solver.objective_value), source)
    if status == "INFEASIBLE" and restricted and outcome.value is not None:
        outcome.raise_bound(outcome.value)  # nothing better than the incumbent exists
    elif status == "INFEASIBLE":
        outcome.infeasible = True
    elif status in ("OPTIMAL", "FEASIBLE") or restricted:
        bound = round(solver.best_objective_bound)
        # A restricted solve bounds only the objectives below the incumbent.
        outcome.raise_bound(min(bound, outcome.value) if restricted and outcome.value is not None else bound)
    return str(status)


def _lns_applies(cp: SpacetimeCp, deadline: Deadline, hint: _Hint | None) -> bool:
    p = cp.problem
    return deadline.end is not None and hint is not None and p.placement == "pooled" and p.num_tasks <= LNS_MAX_TASKS


def _search(cp: SpacetimeCp, hint: _Hint | None, deadline: Deadline, workers: int, seed: int,
            verbose: bool = False) -> _Outcome:  # fmt: skip
    """Under a time limit (pooled, small enough): LNS from the warm start, then a full solve restricted to
    better objectives, which proves the incumbent optimal when it is infeasible. Otherwise one full solve."""
    outcome = _Outcome()
    started = time.perf_counter()
    outcome.raise_bound(cp.precedence_bound())
    if hint is not None:
        outcome.offer(hint.start, hint.machine, cp.integer_value(hint.start), hint.rule)
        if outcome.proven:  # the warm start meets the critical path: nothing to search
            outcome.solve_s = time.perf_counter() - started
            return outcome
    if not _lns_applies(cp, deadline, hint):
        outcome.status = _read(cp, _full_solve(cp, deadline.until(1.0), workers, seed, verbose=verbose), outcome,
                               "cp-sat")  # fmt: skip
        outcome.solve_s = time.perf_counter() - started
        return outcome
    assert outcome.start is not None and outcome.value is not None
    p = cp.problem
    bound = None if outcome.bound is None else cp.real(outcome.bound)

    def step(value: int) -> None:
        progress.report("spacetime-cp LNS", cp.real(value), bound)

    progress.log("spacetime-cp", f"warm start {hint.rule if hint else '-'}: {cp.real(outcome.value):.6g}; LNS")
    start, value, outcome.lns = improve(cp.model, [v.index for v in cp.start], p.task_duration,
                                        p.scaled.demand[p.flat.task_stage], p.scaled.capacity, outcome.start,
                                        outcome.value, deadline.until(LNS_SHARE), seed, workers,
                                        _linearization(p), step)  # fmt: skip
    outcome.offer(start, None, value, "lns")
    if outcome.lns.proven:
        outcome.raise_bound(value)
    if not outcome.proven:
        cp.hint(outcome.start, None)
        progress.log("spacetime-cp", f"LNS: {outcome.lns.steps} steps, {outcome.lns.improved} improving; "
                     f"full solve below {cp.real(outcome.value):.6g}")  # fmt: skip
        solved = _full_solve(cp, deadline.until(1.0), workers, seed, below=outcome.value, verbose=verbose)
        outcome.status = _read(cp, solved, outcome, "cp-sat", restricted=True)
    outcome.solve_s = time.perf_counter() - started
    return outcome


def _schedule(problem: _Problem, outcome: _Outcome) -> Schedule | None:
    if outcome.start is None:
        return None
    flat, scaled, machine = problem.flat, problem.scaled, outcome.machine
    begin: FloatArray = outcome.start.astype(np.float64) * scaled.tick
    servers = (scaled.machine_class[machine], scaled.machine_number[machine]) if (
        machine is not None and problem.placement == "servers") else (None, None)  # fmt: skip
    return Schedule(flat.stage_job[flat.task_stage], flat.stage_local[flat.task_stage], flat.task_index, begin,
                    begin + flat.duration[flat.task_stage],  # true durations, so the checker sees them exactly
                    problem.fair_real, *servers)  # fmt: skip


def _status(cp: SpacetimeCp, outcome: _Outcome, limited: bool, ran_out: bool = True) -> Status:
    if outcome.start is None:
        if outcome.infeasible:
            return "infeasible"
        return "time_limit" if limited else "error"
    if outcome.proven:
        return "optimal" if cp.exact else "feasible"
    # An unproven schedule is a time_limit result only if the limit stopped the search; a search that stopped
    # by itself before it (the decomposition, once every phase stalled) is just feasible.
    return "time_limit" if limited and ran_out else "feasible"


def _ran_out(deadline: Deadline, time_limit: float | None) -> bool:
    """Whether the search ended at its time limit: less than a second, or 5% of the limit, was left (what the
    phases keep back to return; a stalled decomposition stops with far more left)."""
    return time_limit is not None and deadline.left() <= max(1.0, 0.05 * float(time_limit))


def _infeasible(reason: str, started: float, placement: str) -> Result:
    return Result("infeasible", "spacetime-cp", "cpsat", build_s=time.perf_counter() - started, message=reason,
                  extra={"placement": placement})  # fmt: skip


def solve_spacetime_cp(
    instance: Instance,
    objective: str | None = None,
    time_limit: float | None = None,
    alpha: float = 0.5,
    fair_completion: dict[str, float] | None = None,
    workers: int = 2,
    seed: int = 0,
    placement: str = "pooled",
    fair: FairMode = "off",
    verbose: bool = False,
    decompose: str | bool = "auto",
) -> Result:
    """Pack all tasks of all DAG jobs in space and time with CP-SAT (see the module docstring).

    Parameters
    ----------
    instance : Instance
        Needs ``jobs`` (at most ``MAX_TASKS`` tasks); capacity is the pooled cluster total, or every
        machine's with ``servers``.
    objective : {'makespan', 'avg-jct', 'mix', 'utility'}, optional
        Default ``makespan`` for one job, ``avg-jct`` for several. (``spacetime-cp`` solves ``utility``, any
        instance with placement options, and tasks reading input blocks on machines with the model of
        :mod:`fairpack.solver.spacetime.choice_cp` instead:
        :func:`fairpack.solver.spacetime.choice_model.uses_choices`.)
    time_limit : float, optional
        Seconds for the whole call: warm start, model build and search; ``None`` means no limit.
    alpha : float
        Weight of the average JCT in ``mix``, in [0, 1].
    fair_completion : mapping job name -> T_k, optional
        Deadlines ``C_k <= T_k`` given explicitly (they take precedence over ``fair``).
    fair : {'off', 'cap', 'report'}
        Without ``fair_completion``: ``cap`` computes every job's fair completion time ``T_k`` (the
        ``drf-strict`` schedule, :mod:`fairpack.solver.spacetime.fair`) within the time limit and enforces
        ``C_k <= T_k`` (that schedule is also a warm start); ``report`` computes it with a part of the time
        and reports it beside each job without enforcing it; ``off`` does neither.
    workers : int
        CP-SAT search workers for every solve (at least 1).
    seed : int
        CP-SAT random seed and the neighbourhood search's, for reproducible runs.
    placement : {'pooled', 'servers'}
        The pooled cluster, or every task on one machine it fits (exact per machine).
    verbose : bool
        Stream CP-SAT's search log and the phases (warm start, LNS, proof) to the log.
    decompose : {'auto', True, False}
        Search large pooled instances by parts instead of one model of every task
        (:mod:`fairpack.solver.spacetime.decompose`); ``auto`` from ``DECOMPOSE_MIN_TASKS`` tasks on.

    Returns
    -------
    Result
        ``schedule`` with real start/end times (and server and machine per task for ``servers``),
        ``solver_objective`` and ``bound`` in real units (the bound only when the integer scaling is
        exact), status ``optimal``, ``time_limit`` (incumbent returned), ``infeasible`` or ``error``.
        ``objective``/``verified``/``gap`` are filled by ``solve()``.
    """
    started = time.perf_counter()
    deadline = Deadline.after(time_limit)
    problem = _Problem.of(instance, objective, alpha, fair_completion, placement)
    if not np.all(problem.fits.any(axis=1)):
        return _infeasible("after conservative rounding some task fits no machine; the unrounded instance may be "
                           "feasible", started, placement)  # fmt: skip
    notes = list(problem.notes)
    witness: dict[str, tuple[IntArray, IntArray]] = {}
    if fair_completion is None and fair != "off":
        unit = None if problem.scaled.time_exact else problem.scaled.tick
        share = fair_share(instance, placement, unit, share_deadline(fair, deadline.end))
        if share is None and fair == "cap":
            return Result("time_limit", "spacetime-cp", "cpsat", build_s=time.perf_counter() - started,
                          message=no_fair_share(), extra={"placement": placement, "fair_cap": True})  # fmt: skip
        if share is None:
            notes.append(f"T_k not reported: the fair-share schedule {unfinished()}")
        else:
            problem = problem.with_fair(share.completion, enforce=fair == "cap")
            starts = schedule_starts(instance, share.schedule, problem.scaled.tick)
            if starts is not None:
                witness["drf-strict"] = starts
    by_parts = decomposition.applies(problem, decompose)
    hint = None if by_parts else _warm_start(problem, deadline, witness, seed)
    horizon = _horizon(problem, hint)
    window = _windows(problem, horizon)
    if np.any(window[1] < window[0]):
        return _infeasible("a job cannot finish within the horizon/deadline even without resource limits", started,
                           placement)  # fmt: skip
    if by_parts:  # never a model of every task: small CP-SAT models over parts of a schedule
        cp = SpacetimeCp(problem, horizon, window).scale_objective()
        build_s = time.perf_counter() - started
        outcome = _Outcome()
        warm = decomposition.search(cp, deadline, witness, workers, seed, outcome, HEURISTIC_S_PER_TASK)
        hint = None if warm is None else _Hint(warm[0], warm[1], np.zeros(problem.num_tasks, dtype=np.int64), warm[2])
        notes.append("searched by parts (solver.spacetime.decompose): not proven optimal")
    else:
        cp = SpacetimeCp(problem, horizon, window).build()
        if hint is not None:
            cp.hint(hint.start, hint.machine)
        build_s = time.perf_counter() - started
        outcome = _search(cp, hint, deadline, workers, seed, verbose)
    if not cp.coef_exact:
        notes.append("objective coefficients rounded to 1e-6")
    if hint is not None and outcome.source == hint.rule and not outcome.proven:
        when = "before the interrupt" if interrupt.requested() else "in time"
        notes.append(f"CP-SAT found nothing better than the {outcome.source} warm start {when}; returning it")
    if outcome.infeasible and not problem.exact:
        notes.append("infeasible after conservative rounding; the unrounded instance may be feasible")
    return Result(
        status=_status(cp, outcome, time_limit is not None, ran_out=_ran_out(deadline, time_limit)),
        method="spacetime-cp",
        backend="cpsat",
        bound=cp.real(outcome.bound) if outcome.bound is not None and cp.exact else None,
        build_s=build_s,
        solve_s=outcome.solve_s,
        solver_objective=cp.real(outcome.value) if outcome.value is not None else None,
        message="; ".join(notes),
        schedule=_schedule(problem, outcome),
        extra={
            "placement": placement,
            "fair_cap": problem.deadline is not None,
            "objective_name": problem.objective,
            "alpha": alpha,
            "tick": problem.scaled.tick,
            "horizon": horizon * problem.scaled.tick,
            "tasks_total": problem.num_tasks,
            "heuristic": hint.rule if hint is not None else None,
            "heuristic_objective": hint.value if hint is not None else None,
            "cp_status": outcome.status,
            "found_by": outcome.source or None,
            "lns_steps": outcome.lns.steps,
            "lns_improvements": outcome.lns.improved,
            **outcome.extra,
        },
    )


def add_resource_limits(
    model: Any, intervals: list[Any], demand: IntArray, capacity: IntArray, full: Any | None = None
) -> None:
    """One cumulative per resource that can bind (the items' total demand exceeds ``capacity``).

    ``full``, optional, is an interval that uses the whole capacity of every resource (after the makespan).

    Redundant: items needing more than half of a resource can never overlap one another, and a
    no-overlap constraint over them propagates far more strongly than the cumulative alone.
    """
    for r in range(capacity.size):
        use = np.flatnonzero(demand[:, r] > 0)
        if use.size == 0 or demand[use, r].sum() <= capacity[r]:
            continue  # this resource can never bind
        extra = [] if full is None else [full]
        heights = [int(demand[i, r]) for i in use] + [int(capacity[r])] * len(extra)
        model.add_cumulative([intervals[i] for i in use] + extra, heights, int(capacity[r]))
        large = use[2 * demand[use, r] > capacity[r]]
        if large.size > 1:
            model.add_no_overlap([intervals[i] for i in large])


def _machine_choices(
    model: Any,
    flat: FlatTasks,
    scaled: _Scaled,
    fits: BoolArray,
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
            add_resource_limits(model, [iv for iv, _ in items], demand[tasks], scaled.machine_capacity[m])
    return choices
