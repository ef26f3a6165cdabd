"""DAG jobs whose tasks choose where and how long to run, in integer ticks: what the exact models solve.

:class:`ChoiceProblem` is the instance as ``spacetime-cp`` (:mod:`fairpack.solver.spacetime.choice_cp`) and
``spacetime`` (:mod:`fairpack.solver.spacetime.choice_milp`) see it when durations depend on placement: the per-task
alternatives of :mod:`fairpack.solver.spacetime.choices` with durations in ticks, integer demands and unit
capacities, job releases, fair deadlines ``T_k`` and utility points in ticks. The online planner
(``tetrisched``) adds what an event's state holds: work already running on each unit until its (believed)
end, earliest starts of tasks whose parents still run, a plan-ahead window on start times, and jobs that
may be left out of this cycle's plan at a stated completion time.

Objectives: ``makespan``, ``avg-jct`` and ``mix`` as in :mod:`fairpack.solver.spacetime.cp`; ``utility`` maximises
``sum_k U_k(C_k)``, each ``U_k`` the job's piecewise-linear points (``Job.utility_at``), or
``-w_k (C_k - r_k)`` for a job without points.

:func:`list_schedule` is the warm start: jobs by urgency (deadline or first utility point, then release),
each stage at the earliest time its tasks fit, task by task on the alternative that ends first, or as a
gang in the group where it can start first, whichever ends sooner. It keeps a (ticks x units x resources)
profile and is skipped beyond ``MAX_PROFILE_CELLS``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from fairpack.models.types import BoolArray, FloatArray, Instance, InstanceError, IntArray
from fairpack.solver.spacetime.choices import Choices, Units, task_choices
from fairpack.solver.spacetime.cp import MAX_RESOURCE_UNITS, FlatTasks, checked_objective, within_capacity
from fairpack.solver.spacetime.units import integer_scale, time_unit, to_units

#: Largest (ticks x units x resources) usage profile the list schedule keeps.
MAX_PROFILE_CELLS = 20_000_000
#: Most job orders :func:`searched_list_schedule` tries (each one list schedule).
LIST_SEARCH_EVALUATIONS = 400
#: Largest (ticks x units x resources) profile for which job orders are searched (one list schedule each).
MAX_SEARCH_CELLS = 2_000_000
#: Per job: the tick value that stands for "no deadline" (far beyond any horizon, far from overflow).
NO_DEADLINE = 2**40


@dataclass(frozen=True)
class Running:
    """Work the plan must go around: tasks already running on units until a tick (the online planner's)."""

    unit: IntArray
    end: IntArray  # ticks from the planning origin
    demand: FloatArray  # (tasks, resources), real units


@dataclass(frozen=True)
class Planning:
    """What an online planning cycle adds to the offline problem (``None``: offline, every job must run).

    Attributes
    ----------
    running : the work already running
    earliest : (tasks,) earliest start tick of every task (parents still running)
    stage_floor : (stages,) ticks before which a stage cannot end (its tasks already running)
    floor : (jobs,) ticks before which no job completes (its running tasks' ends)
    latest : (tasks,) latest start tick (the plan-ahead window for tasks that could start now, else none)
    absent : (jobs,) completion tick assumed for a job left out of the plan
    tiebreak : among plans of equal value, prefer earlier completions (the sum over jobs)
    """

    running: Running
    earliest: IntArray
    stage_floor: IntArray
    floor: IntArray
    latest: IntArray
    absent: IntArray
    tiebreak: bool = True


@dataclass(frozen=True)
class ChoiceProblem:
    """An instance with per-task alternatives, in integer ticks and units (module docstring)."""

    instance: Instance
    flat: FlatTasks
    units: Units
    choices: Choices
    objective: str
    alpha: float
    tick: float
    time_exact: bool
    demand_exact: bool
    alt_ticks: IntArray  # (alternatives,)
    release: IntArray  # (jobs,) ticks
    demand: IntArray  # (stages, resources)
    capacity: IntArray  # (units, resources)
    running_demand: IntArray  # (running tasks, resources)
    running_end: IntArray
    deadline: IntArray | None  # (jobs,) ticks, fair caps C_k <= T_k
    fair_real: FloatArray | None
    planning: Planning | None
    horizon: int
    alt_demand: IntArray  # (alternatives, resources): a task's demand under its alternative's option

    @property
    def num_tasks(self) -> int:
        return int(self.flat.task_stage.size)

    @property
    def exact(self) -> bool:
        return self.time_exact and self.demand_exact

    @property
    def job_of_task(self) -> IntArray:
        return self.flat.stage_job[self.flat.task_stage]

    def identical_tasks(self) -> bool:
        """Whether the tasks of every stage are interchangeable (no input blocks tell them apart)."""
        return self.instance.data is None or self.units.kind != "machine"

    def stage_min_ticks(self) -> IntArray:
        """Per stage, its tasks' shortest alternative in ticks (for heads, tails and bounds)."""
        per_task = np.minimum.reduceat(self.alt_ticks, self.choices.first[:-1])
        shortest = np.full(self.flat.num_stages, np.iinfo(np.int64).max // 4, dtype=np.int64)
        np.minimum.at(shortest, self.flat.task_stage, per_task)
        return shortest

    def earliest_starts(self) -> IntArray:
        """Release (and the planning's earliest start) plus the head through parent stages, per task."""
        head, _ = self.flat.heads_tails(self.stage_min_ticks())
        earliest = self.release[self.job_of_task] + np.rint(head[self.flat.task_stage]).astype(np.int64)
        if self.planning is not None:
            earliest = np.maximum(earliest, self.planning.earliest)
        return earliest

    def latest_starts(self) -> IntArray:
        """Horizon (or deadline) minus the tail, and the plan-ahead window, per task."""
        _, tail = self.flat.heads_tails(self.stage_min_ticks())
        tails = np.rint(tail[self.flat.task_stage]).astype(np.int64)
        latest = self.horizon - tails
        if self.deadline is not None:
            latest = np.minimum(latest, self.deadline[self.job_of_task] - tails)
        if self.planning is not None:
            latest = np.minimum(latest, self.planning.latest)
        return latest

    def completions(self, start: IntArray, alt: IntArray) -> IntArray:
        """Completion tick of every job (its release, or the planning's floor, if later)."""
        completion = self.release.copy()
        if self.planning is not None:
            completion = np.maximum(completion, self.planning.floor)
        np.maximum.at(completion, self.job_of_task, start + self.alt_ticks[alt])
        return completion

    def value(self, start: IntArray, alt: IntArray, present: IntArray | None = None) -> float:
        """The objective of a tick schedule in real units, with true durations (as the checker computes it);
        utility is maximised, the others minimised. Jobs not ``present`` complete at the planning's ``absent``."""
        flat = self.flat
        end = start * self.tick + self.choices.duration[alt]
        completion = flat.release.copy()
        if self.planning is not None:
            completion = np.maximum(completion, self.planning.floor * self.tick)
        np.maximum.at(completion, self.job_of_task, end)
        if present is not None and self.planning is not None:
            completion = np.where(present > 0, completion, self.planning.absent * self.tick)
        if self.objective == "utility":
            return float(sum(float(job.utility_at(c)) for job, c in zip(self.instance.jobs, completion, strict=True)))
        makespan = float(completion.max())
        avg = float(flat.weight @ (completion - flat.release) / flat.weight.sum())
        mix = self.alpha * avg + (1 - self.alpha) * makespan
        return {"makespan": makespan, "avg-jct": avg}.get(self.objective, mix)

    def feasible(self, start: IntArray, alt: IntArray, present: IntArray | None = None) -> bool:
        """Whether a tick plan keeps windows, precedence, gangs, deadlines and every unit's capacity (with the
        work already running); tasks of jobs not ``present`` are left out."""
        flat, choices = self.flat, self.choices
        task_job = self.job_of_task
        keep = np.ones(self.num_tasks, dtype=bool) if present is None else present[task_job] > 0
        if start.shape != (self.num_tasks,) or np.any(choices.task[alt] != np.arange(self.num_tasks)):
            return False
        floor = self.release[task_job] if self.planning is None else np.maximum(self.release[task_job],
                                                                                self.planning.earliest)
        latest = np.full(self.num_tasks, np.iinfo(np.int64).max) if self.planning is None else self.planning.latest
        if np.any(keep & ((start < floor) | (start > latest))):
            return False
        end = start + self.alt_ticks[alt]
        stage_end = np.zeros(flat.num_stages, dtype=np.int64) if self.planning is None else (
            self.planning.stage_floor.copy())  # fmt: skip
        np.maximum.at(stage_end, flat.task_stage[keep], end[keep])
        first = np.full(flat.num_stages, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, flat.task_stage[keep], start[keep])
        edges = flat.edges
        if np.any((first[edges[:, 1]] < stage_end[edges[:, 0]]) & (first[edges[:, 1]] < np.iinfo(np.int64).max)):
            return False
        if self.deadline is not None:
            late = self.completions(start, alt) > self.deadline
            if present is not None:
                late &= present > 0
            if late.any():
                return False
        if not self._gangs_hold(start, alt, keep):
            return False
        running = self.running_end.size
        unit = np.concatenate([choices.unit[alt[keep]], self.planning.running.unit if running and self.planning
                               else np.zeros(0, np.int64)])  # fmt: skip
        begin = np.concatenate([start[keep], np.zeros(running, dtype=np.int64)])
        stop = np.concatenate([end[keep], self.running_end])
        demand = np.vstack([self.alt_demand[alt[keep]], self.running_demand])
        return within_capacity(begin, stop, demand, unit, self.capacity)

    def _gangs_hold(self, start: IntArray, alt: IntArray, keep: BoolArray) -> bool:
        """Stages run under a gang option: every task in it, in one group, all starting together."""
        flat, choices = self.flat, self.choices
        gang = choices.group[alt] >= 0
        for g in np.unique(flat.task_stage[gang & keep]).tolist():
            mine = flat.task_stage == g
            kinds = {(int(choices.option[a]), int(choices.group[a])) for a in alt[mine].tolist()}
            if len(kinds) != 1 or np.ptp(start[mine]) != 0 or not np.all(gang[mine]):
                return False
        return True

    def better(self, a: float, b: float) -> bool:
        """Whether objective value ``a`` is strictly better than ``b``."""
        return a > b + 1e-9 if self.objective == "utility" else a < b - 1e-9

    def with_fair(self, completion: FloatArray, enforce: bool) -> ChoiceProblem:
        """Fair completion times ``T_k``: deadlines when ``enforce``, else only reported."""
        ticks = np.full(completion.size, NO_DEADLINE, dtype=np.int64)
        finite = np.isfinite(completion)
        ticks[finite] = to_units(completion[finite], self.tick, up=False)[0]
        return replace(self, fair_real=completion, deadline=ticks if enforce else None)


def _scale_amounts(demand: FloatArray, capacity: FloatArray, running: FloatArray) -> tuple[IntArray, IntArray,
                                                                                           IntArray, bool]:  # fmt: skip
    """Demands (and running demands) rounded up, capacities down, to whole units per resource."""
    out_demand = np.zeros(demand.shape, dtype=np.int64)
    out_cap = np.zeros(capacity.shape, dtype=np.int64)
    out_running = np.zeros(running.shape, dtype=np.int64)
    exact = True
    for r in range(capacity.shape[1]):
        values = np.concatenate([demand[:, r], capacity[:, r], running[:, r]])
        unit, ok = integer_scale(values)
        while float(values.max(initial=0)) / unit > MAX_RESOURCE_UNITS:
            unit, ok = unit * 10, False
        exact &= ok
        out_demand[:, r] = to_units(demand[:, r], unit)[0]
        out_cap[:, r] = to_units(capacity[:, r], unit, up=False)[0]
        out_running[:, r] = to_units(running[:, r], unit)[0]
    return out_demand, out_cap, out_running, exact


def uses_choices(instance: Instance, objective: str | None, placement: str) -> bool:
    """Whether tasks choose where and how long to run (placement options, the utility objective, or input blocks
    read on machines): then ``spacetime-cp`` and ``spacetime`` solve this module's :class:`ChoiceProblem`
    (:mod:`fairpack.solver.spacetime.choice_cp`, :mod:`fairpack.solver.spacetime.choice_milp`)."""
    reads_blocks = instance.data is not None and any(stage.input for job in instance.jobs for stage in job.stages)
    return instance.has_options or objective == "utility" or (placement == "servers" and reads_blocks)


def utility_times(instance: Instance) -> FloatArray:
    return np.array([t for job in instance.jobs for t, _ in job.utility], dtype=np.float64)


def _option_rows(instance: Instance, choices: Choices, flat: FlatTasks) -> tuple[FloatArray, IntArray]:
    """The demand rows of options with their own demand (real units), and per alternative its row in
    ``[stage demands; these rows]``: its stage's, or its option's own."""
    stages = [stage for job in instance.jobs for stage in job.stages]
    rows: list[FloatArray] = []
    index = np.full((len(stages), max((len(s.options) for s in stages), default=0) + 1), -1, dtype=np.int64)
    for g, stage in enumerate(stages):
        index[g] = g
        for o, option in enumerate(stage.options):
            if option.demand is not None:
                index[g, o + 1] = flat.num_stages + len(rows)
                rows.append(option.demand)
    stage_of = flat.task_stage[choices.task]
    row_of = index[stage_of, choices.option + 1]
    table = np.array(rows, dtype=np.float64).reshape(len(rows), len(instance.resources))
    return table, row_of


def build_problem(instance: Instance, units: Units, objective: str | None = None, alpha: float = 0.5,
                  fair: dict[str, float] | None = None, planning_ticks: Planning | None = None,
                  tick: float | None = None, symmetry: bool = True) -> ChoiceProblem:  # fmt: skip
    """The problem of ``instance`` on ``units`` (``planning_ticks``: an online cycle's state, in ``tick``s)."""
    name = checked_objective(instance, objective, alpha)
    flat = FlatTasks.of(instance)
    choices = task_choices(instance, flat.stage_tasks, units, symmetry=symmetry and planning_ticks is None)
    missing = np.flatnonzero(np.diff(choices.first) == 0)
    if missing.size:
        g = int(flat.task_stage[missing[0]])
        k = int(flat.stage_job[g])
        raise InstanceError(f"a task of stage {instance.jobs[k].stages[int(flat.stage_local[g])].name!r} fits no "
                            "machine", f"jobs[{k}].stages[{int(flat.stage_local[g])}].demand")  # fmt: skip
    longest = float(flat.release.max(initial=0) + choices.max_duration().sum())
    if tick is None:
        times = np.concatenate([choices.duration, flat.release, utility_times(instance)])
        tick, time_exact = time_unit(times, max(longest, 1.0), instance.time_slot)
    else:
        time_exact = to_units(np.concatenate([choices.duration, flat.release]), tick)[1]
    running = planning_ticks.running if planning_ticks is not None else Running(
        np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, len(instance.resources))))  # fmt: skip
    rows, row_of = _option_rows(instance, choices, flat)
    demand, capacity, running_demand, demand_exact = _scale_amounts(np.vstack([flat.demand, rows]), units.capacity,
                                                                    running.demand)  # fmt: skip
    alt_demand = demand[row_of]
    demand = demand[: flat.num_stages]
    alt_ticks = to_units(choices.duration, tick)[0]
    release = to_units(flat.release, tick)[0]
    horizon = int(release.max(initial=0) + np.maximum.reduceat(alt_ticks, choices.first[:-1]).sum()
                  + running.end.max(initial=0))  # fmt: skip
    if planning_ticks is not None:
        horizon = max(horizon, int(planning_ticks.absent.max(initial=0)), int(planning_ticks.earliest.max(initial=0))
                      + int(np.maximum.reduceat(alt_ticks, choices.first[:-1]).sum()))  # fmt: skip
    problem = ChoiceProblem(instance, flat, units, choices, name, alpha, tick, time_exact, demand_exact, alt_ticks,
                            release, demand, capacity, running_demand, running.end, None, None, planning_ticks,
                            horizon, alt_demand)  # fmt: skip
    if fair:
        names = {job.name: k for k, job in enumerate(instance.jobs)}
        completion = np.full(len(instance.jobs), np.inf)
        for job_name, value in fair.items():
            if job_name not in names:
                raise InstanceError(f"unknown job {job_name!r}", f"fair_completion.{job_name}")
            completion[names[job_name]] = float(value)
        problem = problem.with_fair(completion, enforce=True)
    return problem


