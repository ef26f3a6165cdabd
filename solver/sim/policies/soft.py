"""Soft placement constraints, deadlines and runtime estimates online: ``hard-only``, ``oblivious``, ``jockey``.

These policies (and ``tetrisched``/``alsched``, :mod:`fairpack.solver.spacetime.online`, which solve a model at every
cycle) launch from :meth:`SoftPolicy.on_event`, naming the placement option of every launch; the engine
records it and the checker verifies it (selector, duration, gang). They decide with *believed* durations: with
``estimate_error=e`` every (stage, option) duration a policy believes is the true one times ``1 + e u``, ``u``
uniform in ``[-1, 1]`` (drawn once per run from ``seed``; at least a tenth of the true one). The engine runs
the true durations. A launch under an option is sized by that option's own demand when it has one
(placement, room, usage).

Jobs are served by urgency: due time first (the deadline, or the first utility point), then release. A launch
is cut to what the job's queue may still start under its running-task cap (a gang starts whole or not at all).

* ``hard-only`` -- preferences as hard constraints: a stage runs only under its first option (a gang in one
  group, or task by task on that option's machines); it waits for them, however long.
* ``oblivious`` -- preferences ignored: every task is placed on any machine some task-by-task option allows
  (best fit) and runs for the duration of the first option its machine matches, wherever that is (with
  options of their own demand, the first whose demand fits the machine's room then). A stage that runs only
  as a gang starts when all its tasks fit one group.
* ``jockey`` (Ferguson et al., EuroSys'12) -- every job with a deadline gets the smallest *allocation* (tasks
  running at once) whose predicted completion meets it: the prediction simulates the job alone, from its
  current state (running tasks included), at every allocation (:func:`fairpack.solver.sim.pack.pack` with one slot
  resource), using the believed durations of its slowest task-by-task option (Jockey plans for the worst
  of what it profiled). Allocations are recomputed at every event, so a job that falls behind grows and one
  ahead shrinks; a job that cannot meet its deadline takes all it can use. Tasks are placed obliviously.
  Whatever the deadline jobs leave goes to best-effort jobs (release order).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fairpack.models.types import FloatArray, Instance
from fairpack.solver.registry import OptionError
from fairpack.solver.sim.cluster import fit_count
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.pack import pack
from fairpack.solver.sim.policies.options import choice, integer
from fairpack.solver.sim.workload import GroupOptions, Workload

SOFT_POLICIES = ("hard-only", "oblivious", "jockey")
#: The least fraction of its true duration a believed duration may be.
LEAST_BELIEF = 0.1


def estimate_error(extra: dict[str, Any]) -> float:
    """The ``estimate_error`` option: a fraction in [0, 1]."""
    value = extra.get("estimate_error", 0.0)
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not 0.0 <= number <= 1.0:
        raise OptionError(f"must be a fraction in [0, 1], got {value!r}", "estimate_error")
    return number


class Beliefs:
    """The durations a policy believes, per group and option (module docstring)."""

    def __init__(self, jobs: Workload, error: float, seed: int) -> None:
        widest = max((entry.count for entry in jobs.options if entry is not None), default=0)
        rng = np.random.default_rng(seed)
        factor = np.maximum(1.0 + error * rng.uniform(-1.0, 1.0, (jobs.num_stages, widest + 1)), LEAST_BELIEF)
        self.plain = jobs.duration * factor[:, -1]
        self.option: list[FloatArray | None] = [None if entry is None else entry.duration * factor[g, : entry.count]
                                                for g, entry in enumerate(jobs.options or [None] * jobs.num_stages)]

    def duration(self, g: int, option: int) -> float:
        """Believed duration of a task of group ``g`` under ``option`` (``-1``: the group has none)."""
        values = self.option[g]
        return float(self.plain[g] if values is None or option < 0 else values[option])


def due_times(instance: Instance) -> FloatArray:
    """Per job, when it is due: its deadline, or its first utility point (``inf``: best effort)."""
    return np.array([min(job.deadline, job.utility[0][0] if job.utility else math.inf) for job in instance.jobs])


class SoftPolicy(BasePolicy):
    """Shared machinery: beliefs, urgency order, and placing a group under one option now."""

    name = "soft"

    def __init__(self, jobs: Workload, instance: Instance, extra: dict[str, Any]) -> None:
        self.beliefs = Beliefs(jobs, estimate_error(extra), integer(extra, "seed", 0))
        self.due = due_times(instance)
        self.launched = 0

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        return None  # every launch happens in on_event

    def ordered(self, sim: Simulation) -> list[int]:
        """Runnable groups by urgency: due time, release, job, stage."""
        groups = np.flatnonzero(sim.runnable())
        k = sim.jobs.stage_job[groups]
        order = np.lexsort((groups, k, sim.jobs.release[k], self.due[k]))
        return [int(g) for g in groups[order]]

    def entry(self, sim: Simulation, g: int) -> GroupOptions | None:
        return sim.jobs.options[g] if sim.jobs.has_options else None

    def within_cap(self, sim: Simulation, g: int, chunks: list[tuple[int, int]],
                   option: int | None) -> list[tuple[int, int]]:  # fmt: skip
        """``chunks`` cut to the room of ``g``'s queue under its running-task cap, in order (none for a gang
        ``option`` that does not fit whole)."""
        room = sim.cap_room(g)
        if sum(n for _, n in chunks) <= room:
            return chunks
        entry = self.entry(sim, g)
        if option is not None and option >= 0 and entry is not None and bool(entry.gang[option]):
            return []
        cut, left = [], int(max(room, 0))
        for machine, n in chunks:
            take = min(n, left)
            if take:
                cut.append((machine, take))
                left -= take
        return cut

    def launch(self, sim: Simulation, g: int, chunks: list[tuple[int, int]], option: int | None) -> int:
        chunks = self.within_cap(sim, g, chunks, option)
        if not chunks:
            return 0
        sim.launch(g, chunks, option)
        self.launched += 1
        return sum(n for _, n in chunks)

    def plain(self, sim: Simulation, g: int, option: int, most: int) -> int:
        """Up to ``most`` tasks of ``g`` under task-by-task ``option`` (``-1``: no options), best fit now."""
        entry = self.entry(sim, g)
        mask = None if entry is None else entry.machines[option]
        chunks = sim.cluster.best_fit(sim.task_demand(g, option), most, mask)  # sized by the option it names
        return self.launch(sim, g, chunks, option if entry is not None else None)

    def gang(self, sim: Simulation, g: int, option: int) -> int:
        """All of ``g``'s tasks at once on one label group of gang ``option``, if some group holds them now."""
        entry = self.entry(sim, g)
        assert entry is not None
        chunks = gang_chunks(sim, g, entry, option)
        return 0 if chunks is None else self.launch(sim, g, chunks, option)

    def oblivious(self, sim: Simulation, g: int, most: int) -> int:
        """Up to ``most`` tasks anywhere a task-by-task option allows, each under the option it lands on; a
        gang-only stage as a gang under its first option that fits."""
        entry = self.entry(sim, g)
        if entry is not None and bool(entry.gang.all()):
            for option in range(entry.count):
                if self.gang(sim, g, option):
                    return int(sim.jobs.count[g])
            return 0
        placed = self.launch(sim, g, sim.place(g, most), None)  # the engine's best fit, where each task lands
        while entry is not None and entry.own_demand and 0 < placed < most:
            # A machine filled under one option may still hold tasks under another (its own demand fits the
            # rest of the room): place again, as the engine's dispatch loop does for the other policies.
            more = self.launch(sim, g, sim.place(g, most - placed), None)
            if not more:
                break
            placed += more
        return placed

    def counters(self) -> dict[str, Any]:
        return {"policy_launches": self.launched}


