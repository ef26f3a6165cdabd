"""``spacetime-cp`` on large pooled instances: a decomposition instead of one model of every task.

One CP-SAT model of every task stops paying off long before TPC-H mixes of 50-200 queries (36,000-190,000
tasks): there the monolithic model found nothing better than SJF's schedule in 120 s and peaked at 7.6 GB.
From :data:`DECOMPOSE_MIN_TASKS` tasks on (pooled placement; ``decompose`` forces it either way)
``spacetime-cp`` never builds that model. It works on a schedule in integer ticks and keeps the best one:

1. **Warm start** (:func:`warm_starts`): the fair-share schedule when ``T_k`` were computed, the
   event-driven heuristics whose estimated run time fits a small share of the budget (always SJF), and
   work-conserving list schedules with whole jobs in a fixed priority order (:func:`priority_schedule`,
   orders from :func:`job_priority_keys`), each decoded twice: plainly and holding back the cpu-heavy
   stages so that the bottleneck resource stays busy (``bottleneck``, :func:`bottleneck_of`). Under fair
   caps the least late list schedules first make their late jobs urgent earlier (:func:`repair_order`);
   only schedules meeting every cap are warm starts.
2. **Job order** (:func:`improve_order`): moves of one job a few places up or down the priority order of
   the best list schedule, each decoded again by the list scheduler, kept when ``(ticks late, objective)``
   is no worse, so under fair caps a list schedule that is still late is made less late first (then
   repaired again); its schedule is kept only once no job is late. It stops when it stalls or after
   :data:`ORDER_SHARE` of the time left.
3. **CP-SAT on parts of the schedule** (:func:`improve_schedule`): each step frees a part of the incumbent
   (:func:`pick_free`: a rolling time window, whole jobs that finish next to one another, or a few jobs
   around one moment) and keeps every other task where it is, as capacity already used over time (fixed
   intervals in each resource's cumulative). The freed tasks become *items*, tasks of one stage that start
   together in the incumbent, in chunks (:func:`make_items`), so that a sub-model has about
   :data:`TARGET_ITEMS` intervals whatever the task count, and the incumbent is one of its solutions (the
   hint). Barriers to kept tasks become bounds on the items' starts, ``C_k <= T_k`` stays a hard bound,
   and the sub-model minimises the freed jobs' part of the objective, never worse than the incumbent's. An
   accepted step is followed, every few improvements, by a left shift of the whole schedule
   (:func:`left_shift`), which only moves tasks earlier.

Every schedule is checked in ticks before it is kept, and ``solve()`` verifies the result like every
other. The search proves nothing: the status is ``time_limit`` (or ``feasible`` when it stops by itself
without a limit, once every phase has stalled), and the bound is the relaxation bound of
:mod:`fairpack.solver.spacetime.bounds`. Memory is the instance's arrays, a usage profile (ticks x resources) and
one small model at a time.

Why the phases are there (``benchmarks/tpch_decompose.py``, TPC-H mixes of 50 and 200 queries, seed 0, 120 s,
one worker): SJF's schedule is locally tight, and average JCT is decided by the order in which jobs get the
cluster. On 50 executors the list schedule by job work alone is 14% below SJF's avg JCT (50 queries: 110.8
vs 129.0; 200: 523.1 vs 621.1) and the order moves add 1-2%; CP-SAT parts, which keep every other job in
place, found nothing better there. On 5 executors per query (the ``tpch_triangle`` sweep's cluster) they
are what gains: 50 queries 23.33 vs SJF's 27.91. Under fair caps only the fair-share schedule meets every
``T_k`` from the start (SJF misses them for some jobs), and the plain list schedules miss them whatever the
order: they end 7-10% after the fair-share schedule, which keeps the memory (the mixes' bottleneck) busy
to within 0.4% of its work on 200 queries. The list schedules that hold the cpu back for memory-heavy
stages end with it, so under the caps the job order gains as without them (200 queries: 532.8 against the
fair-share schedule's 1104.2, in ``benchmarks/results/tpch_decompose_caps.md``).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fairpack.models.types import BoolArray, FloatArray, IntArray
from fairpack.solver import interrupt
from fairpack.solver.spacetime import sat

# solver.spacetime.cp's types, named but not imported: cp imports this module, and an import of cp here, even
# under TYPE_CHECKING or inside a function, is an import cycle (tests/test_architecture.py). cp passes in what
# the search needs (the outcome to fill, the heuristics' cost per task).
_Problem = Any  # cp._Problem
SpacetimeCp = Any  # cp.SpacetimeCp, with its objective scaled (scale_objective) and no model built
Deadline = Any  # cp.Deadline
_Outcome = Any  # cp._Outcome

#: From this many tasks on (pooled) ``spacetime-cp`` decomposes by default (``decompose='auto'``).
DECOMPOSE_MIN_TASKS = 10_000
#: Intervals (items) one sub-model aims at.
TARGET_ITEMS = 50
#: Seconds one sub-solve may take.
SUB_SOLVE_S = 1.0
#: Left-shift the whole schedule after this many improving CP-SAT steps.
SHIFT_EVERY = 4
#: Neighbourhoods of the CP-SAT phase (see :func:`pick_free`).
NEIGHBOURHOODS = ("window", "jobs", "jobs-window")
#: Share of the time left (after the warm start) that the job-order moves may take at most.
ORDER_SHARE = 0.5
#: A job moves at most this many places in the priority order in one move.
ORDER_REACH = 5
#: Phases stop after this many steps in a row without a strictly better schedule (without a time limit
#: this is what ends the call).
ORDER_STALL, CP_STALL = 200, 200
#: Share of the time left that the simulated heuristics of the warm start may take together, and rounds
#: of moving late jobs forward in a list schedule's order.
HEURISTICS_SHARE = 0.1
REPAIR_ROUNDS = 20
#: The least late list schedules of the warm start that are repaired (each up to :data:`REPAIR_SHARE`).
REPAIR_CANDIDATES = 3
#: Share of the time left that repairing one list schedule may take at most (0.05 was less than one round
#: of decoding 190,000 tasks at load 4 on 2 cores).
REPAIR_SHARE = 0.1
#: Share of the CP-SAT phase's time kept for the final left shift of the whole schedule.
FINAL_SHIFT_SHARE = 0.05
#: Time kept back at the end for the final left shift, the result and its verification, per task: the whole
#: call overran a 120 s limit by 3.5 s on 36,008 tasks and by 11 s on 189,440 (load 4 on 2 cores) with 2e-5.
VERIFY_S_PER_TASK = 6e-5


def applies(problem: _Problem, decompose: str | bool) -> bool:
    """Whether ``spacetime-cp`` decomposes: ``True``/``False`` force it (pooled placement only),
    ``'auto'`` from :data:`DECOMPOSE_MIN_TASKS` tasks on."""
    if decompose not in ("auto", True, False):
        raise ValueError(f"decompose must be 'auto', True or False, not {decompose!r}")
    if problem.placement != "pooled" or decompose is False:
        return False
    return decompose is True or problem.num_tasks >= DECOMPOSE_MIN_TASKS


@dataclass
class DecomposeStats:
    """What each phase did (reported in ``extra['decomposition']``)."""

    warm: dict[str, float] = field(default_factory=dict)  # warm start -> objective (real units)
    order_moves: int = 0
    order_improved: int = 0
    order_value: float | None = None  # objective after the job-order phase (real units)
    order_late: int | None = None  # ticks late against the fair deadlines after it (kept only at 0)
    steps: int = 0
    improved: int = 0
    shifts: int = 0
    timeouts: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # neighbourhood -> [steps, improving]
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> seconds

    def view(self) -> dict[str, Any]:
        return {"warm_starts": self.warm, "order_moves": self.order_moves, "order_improvements": self.order_improved,
                "order_objective": self.order_value,
                "order_late_ticks": self.order_late, "cp_steps": self.steps, "cp_improvements": self.improved,
                "left_shifts": self.shifts, "cp_timeouts": self.timeouts, "cp_by_neighbourhood": self.by_kind,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}  # fmt: skip


@dataclass(frozen=True)
class Layout:
    """Where every job's and stage's tasks sit in the flat task order (tasks are numbered stage by stage)."""

    stage_first: IntArray  # (stages + 1,)
    job_stage_first: IntArray  # (jobs + 1,)
    parents: tuple[tuple[int, ...], ...]
    children: tuple[tuple[int, ...], ...]
    sink: BoolArray  # per stage: no child stage

    @staticmethod
    def of(problem: _Problem) -> Layout:
        flat = problem.flat
        stage_first = np.concatenate([[0], np.cumsum(flat.stage_tasks)]).astype(np.int64)
        jobs = len(problem.instance.jobs)
        job_stage_first = np.searchsorted(flat.stage_job, np.arange(jobs + 1)).astype(np.int64)
        parents: list[list[int]] = [[] for _ in range(flat.num_stages)]
        children: list[list[int]] = [[] for _ in range(flat.num_stages)]
        for parent, child in flat.edges.tolist():
            parents[child].append(parent)
            children[parent].append(child)
        sink = np.ones(flat.num_stages, dtype=bool)
        sink[flat.edges[:, 0]] = False
        return Layout(stage_first, job_stage_first, tuple(tuple(p) for p in parents),
                      tuple(tuple(c) for c in children), sink)  # fmt: skip

    def sorted_within_stages(self, start: IntArray) -> IntArray:
        """Starts re-ordered within every stage (its tasks are identical): the flat order the CP model uses."""
        stage_of = np.repeat(np.arange(self.stage_first.size - 1), np.diff(self.stage_first))
        return start[np.lexsort((start, stage_of))]


def usage_profile(problem: _Problem, start: IntArray) -> IntArray:
    """Pooled use of every resource at every tick from 0 to the last end (inclusive, where it is 0)."""
    duration = problem.task_duration
    end = start + duration
    change = np.zeros((int(end.max(initial=0)) + 2, problem.scaled.capacity.size), dtype=np.int64)
    busy = duration > 0
    need = problem.scaled.demand[problem.flat.task_stage[busy]]
    np.add.at(change, start[busy], need)
    np.subtract.at(change, end[busy], need)
    return np.cumsum(change, axis=0)[:-1]


class Incumbent:
    """A feasible pooled schedule in ticks (sorted within stages) with its usage profile and score.

    The score is ``(late, value)``: ticks by which jobs miss their fair deadlines in total (0 for every
    schedule the search keeps), then the objective in the model's integer units; smaller is better.
    """

    def __init__(self, problem: _Problem, start: IntArray, job_coef: IntArray, makespan_coef: int) -> None:
        self.problem = problem
        self.job_coef, self.makespan_coef = job_coef, makespan_coef
        self.start = start
        self.end = start + problem.task_duration
        self.usage = usage_profile(problem, start)
        self.completion = problem.completions(start)
        stage = problem.flat.task_stage
        # Waves: tasks of one stage starting at one tick (runs of the flat order, which is sorted by start
        # within every stage), listed by start.
        cut = np.flatnonzero((np.diff(stage) != 0) | (np.diff(start) != 0)) + 1
        first = np.concatenate([[0], cut]).astype(np.int64)
        order = np.argsort(start[first], kind="stable")
        self.wave_first = first[order]
        self.wave_size = np.diff(np.append(first, start.size))[order]
        self.wave_start = start[self.wave_first]
        self.wave_job = problem.job_of_task[self.wave_first]

    @property
    def makespan(self) -> int:
        return int(self.completion.max(initial=0))

    def score(self) -> tuple[int, int]:
        return score(self.problem, self.completion, self.job_coef, self.makespan_coef)

    def with_start(self, start: IntArray) -> Incumbent:
        return Incumbent(self.problem, start, self.job_coef, self.makespan_coef)

    def tasks_of_waves(self, waves: IntArray) -> IntArray:
        first, size = self.wave_first[waves], self.wave_size[waves]
        offset = np.cumsum(size) - size
        return np.repeat(first - offset, size) + np.arange(int(size.sum()))


def score(problem: _Problem, completion: IntArray, job_coef: IntArray, makespan_coef: int) -> tuple[int, int]:
    """``(ticks late against the fair deadlines in total, objective in integer units)`` of completions."""
    late = 0 if problem.deadline is None else int(np.maximum(completion - problem.deadline, 0).sum())
    return late, int(job_coef @ completion + makespan_coef * completion.max(initial=0))


def left_shift(problem: _Problem, layout: Layout, start: IntArray, until: float = math.inf) -> IntArray:
    """Every task, in order of its start, moved to the earliest start where it fits (pooled capacity,
    releases, parent stages). No task starts later than before, so no completion gets worse; identical
    tasks of a stage starting together are placed as one group. At ``until`` the tasks not reached yet keep
    their starts, which stays feasible: every task moved so far holds, from any later start on, only what it
    held before."""
    flat, scaled = problem.flat, problem.scaled
    stage, duration = flat.task_stage, problem.task_duration
    capacity, demand = scaled.capacity, scaled.demand
    order = np.lexsort((stage, start))
    key_stage, key_start = stage[order], start[order]
    cut = np.flatnonzero((np.diff(key_stage) != 0) | (np.diff(key_start) != 0)) + 1
    bounds = np.concatenate([[0], cut, [order.size]]).astype(np.int64)
    usage = np.zeros((int((start + duration).max(initial=0)) + 1, capacity.size), dtype=np.int64)
    stage_end = np.zeros(flat.num_stages, dtype=np.int64)
    new = np.empty_like(start)
    release = scaled.release[flat.stage_job]
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        # One shift of 190,000 tasks far from their earliest takes many seconds.
        if interrupt.requested() or time.perf_counter() > until:
            new[order[a:]] = start[order[a:]]
            break
        g = int(key_stage[a])
        d = int(scaled.duration[g])
        earliest = max([int(release[g])] + [int(stage_end[p]) for p in layout.parents[g]])
        tasks = order[a:b]
        old = int(key_start[a])  # fits every copy not yet placed: no need to look past it
        need = demand[g]
        used = need > 0
        if d == 0 or not used.any():
            new[tasks] = earliest
            stage_end[g] = max(stage_end[g], earliest + d)
            continue
        placed, t = 0, earliest
        while placed < tasks.size:
            if t > old:
                raise RuntimeError("left_shift: a task no longer fits where it was")
            # Copies that fit at every tick from t, then over every window of d ticks; the group's old start
            # is always among them (every task placed before it starts, and so ends, no later than it did).
            room = ((capacity[used] - usage[t : old + d, used]) // need[used]).min(axis=1)
            window = np.lib.stride_tricks.sliding_window_view(room, d).min(axis=1)
            first = int(np.argmax(window > 0))
            if window[first] <= 0:
                raise RuntimeError("left_shift: a task no longer fits where it was")
            t += first
            count = min(int(window[first]), tasks.size - placed)
            new[tasks[placed : placed + count]] = t
            usage[t : t + d] += count * need
            placed += count
        stage_end[g] = max(stage_end[g], t + d)
    return layout.sorted_within_stages(new)


def priority_schedule(problem: _Problem, layout: Layout, job_rank: IntArray,
                      urgent_at: IntArray | None = None, bottleneck: int | None = None) -> IntArray:  # fmt: skip
    """A work-conserving list schedule (pooled, in ticks): at every event, runnable stages launch as many
    tasks as fit, jobs by ``job_rank`` (smaller first; distinct, so that jobs never interleave by accident),
    within a job the stage with the longest tail first. From tick ``urgent_at[k]`` on (optional), job ``k``
    goes before every job that is not urgent yet (urgent jobs by that tick).

    With a ``bottleneck`` resource (optional, see :func:`bottleneck_of`), a *light* stage (one whose
    dominant share is another resource) launches only into what the *heavy* ready stages after it in
    that order (dominant share on the bottleneck) leave of the other resources: at every event the heavy
    stages first reserve, in turn, what they would take, and a light stage may not use a reserved unit of a
    resource other than the bottleneck. Without it, a light job early in the order takes every cpu with
    little memory, the memory lies idle, and the schedule ends later than any schedule that keeps the
    bottleneck busy (on the 200-query TPC-H mix, 14,109 ticks against the fair-share schedule's 12,791 and
    a bottleneck work of 12,740): then the jobs that the fair share finishes last miss their ``T_k``
    whatever the order. Returns the starts in flat task order."""
    flat, scaled = problem.flat, problem.scaled
    demand, duration = scaled.demand, scaled.duration
    # Plain Python integers in the loop: numpy calls on 2-element rows cost more than the arithmetic.
    release = scaled.release[flat.stage_job].tolist()
    waiting = [len(p) for p in layout.parents]
    unlaunched = flat.stage_tasks.tolist()
    running = [0] * len(unlaunched)
    first_task = layout.stage_first[:-1].tolist()
    length = duration.tolist()
    start = np.zeros(problem.num_tasks, dtype=np.int64)
    free = scaled.capacity.tolist()
    # Per stage the (resource, demand) pairs it holds while it runs (none: it never waits for room).
    needs = [[(r, d) for r, d in enumerate(row) if d > 0] if length[g] > 0 else []
             for g, row in enumerate(demand.tolist())]  # fmt: skip
    rank = [(int(job_rank[flat.stage_job[g]]), -int(problem.tail[g]), g) for g in range(flat.num_stages)]
    ready: list[tuple[int, int, int]] = []
    pending = sorted((release[g], g) for g, w in enumerate(waiting) if w == 0)
    events: list[tuple[int, int, int]] = []  # (end, stage, tasks)
    # Resources every stage consumes: once one of them has no room for its smallest demand, nothing fits.
    consumes = (demand > 0) & (duration[:, None] > 0)
    everywhere = np.flatnonzero(consumes.all(axis=0)) if consumes.size else np.zeros(0, dtype=np.int64)
    floor = list(zip(everywhere.tolist(), demand[:, everywhere].min(axis=0).tolist(), strict=True))
    hold = None if bottleneck is None else _Holdback.of(scaled, bottleneck, floor, needs)
    # Plain lists in the loop (numpy scalar indexing per ready stage and event costs more than the search).
    urgent_stage = [] if urgent_at is None else urgent_at[flat.stage_job].tolist()
    first_urgent = np.iinfo(np.int64).max if urgent_at is None else int(urgent_at.min(initial=0))
    t = 0
    while pending or ready or events:
        _admit(pending, t, rank, ready, hold)
        turn = _urgent_first(ready, urgent_stage, t) if t >= first_urgent else ready
        if hold is not None:
            turn = hold.plan(turn, free, unlaunched, urgent_stage if t >= first_urgent else None, t)
        for key in list(turn):
            if any(free[r] < least for r, least in floor):
                break
            g = key[2]
            count = min([unlaunched[g]] + [free[r] // d for r, d in needs[g]])
            if hold is not None:
                count = hold.limit(g, count, free)
            if count > 0:
                first = first_task[g] + int(flat.stage_tasks[g]) - unlaunched[g]
                start[first : first + count] = t
                for r, d in needs[g]:
                    free[r] -= count * d
                unlaunched[g] -= count
                running[g] += count
                heapq.heappush(events, (t + length[g], g, count))
            if unlaunched[g] == 0:
                ready.remove(key)
                if hold is not None:
                    hold.remove(key)
        upcoming = ([events[0][0]] if events else []) + ([pending[0][0]] if pending else [])
        if not upcoming:
            break
        t = min(upcoming)
        while events and events[0][0] == t:
            _, g, count = heapq.heappop(events)
            for r, d in needs[g]:
                free[r] += count * d
            running[g] -= count
            if running[g] == 0 and unlaunched[g] == 0:
                _release_children(layout.children[g], waiting, release, pending, t)
    return start


def _admit(pending: list[tuple[int, int]], t: int, rank: list[tuple[int, int, int]], ready: list[tuple[int, int, int]],
           hold: _Holdback | None) -> None:  # fmt: skip
    """The pending stages released by tick ``t`` become ready."""
    while pending and pending[0][0] <= t:
        key = rank[pending.pop(0)[1]]
        bisect.insort(ready, key)
        if hold is not None:
            hold.add(key)


def _release_children(children: tuple[int, ...], waiting: list[int], release: list[int],
                      pending: list[tuple[int, int]], t: int) -> None:  # fmt: skip
    """A stage finished at ``t``: its children waiting for no other parent become pending."""
    for child in children:
        waiting[child] -= 1
        if waiting[child] == 0:
            bisect.insort(pending, (max(t, release[child]), child))


@dataclass
class _Holdback:
    """The bottleneck rule of :func:`priority_schedule`: heavy stages (dominant share on the bottleneck)
    reserve, at every event and in turn, what they would take; a light stage may use only the unreserved
    room of the other resources."""

    bottleneck: int
    heavy: list[bool]  # per stage
    needs: list[list[tuple[int, int]]]  # per stage, (resource, demand) pairs
    stop: list[tuple[int, int]]  # (resource, least heavy demand): below any, no heavy stage fits
    light_floor: list[tuple[int, int]]  # (resource, least demand) of the other resources every stage uses
    ready: list[tuple[int, int, int]] = field(default_factory=list)  # the heavy ready stages, by rank
    held: dict[int, int] = field(default_factory=dict)  # heavy stage -> tasks reserved at this event
    reserved: list[int] = field(default_factory=list)  # per resource, what the heavy stages not yet served hold

    @staticmethod
    def of(scaled: Any, bottleneck: int, floor: list[tuple[int, int]], needs: list[list[tuple[int, int]]]
           ) -> _Holdback:  # fmt: skip
        demand, duration = scaled.demand, scaled.duration
        share = demand / np.maximum(scaled.capacity, 1)
        heavy = (share[:, bottleneck] >= share.max(axis=1)) & (demand[:, bottleneck] > 0) & (duration > 0)
        least = int(demand[heavy, bottleneck].min(initial=np.iinfo(np.int64).max))
        return _Holdback(bottleneck, heavy.tolist(), needs, [*floor, (bottleneck, least)],
                         [(r, d) for r, d in floor if r != bottleneck])  # fmt: skip

    def add(self, key: tuple[int, int, int]) -> None:
        if self.heavy[key[2]]:
            bisect.insort(self.ready, key)

    def remove(self, key: tuple[int, int, int]) -> None:
        if self.heavy[key[2]]:
            self.ready.remove(key)

    def plan(self, turn: list[tuple[int, int, int]], free: list[int], unlaunched: list[int],
             urgent_stage: list[int] | None, t: int) -> list[tuple[int, int, int]]:  # fmt: skip
        """Reserve for the heavy ready stages (urgent ones first when ``urgent_stage``) and return the stages
        to serve: ``turn``, or only the heavy ones when no light stage fits beside the reservation."""
        heavy = self.ready if urgent_stage is None else _urgent_first(self.ready, urgent_stage, t)
        left = list(free)
        self.held, self.reserved = {}, [0] * len(free)
        for _, _, g in heavy:
            count = min([unlaunched[g]] + [left[r] // d for r, d in self.needs[g]])
            if count > 0:
                self.held[g] = count
                for r, d in self.needs[g]:
                    left[r] -= count * d
                    self.reserved[r] += count * d
                if any(left[r] < least for r, least in self.stop):
                    break  # no heavy stage fits any more
        if any(free[r] - self.reserved[r] < least for r, least in self.light_floor):
            return heavy  # no light stage fits beside what the heavy ones hold: skip them all
        return turn

    def limit(self, g: int, count: int, free: list[int]) -> int:
        """How many of ``count`` tasks of stage ``g`` may launch now (a heavy stage takes its reservation)."""
        if g in self.held:
            for r, d in self.needs[g]:
                self.reserved[r] -= self.held[g] * d
            return count
        if count <= 0 or self.heavy[g]:
            return count
        room = [(free[r] - self.reserved[r]) // d for r, d in self.needs[g] if r != self.bottleneck]
        return max(0, min([count, *room]))


def _urgent_first(ready: list[tuple[int, int, int]], urgent_stage: list[int], t: int) -> list[tuple[int, int, int]]:
    """The ready stages with those of jobs urgent at tick ``t`` first (by the tick they became urgent);
    ``urgent_stage`` is that tick per stage (its job's)."""
    urgent = [key for key in ready if urgent_stage[key[2]] <= t]
    if not urgent:
        return ready
    urgent.sort(key=lambda key: (urgent_stage[key[2]], key))
    return urgent + [key for key in ready if urgent_stage[key[2]] > t]


def job_priority_keys(problem: _Problem, work: FloatArray) -> dict[str, FloatArray]:
    """Job orders for :func:`priority_schedule` (smaller first; ties by job number), each per unit of
    weight after the release: the pooled dominant work (Smith's rule on the bottleneck resource), the
    critical path (SJF's order, fixed), and their product; with fair deadlines also the deadline ``T_k``
    (earliest first, an order that meets most of them from the start)."""
    length = np.zeros(len(problem.instance.jobs))
    np.maximum.at(length, problem.flat.stage_job, problem.tail.astype(np.float64))
    dominant = work.max(axis=1) if work.shape[1] else np.zeros_like(length)
    weight, release = problem.flat.weight, problem.scaled.release.astype(np.float64)
    keys = {"job-work": release + dominant / weight, "job-critical": release + length / weight,
            "job-work-critical": release + dominant * length / weight}  # fmt: skip
    if problem.deadline is not None:
        keys["job-deadline"] = problem.deadline.astype(np.float64)
    return keys


def bottleneck_of(problem: _Problem) -> int | None:
    """The resource with the most pooled work over its capacity, the one :func:`priority_schedule` keeps
    busy with a ``bottleneck``; None when no stage has its dominant share elsewhere (nothing to hold back)."""
    scaled, flat = problem.scaled, problem.flat
    capacity = np.maximum(scaled.capacity, 1).astype(np.float64)
    share = scaled.demand / capacity
    work = (flat.stage_tasks * scaled.duration) @ share
    if work.size < 2:
        return None
    b = int(np.argmax(work))
    busy = (scaled.duration > 0) & (flat.stage_tasks > 0)
    light = busy & (share[:, b] < share.max(axis=1))
    return b if light.any() else None


def rank_of(order: IntArray) -> IntArray:
    """The rank of every job in a priority order (jobs listed first to last)."""
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank


@dataclass
class Decoder:
    """Turns a job order into a list schedule and its score (``(late, value)``, see :class:`Incumbent`)."""

    problem: _Problem
    layout: Layout
    job_coef: IntArray
    makespan_coef: int
    urgent_at: IntArray | None = None  # see priority_schedule
    bottleneck: int | None = None  # see priority_schedule
    seconds: float = 0.0  # the longest decode so far

    def __call__(self, order: IntArray) -> tuple[IntArray, tuple[int, int]]:
        began = time.perf_counter()
        start = priority_schedule(self.problem, self.layout, rank_of(order), self.urgent_at, self.bottleneck)
        self.seconds = max(self.seconds, time.perf_counter() - began)
        return start, score(self.problem, self.problem.completions(start), self.job_coef, self.makespan_coef)

    def fits(self, until: float) -> bool:
        """Whether one more decode, as long as the longest so far, ends by ``until`` (one decode of 190,000
        tasks takes seconds, so checking the clock only before it would overrun the time limit); never once
        interrupted."""
        return not interrupt.requested() and time.perf_counter() + self.seconds <= until


def repair_order(decode: Decoder, order: IntArray, rounds: int = REPAIR_ROUNDS, until: float = math.inf,
                 decoded: tuple[IntArray, tuple[int, int]] | None = None
                 ) -> tuple[Decoder, IntArray, tuple[int, int]] | None:  # fmt: skip
    """Make a list schedule meet the fair deadlines: a job that misses ``T_k`` becomes urgent (goes first,
    :func:`priority_schedule`) earlier, by as much as it was late times ``2**round`` (at first: its
    deadline minus its critical path, minus the lateness), until no job is late. ``decoded`` is
    ``decode(order)`` when already known. Returns the decoder with those urgency ticks, the schedule and
    its score, or None after ``rounds`` rounds or at ``until``."""
    problem = decode.problem
    start, value = decode(order) if decoded is None else decoded
    if value[0] == 0 or problem.deadline is None:
        return decode, start, value
    length = np.zeros(problem.deadline.size, dtype=np.int64)
    np.maximum.at(length, problem.flat.stage_job, problem.tail)
    top = np.iinfo(np.int64).max // 4
    urgent_at = np.full(problem.deadline.size, top, dtype=np.int64)
    for step in range(rounds):
        if not decode.fits(until):
            break
        lateness = problem.completions(start) - problem.deadline
        late = lateness > 0
        # Twice as far every round: the last job of a list is alone at the end, and being urgent only from a
        # little before its deadline changes nothing (a job 10 ticks late needed three rounds of 10 ticks).
        urgent_at[late] = (np.minimum(urgent_at[late], problem.deadline[late] - length[late])
                           - lateness[late] * 2 ** min(step, 20))  # fmt: skip
        decode = replace(decode, urgent_at=urgent_at.copy())
        start, value = decode(order)
        if value[0] == 0:
            return decode, start, value
    return None


def improve_order(decode: Decoder, order: IntArray, start: IntArray, value: tuple[int, int], until: float,
                  rng: np.random.Generator, stats: DecomposeStats
                  ) -> tuple[IntArray, IntArray, tuple[int, int]]:  # fmt: skip
    """Move one job up to :data:`ORDER_REACH` places in the order at a time, keep moves that are no worse
    (sideways moves let the search cross plateaus), until ``until`` or :data:`ORDER_STALL` moves without a
    strictly better schedule."""
    jobs = order.size
    stalled = 0
    while jobs > 1 and decode.fits(until) and stalled < ORDER_STALL:
        i = int(rng.integers(0, jobs))
        j = int(np.clip(i + rng.integers(-ORDER_REACH, ORDER_REACH + 1), 0, jobs - 1))
        if i == j:
            continue
        moved = np.insert(np.delete(order, i), j, order[i])
        candidate, found = decode(moved)
        stats.order_moves += 1
        stalled += 1
        if found <= value:
            if found < value:
                stats.order_improved += 1
                stalled = 0
            order, start, value = moved, candidate, found
    return order, start, value


@dataclass(frozen=True)
class Items:
    """The freed tasks grouped: tasks of one stage starting together in the incumbent, in chunks."""

    stage: IntArray
    count: IntArray
    start: IntArray  # in the incumbent
    tasks: IntArray  # the freed tasks, item by item


def make_items(problem: _Problem, incumbent: Incumbent, free: IntArray, chunk: int) -> Items:
    """``free`` tasks as items of at most ``chunk`` tasks of one stage with one start in the incumbent."""
    stage = problem.flat.task_stage[free]
    begin = incumbent.start[free]
    order = np.lexsort((begin, stage))
    tasks, stage, begin = free[order], stage[order], begin[order]
    new_group = np.concatenate([[True], (np.diff(stage) != 0) | (np.diff(begin) != 0)])
    group_first = np.flatnonzero(new_group)
    rank = np.arange(tasks.size) - np.repeat(group_first, np.diff(np.append(group_first, tasks.size)))
    item_first = np.flatnonzero(new_group | (rank % chunk == 0))
    return Items(stage[item_first], np.diff(np.append(item_first, tasks.size)), begin[item_first], tasks)


def _kept_bounds(problem: _Problem, layout: Layout, incumbent: Incumbent, free: IntArray
                 ) -> tuple[IntArray, IntArray, IntArray]:  # fmt: skip
    """Per stage the last end and the first start of its kept (not freed) tasks (-1 and a huge number
    where there are none), and per job the last end of its kept tasks (at least its release)."""
    top = np.iinfo(np.int64).max // 4
    kept = np.ones(problem.num_tasks, dtype=bool)
    kept[free] = False
    first = layout.stage_first[:-1]
    any_kept = (np.add.reduceat(kept.astype(np.int64), first) > 0) & (np.diff(layout.stage_first) > 0)
    last_end = np.where(any_kept, np.maximum.reduceat(np.where(kept, incumbent.end, -1), first), -1)
    first_start = np.where(any_kept, np.minimum.reduceat(np.where(kept, incumbent.start, top), first), top)
    job_end = problem.scaled.release.copy()
    np.maximum.at(job_end, problem.flat.stage_job, last_end)
    return last_end, first_start, job_end


def _stage_ends(model: Any, layout: Layout, stage_duration: IntArray, items: Items, starts: list[Any],
                lo: IntArray, hi: IntArray) -> dict[int, Any]:  # fmt: skip
    """Per stage with freed items, the end of its last item (a variable), and precedence between the items of
    parent and child stages; interchangeable items of a stage keep their order (no symmetric solutions)."""
    by_stage: dict[int, list[int]] = {}
    for i, g in enumerate(items.stage.tolist()):
        by_stage.setdefault(g, []).append(i)
    stage_end: dict[int, Any] = {}
    for g, members in by_stage.items():
        d = int(stage_duration[g])
        for a, b in itertools.pairwise(members):
            if items.count[a] == items.count[b]:
                model.add(starts[a] <= starts[b])  # interchangeable items keep their order
        if len(members) == 1:
            stage_end[g] = starts[members[0]] + d
            continue
        end = model.new_int_var(int(lo[members].min()) + d, int(hi[members].max()) + d, f"e{g}")
        for i in members:
            model.add(end >= starts[i] + d)
        stage_end[g] = end
    for g, members in by_stage.items():
        for parent in (p for p in layout.parents[g] if p in stage_end):
            for i in members:
                model.add(starts[i] >= stage_end[parent])
    return stage_end


def sub_solve(problem: _Problem, layout: Layout, incumbent: Incumbent, free: IntArray, chunk: int,
              seconds: float, seed: int, workers: int) -> tuple[Items, IntArray | None, str]:  # fmt: skip
    """Re-optimise the ``free`` tasks (as items of at most ``chunk`` tasks) with every other task kept where
    it is. Returns the items, their new starts (None if CP-SAT found no schedule) and CP-SAT's status."""
    from ortools.sat.python import cp_model

    flat, scaled = problem.flat, problem.scaled
    items = make_items(problem, incumbent, free, chunk)
    last_end, first_start, job_end = _kept_bounds(problem, layout, incumbent, free)
    duration = scaled.duration[items.stage]
    job = flat.stage_job[items.stage]
    horizon = incumbent.makespan + int(problem.tail[items.stage].max(initial=0))
    lo = scaled.release[job] + problem.head[items.stage]
    hi = horizon - problem.tail[items.stage]
    if problem.deadline is not None:  # C_k <= T_k through the tail of the item's stage
        hi = np.minimum(hi, problem.deadline[job] - problem.tail[items.stage])
    for i, g in enumerate(items.stage.tolist()):  # barriers to kept tasks are bounds
        lo[i] = max([int(lo[i])] + [int(last_end[p]) for p in layout.parents[g]])
        hi[i] = min([int(hi[i])] + [int(first_start[c] - duration[i]) for c in layout.children[g]])
    lo, hi = np.minimum(lo, items.start), np.maximum(hi, items.start)  # the incumbent is always inside
    model = cp_model.CpModel()
    starts = [model.new_int_var(int(a), int(b), f"s{i}") for i, (a, b) in enumerate(zip(lo.tolist(), hi.tolist(),
                                                                                        strict=True))]  # fmt: skip
    intervals = [model.new_fixed_size_interval_var(s, int(d), f"i{i}")
                 for i, (s, d) in enumerate(zip(starts, duration.tolist(), strict=True))]  # fmt: skip
    stage_end = _stage_ends(model, layout, scaled.duration, items, starts, lo, hi)
    completion: dict[int, Any] = {}
    for k in np.unique(job).tolist():
        top = horizon if problem.deadline is None else min(horizon, int(problem.deadline[k]))
        c = model.new_int_var(int(job_end[k]), max(top, int(job_end[k])), f"C{k}")
        for g in range(int(layout.job_stage_first[k]), int(layout.job_stage_first[k + 1])):
            if layout.sink[g] and g in stage_end:
                model.add(c >= stage_end[g])
        completion[k] = c
    _kept_capacity(model, scaled, incumbent, items, intervals, duration, int(lo.min()), int((hi + duration).max()))
    coef = incumbent.job_coef
    objective: Any = sum(int(coef[k]) * c for k, c in completion.items() if coef[k])
    current = sum(int(coef[k]) * int(incumbent.completion[k]) for k in completion)
    if incumbent.makespan_coef:
        others = np.delete(incumbent.completion, list(completion))
        makespan = model.new_int_var(int(others.max(initial=0)), horizon, "M")
        for c in completion.values():
            model.add(makespan >= c)
        objective = objective + incumbent.makespan_coef * makespan
        current += incumbent.makespan_coef * incumbent.makespan
    model.add(objective <= current)
    model.minimize(objective)
    for variable, value in zip(starts, items.start.tolist(), strict=True):
        model.add_hint(variable, int(value))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(seconds, 0.01)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    code = sat.run(solver, model)
    status = str(solver.status_name(code))
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return items, None, status
    return items, np.array([solver.value(v) for v in starts], dtype=np.int64), status


def _kept_capacity(model: Any, scaled: Any, incumbent: Incumbent, items: Items, intervals: list[Any],
                   duration: IntArray, low: int, high: int) -> None:  # fmt: skip
    """One cumulative per resource that can bind over ``[low, high]``: the items, and the kept tasks' use
    as fixed intervals, one per stretch of constant use."""
    kept = np.zeros((high - low + 1, scaled.capacity.size), dtype=np.int64)
    top = min(high + 1, incumbent.usage.shape[0])
    if top > low:
        kept[: top - low] = incumbent.usage[low:top]
    demand = scaled.demand[items.stage] * items.count[:, None]
    busy = duration > 0
    change = np.zeros((kept.shape[0] + 1, kept.shape[1]), dtype=np.int64)
    np.add.at(change, items.start[busy] - low, demand[busy])
    np.subtract.at(change, items.start[busy] + duration[busy] - low, demand[busy])
    kept -= np.cumsum(change, axis=0)[:-1]
    for r, capacity in enumerate(scaled.capacity.tolist()):
        use = np.flatnonzero(busy & (demand[:, r] > 0))
        level = kept[:, r]
        if use.size == 0 or int(demand[use, r].sum() + level.max(initial=0)) <= capacity:
            continue  # this resource cannot bind
        edges = np.flatnonzero(np.diff(np.concatenate([[0], level, [0]])) != 0)
        stretches = [(a, b) for a, b in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True) if level[a] > 0]
        fixed = [model.new_fixed_size_interval_var(low + a, b - a, f"k{r}_{a}") for a, b in stretches]
        heights = [int(demand[i, r]) for i in use] + [int(level[a]) for a, _ in stretches]
        model.add_cumulative([intervals[i] for i in use] + fixed, heights, capacity)


