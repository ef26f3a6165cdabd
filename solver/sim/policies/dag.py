"""The DAG-job policies: ``carbyne``, ``drf-dag``, ``drf-strict``, ``tetris``, ``sjf``, on the one simulator.

Every policy is a work-conserving list scheduler: at every event it launches runnable tasks, in its own
order, while they fit the free capacity (:mod:`fairpack.solver.sim.engine`), except ``drf-strict``. Policies
decide on pooled quantities (shares, alignment with the cluster's free capacity); with
``placement='servers'`` the engine puts each launched task on a machine it fits (best fit), so a task
that fits no machine's free room waits. A stage whose placement options carry their own demands is ranked
and held to shares by the stage's declared demand (what the job states up front), while each launched task
takes, and counts in its job's usage, the demand of the option it lands under (the engine's rule).

* ``drf-dag`` -- DRF between jobs: the job with the lowest weighted dominant share of its *current*
  usage launches next (one task at a time); within the job breadth-first (the runnable stage of
  lowest DAG level first, then the lower stage index).
* ``drf-strict`` -- every job held to its DRF share (not work-conserving): the shares ``A_k`` of the jobs
  present (re-run when a job arrives or finishes, as Carbyne's), and a job launches a task only while its
  weighted dominant share with the task stays within its share's, ``max_r A_k[r]``; a job running nothing
  may launch one task that exceeds it (a real fair scheduler offers a job below its share whatever it
  can use, so a task larger than the share runs rather than waits forever). Jobs in DRF order, within a
  job breadth-first. Its completion times are the fair completion times ``T_k``
  (:mod:`fairpack.solver.sim.fairshare`).
* ``tetris`` -- packing: over all runnable tasks of all jobs, the one with the highest alignment score
  ``(demand / C) . (free / C)`` launches next (Tetris, Grandl et al. SIGCOMM'14, without its SRTF term).
* ``sjf`` -- shortest job first by *remaining* critical path (longest duration path through the job's
  unfinished stages, so it shrinks as stages finish); within the job the stage with the longest tail.
  Weights are ignored.
* ``carbyne`` (Grandl et al. OSDI'16) -- at every event:

  1. DRF shares ``A_k`` over the active jobs' aggregate resource-time vectors
     (:func:`fairpack.solver.sim.fairshare.drf_shares`, re-run when a job is released or finishes).
  2. Each job plans on its share ``A_k * C``: a forward list schedule of its remaining DAG (its running
     tasks included) gives its due date ``D_k = t + F_k``; its not-yet-launched tasks are then reverse
     packed on ``A_k * C`` (the DAG reversed, list-scheduled backwards from ``D_k``, longest path to a
     source first), and the tasks whose latest start is ``<= t`` *must* start now (urgent). The
     reverse pack ignores the job's running tasks (an approximation: it may see a little more room
     near ``t`` than there is).
  3. Guaranteed phase: jobs in DRF order (lowest weighted dominant share of current usage first) launch,
     within their share, their urgent tasks -- or, when the job is not altruistic at this event, any of
     its runnable tasks. Each job is altruistic with probability ``altruism`` (drawn per job and event
     from ``seed``; 1 = always, as in the paper; 0 = plain DRF inside the shares).
  4. Leftovers (everything the shares did not use, work-conserving): jobs by SRTF over remaining work
     (least normalised resource-time of unlaunched tasks first) and, within the job, the runnable stage
     with the best Tetris alignment. ``reverse_order=True`` swaps the two keys: the best-aligned task of
     any job first, SRTF breaking ties.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from fairpack.models.tolerance import settled
from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.pack import EPS, Dag, pack
from fairpack.solver.sim.policies.options import flag, fraction, integer
from fairpack.solver.sim.shares import drf_shares
from fairpack.solver.sim.workload import Workload

HEURISTICS = ("carbyne", "drf-dag", "drf-strict", "tetris", "sjf")

#: Carbyne plans with the compiled list scheduler (``solver.sim.pack_compiled``, numba) from this many tasks
#: in the workload on (unless told otherwise); below it the pure-Python :func:`pack` runs. A fresh process pays
#: about 0.65 s of CPU to import numba and load the cached machine code (about 15 s once per environment, to
#: compile it); on TPC-H mixes the compiled packs save 0.2 s at 8,000 tasks and 1.4 s at 18,000 (whole runs,
#: each in a fresh process, at load 2), so the break-even is near 11,000.
COMPILED_FROM_TASKS = 10_000


class CandidatePolicy(BasePolicy):
    """A DAG policy ranks the candidates (runnable groups a task of which fits now) and picks one."""

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        candidates = sim.candidates()
        if candidates.size == 0:
            return None
        return self.pick(sim, candidates)

    def pick(self, sim: Simulation, candidates: IntArray) -> tuple[int, int] | None:
        raise NotImplementedError


def _dominant(sim: Simulation) -> FloatArray:
    """Weighted dominant share of every job's current usage."""
    jobs = sim.jobs
    share = np.divide(sim.usage, jobs.capacity, out=np.zeros_like(sim.usage), where=jobs.capacity > 0)
    return share.max(axis=1) / jobs.weight