def gang_chunks(sim: Simulation, g: int, entry: GroupOptions, option: int) -> list[tuple[int, int]] | None:
    """Chunks placing every unlaunched task of ``g`` in one label group of gang ``option`` now (the group
    with the least room left over; None when no group holds them)."""
    need = int(sim.unlaunched[g])
    demand = sim.task_demand(g, option)
    best: tuple[float, list[tuple[int, int]]] | None = None
    groups = entry.group[option]
    for value in np.unique(groups[groups >= 0]).tolist():
        machines = np.flatnonzero((groups == value) & sim.cluster.fits(demand))
        room = [int(min(fit_count(sim.cluster.room[m], demand), need)) for m in machines.tolist()]
        if sum(room) < need:
            continue
        chunks, left = [], need
        for m, n in sorted(zip(machines.tolist(), room, strict=True), key=lambda item: (-item[1], item[0])):
            take = min(n, left)
            if take:
                chunks.append((m, take))
                left -= take
        spare = float(sum(room) - need)
        if best is None or spare < best[0]:
            best = (spare, chunks)
    return None if best is None else best[1]


class HardOnly(SoftPolicy):
    name = "hard-only"

    def on_event(self, sim: Simulation) -> None:
        for g in self.ordered(sim):
            entry = self.entry(sim, g)
            if entry is not None and entry.gang[0]:
                self.gang(sim, g, 0)
            else:
                self.plain(sim, g, 0 if entry is not None else -1, int(sim.unlaunched[g]))