# ------------------------------------------------------------------------------------- list schedule


def _urgency(instance: Instance) -> list[int]:
    """Jobs by deadline (or first utility point), then release, then position."""

    def key(k: int) -> tuple[float, float, int]:
        job = instance.jobs[k]
        due = min(job.deadline, job.utility[0][0] if job.utility else math.inf)
        return (due, job.release, k)

    return sorted(range(len(instance.jobs)), key=key)


def _earliest_run(free: np.ndarray, start: int, length: int) -> int:
    """First index ``s >= start`` with ``free[s : s + length]`` all true (``-1``: none)."""
    if length == 0:
        return start if start < free.size else -1
    bad = np.concatenate([[0], np.cumsum(~free)])
    s = np.arange(start, free.size - length + 1)
    ok = np.flatnonzero(bad[s + length] - bad[s] == 0)
    return int(s[ok[0]]) if ok.size else -1


@dataclass
class _Profile:
    """Usage of every unit at every tick (list schedule state)."""

    usage: np.ndarray  # (units, ticks, resources)
    capacity: IntArray

    def room(self, unit: int, demand: IntArray) -> np.ndarray:
        """Per tick, how many tasks of ``demand`` still fit on ``unit``."""
        need = demand > 0
        if not need.any():
            return np.full(self.usage.shape[1], 10**9)
        free = self.capacity[unit][None, need] - self.usage[unit][:, need]
        return np.asarray(np.floor_divide(free, demand[need][None, :]).min(axis=1))

    def take(self, unit: int, start: int, length: int, demand: IntArray, count: int = 1) -> None:
        self.usage[unit, start : start + length] += count * demand