def pick_free(rng: np.random.Generator, incumbent: Incumbent, kind: str, target: int) -> IntArray:
    """Tasks to free: about ``target`` waves (tasks of a stage starting together), chosen by ``kind``:

    * ``window``: consecutive waves in order of start from a random one (a rolling time window);
    * ``jobs``: the waves of whole jobs that finish next to one another;
    * ``jobs-window``: of 2-6 jobs running at a random moment, the waves starting nearest it.
    """
    waves = incumbent.wave_start.size
    target = min(target, waves)
    if kind == "window":
        first = int(rng.integers(0, waves - target + 1))
        return incumbent.tasks_of_waves(np.arange(first, first + target))
    per_job = np.bincount(incumbent.wave_job, minlength=incumbent.completion.size)
    if kind == "jobs":
        order = np.argsort(incumbent.completion + rng.random(incumbent.completion.size), kind="stable")
        position = int(rng.integers(0, order.size))
        chosen: list[int] = []
        total = 0
        for k in np.concatenate([order[position:], order[:position][::-1]]).tolist():
            if chosen and total + per_job[k] > target:
                break
            chosen.append(k)
            total += int(per_job[k])
        return incumbent.tasks_of_waves(np.flatnonzero(np.isin(incumbent.wave_job, chosen)))
    p = incumbent.problem
    moment = int(rng.integers(0, max(incumbent.makespan, 1)))
    wave_end = incumbent.wave_start + p.scaled.duration[p.flat.task_stage[incumbent.wave_first]]
    running = np.unique(incumbent.wave_job[(incumbent.wave_start <= moment) & (wave_end > moment)])
    if running.size == 0:
        running = np.unique(incumbent.wave_job)
    jobs = rng.choice(running, size=min(int(rng.integers(2, 7)), running.size), replace=False)
    mine = np.flatnonzero(np.isin(incumbent.wave_job, jobs))
    nearest = mine[np.argsort(np.abs(incumbent.wave_start[mine] - moment), kind="stable")[:target]]
    return incumbent.tasks_of_waves(np.sort(nearest))


