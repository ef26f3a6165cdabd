"""The DAG policies ``carbyne`` and ``drf-strict`` as they were before their per-pick work became incremental.

Kept as the tests' reference (``tests/test_dag_incremental.py``): every pick recomputes the candidates
(runnable groups that fit), the shares, the SRTF keys and the alignment scores over every pending group,
Carbyne plans every active job at every event, and its packs (``reference_pack``) walk every wave through
the general loop. The shipped policies in ``solver.sim.policies.dag`` must
produce exactly the same schedules.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence

import numpy as np

from fairpack.models.dag import topological_order
from fairpack.models.tolerance import settled
from fairpack.models.types import FloatArray, IntArray
from fairpack.solver.sim.engine import Simulation
from fairpack.solver.sim.pack import EPS, Packed
from fairpack.solver.sim.policies.dag import CandidatePolicy
from fairpack.solver.sim.shares import drf_shares
from fairpack.solver.sim.workload import Workload


def _dominant(sim: Simulation) -> FloatArray:
    """Weighted dominant share of every job's current usage."""
    jobs = sim.jobs
    share = np.divide(sim.usage, jobs.capacity, out=np.zeros_like(sim.usage), where=jobs.capacity > 0)
    return share.max(axis=1) / jobs.weight


def _alignment(sim: Simulation, stages: IntArray, normalised: FloatArray) -> FloatArray:
    free = np.divide(sim.free, sim.jobs.capacity, out=np.zeros_like(sim.free), where=sim.jobs.capacity > 0)
    return normalised[stages] @ np.maximum(free, 0.0)


class ReferenceCarbyne(CandidatePolicy):
    name = "carbyne"

    def __init__(self, jobs: Workload, altruism: float = 1.0, reverse_order: bool = False, seed: int = 0) -> None:
        if not 0.0 <= altruism <= 1.0:
            raise ValueError(f"altruism must be in [0, 1], got {altruism}")
        self.altruism = altruism
        self.reverse_order = reverse_order
        self.rng = np.random.default_rng(seed)
        self.normalised = jobs.normalised_demand()
        self.work = jobs.work()
        self.stage_work = jobs.duration * self.normalised.sum(axis=1)  # per task
        self.cap = np.zeros((jobs.num_jobs, jobs.capacity.size))
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
        # ended), so they are memoised per simulation.
        self.reverse: dict[tuple[int, bytes, bytes], Packed] = {}
        self.reverse_hits = 0

    def on_event(self, sim: Simulation) -> None:
        jobs = sim.jobs
        active = np.zeros(jobs.num_jobs, dtype=bool)
        active[sim.active] = True
        if sim.active_changed:
            self.cap = drf_shares(self.work, jobs.weight, active) * jobs.capacity[None, :]
        self.urgent[:] = 0
        for k in sim.active.tolist():
            self._plan(sim, k)
        self.altruistic = self.rng.random(jobs.num_jobs) < self.altruism

    def _plan(self, sim: Simulation, k: int) -> None:
        jobs = sim.jobs
        stages = jobs.job_stages[k]
        first = int(stages[0])
        left = sim.unlaunched[stages]
        if not np.any(left > 0) or not np.any((left > 0) & (sim.missing[stages] == 0)):
            return  # nothing runnable now, so nothing can be urgent now
        cap = self.cap[k]
        dur, dem = jobs.duration[stages], jobs.demand[stages]
        tol = EPS * np.maximum(1.0, jobs.capacity)
        if np.any(dem[left > 0] > cap[None, :] + tol[None, :]):
            return  # cannot run on its share at all: it lives on leftovers
        runnable = (left > 0) & (sim.missing[stages] == 0)
        if not np.any(np.all(sim.usage[k][None, :] + dem[runnable] <= cap[None, :] + tol[None, :], axis=1)):
            # No runnable task fits within its share now, and none will during this event (its usage only
            # grows until the next event): `pick` never offers it a guaranteed slot, so urgency is moot.
            return
        self.plans += 1
        parents = [tuple(p - first for p in jobs.parents[g]) for g in stages]
        running = [(g - first, end - sim.t, n) for g in stages.tolist() for end, n in sim.running_ends[g]]
        forward = reference_pack(dur, dem, left, parents, cap, jobs.tail[stages], running).makespan
        if not math.isfinite(forward):
            return
        key = (k, cap.tobytes(), left.tobytes())
        backward = self.reverse.get(key)
        if backward is None:
            reversed_parents = [tuple(c - first for c in jobs.children[g]) for g in stages]
            backward = self.reverse[key] = reference_pack(dur, dem, left, reversed_parents, cap, self.reach[stages])
        else:
            self.reverse_hits += 1
        for local, launches in enumerate(backward.launches):
            must = sum(n for start, n in launches if start + dur[local] >= settled(forward))
            self.urgent[first + local] = must

    def pick(self, sim: Simulation, candidates: IntArray) -> tuple[int, int] | None:
        jobs = sim.jobs
        k = jobs.stage_job[candidates]
        tol = EPS * np.maximum(1.0, jobs.capacity)
        within = np.all(sim.usage[k] + jobs.demand[candidates] <= self.cap[k] + tol[None, :], axis=1)
        wanted = (self.urgent[candidates] > 0) | ~self.altruistic[k]
        guaranteed = np.flatnonzero(within & wanted)
        if guaranteed.size:
            dominant = _dominant(sim)[k[guaranteed]]
            chosen = candidates[guaranteed]
            best = int(chosen[np.lexsort((chosen, -jobs.tail[chosen], dominant))[0]])
            if self.urgent[best] > 0:
                self.urgent[best] -= 1
            return best, 1
        remaining = np.zeros(jobs.num_jobs)
        np.add.at(remaining, jobs.stage_job, sim.unlaunched * self.stage_work)
        srtf = remaining[k]
        score = np.round(_alignment(sim, candidates, self.normalised), 12)
        keys = (candidates, srtf, -score) if self.reverse_order else (candidates, -score, k, srtf)
        best = int(candidates[np.lexsort(keys)[0]])
        return best, 1