class Oblivious(SoftPolicy):
    name = "oblivious"

    def on_event(self, sim: Simulation) -> None:
        for g in self.ordered(sim):
            self.oblivious(sim, g, int(sim.unlaunched[g]))


class Jockey(SoftPolicy):
    """Deadline jobs at the smallest allocation predicted to meet their deadline; the rest to best effort."""

    name = "jockey"

    def __init__(self, jobs: Workload, instance: Instance, extra: dict[str, Any]) -> None:
        super().__init__(jobs, instance, extra)
        self.deadline = np.array([job.deadline for job in instance.jobs])
        self.deadline = np.where(np.isfinite(self.deadline), self.deadline, self.due)
        self.allocation: dict[int, int] = {}
        self.resizes = 0

    def slowest(self, g: int, entry: GroupOptions | None) -> float:
        if entry is None:
            return self.beliefs.duration(g, -1)
        plain = [o for o in range(entry.count) if not entry.gang[o]] or list(range(entry.count))
        return max(self.beliefs.duration(g, o) for o in plain)

    def predicted(self, sim: Simulation, k: int, allocation: int) -> float:
        """Seconds to finish job ``k`` alone with ``allocation`` tasks at once, from its current state."""
        jobs = sim.jobs
        stages = jobs.job_stages[k]
        local = {int(g): i for i, g in enumerate(stages.tolist())}
        duration = np.array([self.slowest(int(g), self.entry(sim, int(g))) for g in stages.tolist()])
        parents = [[local[p] for p in jobs.parents[int(g)]] for g in stages.tolist()]
        running = [(local[int(g)], max(end - sim.t, 0.0), n) for g in stages.tolist()
                   for end, n in sim.running_ends[int(g)]]  # fmt: skip
        count = np.array([float(sim.unlaunched[int(g)]) for g in stages.tolist()])
        tails = np.array([float(jobs.tail[int(g)]) for g in stages.tolist()])
        packed = pack(duration, np.ones((stages.size, 1)), count, parents, np.array([float(allocation)]), tails,
                      running)  # fmt: skip
        return float(packed.makespan)

    def size(self, sim: Simulation, k: int) -> int:
        """The smallest allocation predicted to meet job ``k``'s deadline (all it can use when none does)."""
        jobs = sim.jobs
        stages = jobs.job_stages[k]
        widest = int(max(sim.unlaunched[int(g)] + sim.running[int(g)] for g in stages.tolist()))
        widest = max(widest, 1)
        left = self.deadline[k] - sim.t
        low, high = 1, widest
        if self.predicted(sim, k, widest) > left:
            return widest
        while low < high:  # completion falls as the allocation grows
            middle = (low + high) // 2
            if self.predicted(sim, k, middle) <= left:
                high = middle
            else:
                low = middle + 1
        return low

    def on_event(self, sim: Simulation) -> None:
        jobs = sim.jobs
        order = self.ordered(sim)
        active = sorted({int(jobs.stage_job[g]) for g in order})
        for k in active:
            if math.isfinite(self.deadline[k]):
                size = self.size(sim, k)
                if self.allocation.get(k) not in (None, size):
                    self.resizes += 1
                self.allocation[k] = size
        running = np.zeros(jobs.num_jobs, dtype=np.int64)
        np.add.at(running, jobs.stage_job, sim.running)
        for g in order:  # deadline jobs, within their allocations
            k = int(jobs.stage_job[g])
            if k in self.allocation:
                room = self.allocation[k] - int(running[k])
                if room > 0:
                    running[k] += self.oblivious(sim, g, min(room, int(sim.unlaunched[g])))
        for g in sorted(order, key=lambda g: (jobs.release[jobs.stage_job[g]], g)):  # spare: best effort
            if int(jobs.stage_job[g]) not in self.allocation:
                self.oblivious(sim, g, int(sim.unlaunched[g]))

    def counters(self) -> dict[str, Any]:
        return {**super().counters(), "resizes": self.resizes}


def make_soft_policy(name: str, jobs: Workload, instance: Instance, extra: dict[str, Any]) -> SoftPolicy:
    """The policy object for ``name`` (one of ``SOFT_POLICIES``; the registry's factory)."""
    choice({"policy": name}, "policy", name, SOFT_POLICIES)
    if name == "hard-only":
        return HardOnly(jobs, instance, extra)
    if name == "oblivious":
        return Oblivious(jobs, instance, extra)
    return Jockey(jobs, instance, extra)