def improve_schedule(incumbent: Incumbent, layout: Layout, until: float, rng: np.random.Generator, seed: int,
                     workers: int, stats: DecomposeStats,
                     on_step: Callable[[Incumbent], None] | None = None) -> Incumbent:  # fmt: skip
    """CP-SAT on parts of the schedule (see the module docstring) until ``until`` or :data:`CP_STALL` steps
    without a strictly better schedule; returns the best incumbent."""
    problem = incumbent.problem
    since_shift = stalled = 0
    while time.perf_counter() < until - 0.05 and stalled < CP_STALL and not interrupt.requested():
        stats.steps += 1
        stalled += 1
        kind = NEIGHBOURHOODS[int(rng.integers(0, len(NEIGHBOURHOODS)))]
        free = pick_free(rng, incumbent, kind, TARGET_ITEMS)
        chunk = max(1, math.ceil(free.size / TARGET_ITEMS))
        seconds = min(SUB_SOLVE_S, until - time.perf_counter())
        items, new, status = sub_solve(problem, layout, incumbent, free, chunk, seconds, seed + stats.steps, workers)
        record = stats.by_kind.setdefault(kind, [0, 0])
        record[0] += 1
        if new is None:
            stats.timeouts += status == "UNKNOWN"
            continue
        candidate = incumbent.start.copy()
        candidate[items.tasks] = np.repeat(new, items.count)
        trial = incumbent.with_start(layout.sorted_within_stages(candidate))
        if trial.score() > incumbent.score():
            continue  # a guard: a sub-solution is never worse
        if trial.score() < incumbent.score():
            stats.improved += 1
            record[1] += 1
            since_shift += 1
            stalled = 0
        incumbent = trial
        if since_shift >= SHIFT_EVERY:
            incumbent = incumbent.with_start(left_shift(problem, layout, incumbent.start, until))
            stats.shifts += 1
            since_shift = 0
        if on_step is not None:
            on_step(incumbent)
    return incumbent