def _alignment(sim: Simulation, stages: IntArray, normalised: FloatArray) -> FloatArray:
    free = np.divide(sim.free, sim.jobs.capacity, out=np.zeros_like(sim.free), where=sim.jobs.capacity > 0)
    return normalised[stages] @ np.maximum(free, 0.0)


class DrfDag(CandidatePolicy):
    name = "drf-dag"

    def pick(self, sim: Simulation, candidates: IntArray) -> tuple[int, int] | None:
        jobs = sim.jobs
        dominant = _dominant(sim)[jobs.stage_job[candidates]]
        best = np.lexsort((candidates, jobs.depth[candidates], dominant))[0]
        return int(candidates[best]), 1


class Tetris(CandidatePolicy):
    name = "tetris"

    def __init__(self, jobs: Workload) -> None:
        self.normalised = jobs.normalised_demand()

    def pick(self, sim: Simulation, candidates: IntArray) -> tuple[int, int] | None:
        score = _alignment(sim, candidates, self.normalised)
        best = np.lexsort((candidates, -score))[0]
        return int(candidates[best]), 1


class Sjf(CandidatePolicy):
    name = "sjf"

    def on_event(self, sim: Simulation) -> None:
        jobs = sim.jobs
        left = np.where(sim.stage_done, 0.0, jobs.tail)
        self.remaining = np.zeros(jobs.num_jobs)
        np.maximum.at(self.remaining, jobs.stage_job, left)

    def pick(self, sim: Simulation, candidates: IntArray) -> tuple[int, int] | None:
        jobs = sim.jobs
        k = jobs.stage_job[candidates]
        best = np.lexsort((candidates, -jobs.tail[candidates], k, self.remaining[k]))[0]
        return int(candidates[best]), int(jobs.count.max())