class _Rooms:
    """Per unit, how many tasks of one stage's demand still fit at every tick (computed when first asked)."""

    def __init__(self, profile: _Profile, demand: IntArray) -> None:
        self.profile, self.demand = profile, demand
        self.cache: dict[int, np.ndarray] = {}

    def __getitem__(self, unit: int) -> np.ndarray:
        if unit not in self.cache:
            self.cache[unit] = self.profile.room(unit, self.demand)
        return self.cache[unit]


def _place_plain(problem: ChoiceProblem, profile: _Profile, rooms: _Rooms | None, tasks: IntArray, est: int,
                 plain: np.ndarray) -> tuple[list[tuple[int, int]], int] | None:  # fmt: skip
    """Each task on the plain alternative that ends first: ``[(start, alt)]`` and the stage end (None: no room).
    Changes nothing: the rooms it uses up are private copies. With ``rooms`` (every alternative of the stage
    has the stage's demand) the rooms of that one demand are read; without, the room of each alternative's own
    demand, on a private copy of ``profile``."""
    choices, placed, end = problem.choices, [], est
    mine: dict[int, np.ndarray] = {}  # rooms of the one demand, copied where this stage took some
    own = _Profile(profile.usage.copy(), profile.capacity) if rooms is None else profile

    def room_of(a: int, unit: int) -> np.ndarray:
        if rooms is None:
            return own.room(unit, problem.alt_demand[a])
        return mine.get(unit, rooms[unit])

    for t in tasks.tolist():
        best: tuple[int, int] | None = None
        for a in range(int(choices.first[t]), int(choices.first[t + 1])):
            if not plain[a - int(choices.first[t])]:
                continue
            d, unit = int(problem.alt_ticks[a]), int(choices.unit[a])
            s = _earliest_run(room_of(a, unit) >= 1, est, d)
            if s >= 0 and (best is None or s + d < best[0] + int(problem.alt_ticks[best[1]])):
                best = (s, a)
        if best is None:
            return None
        unit, d = int(choices.unit[best[1]]), int(problem.alt_ticks[best[1]])
        if rooms is None:
            own.take(unit, best[0], d, problem.alt_demand[best[1]])
        else:
            if unit not in mine:
                mine[unit] = rooms[unit].copy()
            mine[unit][best[0] : best[0] + d] -= 1  # one more task of this demand there
        placed.append(best)
        end = max(end, best[0] + d)
    return placed, end


