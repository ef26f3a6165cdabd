"""The fair completion times ``T_k``, recomputed by the checker: the ``drf-strict`` schedule, simulated here again.

``T_k`` is the job's completion in the fair-share schedule (docs/concepts.md): the jobs present at each moment
get their weighted DRF shares ``A_k`` of the cluster over their aggregate resource-time vectors (progressive
filling, recomputed when a job arrives or finishes), and a job launches a task only while its dominant share
with the task stays within ``max_r A_k[r]`` -- a job running nothing may launch one task beyond it. Jobs are
served in order of their weighted dominant share of current use, within a job the runnable stage of lowest
DAG level first; a stage starts once every task of its parents has ended; tasks go on the machine they fit
best (the least room left, summed over resources as fractions of the cluster) on ``placement='servers'``, on
the cluster as one pool otherwise; with input blocks a machine runs the job's most local pending task for the
locality factor of its level; a stage with placement options runs each task under the first task-by-task
option its machine matches. When options carry demands of their own, a task holds its option's demand, fits a
machine when some task-by-task option that may use it fits its free room under its own demand, lands under the
first such option, and machines are scored for best fit under the option a task would land under there; such
a stage launches one task at a time (its share test cannot know the option it lands under). A job whose queue
runs its running-task cap (``Instance.queues``, whole tasks) launches nothing until a task of that queue ends.

This is the checker's own simulation of that definition, written for it and importing nothing from
``solver`` (``tests/test_architecture.py``): ``fairpack check`` recomputes every ``T_k`` a saved result relies
on, so a result cannot loosen its own deadlines. It follows the same rules and the same floating-point order
as the solver's ``drf-strict`` policy, so that the two agree to the checker's tolerance; a test compares them.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from fairpack.models.dag import longest_paths
from fairpack.models.tolerance import FIT_EPS, FIT_RTOL, settled, time_tol
from fairpack.models.types import FloatArray, Instance

#: Slack of the share test and of whole-task counts (the simulator's ``EPS``).
EPS = FIT_EPS
#: A stage's placement options: a machine is usable when one task fits it within this relative slack.
OPTION_FIT = 1e-12
NODE, RACK, REMOTE = 0, 1, 2


@dataclass(frozen=True)
class FairTimes:
    """``T_k`` of every job and its DRF share at arrival.

    Attributes
    ----------
    completion : (jobs,)
        The job's completion in the fair-share schedule.
    share : (jobs, resources)
        ``A_k`` at the job's arrival, among the jobs present then (fractions of every resource).
    """

    completion: FloatArray
    share: FloatArray


def drf_levels(work: FloatArray, weights: FloatArray, present: np.ndarray) -> FloatArray:
    """Weighted DRF by progressive filling over aggregate vectors, no caps: every job's share of every resource.

    ``work`` is (jobs, resources) resource-time as fractions of the cluster; absent jobs and jobs with no work
    get nothing. The common weighted level rises until a resource is used up; the jobs using it stop.
    """
    n_jobs, n_res = work.shape
    peak = work.max(axis=1) if n_res else np.zeros(n_jobs)
    direction = np.divide(work, peak[:, None], out=np.zeros_like(work), where=peak[:, None] > 0)
    growing = np.asarray(present, dtype=bool) & (peak > 0)
    level = np.zeros(n_jobs)
    used = np.zeros(n_res)
    while np.any(growing):
        rate = (weights[growing, None] * direction[growing]).sum(axis=0)
        room = np.divide(1.0 - used, rate, out=np.full(n_res, np.inf), where=rate > 1e-15)
        step = float(max(room.min(), 0.0))
        level[growing] += step
        used += step * rate
        full = room <= step * (1 + 1e-12) + 1e-15
        stopped = growing & np.any(direction[:, full] > 0, axis=1)
        if not np.any(stopped):
            break
        growing &= ~stopped
    return (weights * level)[:, None] * direction


def rounded_up(instance: Instance, unit: float) -> Instance:
    """The instance with every duration and release rounded up to whole ``unit``s (a value within the time rule
    of a multiple counts as that multiple): the instance an exact model with that time unit solves."""

    def up(value: float) -> float:
        near = round(value / unit)
        whole = near if abs(value - near * unit) <= time_tol(value) else math.ceil(value / unit)
        return whole * unit

    jobs = tuple(replace(job, release=up(job.release),
                         stages=tuple(replace(stage, duration=up(stage.duration)) for stage in job.stages))
                 for job in instance.jobs)  # fmt: skip
    return replace(instance, jobs=jobs)


def whole_multiples(instance: Instance, unit: float) -> bool:
    """Whether every duration and release is a whole number of ``unit``s (by the time rule)."""
    values = [job.release for job in instance.jobs] + [s.duration for job in instance.jobs for s in job.stages]
    return all(abs(v - round(v / unit) * unit) <= time_tol(v) for v in values)


class _Options:
    """One stage's placement options on the machines (``placement='servers'``)."""

    def __init__(self, instance: Instance, stage: object, classes: np.ndarray) -> None:
        options = stage.options  # type: ignore[attr-defined]
        demand = np.asarray(stage.demand, dtype=np.float64)  # type: ignore[attr-defined]
        # One task's demand under each option: its own, else the stage's.
        self.demand = np.array([demand if o.demand is None else o.demand for o in options], dtype=np.float64)
        self.demand = self.demand.reshape(len(options), -1)
        self.own_demand = bool(np.any(self.demand != demand[None, :]))
        fits = np.all(self.demand[:, None, :] <= instance.capacity[None, :, :] * (1 + OPTION_FIT), axis=2)
        usable = np.array([[option.matches(s.labels) for s in instance.servers] for option in options])
        self.machines = (usable & fits)[:, classes]
        self.gang = [bool(option.same) for option in options]
        self.duration = [float(option.duration) for option in options]
        plain = self.machines[[not g for g in self.gang]]
        self.landing = plain.any(axis=0) if plain.size else np.zeros(classes.size, dtype=bool)

    def landed(self, machine: int, room: FloatArray) -> int:
        """The first task-by-task option that may use ``machine`` (with own demands: whose demand fits its
        ``room`` now)."""
        for option, gang in enumerate(self.gang):
            if gang or not self.machines[option, machine]:
                continue
            need = self.demand[option]
            if not self.own_demand or all(room[r] >= need[r] for r in np.flatnonzero(need > 0).tolist()):
                return option
        return -1

    def landing_now(self, room: FloatArray) -> np.ndarray:
        """Per machine, the option a task landing there now runs under (-1: none), given every machine's room."""
        chosen = np.full(self.machines.shape[1], -1, dtype=np.int64)
        for option, gang in enumerate(self.gang):
            if gang:
                continue
            need = self.demand[option]
            fits = np.all((need <= 0)[None, :] | (need[None, :] <= room), axis=1)
            chosen[(chosen < 0) & self.machines[option] & fits] = option
        return chosen