class _Pending:
    """The groups one event may launch, ranked by their job's weighted dominant share, updated pick by pick.

    Built at every event from the simulation's state (numpy over the runnable groups and the jobs). Within an
    event nothing of a job changes but by its own launches, and only in one direction: its usage (hence its
    dominant share) grows, its groups' unlaunched tasks shrink, and so does the cluster's free room. So the
    groups sit in a heap keyed ``(dominant share of the job, secondary[g], g)``: after a launch only the launched
    job's entries are pushed again, with its new share (older entries of the job are recognised as stale by
    their share), and a group that fails a test that can only fail from then on (it fits nowhere, its job is
    over its share, ...) is dropped for the rest of the event. A pick costs a few heap operations instead of
    numpy over every pending group.
    """

    def __init__(self, sim: Simulation, secondary: FloatArray | IntArray, secondary_list: list[Any],
                 job_of: list[int], hopeless: BoolArray | None = None) -> None:  # fmt: skip
        jobs = sim.jobs
        groups = np.flatnonzero(sim.runnable())
        dominant = _dominant(sim)
        owner = jobs.stage_job[groups]
        self.dominant: list[float] = dominant.tolist()
        self.secondary = secondary_list
        # Groups that fail `first`'s test whatever happens this event (``hopeless``) are dropped from the start:
        # never ranked, never pushed again.
        ranked = groups if hopeless is None else groups[~hopeless[groups]]
        owned = jobs.stage_job[ranked]
        order = np.lexsort((ranked, secondary[ranked], dominant[owned]))
        self.heap: list[tuple[float, Any, int]] = list(zip(dominant[owned[order]].tolist(),
                                                           secondary[ranked[order]].tolist(),
                                                           ranked[order].tolist(), strict=True))  # sorted: a heap
        self.groups = groups
        # A job's groups are numbered contiguously: cut the sorted groups where the job changes.
        edges = [0, *(np.flatnonzero(np.diff(owner)) + 1).tolist(), groups.size]
        listed = groups.tolist()
        self.by_job: dict[int, list[int]] = {job_of[listed[a]]: listed[a:b]
                                             for a, b in itertools.pairwise(edges) if b > a}  # fmt: skip
        self.owner = job_of
        self.dropped: set[int] = set() if hopeless is None else set(groups[hopeless[groups]].tolist())

    def relaunched(self, sim: Simulation, k: int, dominant: float) -> None:
        """Job ``k`` launched a task and its dominant share is now ``dominant``: re-rank its live groups."""
        if dominant == self.dominant[k]:
            return
        self.dominant[k] = dominant
        unlaunched, dropped, secondary = sim.unlaunched, self.dropped, self.secondary
        for g in self.by_job[k]:
            if g not in dropped and unlaunched[g] > 0:
                heapq.heappush(self.heap, (dominant, secondary[g], g))

    def first(self, eligible: Callable[[int], bool]) -> int:
        """The best-ranked group for which ``eligible`` holds (-1 if none); those failing it are dropped."""
        heap, dropped, dominant, owner = self.heap, self.dropped, self.dominant, self.owner
        while heap:
            share, _, g = heap[0]
            if g in dropped or share != dominant[owner[g]]:
                heapq.heappop(heap)  # dropped, or ranked by a share its job no longer has
            elif eligible(g):
                return g
            else:
                heapq.heappop(heap)
                dropped.add(g)
        return -1


def _job_dominant(usage: list[float], capacity: list[float], weight: float) -> float:
    """One job's entry of :func:`_dominant` (the same float operations, on plain floats)."""
    return max([u / c if c > 0 else 0.0 for u, c in zip(usage, capacity, strict=True)]) / weight


def _room(sim: Simulation) -> list[float] | None:
    """The free room (plus the fit slack) of a cluster of one machine (pooled, or one server), else None."""
    room = sim.cluster.room
    return room[0].tolist() if room.shape[0] == 1 else None


def _fits_now(sim: Simulation, room: list[float] | None, demand: list[float], g: int) -> bool:
    """Whether one task of group ``g`` fits some machine now (``room``: :func:`_room`), as ``sim.fits`` says."""
    if sim.jobs.has_options:  # only the machines its placement options may use
        return bool(sim.fits(np.array([g]))[0])
    if room is None:
        return bool(sim.cluster.fits(sim.jobs.demand[g]).any())
    return all(d <= r for d, r in zip(demand, room, strict=True) if d > 0)


def _usage_if_fits(sim: Simulation, room: list[float] | None, demand: list[float], g: int, k: int,
                   usage_of: dict[int, list[float]]) -> list[float] | None:  # fmt: skip
    """Job ``k``'s usage if group ``g`` (of job ``k``) has a task left that fits now, else None.

    ``usage_of`` caches the usage per job for one pick (nothing launches while a pick looks for its group).
    """
    if sim.unlaunched[g] <= 0 or not _fits_now(sim, room, demand, g) or sim.at_cap(g):
        return None  # a job's queue at its cap stays there for the rest of the event (running only grows)
    usage = usage_of.get(k)
    if usage is None:
        usage = usage_of[k] = sim.usage[k].tolist()
    return usage


def _latest_ends(launches: tuple[tuple[float, int], ...], duration: float) -> tuple[list[float], list[int]]:
    """A reverse pack's launches of one stage: ``ends`` (start + duration of each launch) and ``after``.

    Starts come in time order, so ``ends`` is sorted too, and the tasks of the launches whose end is at least
    ``x`` number ``after[bisect_left(ends, x)]`` (``after`` counts from each position on, and ends with 0).
    """
    ends = [start + duration for start, _ in launches]
    after = list(itertools.accumulate([n for _, n in reversed(launches)], initial=0))  # sums of integers: exact
    after.reverse()
    return ends, after