def _place_gang(problem: ChoiceProblem, rooms: _Rooms, tasks: IntArray, est: int,
                alts: IntArray) -> tuple[list[tuple[int, int]], int] | None:  # fmt: skip
    """All tasks at one start on the units of one gang alternative set (one option, one group)."""
    d = int(problem.alt_ticks[alts[0]])
    units = problem.choices.unit[alts]
    room = np.array([rooms[int(u)] for u in units.tolist()])
    window = max(d, 1)
    if room.shape[1] < window:
        return None
    held = np.lib.stride_tricks.sliding_window_view(room, window, axis=1).min(axis=2)  # (units, starts)
    total = held.sum(axis=0)
    fits = np.flatnonzero((total >= tasks.size) & (np.arange(total.size) >= est))
    if fits.size == 0:
        return None
    s = int(fits[0])
    placed, left = [], tasks.size
    for position in range(units.size):
        n = int(min(held[position, s], left))
        placed += [(s, int(alts[position]))] * n
        left -= n
    return placed, s + d


def _place_stage(problem: ChoiceProblem, profile: _Profile, tasks: IntArray,
                 est: int) -> list[tuple[int, int]] | None:  # fmt: skip
    """The stage's tasks placed the best way (task by task, or as a gang in its best group), taken from
    ``profile``."""
    choices = problem.choices
    own = np.arange(int(choices.first[tasks[0]]), int(choices.first[tasks[0] + 1]))
    gang = choices.group[own]
    demand = problem.demand[problem.flat.task_stage[tasks[0]]]
    mixed = bool(np.any(problem.alt_demand[own] != demand[None, :]))  # options with their own demand
    rooms = _Rooms(profile, demand)
    best: tuple[list[tuple[int, int]], int] | None = None
    if np.any(gang < 0):
        best = _place_plain(problem, profile, None if mixed else rooms, tasks, est, gang < 0)
    for option, group in sorted({(int(choices.option[a]), int(choices.group[a])) for a in own[gang >= 0].tolist()}):
        alts = own[(choices.option[own] == option) & (gang == group)]
        found = _place_gang(problem, _Rooms(profile, problem.alt_demand[alts[0]]) if mixed else rooms, tasks, est,
                            alts)  # fmt: skip
        if found is not None and (best is None or found[1] < best[1]):
            # Gang alternatives are numbered for the stage's first task: shift them to each task's own.
            best = ([(s, int(choices.first[t]) + (a - int(choices.first[tasks[0]])))
                     for t, (s, a) in zip(tasks.tolist(), found[0], strict=True)], found[1])  # fmt: skip
    if best is None:
        return None
    for s, a in best[0]:
        profile.take(int(choices.unit[a]), s, int(problem.alt_ticks[a]), problem.alt_demand[a])
    return best[0]


