"""The DAG-job policies: ``carbyne``, ``drf-dag``, ``drf-strict``, ``tetris``, ``sjf``, on the one simulator.

Every policy is a work-conserving list scheduler: at every event it launches runnable tasks, in its own
order, while they fit the free capacity (:mod:`solver.sim.engine`), except ``drf-strict``. Policies
decide on pooled quantities (shares, alignment with the cluster's free capacity); with
``placement='servers'`` the engine puts each launched task on a machine it fits (best fit), so a task
that fits no machine's free room waits.

* ``drf-dag`` -- DRF between jobs: the job with the lowest weighted dominant share of its *current*
  usage launches next (one task at a time); within the job breadth-first (the runnable stage of
  lowest DAG level first, then the lower stage index).
* ``drf-strict`` -- every job held to its DRF share (not work-conserving): the shares ``A_k`` of the jobs
  present (re-run when a job arrives or finishes, as Carbyne's), and a job launches a task only while its
  weighted dominant share with the task stays within its share's, ``max_r A_k[r]``; a job running nothing
  may launch one task that exceeds it (a real fair scheduler offers a job below its share whatever it
  can use, so a task larger than the share runs rather than waits forever). Jobs in DRF order, within a
  job breadth-first. Its completion times are the fair completion times ``T_k``
  (:mod:`solver.sim.fairshare`).
* ``tetris`` -- packing: over all runnable tasks of all jobs, the one with the highest alignment score
  ``(demand / C) . (free / C)`` launches next (Tetris, Grandl et al. SIGCOMM'14, without its SRTF term).
* ``sjf`` -- shortest job first by *remaining* critical path (longest duration path through the job's
  unfinished stages, so it shrinks as stages finish); within the job the stage with the longest tail.
  Weights are ignored.
* ``carbyne`` (Grandl et al. OSDI'16) -- at every event:

  1. DRF shares ``A_k`` over the active jobs' aggregate resource-time vectors
     (:func:`solver.sim.fairshare.drf_shares`, re-run when a job is released or finishes).
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

import math
from typing import Any

import numpy as np

from models.tolerance import settled
from models.types import FloatArray, IntArray
from solver.sim.engine import BasePolicy, Simulation
from solver.sim.pack import EPS, Packed, pack
from solver.sim.shares import drf_shares
from solver.sim.workload import Workload

HEURISTICS = ("carbyne", "drf-dag", "drf-strict", "tetris", "sjf")


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


class Carbyne(CandidatePolicy):
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
        forward = pack(dur, dem, left, parents, cap, jobs.tail[stages], running).makespan
        if not math.isfinite(forward):
            return
        key = (k, cap.tobytes(), left.tobytes())
        backward = self.reverse.get(key)
        if backward is None:
            reversed_parents = [tuple(c - first for c in jobs.children[g]) for g in stages]
            backward = self.reverse[key] = pack(dur, dem, left, reversed_parents, cap, self.reach[stages])
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


class DrfStrict(CandidatePolicy):
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


def make_policy(name: str, jobs: Workload, extra: dict[str, Any]) -> CandidatePolicy:
    if name == "carbyne":
        return Carbyne(jobs, float(extra.get("altruism", 1.0)), bool(extra.get("reverse_order", False)),
                       int(extra.get("seed", 0)))  # fmt: skip
    if name == "drf-dag":
        return DrfDag()
    if name == "drf-strict":
        return DrfStrict(jobs)
    if name == "tetris":
        return Tetris(jobs)
    if name == "sjf":
        return Sjf()
    raise ValueError(f"unknown DAG policy {name!r}; choose from {', '.join(HEURISTICS)}")