class _Blocks:
    """Pending tasks of every stage by where their input blocks are (node, rack, anywhere), lowest index first."""

    def __init__(self, instance: Instance, stages: Sequence[object]) -> None:
        data = instance.data
        assert data is not None
        self.factors = [float(f) for f in data.factors]
        self.rack = instance.machine_racks().tolist()
        index = data.index()
        self.has_input = [bool(stage.input) for stage in stages]  # type: ignore[attr-defined]
        self.node: list[dict[int, list[int]]] = []
        self.on_rack: list[dict[int, list[int]]] = []
        self.any: list[list[int]] = []
        self.pending: list[list[bool]] = []
        for stage in stages:
            replicas = [data.replicas[index[name]] for name in stage.input]  # type: ignore[attr-defined]
            node: dict[int, list[int]] = {}
            on_rack: dict[int, list[int]] = {}
            for task in reversed(range(len(replicas))):
                racks = set()
                for machine in replicas[task]:
                    node.setdefault(machine, []).append(task)
                    if self.rack[machine] >= 0:
                        racks.add(self.rack[machine])
                for rack in racks:
                    on_rack.setdefault(rack, []).append(task)
            self.node.append(node)
            self.on_rack.append(on_rack)
            self.any.append(list(reversed(range(len(replicas)))))
            self.pending.append([True] * len(replicas))

    def _top(self, stack: list[int] | None, pending: list[bool]) -> int:
        while stack and not pending[stack[-1]]:
            stack.pop()
        return stack[-1] if stack else -1

    def take(self, group: int, machine: int) -> int:
        """Launch the most local pending task of ``group`` on ``machine``; its locality level."""
        pending = self.pending[group]
        task, level = self._top(self.node[group].get(machine), pending), NODE
        if task < 0 and self.rack[machine] >= 0:
            task, level = self._top(self.on_rack[group].get(self.rack[machine]), pending), RACK
        if task < 0:
            task, level = self._top(self.any[group], pending), REMOTE
        pending[task] = False
        return level