class ReferenceDrfStrict(CandidatePolicy):
    """Every job held to its DRF share; see the module docstring."""

    name = "drf-strict"

    def __init__(self, jobs: Workload) -> None:
        self.work = jobs.work()
        self.share = np.zeros(jobs.num_jobs)  # the dominant share each job is entitled to: max_r A_k[r]
        self.inverse = np.divide(1.0, jobs.capacity, out=np.zeros_like(jobs.capacity), where=jobs.capacity > 0)

    def on_event(self, sim: Simulation) -> None:
        if sim.active_changed:
            active = np.zeros(sim.jobs.num_jobs, dtype=bool)
            active[sim.active] = True
            self.share = drf_shares(self.work, sim.jobs.weight, active).max(axis=1)

    def pick(self, sim: Simulation, candidates: IntArray) -> tuple[int, int] | None:
        jobs = sim.jobs
        k = jobs.stage_job[candidates]
        idle = ~np.any(sim.usage[k] > 0, axis=1)
        after = ((sim.usage[k] + jobs.demand[candidates]) * self.inverse).max(axis=1)
        allowed = idle | (after <= self.share[k] * (1 + EPS) + EPS)
        if not allowed.any():
            return None
        chosen = candidates[allowed]
        dominant = _dominant(sim)[jobs.stage_job[chosen]]
        g = int(chosen[np.lexsort((chosen, jobs.depth[chosen], dominant))[0]])
        job = int(jobs.stage_job[g])
        room = self.share[job] / np.maximum(self.inverse, 1e-300) - sim.usage[job]  # share left, in resource units
        need = jobs.demand[g] > 0
        within = math.floor(float(np.min(room[need] / jobs.demand[g][need])) + EPS) if need.any() else 1
        return g, max(1, within)


def reference_pack(  # noqa: C901  (one tight loop kept whole: it runs hundreds of thousands of times)
    duration: FloatArray,
    demand: FloatArray,
    count: IntArray | FloatArray,
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
    rank = [0] * n_stages
    for position, g in enumerate(order):
        rank[g] = position
    done = [False] * n_stages
    # Ranks (positions in `order`) of the stages that can launch: nothing missing, tasks left. Walking it
    # in rank order visits exactly the stages a scan of `order` would act on, without the finished ones.
    ready: list[int] = []

    def complete(g: int) -> None:
        done[g] = True
        for c in children[g]:
            missing[c] -= 1
            if missing[c] == 0 and unlaunched[c] > 0:
                bisect.insort(ready, rank[c])

    for g in topological_order(parents, children):  # stages with nothing left are complete from the start
        if unlaunched[g] == 0 and active[g] == 0 and missing[g] == 0 and not done[g]:
            complete(g)
    ready[:] = sorted({rank[g] for g in range(n_stages) if unlaunched[g] > 0 and missing[g] == 0})
    t = 0.0
    makespan = 0.0
    tol = [EPS * max(1.0, float(c)) for c in capacity]
    while True:
        progressed = True
        while progressed:  # launch in priority order until nothing fits (zero-duration stages cascade)
            progressed = False
            last = -1
            while True:
                i = bisect.bisect_right(ready, last)
                if i >= len(ready):
                    break
                last = ready[i]
                g = order[last]
                n = unlaunched[g]
                if positive[g]:  # as fit_count(free + tol, demand[g])
                    most = min((free[r] + tol[r]) / d for r, d in positive[g])
                    n = min(n, max(0, math.floor(most + EPS)))
                if n <= 0:
                    continue
                unlaunched[g] -= n
                if unlaunched[g] == 0:
                    del ready[i]
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
        while heap and settled(heap[0][0]) <= t:  # the simulator's time rule (models.tolerance)
            _, g, n = heapq.heappop(heap)
            active[g] -= n
            free = [f + n * d for f, d in zip(free, need[g], strict=True)]
            if active[g] == 0 and unlaunched[g] == 0:
                complete(g)
        makespan = max(makespan, t)
    if any(left > 0 for left in unlaunched):
        return Packed(math.inf, tuple(tuple(x) for x in launches))
    return Packed(makespan, tuple(tuple(x) for x in launches))
