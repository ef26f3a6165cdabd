"""The event-driven simulator of DAG jobs on the cluster, and a continuous-time list scheduler.

Simulator (:func:`simulate`)
----------------------------
Time jumps from event to event (a heap of batched task ends, plus job releases); there is no time step.
At every event the finished tasks free their resources, stages whose tasks have all finished release
their children (barrier: a child starts only after *every* task of every parent stage ends), released
jobs become active, and then the policy is asked repeatedly for the next stage to launch tasks of
(:meth:`Policy.pick`); the engine launches as many of them as the policy allows and the free capacity
fits, until the policy has nothing more. Every policy only ever proposes runnable stages whose task
fits, so all the heuristics are work-conserving list schedulers.

Placement: with ``placement='pooled'`` (the default) the cluster is one machine holding the total
capacity. With ``placement='servers'`` every machine of every server class is tracked: a stage is a
candidate when one of its tasks fits the free capacity of some machine, and the engine places the
launched tasks by *best fit* (the machine with the least free capacity left after the task, summed over
resources as fractions of the cluster; ties to the lower machine), as many on one machine as fit before
moving on. Policies keep deciding on pooled quantities (``Sim.free`` is the sum over machines): which
task to launch is theirs, where it runs is the engine's.

List scheduler (:func:`pack`)
-----------------------------
The same idea for one job's (remaining) DAG on a given capacity vector, with a fixed stage priority:
used for the fair-share upper bound of ``T_k`` (forward) and for Carbyne's reverse packing (the DAG
reversed, so that "start at 0 in reverse" means "end at the due date").
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from models.dag import longest_paths, topological_order
from models.result import Schedule
from models.types import FloatArray, Instance, InstanceError, IntArray
from solver.spacetime.model import placement_fits

#: Relative tolerance for "fits in the free capacity" and for grouping simultaneous events.
EPS = 1e-9


def fit_count(free: FloatArray, demand: FloatArray) -> float:
    """How many tasks of ``demand`` fit in ``free`` (``inf`` for a zero demand)."""
    need = demand > 0
    if not np.any(need):
        return math.inf
    return float(max(0.0, math.floor(float(np.min(free[need] / demand[need])) + EPS)))


@dataclass(frozen=True)
class DagJobs:
    """All stages of all jobs as flat arrays (global stage numbering, jobs in instance order)."""

    stage_job: IntArray
    stage_local: IntArray
    count: IntArray
    duration: FloatArray
    demand: FloatArray  # (stages, resources)
    parents: tuple[tuple[int, ...], ...]  # global stage indices
    children: tuple[tuple[int, ...], ...]
    job_stages: tuple[IntArray, ...]
    release: FloatArray
    weight: FloatArray
    capacity: FloatArray  # pooled: the cluster total per resource
    tail: FloatArray  # longest path from the stage's start to its job's end, including the stage
    depth: IntArray  # breadth-first level: longest number of edges from a source stage
    placement: str = "pooled"
    machine_capacity: FloatArray | None = None  # (machines, resources); None: the pool is the one machine
    machine_class: IntArray | None = None  # (machines,): server class of every machine

    @staticmethod
    def of(instance: Instance, placement: str = "pooled") -> DagJobs:
        """Flat arrays of the jobs; raises ``InstanceError`` if a task fits no machine (``placement``)."""
        if not instance.jobs:
            raise InstanceError("DAG-job heuristics need jobs", "jobs")
        placement_fits(instance, placement)  # refuses tasks that fit nowhere, naming the stage
        counts = [len(job.stages) for job in instance.jobs]
        offset = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        stages = [stage for job in instance.jobs for stage in job.stages]
        parents = tuple(
            tuple(int(offset[k]) + p for p in stage.after)
            for k, job in enumerate(instance.jobs)
            for stage in job.stages
        )
        children: list[list[int]] = [[] for _ in stages]
        for child, ps in enumerate(parents):
            for p in ps:
                children[p].append(child)
        n_res = len(instance.resources)
        demand = np.array([s.demand for s in stages], dtype=np.float64).reshape(-1, n_res)
        capacity = np.asarray(instance.total_capacity, dtype=np.float64)
        machine_class = instance.machine_class() if placement == "servers" else None
        duration = np.array([s.duration for s in stages], dtype=np.float64)
        _, tail = longest_paths(parents, children, duration)
        depth = longest_paths(parents, children, np.ones(len(stages)))[0].astype(np.int64)  # edges from a source
        stage_job = np.repeat(np.arange(len(instance.jobs)), counts)
        return DagJobs(
            stage_job=stage_job,
            stage_local=np.concatenate([np.arange(c) for c in counts]).astype(np.int64),
            count=np.array([s.tasks for s in stages], dtype=np.int64),
            duration=duration,
            demand=demand,
            parents=parents,
            children=tuple(tuple(c) for c in children),
            job_stages=tuple(np.arange(offset[k], offset[k + 1]) for k in range(len(counts))),
            release=np.array([j.release for j in instance.jobs], dtype=np.float64),
            weight=np.array([j.weight for j in instance.jobs], dtype=np.float64),
            capacity=capacity,
            tail=tail,
            depth=depth,
            placement=placement,
            machine_capacity=None if machine_class is None else instance.capacity[machine_class].astype(np.float64),
            machine_class=machine_class,
        )

    @property
    def machines(self) -> FloatArray:
        """Capacity of every machine, shape (machines, resources); the pool is one machine."""
        return self.capacity[None, :] if self.machine_capacity is None else self.machine_capacity

    @property
    def num_jobs(self) -> int:
        return int(self.release.size)

    @property
    def num_stages(self) -> int:
        return int(self.count.size)

    def normalised_demand(self) -> FloatArray:
        """Demand per task as a fraction of the cluster (0 for resources the cluster lacks)."""
        cap = self.capacity
        return np.divide(self.demand, cap, out=np.zeros_like(self.demand), where=cap > 0)

    def work(self) -> FloatArray:
        """Aggregate resource-time of every job, normalised by capacity: sum of tasks*duration*demand/C."""
        per_stage = (self.count * self.duration)[:, None] * self.normalised_demand()
        total = np.zeros((self.num_jobs, self.capacity.size))
        np.add.at(total, self.stage_job, per_stage)
        return total


class Sim:
    """Mutable state of one simulation; policies read it and never change it."""

    def __init__(self, jobs: DagJobs) -> None:
        self.jobs = jobs
        self.t = 0.0
        self.free = jobs.capacity.astype(np.float64).copy()  # pooled: the sum over machines
        self.free_machine = jobs.machines.astype(np.float64).copy()
        self.machine_tol = EPS * np.maximum(1.0, jobs.machines)
        total = jobs.capacity
        # Best fit scores leftovers as fractions of the cluster, so resources are comparable.
        self.inverse_total = np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)
        self.usage = np.zeros((jobs.num_jobs, jobs.capacity.size))
        self.unlaunched = jobs.count.copy()
        self.running = np.zeros(jobs.num_stages, dtype=np.int64)
        self.missing = np.array([len(p) for p in jobs.parents], dtype=np.int64)
        self.released = np.zeros(jobs.num_jobs, dtype=bool)
        self.finished = np.zeros(jobs.num_jobs, dtype=bool)
        self.tasks_left = np.zeros(jobs.num_jobs, dtype=np.int64)
        np.add.at(self.tasks_left, jobs.stage_job, jobs.count)
        self.stage_done = np.zeros(jobs.num_stages, dtype=bool)
        self.running_ends: list[list[tuple[float, int]]] = [[] for _ in range(jobs.num_stages)]  # (end, tasks)
        self.active_changed = True  # set when a job is released or finishes

    @property
    def active(self) -> IntArray:
        return np.flatnonzero(self.released & ~self.finished)

    def runnable(self) -> npt.NDArray[np.bool_]:
        """Stages with tasks left to launch whose job is released and whose parent stages are all done."""
        return (self.unlaunched > 0) & (self.missing == 0) & self.released[self.jobs.stage_job]

    def fits(self, stages: IntArray | None = None) -> npt.NDArray[np.bool_]:
        """Whether one more task of each stage (default all) fits the free capacity of some machine."""
        demand = self.jobs.demand if stages is None else self.jobs.demand[stages]
        room = self.free_machine + self.machine_tol
        if room.shape[0] == 1:
            return np.all(demand <= room[0][None, :], axis=1)
        return np.any(np.all(demand[:, None, :] <= room[None, :, :], axis=2), axis=1)

    def candidates(self) -> IntArray:
        runnable = np.flatnonzero(self.runnable())
        return runnable[self.fits(runnable)]

    def place(self, g: int, most: int) -> list[tuple[int, int]]:
        """Put up to ``most`` tasks of stage ``g`` on machines by best fit; ``(machine, tasks)`` chunks.

        Only chooses; the caller updates the free capacities.
        """
        need = self.jobs.demand[g]
        room = self.free_machine + self.machine_tol
        if room.shape[0] == 1:
            n = int(min(most, fit_count(room[0], need)))
            return [(0, n)] if n > 0 else []
        chunks: list[tuple[int, int]] = []
        left = most
        fitting = np.all(need[None, :] <= room, axis=1)
        # Leftover after one task on every machine; placing more on the chosen machine only lowers its
        # score, so it stays the best fit until it is full.
        score = (self.free_machine - need[None, :]) @ self.inverse_total
        while left > 0 and np.any(fitting):
            machine = int(np.flatnonzero(fitting)[np.argmin(score[fitting])])
            n = int(min(left, fit_count(room[machine], need)))
            chunks.append((machine, n))
            left -= n
            fitting[machine] = False
        return chunks


class Policy(Protocol):
    def on_event(self, sim: Sim) -> None: ...

    def pick(self, sim: Sim, candidates: IntArray) -> tuple[int, int] | None:
        """The next stage to launch tasks of (one of ``candidates``) and at most how many; None to stop."""
        ...


def simulate(instance: Instance, policy: Policy, jobs: DagJobs | None = None) -> tuple[Schedule, dict[str, int]]:
    """Run ``policy`` event by event until every task has run; returns the schedule and event counts."""
    jobs = jobs or DagJobs.of(instance)
    sim = Sim(jobs)
    heap: list[tuple[float, int, int, int]] = []  # (end, sequence, stage, tasks)
    sequence = 0
    releases = sorted(range(jobs.num_jobs), key=lambda k: (jobs.release[k], k))
    next_release = 0
    next_index = np.zeros(jobs.num_stages, dtype=np.int64)
    rows: list[tuple[int, int, int, float, float, int]] = []  # (stage, first index, n, start, end, machine)
    placed: dict[int, list[tuple[int, int]]] = {}  # heap sequence -> (machine, tasks) chunks
    events = launches = 0
    while heap or next_release < len(releases):
        t = min(heap[0][0] if heap else math.inf,
                jobs.release[releases[next_release]] if next_release < len(releases) else math.inf)  # fmt: skip
        sim.t = t
        events += 1
        horizon = t + EPS * max(1.0, abs(t))
        while heap and heap[0][0] <= horizon:
            end_time, seq, g, n = heapq.heappop(heap)
            k = int(jobs.stage_job[g])
            sim.running_ends[g].remove((end_time, n))
            sim.running[g] -= n
            sim.free += n * jobs.demand[g]
            for machine, count in placed.pop(seq):
                sim.free_machine[machine] += count * jobs.demand[g]
            sim.usage[k] -= n * jobs.demand[g]
            sim.tasks_left[k] -= n
            if sim.running[g] == 0 and sim.unlaunched[g] == 0:
                sim.stage_done[g] = True
                for c in jobs.children[g]:
                    sim.missing[c] -= 1
            if sim.tasks_left[k] == 0:
                sim.finished[k] = True
                sim.usage[k] = 0.0
                sim.active_changed = True
        while next_release < len(releases) and jobs.release[releases[next_release]] <= horizon:
            sim.released[releases[next_release]] = True
            sim.active_changed = True
            next_release += 1
        policy.on_event(sim)
        sim.active_changed = False
        while True:
            candidates = sim.candidates()
            if candidates.size == 0:
                break
            choice = policy.pick(sim, candidates)
            if choice is None:
                break
            g, most = choice
            chunks = sim.place(g, int(min(most, sim.unlaunched[g])))
            n = sum(count for _, count in chunks)
            if n <= 0:
                raise RuntimeError(f"policy picked stage {g}, which cannot launch a task")
            end = t + float(jobs.duration[g])
            k = int(jobs.stage_job[g])
            for machine, count in chunks:
                rows.append((g, int(next_index[g]), count, t, end, machine))
                next_index[g] += count
                sim.free_machine[machine] -= count * jobs.demand[g]
            placed[sequence] = chunks
            sim.unlaunched[g] -= n
            sim.running[g] += n
            sim.free -= n * jobs.demand[g]
            sim.usage[k] += n * jobs.demand[g]
            heapq.heappush(heap, (end, sequence, g, n))
            sim.running_ends[g].append((end, n))
            sequence += 1
            launches += 1
    if np.any(sim.unlaunched > 0):  # cannot happen: every task fits the empty cluster (checked in DagJobs.of)
        raise RuntimeError("simulation ended with tasks left")
    return _schedule(jobs, rows), {"events": events, "launches": launches}


def _schedule(jobs: DagJobs, rows: list[tuple[int, int, int, float, float, int]]) -> Schedule:
    data = np.array(rows, dtype=np.float64).reshape(-1, 6)
    stage = data[:, 0].astype(np.int64)
    n = data[:, 2].astype(np.int64)
    g = np.repeat(stage, n)
    offsets = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    index = np.repeat(data[:, 1].astype(np.int64), n) + offsets
    placement: tuple[IntArray, IntArray] | tuple[None, None] = (None, None)
    if jobs.machine_class is not None:
        machine = np.repeat(data[:, 5].astype(np.int64), n)
        server = jobs.machine_class[machine]
        placement = (server, machine - np.searchsorted(jobs.machine_class, server))
    return Schedule(jobs.stage_job[g], jobs.stage_local[g], index, np.repeat(data[:, 3], n), np.repeat(data[:, 4], n),
                    None, *placement)  # fmt: skip


@dataclass(frozen=True)
class Packed:
    """Outcome of :func:`pack`: its makespan and, per stage, the (start, tasks) launches."""

    makespan: float
    launches: tuple[tuple[tuple[float, int], ...], ...]


def pack(  # noqa: C901  (the simulator rewrite replaces it)
    duration: FloatArray,
    demand: FloatArray,
    count: IntArray,
    parents: Sequence[Sequence[int]],
    capacity: FloatArray,
    priority: FloatArray,
    running: Sequence[tuple[int, float, int]] = (),
) -> Packed:
    """List-schedule a DAG of stages on ``capacity`` from time 0 (no releases), highest ``priority`` first.

    Parameters
    ----------
    duration, demand, count
        Per stage (local numbering): task duration, per-task demand (stages, resources), tasks to place.
    parents
        Per stage, the local indices of its parent stages (barriers).
    capacity
        Capacity vector the DAG runs on.
    priority
        Per stage; among runnable stages the highest goes first (ties: lower index).
    running
        Tasks already running at time 0 as ``(stage, remaining time, tasks)``: they hold capacity until
        then, and their stage completes only when they end.

    Returns
    -------
    Packed
        ``makespan = inf`` if some task can never fit ``capacity``.
    """
    # Plain Python numbers: a job has a handful of resources and the loop below runs hundreds of
    # thousands of fit tests per Carbyne simulation; numpy's per-call overhead on 2-element arrays made
    # them 85% of Carbyne's time on TPC-H (the arithmetic is the same float64, so results are identical).
    n_stages = count.size
    children: list[list[int]] = [[] for _ in range(n_stages)]
    for c, ps in enumerate(parents):
        for p in ps:
            children[p].append(c)
    need = demand.tolist()
    positive = [[(r, d) for r, d in enumerate(row) if d > 0] for row in need]
    dur = [float(d) for d in duration]
    unlaunched = [int(c) for c in count]
    active = [0] * n_stages
    missing = [len(p) for p in parents]
    free = [float(c) for c in capacity]
    heap: list[tuple[float, int, int]] = []
    for g, remaining, n in running:
        active[g] += n
        free = [f - n * d for f, d in zip(free, need[g], strict=True)]
        heap.append((float(remaining), g, n))
    heapq.heapify(heap)
    launches: list[list[tuple[float, int]]] = [[] for _ in range(n_stages)]
    order = sorted(range(n_stages), key=lambda g: (-priority[g], g))
    done = [False] * n_stages

    def complete(g: int) -> None:
        done[g] = True
        for c in children[g]:
            missing[c] -= 1

    for g in topological_order(parents, children):  # stages with nothing left are complete from the start
        if unlaunched[g] == 0 and active[g] == 0 and missing[g] == 0 and not done[g]:
            complete(g)
    t = 0.0
    makespan = 0.0
    tol = [EPS * max(1.0, float(c)) for c in capacity]
    while True:
        progressed = True
        while progressed:  # launch in priority order until nothing fits (zero-duration stages cascade)
            progressed = False
            for g in order:
                if unlaunched[g] == 0 or missing[g] > 0:
                    continue
                n = unlaunched[g]
                if positive[g]:  # as fit_count(free + tol, demand[g])
                    most = min((free[r] + tol[r]) / d for r, d in positive[g])
                    n = min(n, max(0, math.floor(most + EPS)))
                if n <= 0:
                    continue
                unlaunched[g] -= n
                launches[g].append((t, n))
                end = t + dur[g]
                makespan = max(makespan, end)
                if dur[g] > 0:
                    active[g] += n
                    free = [f - n * d for f, d in zip(free, need[g], strict=True)]
                    heapq.heappush(heap, (end, g, n))
                elif unlaunched[g] == 0 and active[g] == 0:
                    complete(g)
                    progressed = True
        if not heap:
            break
        t = heap[0][0]
        horizon = t + EPS * max(1.0, t)
        while heap and heap[0][0] <= horizon:
            _, g, n = heapq.heappop(heap)
            active[g] -= n
            free = [f + n * d for f, d in zip(free, need[g], strict=True)]
            if active[g] == 0 and unlaunched[g] == 0:
                complete(g)
        makespan = max(makespan, t)
    if any(left > 0 for left in unlaunched):
        return Packed(math.inf, tuple(tuple(x) for x in launches))
    return Packed(makespan, tuple(tuple(x) for x in launches))