def warm_starts(problem: _Problem, decode: Decoder, work: FloatArray, deadline: Deadline,
                witness: dict[str, tuple[IntArray, IntArray]], heuristic_seconds: Mapping[str, float]
                ) -> tuple[dict[str, IntArray], tuple[Decoder, IntArray] | None]:  # fmt: skip
    """Feasible tick schedules to start from (meeting every fair deadline when they are enforced), and the
    decoder and priority order of the best list schedule by ``(late, value)``: one that meets every fair
    deadline after :func:`repair_order` if any does, else the least late, which the job-order moves then
    make less late first (None only when no list schedule was decoded in time)."""
    from fairpack.solver.spacetime.warmstart import WARM_HEURISTICS, heuristic_starts

    found = {name: starts for name, (starts, _) in witness.items()}
    if problem.exact:  # the simulated heuristics run in real time; their starts are whole ticks only then
        until = deadline.until(HEURISTICS_SHARE)
        for name in (n for n in WARM_HEURISTICS if n not in witness):
            forced = name == "sjf" and problem.deadline is None
            if not forced and heuristic_seconds[name] * problem.num_tasks > deadline.left() * HEURISTICS_SHARE:
                continue  # SJF always runs without caps: it is the cheapest and on TPC-H mixes the best of them
                # (under caps it misses some T_k there, and its 10% of the time is the repairs' on 190,000 tasks)
            ran = heuristic_starts(problem.instance, problem.scaled.tick, "pooled", (name,),
                                   None if np.isinf(until) else until)  # fmt: skip
            found.update({key: starts for key, (starts, _) in ran.items()})
    decoders = {"": decode}
    bottleneck = bottleneck_of(problem)
    if bottleneck is not None:
        decoders["-bottleneck"] = replace(decode, bottleneck=bottleneck)
    decoded: list[tuple[tuple[int, int], str, Decoder, IntArray, IntArray]] = []
    for name, key in job_priority_keys(problem, work).items():
        order = np.argsort(key, kind="stable")
        for suffix, decoder in decoders.items():
            if not decoder.fits(deadline.until(1.0)):
                break
            starts, value = decoder(order)
            decoded.append((value, name + suffix, decoder, order, starts))
    decoded.sort(key=lambda row: (row[0], row[1]))
    best: tuple[tuple[int, int], Decoder, IntArray] | None = None
    tries = REPAIR_CANDIDATES
    for value, name, decoder, order, starts in decoded:
        if value[0] > 0 and tries > 0:  # late: urgency ticks for the late jobs (the least late lists first)
            tries -= 1
            repaired = repair_order(decoder, order, until=deadline.until(REPAIR_SHARE), decoded=(starts, value))
            if repaired is not None:
                decoder, starts, value = repaired
        if value[0] == 0:
            found[name] = starts
        if best is None or value < best[0]:  # still late: a candidate for the order moves, not a warm start
            best = (value, decoder, order)
    machine = np.zeros(problem.num_tasks, dtype=np.int64)
    kept = {name: starts for name, starts in found.items() if problem.feasible(starts, machine)}
    return kept, None if best is None else (best[1], best[2])