def list_schedule(problem: ChoiceProblem, order: Sequence[int] | None = None) -> tuple[IntArray, IntArray] | None:
    """A feasible tick schedule (start tick, alternative per task), or None (too large, or no room): jobs one
    after another in ``order`` (by urgency when not given)."""
    units, ticks = problem.units.count, problem.horizon + 1
    if units * ticks * problem.capacity.shape[1] > MAX_PROFILE_CELLS:
        return None
    profile = _Profile(np.zeros((units, ticks, problem.capacity.shape[1]), dtype=np.int64), problem.capacity)
    if problem.planning is not None:
        for u, end, demand in zip(problem.planning.running.unit.tolist(), problem.running_end.tolist(),
                                  problem.running_demand, strict=True):  # fmt: skip
            profile.take(u, 0, end, demand)
    flat = problem.flat
    first_task = np.concatenate([[0], np.cumsum(flat.stage_tasks)])
    start = np.zeros(problem.num_tasks, dtype=np.int64)
    alt = np.zeros(problem.num_tasks, dtype=np.int64)
    stage_end = np.zeros(flat.num_stages, dtype=np.int64)
    earliest = problem.earliest_starts()
    parents: list[list[int]] = [[] for _ in range(flat.num_stages)]
    for p, c in flat.edges.tolist():
        parents[c].append(p)
    for k in _urgency(problem.instance) if order is None else order:
        for g in _topological(np.flatnonzero(flat.stage_job == k), parents):
            tasks = np.arange(first_task[g], first_task[g + 1])
            est = max([int(earliest[tasks].min())] + [int(stage_end[p]) for p in parents[g]])
            placed = _place_stage(problem, profile, tasks, est)
            if placed is None:
                return None
            for t, (s, a) in zip(tasks.tolist(), placed, strict=True):
                start[t], alt[t] = s, a
            stage_end[g] = max(s + int(problem.alt_ticks[a]) for s, a in placed)
    return start, alt