M = TypeVar("M")


def _memo(store: dict[int, tuple[bytes, dict[bytes, M]]], k: int, counts: bytes) -> dict[bytes, M]:
    """Job ``k``'s memo for its task counts ``counts`` (by share), emptied when the counts are new."""
    entry = store.get(k)
    if entry is None or entry[0] != counts:
        entry = store[k] = (counts, {})
    return entry[1]


@dataclass(frozen=True)
class _JobShape:
    """One job's stages in local numbering, as :func:`pack` takes them (Carbyne's plans)."""

    stages: IntArray
    first: int
    duration: FloatArray
    demand: FloatArray
    demands: list[list[float]]
    parents: list[tuple[int, ...]]
    children: list[tuple[int, ...]]  # the reversed DAG's parents
    tail: FloatArray
    reach: FloatArray
    # The compiled pack's inputs (None on the pure-Python path): the DAG forward (ranked by tail) and reversed
    # (ranked by reach), in CSR form.
    dag: Dag | None = None
    reverse_dag: Dag | None = None


class Carbyne(BasePolicy):
    """Carbyne; see the module docstring.

    Picks are incremental (:class:`_Pending` for the guaranteed phase, a heap of jobs by remaining work for the
    leftovers), and a job is planned only when one of its tasks is first looked at in the guaranteed phase: a
    plan depends on nothing but the job's own state, which no launch of another job changes, and only the
    urgency of a task that fits within its job's share is ever read. ``plans`` counts the plans made.

    What still costs is the plans themselves: two packs of the job's remaining DAG on its share, each as long
    as the job's tasks divided by the tasks its share runs at once, at every event where the job has room in
    its share. Reverse packs and the forward packs of idle jobs are memoised (they do not depend on time); a
    forward pack with tasks running depends on the time through their remaining lengths, so it is made anew:
    reusing it would change the schedule. From ``COMPILED_FROM_TASKS`` tasks on (or with ``compiled=True``) the
    packs run compiled (``solver.sim.pack_compiled``: the same plans to the last bit, a few microseconds each), and
    what costs is then the per-pick bookkeeping of the policy and the engine, at every launch.
    """

    name = "carbyne"

    def __init__(self, jobs: Workload, altruism: float = 1.0, reverse_order: bool = False, seed: int = 0,
                 compiled: bool | None = None) -> None:  # fmt: skip
        if not 0.0 <= altruism <= 1.0:
            raise ValueError(f"altruism must be in [0, 1], got {altruism}")
        # The compiled pack (the same plans, bit for bit), by default from COMPILED_FROM_TASKS tasks on; numba is
        # imported only then.
        if compiled is None:
            compiled = bool(np.isfinite(jobs.count).all()) and float(jobs.count.sum()) >= COMPILED_FROM_TASKS
        self.kernel: Any = None
        if compiled:
            from fairpack.solver.sim import pack_compiled

            self.kernel = pack_compiled
        self.no_running = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64))
        self.altruism = altruism
        self.reverse_order = reverse_order
        self.rng = np.random.default_rng(seed)
        self.normalised = jobs.normalised_demand()
        self.work = jobs.work()
        self.stage_work = jobs.duration * self.normalised.sum(axis=1)  # per task
        self.cap = np.zeros((jobs.num_jobs, jobs.capacity.size))
        self.caps = self.cap.tolist()
        self.urgent = np.zeros(jobs.num_stages, dtype=np.int64)
        self.altruistic = np.ones(jobs.num_jobs, dtype=bool)
        # Longest path from the job's start to the stage's end: the reverse pack's priority.
        reach = np.zeros(jobs.num_stages)
        for g in np.argsort(jobs.depth, kind="stable").tolist():
            reach[g] = jobs.duration[g] + max((reach[p] for p in jobs.parents[g]), default=0.0)
        self.reach = reach
        self.plans = 0
        # Reverse packs depend only on the job, its share and its unlaunched task counts -- not on time or
        # running tasks -- and most events leave all three unchanged for most jobs (another job's tasks
        # ended), so they are memoised per simulation: per job, the counts they were made for and the packs
        # by share. A job's counts only go down, so packs made for other counts than its current ones are
        # never asked for again and are let go (200 queries kept 1.9 GB of them).
        self.reverse: dict[int, tuple[bytes, dict[bytes, list[tuple[list[float], list[int]]]]]] = {}
        self.reverse_compiled: dict[int, tuple[bytes, dict[bytes, tuple[IntArray, FloatArray, IntArray]]]] = {}
        self.reverse_hits = 0
        self.shapes: dict[int, _JobShape] = {}
        # A forward pack with nothing running does not depend on time either: an idle job (waiting, altruistic,
        # for its latest start) is planned again and again on the same state. Memoised the same way.
        self.idle: dict[int, tuple[bytes, dict[bytes, float]]] = {}
        self.idle_hits = 0
        # Plain-float copies for the per-pick tests (the same float operations as numpy's, element by element).
        self.negative_tail = -jobs.tail
        self.negative_tails = self.negative_tail.tolist()
        self.demands = jobs.demand.tolist()
        self.capacity = jobs.capacity.tolist()
        self.weights = jobs.weight.tolist()
        self.tolerance_array = EPS * np.maximum(1.0, jobs.capacity)
        self.tolerance = self.tolerance_array.tolist()
        self.hopeless = np.zeros(jobs.num_stages, dtype=bool)
        self.floor: list[float] = []
        self.stage_works = self.stage_work.tolist()
        self.job_of = jobs.stage_job.tolist()
        self.spans = [(int(stages[0]), int(stages[-1]) + 1) if stages.size else (0, 0) for stages in jobs.job_stages]

    def on_event(self, sim: Simulation) -> None:
        jobs = sim.jobs
        if sim.active_changed:
            active = np.zeros(jobs.num_jobs, dtype=bool)
            active[sim.active] = True
            self.cap = drf_shares(self.work, jobs.weight, active) * jobs.capacity[None, :]
            self.caps = self.cap.tolist()
            # A task larger than its job's share (by more than any round-off of the job's usage below 0) never
            # passes the guaranteed phase's share test: such groups are left out of its ranking.
            slack = 1e-6 * np.maximum(1.0, jobs.capacity)
            self.hopeless = np.any(jobs.demand > (self.cap + self.tolerance_array + slack)[jobs.stage_job], axis=1)
        self.urgent[:] = 0
        self.planned: set[int] = set()
        self.altruistic = self.rng.random(jobs.num_jobs) < self.altruism
        self.altruists = self.altruistic.tolist()
        self.pending = _Pending(sim, self.negative_tail, self.negative_tails, self.job_of, self.hopeless)
        # The least demand of the runnable groups on each resource they all use: when the free room is below it
        # on some resource (one machine), no task of theirs fits, and the event has nothing more to launch.
        demand = jobs.demand[self.pending.groups]
        self.floor = (np.where(np.all(demand > 0, axis=0), demand.min(axis=0), -np.inf).tolist()
                      if demand.shape[0] else [np.inf] * jobs.capacity.size)  # fmt: skip
        # SRTF over the remaining work of every job, summed stage by stage as numpy's add.at does.
        remaining = np.zeros(jobs.num_jobs)
        np.add.at(remaining, jobs.stage_job, sim.unlaunched * self.stage_work)
        self.remaining = remaining.tolist()
        self.by_work = sorted((self.remaining[k], k) for k in self.pending.by_job)
        self.exhausted: set[int] = set()  # jobs none of whose groups fits any more during this event
        self.last = -1

    def _shape(self, jobs: Workload, k: int) -> _JobShape:
        """Job ``k``'s stages as :func:`pack` takes them, built once (the DAG never changes)."""
        shape = self.shapes.get(k)
        if shape is None:
            stages = jobs.job_stages[k]
            first = int(stages[0])
            parents = [tuple(p - first for p in jobs.parents[g]) for g in stages.tolist()]
            children = [tuple(c - first for c in jobs.children[g]) for g in stages.tolist()]
            tail, reach = jobs.tail[stages], self.reach[stages]
            compiled = self.kernel is not None
            shape = self.shapes[k] = _JobShape(
                stages, first, jobs.duration[stages], np.ascontiguousarray(jobs.demand[stages]),
                jobs.demand[stages].tolist(), parents, children, tail, reach,
                Dag.of(parents, tail) if compiled else None, Dag.of(children, reach) if compiled else None)  # fmt: skip
        return shape

    def _plan(self, sim: Simulation, k: int) -> None:
        self.planned.add(k)
        shape = self._shape(sim.jobs, k)
        stages, first = shape.stages, shape.first
        left = sim.unlaunched[stages]
        lefts, missing = left.tolist(), sim.missing[stages].tolist()
        runnable = [local for local, (n, m) in enumerate(zip(lefts, missing, strict=True)) if n > 0 and m == 0]
        if not runnable:
            return  # nothing runnable now, so nothing can be urgent now
        caps, tol = self.caps[k], self.tolerance
        limit = [c + t for c, t in zip(caps, tol, strict=True)]  # as cap + tol in numpy: the same additions
        rows = shape.demands
        if any(d > c for local, n in enumerate(lefts) if n > 0 for d, c in zip(rows[local], limit, strict=True)):
            return  # cannot run on its share at all: it lives on leftovers
        usage = sim.usage[k].tolist()
        if not any(all(u + d <= c for u, d, c in zip(usage, rows[local], limit, strict=True)) for local in runnable):
            # No runnable task fits within its share now, and none will during this event (its usage only
            # grows until the next event): the guaranteed phase never offers it a slot, so urgency is moot.
            return
        self.plans += 1
        cap = self.cap[k]
        t = sim.t
        running = [(local, end - t, n) for local, g in enumerate(stages.tolist()) for end, n in sim.running_ends[g]]
        counts, share = left.tobytes(), cap.tobytes()
        idle = _memo(self.idle, k, counts)
        forward = idle.get(share) if not running else None
        if forward is None:
            if self.kernel is None:
                forward = pack(shape.duration, shape.demand, left, shape.parents, cap, shape.tail, running,
                               record=False).makespan  # fmt: skip
            else:
                forward = self._forward_compiled(shape, left, cap, running)
            if not running:
                idle[share] = forward
        else:
            self.idle_hits += 1
        if not math.isfinite(forward):
            return
        if self.kernel is not None:
            self._urgent_compiled(shape, k, left, cap, counts, share, settled(forward))
            return
        reverse = _memo(self.reverse, k, counts)
        backward = reverse.get(share)
        if backward is None:
            packed = pack(shape.duration, shape.demand, left, shape.children, cap, shape.reach)
            backward = reverse[share] = [_latest_ends(launches, d)
                                         for launches, d in zip(packed.launches, shape.duration.tolist(),
                                                                strict=True)]  # fmt: skip
        else:
            self.reverse_hits += 1
        due = settled(forward)
        urgent = self.urgent
        for local, (ends, after) in enumerate(backward):
            urgent[first + local] = after[bisect.bisect_left(ends, due)]

    def _forward_compiled(self, shape: _JobShape, left: FloatArray, cap: FloatArray,
                          running: list[tuple[int, float, int]]) -> float:  # fmt: skip
        """The forward pack's makespan, compiled (``left`` and ``running`` as :meth:`_plan` has them)."""
        assert shape.dag is not None
        if running:
            table = np.array(running)  # small whole numbers and the remaining times: exact as float64
            arrays = (table[:, 0].astype(np.int64), table[:, 1].copy(), table[:, 2].astype(np.int64))
        else:
            arrays = self.no_running
        dag = shape.dag
        return float(self.kernel.run(shape.duration, shape.demand, left.astype(np.int64), dag.parent_ptr,
                                     dag.parent_idx, dag.child_ptr, dag.child_idx, dag.order, cap, *arrays,
                                     False)[0])  # fmt: skip

    def _urgent_compiled(self, shape: _JobShape, k: int, left: FloatArray, cap: FloatArray, counts: bytes,
                         share: bytes, due: float) -> None:  # fmt: skip
        """The reverse pack (compiled, memoised as on the pure-Python path) and the urgent tasks by ``due``.

        A stage's launches in the reverse pack start in time order, so its latest ends are sorted, and the
        tasks of the launches ending at or after ``due`` (the pure-Python path's ``after[bisect_left(ends,
        due)]``) are the sum over the launches whose end is ``>= due``.
        """
        assert shape.reverse_dag is not None
        reverse = _memo(self.reverse_compiled, k, counts)
        backward = reverse.get(share)
        if backward is None:
            dag = shape.reverse_dag
            _, stage, start, tasks = self.kernel.run(shape.duration, shape.demand, left.astype(np.int64),
                                                     dag.parent_ptr, dag.parent_idx, dag.child_ptr, dag.child_idx,
                                                     dag.order, cap, *self.no_running, True)  # fmt: skip
            backward = reverse[share] = (stage, start + shape.duration[stage], tasks)
        else:
            self.reverse_hits += 1
        self.kernel.late_tasks(*backward, due, self.urgent, shape.first, shape.stages.size)

    def _refresh(self, sim: Simulation, k: int) -> None:
        """Job ``k`` launched a task: its dominant share and its remaining work changed."""
        self.pending.relaunched(sim, k, _job_dominant(sim.usage[k].tolist(), self.capacity, self.weights[k]))
        first, end = self.spans[k]  # a job's stages are numbered contiguously
        remaining = 0.0
        for left, work in zip(sim.unlaunched[first:end].tolist(), self.stage_works[first:end], strict=True):
            remaining += left * work  # as float(unlaunched[g]) * works[g], stage by stage
        if remaining != self.remaining[k]:
            self.remaining[k] = remaining
            heapq.heappush(self.by_work, (remaining, k))

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        if self.last >= 0:
            self._refresh(sim, self.last)
        room = _room(sim)
        if room is not None and not sim.jobs.has_options and any(r < f for r, f in zip(room, self.floor, strict=True)):
            return None  # no runnable task fits (both phases would find none, task by task)
        demands, job_of = self.demands, self.job_of
        usage_of: dict[int, list[float]] = {}

        def guaranteed(g: int) -> bool:
            """Runnable, fits now, within its job's share, and urgent (or its job is not altruistic now)."""
            k = job_of[g]
            usage = _usage_if_fits(sim, room, demands[g], g, k, usage_of)
            if usage is None:
                return False
            cap, tol = self.caps[k], self.tolerance
            if not all(u + d <= c + t for u, d, c, t in zip(usage, demands[g], cap, tol, strict=True)):
                return False
            if not self.altruists[k]:
                return True
            if k not in self.planned:
                self._plan(sim, k)
            return bool(self.urgent[g] > 0)

        g = self.pending.first(guaranteed)
        if g >= 0:
            if self.urgent[g] > 0:
                self.urgent[g] -= 1
        else:
            g = self._leftover(sim, room) if not self.reverse_order else self._leftover_aligned_first(sim)
            if g < 0:
                return None
        self.last = job_of[g]
        return g, 1

    def _leftover(self, sim: Simulation, room: list[float] | None) -> int:
        """Leftovers: the job with the least remaining work (then the lower index) that has a task fitting now,
        and its best-aligned such group (then the lower index)."""
        heap, exhausted, remaining = self.by_work, self.exhausted, self.remaining
        unlaunched, demands = sim.unlaunched, self.demands
        while heap:
            work, k = heap[0]
            if k in exhausted or work != remaining[k]:
                heapq.heappop(heap)
                continue
            fitting = [g for g in self.pending.by_job[k]
                       if unlaunched[g] > 0 and _fits_now(sim, room, demands[g], g) and not sim.at_cap(g)]
            if not fitting:
                heapq.heappop(heap)
                exhausted.add(k)  # nothing of it fits for the rest of the event
                continue
            if len(fitting) == 1:
                return fitting[0]
            # Scores rounded to 12 digits, as the whole-candidate ranking rounded them: a row of a matrix
            # product may differ in its last bit with the rows around it, never by 1e-12.
            chosen = np.asarray(fitting)
            score = np.round(_alignment(sim, chosen, self.normalised), 12)
            return int(chosen[np.lexsort((chosen, -score))[0]])
        return -1

    def _leftover_aligned_first(self, sim: Simulation) -> int:
        """``reverse_order``: the best-aligned fitting group of any job first, less remaining work breaking ties."""
        groups = self.pending.groups
        groups = groups[sim.unlaunched[groups] > 0]
        if sim.capped:
            groups = groups[sim.below_cap(groups)]
        candidates = groups[sim.fits(groups)]
        if candidates.size == 0:
            return -1
        srtf = np.asarray(self.remaining)[sim.jobs.stage_job[candidates]]
        score = np.round(_alignment(sim, candidates, self.normalised), 12)
        return int(candidates[np.lexsort((candidates, srtf, -score))[0]])