class _FairShareRun:
    """One run of the fair-share schedule (see the module docstring)."""

    def __init__(self, instance: Instance, placement: str) -> None:
        jobs = instance.jobs
        stages = [stage for job in jobs for stage in job.stages]
        counts = [len(job.stages) for job in jobs]
        offset = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.job_of = [k for k, c in enumerate(counts) for _ in range(c)]
        parents = [[int(offset[k]) + p for p in stage.after] for k, job in enumerate(jobs) for stage in job.stages]
        children: list[list[int]] = [[] for _ in stages]
        for child, ps in enumerate(parents):
            for p in ps:
                children[p].append(child)
        self.children = children
        self.depth = longest_paths(parents, children, np.ones(len(stages)))[0].astype(np.int64).tolist()
        self.count = [int(stage.tasks) for stage in stages]
        self.duration = [float(stage.duration) for stage in stages]
        n_res = len(instance.resources)
        self.demand = np.array([stage.demand for stage in stages], dtype=np.float64).reshape(-1, n_res)
        self.demands = self.demand.tolist()
        # Per stage, the resources a task needs and how much: the fit test compares only those (made once here,
        # since the test runs for every waiting stage at every dispatch).
        self.need = [np.flatnonzero(row > 0) for row in self.demand]
        self.need_amount = [row[need] for row, need in zip(self.demand, self.need, strict=True)]
        self.need_pairs = [[(int(r), float(row[r])) for r in need] for row, need in zip(self.demand, self.need,
                                                                                             strict=True)]  # fmt: skip
        self.release = [float(job.release) for job in jobs]
        queues = instance.queues()
        self.queue_of = [int(queues.of_job[k]) for k in self.job_of]  # every stage's queue
        self.queue_cap = [math.floor(c) if math.isfinite(c) else math.inf for c in queues.cap.tolist()]
        self.queue_running = [0] * len(queues.names)
        self.weight = np.array([job.weight for job in jobs], dtype=np.float64)
        self.weights = self.weight.tolist()
        capacity = np.asarray(instance.total_capacity, dtype=np.float64)
        self.capacity = capacity.tolist()
        self.inverse = np.divide(1.0, capacity, out=np.zeros_like(capacity), where=capacity > 0).tolist()
        self.units = [max(v, 1e-300) for v in self.inverse]
        normalised = np.divide(self.demand, capacity, out=np.zeros_like(self.demand), where=capacity > 0)
        per_stage = (np.array(self.count, dtype=np.float64) * np.array(self.duration))[:, None] * normalised
        self.work = np.zeros((len(jobs), n_res))
        np.add.at(self.work, np.array(self.job_of, dtype=np.int64), per_stage)
        # Machines: one pool, or every machine of every class.
        if placement == "servers":
            classes = instance.machine_class()
            self.machine_capacity = instance.capacity[classes].astype(np.float64)
        else:
            classes = np.zeros(1, dtype=np.int64)
            self.machine_capacity = capacity[None, :].copy()
        self.pooled = placement != "servers"
        self.free = self.machine_capacity.copy()
        self.slack = FIT_RTOL * np.maximum(1.0, self.machine_capacity)
        self.room = self.free + self.slack
        self.inverse_total = np.divide(1.0, capacity, out=np.zeros_like(capacity), where=capacity > 0)
        self.options: list[_Options | None] = [
            _Options(instance, stage, classes) if stage.options and not self.pooled else None for stage in stages
        ]
        self.has_options = any(entry is not None for entry in self.options)
        self.blocks = _Blocks(instance, stages) if instance.data is not None and not self.pooled else None
        # State.
        self.unlaunched = list(self.count)
        self.running = [0] * len(stages)
        self.missing = [len(p) for p in parents]
        self.released = [False] * len(jobs)
        self.finished = [False] * len(jobs)
        self.tasks_left = [0] * len(jobs)
        for g, k in enumerate(self.job_of):
            self.tasks_left[k] += self.count[g]
        self.usage = np.zeros((len(jobs), n_res))
        self.dominant_of: dict[int, float] = {}  # the weighted dominant share of a job's use, until that use changes
        self.completion = np.full(len(jobs), np.inf)
        self.machine_tasks = [0] * self.machine_capacity.shape[0]
        # (end, sequence, stage, tasks, machines, tasks per machine, option)
        self.heap: list[tuple[float, int, int, int, tuple[int, ...], tuple[int, ...], int]] = []
        self.sequence = 0
        self.releases = sorted(range(len(jobs)), key=lambda k: (self.release[k], k))
        self.next_release = 0
        self.active_changed = True
        self.shares: list[float] = [0.0] * len(jobs)

    # --- the machines

    def _fits(self, g: int) -> bool:
        """One task of ``g`` fits some machine's free room now (with options: a machine an option may use)."""
        entry = self.options[g]
        if entry is not None and entry.own_demand:
            return bool(np.any(entry.landing_now(self.room) >= 0))
        if self.pooled and entry is None:  # one row: compared value by value, without numpy's per-call cost
            room = self.room[0]
            return all(room[r] >= d for r, d in self.need_pairs[g])
        need = self.need[g]
        if need.size == 0:
            fitting = np.ones(self.room.shape[0], dtype=bool)
        else:
            fitting = np.all(self.room[:, need] >= self.need_amount[g][None, :], axis=1)
        if entry is not None:
            fitting &= entry.landing
        return bool(fitting.any())

    def _demand_of(self, g: int, option: int) -> FloatArray:
        """One task's demand of stage ``g`` under ``option`` (its own when the stage's options have their own)."""
        entry = self.options[g]
        if option >= 0 and entry is not None and entry.own_demand:
            return np.asarray(entry.demand[option])
        return np.asarray(self.demand[g])

    def _best_fit_landing(self, entry: _Options, most: int) -> list[tuple[int, int]]:
        """Best fit with every machine scored under the option a task would land under there now."""
        landing = entry.landing_now(self.room)
        usable = np.flatnonzero(landing >= 0)
        if usable.size == 0:
            return []
        demand = entry.demand[landing[usable]]
        score = ((self.free[usable] - demand) * self.inverse_total[None, :]).sum(axis=1)
        chunks: list[tuple[int, int]] = []
        left = most
        for i in np.lexsort((usable, score)).tolist():
            n = int(min(left, self._fit_count(self.room[usable[i]].tolist(), demand[i].tolist())))
            if n > 0:
                chunks.append((int(usable[i]), n))
                left -= n
            if left <= 0:
                break
        return chunks

    @staticmethod
    def _fit_count(room: list[float], demand: list[float]) -> float:
        least = math.inf
        for free, need in zip(room, demand, strict=True):
            if need > 0 and free / need < least:
                least = free / need
        return math.inf if least == math.inf else float(max(0.0, math.floor(least + EPS)))

    def _best_fit(self, g: int, most: int) -> list[tuple[int, int]]:
        demand = self.demand[g]
        entry = self.options[g]
        if entry is not None and entry.own_demand:
            return self._best_fit_landing(entry, most)
        if self.room.shape[0] == 1 and entry is None:
            n = int(min(most, self._fit_count(self.room[0].tolist(), self.demands[g])))
            return [(0, n)] if n > 0 else []
        fitting = np.all(demand[None, :] <= self.room, axis=1)
        if entry is not None:
            fitting &= entry.landing
        score = (self.free - demand[None, :]) @ self.inverse_total
        chunks: list[tuple[int, int]] = []
        left = most
        while left > 0 and np.any(fitting):
            machine = int(np.flatnonzero(fitting)[np.argmin(score[fitting])])
            n = int(min(left, self._fit_count(self.room[machine].tolist(), self.demands[g])))
            chunks.append((machine, n))
            left -= n
            fitting[machine] = False
        return chunks

    def _take(self, machine: int, demand: list[float], n: int, sign: float) -> None:
        for r, d in enumerate(demand):
            value = self.free[machine, r] - n * d if sign < 0 else self.free[machine, r] + n * d
            self.free[machine, r] = value
            self.room[machine, r] = value + self.slack[machine, r]

    # --- the run

    def _push(self, g: int, end: float, n: int, machines: tuple[int, ...], counts: tuple[int, ...],
              option: int = -1) -> None:  # fmt: skip
        heapq.heappush(self.heap, (end, self.sequence, g, n, machines, counts, option))
        self.sequence += 1

    def _launch(self, g: int, chunks: list[tuple[int, int]], t: float) -> None:
        k = self.job_of[g]
        entry = self.options[g]
        chosen = [-1] * len(chunks) if entry is None else [entry.landed(m, self.room[m]) for m, _ in chunks]
        if self.blocks is not None and self.blocks.has_input[g]:
            for (machine, count), option in zip(chunks, chosen, strict=True):
                base = self.duration[g] if entry is None else entry.duration[option]
                by_level: dict[int, int] = {}
                for _ in range(count):
                    level = self.blocks.take(g, machine)
                    by_level[level] = by_level.get(level, 0) + 1
                for level, n in sorted(by_level.items()):
                    self._push(g, t + base * self.blocks.factors[level], n, (machine,), (n,), option)
        elif entry is not None:
            for option in sorted(set(chosen)):
                mine = [chunk for chunk, c in zip(chunks, chosen, strict=True) if c == option]
                self._push(g, t + entry.duration[option], sum(c for _, c in mine), tuple(m for m, _ in mine),
                           tuple(c for _, c in mine), option)  # fmt: skip
        else:
            self._push(g, t + self.duration[g], sum(c for _, c in chunks), tuple(m for m, _ in chunks),
                       tuple(c for _, c in chunks))  # fmt: skip
        self.dominant_of.pop(k, None)
        total = 0
        for machine, count in chunks:
            self.machine_tasks[machine] += count
            total += count
        if entry is not None and entry.own_demand:  # each chunk holds its option's own demand
            for (machine, count), option in zip(chunks, chosen, strict=True):
                self._take(machine, entry.demand[option].tolist(), count, -1.0)
                self.usage[k] += count * entry.demand[option]
        else:
            for machine, count in chunks:
                self._take(machine, self.demands[g], count, -1.0)
            self.usage[k] += total * self.demand[g]
        self.unlaunched[g] -= total
        self.running[g] += total
        self.queue_running[self.queue_of[g]] += total

    def _end_tasks(self, t: float) -> None:
        while self.heap and settled(self.heap[0][0]) <= t:
            end, _, g, n, machines, counts, option = heapq.heappop(self.heap)
            k = self.job_of[g]
            demand = self._demand_of(g, option)  # what the tasks took at launch
            self.running[g] -= n
            self.queue_running[self.queue_of[g]] -= n
            self.usage[k] -= n * demand
            self.dominant_of.pop(k, None)
            self.tasks_left[k] -= n
            listed = demand.tolist()
            for machine, count in zip(machines, counts, strict=True):
                self._take(machine, listed, count, 1.0)
            for machine, count in zip(machines, counts, strict=True):
                self.machine_tasks[machine] -= count
                if self.machine_tasks[machine] == 0:
                    self.free[machine] = self.machine_capacity[machine]
                    self.room[machine] = self.free[machine] + self.slack[machine]
            if self.running[g] == 0 and self.unlaunched[g] == 0:
                for child in self.children[g]:
                    self.missing[child] -= 1
            if self.tasks_left[k] == 0:
                self.finished[k] = True
                self.completion[k] = end
                self.usage[k] = 0.0
                self.dominant_of.pop(k, None)
                self.active_changed = True

    def _release_jobs(self, t: float) -> None:
        while self.next_release < len(self.releases) and settled(self.release[self.releases[self.next_release]]) <= t:
            self.released[self.releases[self.next_release]] = True
            self.active_changed = True
            self.next_release += 1

    def _dominant(self, k: int) -> float:
        known = self.dominant_of.get(k)
        if known is None:
            usage = self.usage[k].tolist()
            known = max([u / c if c > 0 else 0.0 for u, c in zip(usage, self.capacity, strict=True)]) / self.weights[k]
            self.dominant_of[k] = known
        return known

    def _allowed(self, g: int) -> bool:
        if self.unlaunched[g] <= 0 or self._cap_room(g) <= 0:
            return False
        # The share test first: it is plain arithmetic, and most waiting stages of a busy cluster fail it.
        usage = self.usage[self.job_of[g]].tolist()
        if any(u > 0 for u in usage):  # a job running nothing may launch one task beyond its share
            after = max([(u + d) * v for u, d, v in zip(usage, self.demands[g], self.inverse, strict=True)])
            if not after <= self.shares[self.job_of[g]] * (1 + EPS) + EPS:
                return False
        return self._fits(g)

    def _cap_room(self, g: int) -> float:
        """More tasks stage ``g``'s queue may run now under its cap (``inf``: none)."""
        q = self.queue_of[g]
        return self.queue_cap[q] - self.queue_running[q]

    def _still_fitting(self, stages: list[int]) -> list[int]:
        """``stages`` less those of which no task fits the pool's free room now (on machines: all of them).

        Free room only shrinks during a dispatch, so a stage that fits nowhere would be passed over whenever the
        dispatch came to it: on the pool, every waiting stage is tested at once (after a launch fills the pool, a
        test per stage as the order reaches it had been most of the checker's time on 1,000 DAG jobs)."""
        if not self.pooled or not stages:
            return stages
        rows = self.demand[stages]
        fits = np.all((rows <= self.room[0][None, :]) | (rows <= 0), axis=1)
        return [g for g, fit in zip(stages, fits.tolist(), strict=True) if fit]

    def _dispatch(self, t: float) -> None:
        waiting = self._still_fitting([g for g in range(len(self.count)) if self.unlaunched[g] > 0
                                       and self.missing[g] == 0 and self.released[self.job_of[g]]])  # fmt: skip
        dominant = {k: self._dominant(k) for k in {self.job_of[g] for g in waiting}}
        while True:
            order = sorted((dominant[self.job_of[g]], self.depth[g], g) for g in waiting if self.unlaunched[g] > 0)
            chosen = -1
            passed: set[int] = set()  # not allowed now, nor for the rest of this dispatch
            for _, _, g in order:
                if self._allowed(g):
                    chosen = g
                    break
                passed.add(g)
            if chosen < 0:
                return
            k = self.job_of[chosen]
            most = self._launchable(chosen, k)
            chunks = self._best_fit(chosen, most)
            if sum(count for _, count in chunks) <= 0:
                raise RuntimeError(f"the fair-share schedule picked stage {chosen}, which cannot launch a task")
            self._launch(chosen, chunks, t)
            dominant[k] = self._dominant(k)
            waiting = self._still_fitting([g for g in waiting if g not in passed])

    def _launchable(self, g: int, k: int) -> int:
        """How many tasks of stage ``g`` (of job ``k``) may launch now: within the job's share, the stage's tasks
        left and its queue's cap."""
        usage = self.usage[k].tolist()
        left = [self.shares[k] / unit - u for unit, u in zip(self.units, usage, strict=True)]
        need = [room / d for room, d in zip(left, self.demands[g], strict=True) if d > 0]
        within = max(1, math.floor(min(need) + EPS) if need else 1)
        entry = self.options[g]
        if entry is not None and entry.own_demand:
            within = 1  # the share test above knew the stage's demand, not the option it lands under
        return int(min(within, self.unlaunched[g], self._cap_room(g)))

    def run(self) -> FloatArray:
        while True:
            candidates = [self.heap[0][0] if self.heap else math.inf]
            if self.next_release < len(self.releases):
                candidates.append(self.release[self.releases[self.next_release]])
            t = min(candidates)
            if t == math.inf:
                break
            self._end_tasks(t)
            self._release_jobs(t)
            if self.active_changed:
                active = np.array([r and not f for r, f in zip(self.released, self.finished, strict=True)])
                self.shares = drf_levels(self.work, self.weight, active).max(axis=1).tolist()
            self.active_changed = False
            self._dispatch(t)
        return self.completion