def searched_list_schedule(problem: ChoiceProblem, evaluations: int = LIST_SEARCH_EVALUATIONS,
                           until: float | None = None) -> tuple[IntArray, IntArray] | None:  # fmt: skip
    """The best list schedule over job orders: by urgency and by release, then one job moved to another place
    in the order while that improves the objective (first improvement), at most ``evaluations`` list
    schedules and until ``until`` (a ``perf_counter`` time). A schedule that breaks a fair deadline counts as
    worse than any that keeps them. None if no order gives a schedule (or the profile is too large to search).

    The list schedule takes whole jobs in order; which order is best depends on the objective (an urgent SLO
    job before a long best-effort one, or after), and a warm start close to the optimum bounds the
    completions of the time-indexed MILP tightly (:func:`fairpack.solver.spacetime.choice_milp.objective_caps`)."""
    if problem.units.count * (problem.horizon + 1) * problem.capacity.shape[1] > MAX_SEARCH_CELLS:
        return list_schedule(problem)
    search = _OrderSearch(problem, evaluations, until)
    jobs = problem.instance.jobs
    for order in (_urgency(problem.instance), sorted(range(len(jobs)), key=lambda k: (jobs[k].release, k))):
        search.offer(order)
    while search.best_order is not None and search.improve():
        pass
    return search.best