class DrfStrict(BasePolicy):
    """Every job held to its DRF share; see the module docstring. Picks are incremental (:class:`_Pending`)."""

    name = "drf-strict"

    def __init__(self, jobs: Workload) -> None:
        self.work = jobs.work()
        self.share = np.zeros(jobs.num_jobs)  # the dominant share each job is entitled to: max_r A_k[r]
        self.shares = self.share.tolist()
        self.inverse = np.divide(1.0, jobs.capacity, out=np.zeros_like(jobs.capacity), where=jobs.capacity > 0)
        self.inverses = self.inverse.tolist()
        self.units = np.maximum(self.inverse, 1e-300).tolist()
        self.depth = jobs.depth.tolist()
        self.demands = jobs.demand.tolist()
        self.capacity = jobs.capacity.tolist()
        self.weights = jobs.weight.tolist()
        self.job_of = jobs.stage_job.tolist()

    def on_event(self, sim: Simulation) -> None:
        if sim.active_changed:
            active = np.zeros(sim.jobs.num_jobs, dtype=bool)
            active[sim.active] = True
            self.share = drf_shares(self.work, sim.jobs.weight, active).max(axis=1)
            self.shares = self.share.tolist()
        self.pending = _Pending(sim, sim.jobs.depth, self.depth, self.job_of)
        self.last = -1

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        if self.last >= 0:
            k = self.last
            self.pending.relaunched(sim, k, _job_dominant(sim.usage[k].tolist(), self.capacity, self.weights[k]))
        room = _room(sim)
        demands, job_of, inverses = self.demands, self.job_of, self.inverses
        usage_of: dict[int, list[float]] = {}

        def allowed(g: int) -> bool:
            """Runnable, fits now, and its job is idle or stays within its share with the task."""
            k = job_of[g]
            usage = _usage_if_fits(sim, room, demands[g], g, k, usage_of)
            if usage is None:
                return False
            if not any(u > 0 for u in usage):
                return True  # idle: one task even beyond the share
            after = max([(u + d) * v for u, d, v in zip(usage, demands[g], inverses, strict=True)])
            return after <= self.shares[k] * (1 + EPS) + EPS

        g = self.pending.first(allowed)
        if g < 0:
            return None
        k = self.last = job_of[g]
        entry = sim.jobs.options[g] if sim.jobs.has_option_demands else None
        if entry is not None and entry.own_demand:
            # Its tasks hold the demand of the option they land under, which the share test above cannot
            # know: one task at a time, so the next test sees the usage it really took.
            return g, 1
        share, usage = self.shares[k], sim.usage[k].tolist()
        demand = demands[g]
        room_left = [share / unit - u for unit, u in zip(self.units, usage, strict=True)]  # share left, in units
        need = [left / d for left, d in zip(room_left, demand, strict=True) if d > 0]
        within = math.floor(min(need) + EPS) if need else 1
        return g, max(1, within)


def make_dag_policy(name: str, jobs: Workload, instance: Instance | None, extra: dict[str, Any]) -> BasePolicy:
    """The registry's factory of the online DAG policies (a stage's gangs are refused before, from its record)."""
    return make_policy(name, jobs, extra)


def make_policy(name: str, jobs: Workload, extra: dict[str, Any]) -> BasePolicy:
    if name == "carbyne":
        return Carbyne(jobs, fraction(extra, "altruism", 1.0), flag(extra, "reverse_order", False),
                       integer(extra, "seed", 0, least=-(2**63)))  # fmt: skip
    if name == "drf-dag":
        return DrfDag()
    if name == "drf-strict":
        return DrfStrict(jobs)
    if name == "tetris":
        return Tetris(jobs)
    if name == "sjf":
        return Sjf()
    raise ValueError(f"unknown DAG policy {name!r}; choose from {', '.join(HEURISTICS)}")