def search(cp: SpacetimeCp, deadline: Deadline, witness: dict[str, tuple[IntArray, IntArray]], workers: int,
           seed: int, outcome: _Outcome, heuristic_seconds: Mapping[str, float]
           ) -> tuple[str, IntArray, float] | None:  # fmt: skip
    """The decomposition (module docstring) on ``cp``'s problem, whose objective coefficients are set
    (``cp.scale_objective()``) but whose model is not built; ``outcome`` (empty) receives the schedules found,
    ``heuristic_seconds`` is each simulated heuristic's cost per task. Returns the best warm start (rule,
    starts, objective), None if there was none."""
    from fairpack.solver import progress

    problem = cp.problem
    began = time.perf_counter()
    # Keep time back for the result and its verification.
    end = None if deadline.end is None else deadline.end - VERIFY_S_PER_TASK * problem.num_tasks
    budget = replace(deadline, end=end)
    stats = DecomposeStats()
    outcome.raise_bound(cp.precedence_bound())
    layout = Layout.of(problem)
    decode = Decoder(problem, layout, cp.job_coef, cp.makespan_coef)
    found, listed = warm_starts(problem, decode, cp.relaxation()[2], budget, witness, heuristic_seconds)
    stats.seconds["warm_start"] = time.perf_counter() - began
    stats.warm = {name: problem.value(starts) for name, starts in found.items()}
    if not found:
        outcome.solve_s = time.perf_counter() - began
        outcome.extra = {"decomposition": stats.view()}
        return None
    best = min(found, key=lambda name: (score(problem, problem.completions(found[name]), cp.job_coef,
                                              cp.makespan_coef), name))  # fmt: skip
    outcome.offer(found[best], None, cp.integer_value(found[best]), best)
    progress.log("spacetime-cp", f"decomposition: warm start {best}: {stats.warm[best]:.6g}")
    rng = np.random.default_rng(seed)
    if listed is not None and not outcome.proven:
        phase = time.perf_counter()
        decode, order = listed
        starts, value = decode(order)
        order, starts, value = improve_order(decode, order, starts, value, budget.until(ORDER_SHARE), rng, stats)
        if value[0] > 0:  # the moves stalled with jobs still late: urgency ticks for those, then moves again
            repaired = repair_order(decode, order, until=budget.until(REPAIR_SHARE))
            if repaired is not None:
                decode, starts, value = repaired
                order, starts, value = improve_order(decode, order, starts, value, budget.until(ORDER_SHARE / 2),
                                                     rng, stats)  # fmt: skip
        stats.order_late = value[0]
        if value[0] == 0:  # only a schedule meeting every fair deadline may be kept
            outcome.offer(starts, None, cp.integer_value(starts), "job-order")
        stats.order_value = problem.value(starts)
        stats.seconds["job_order"] = time.perf_counter() - phase
        progress.log("spacetime-cp", f"job order: {stats.order_moves} moves, {stats.order_improved} improving; "
                     f"{stats.order_value:.6g}")  # fmt: skip
    if not outcome.proven and budget.left() > 0:
        phase = time.perf_counter()
        assert outcome.start is not None
        incumbent = Incumbent(problem, layout.sorted_within_stages(outcome.start), cp.job_coef, cp.makespan_coef)
        bound = None if outcome.bound is None else cp.real(outcome.bound)

        def step(current: Incumbent) -> None:
            progress.report("spacetime-cp parts", cp.real(current.score()[1]), bound)

        # The last part of the time is for the final left shift (a 120 s call on 189,440 tasks overran by 18 s
        # when the shift was unbounded).
        incumbent = improve_schedule(incumbent, layout, budget.until(1.0 - FINAL_SHIFT_SHARE), rng, seed, workers,
                                     stats, step)  # fmt: skip
        final = left_shift(problem, layout, incumbent.start, budget.until(1.0))
        outcome.offer(final, None, cp.integer_value(final), "cp-sat parts")
        stats.seconds["cp_parts"] = time.perf_counter() - phase
        progress.log("spacetime-cp", f"CP-SAT parts: {stats.steps} steps, {stats.improved} improving")
    outcome.status = "DECOMPOSED"
    outcome.solve_s = time.perf_counter() - began
    outcome.extra = {"decomposition": stats.view()}
    return best, found[best], stats.warm[best]