class _OrderSearch:
    """Job orders tried by :func:`searched_list_schedule`, and the best schedule so far."""

    def __init__(self, problem: ChoiceProblem, evaluations: int, until: float | None) -> None:
        self.problem, self.left, self.until = problem, evaluations, until
        self.best: tuple[IntArray, IntArray] | None = None
        self.best_order: list[int] | None = None
        self.key: tuple[bool, float] = (False, 0.0)

    def offer(self, order: list[int]) -> bool:
        """Schedule ``order``; keep it if better. False when out of evaluations or time."""
        if self.left <= 0 or (self.until is not None and time.perf_counter() > self.until):
            return False
        self.left -= 1
        found = list_schedule(self.problem, order)
        if found is None:
            return True
        problem = self.problem
        key = (problem.deadline is None or bool(np.all(problem.completions(*found) <= problem.deadline)),
               problem.value(*found))  # fmt: skip
        if self.best is None or key[0] > self.key[0] or (key[0] == self.key[0] and problem.better(key[1],
                                                                                               self.key[1])):
            self.best, self.best_order, self.key = found, order, key
        return True

    def improve(self) -> bool:
        """One pass of moves from the best order: True at the first that improves it."""
        current = self.best_order
        assert current is not None
        for i in range(len(current)):
            for j in range(len(current)):
                if i == j:
                    continue
                order = [*current[:i], *current[i + 1 :]]
                order.insert(j, current[i])
                if not self.offer(order):
                    return False
                if self.best_order is not current:
                    return True
        return False


def in_start_order(problem: ChoiceProblem, start: IntArray, alt: IntArray) -> tuple[IntArray, IntArray]:
    """The same schedule with every stage's tasks renumbered in start order (the models order identical tasks
    so); a task's alternative moves with it (identical tasks have their alternatives in the same order)."""
    if not problem.identical_tasks():
        return start, alt
    flat, first = problem.flat, problem.choices.first
    order = np.lexsort((np.arange(start.size), start, flat.task_stage))  # within each stage by start
    offset = alt - first[:-1]
    return start[order], first[:-1] + offset[order]


def translate(source: ChoiceProblem, start: IntArray, alt: IntArray,
              target: ChoiceProblem) -> tuple[IntArray, IntArray] | None:  # fmt: skip
    """The start ticks and alternatives of ``target`` that run a ``source`` schedule (same tasks, units and
    options; target's alternatives may be fewer, kept by the machine-symmetry rule: tasks are put in start
    order and machines relabelled by first task within their class first, unless tasks read input blocks, whose
    machines are not interchangeable). None if some task's placement is not one of target's alternatives."""
    from fairpack.solver.spacetime.cp import order_machines_by_first_task

    start, alt = in_start_order(source, start, alt)
    unit = source.choices.unit[alt]
    if target.units.kind == "machine" and target.instance.data is None:  # the symmetry rule's relabelling (its
        # flat task order); machines holding input blocks differ, and choices keep all of them (choices._symmetric)
        unit = order_machines_by_first_task(unit, target.units.server)
    option = source.choices.option[alt]
    size, options = target.units.count, int(target.choices.option.max(initial=-1)) + 2
    keys = (target.choices.task * size + target.choices.unit) * options + target.choices.option + 1
    order = np.argsort(keys, kind="stable")
    wanted = (np.arange(unit.size) * size + unit) * options + option + 1
    position = np.minimum(np.searchsorted(keys[order], wanted), keys.size - 1)
    if keys.size == 0 or not np.all(keys[order][position] == wanted):
        return None
    return start, np.asarray(order[position], dtype=np.int64)


def _topological(stages: IntArray, parents: list[list[int]]) -> list[int]:
    """``stages`` (one job's) with every parent before its children."""
    left, order = set(stages.tolist()), []
    while left:
        ready = sorted(g for g in left if not any(p in left for p in parents[g]))
        order += ready
        left -= set(ready)
    return order