def fair_times(instance: Instance, placement: str = "pooled", shares: bool = False) -> FairTimes | None:
    """``T_k`` of every job (module docstring) on ``placement`` (``pooled`` or ``servers``), and with ``shares``
    every job's DRF share at its arrival (else zeros: one filling per job, the costly part on many jobs); None
    when the fair-share schedule does not exist: a stage fits no unit of the placement, or runs only as a gang."""
    if not instance.jobs:
        return FairTimes(np.zeros(0), np.zeros((0, len(instance.resources))))
    capacity = instance.total_capacity[None, :] if placement != "servers" else instance.capacity
    for job in instance.jobs:
        for stage in job.stages:
            # With placement options on machines a task runs at its option's demand (the stage's, or its own).
            under = [stage.demand_under(o) for o in range(len(stage.options))] if placement == "servers" else []
            if not any(np.any(np.all(np.asarray(d)[None, :] <= capacity * (1 + FIT_EPS), axis=1))
                       for d in [stage.demand, *under]):  # fmt: skip
                return None
    if np.any(instance.queues().cap < 1):
        return None  # a queue capped below one task never runs its jobs
    run = _FairShareRun(instance, placement)
    if any(entry is not None and not (~np.array(entry.gang)).any() for entry in run.options):
        return None
    completion = run.run().copy()
    release = np.array(run.release)
    share = np.zeros_like(run.work)
    for k in range(len(instance.jobs) if shares else 0):
        present = (release <= release[k]) & ((release == release[k]) | (completion > release[k]))
        share[k] = drf_levels(run.work, run.weight, present)[k]
    return FairTimes(completion, share)
