"""Fair sharing against data locality (Zaharia et al., EuroSys'10): naive Hadoop fair sharing and delay scheduling.

Hadoop's JobTracker hands out *slots*: when a slot is free on a machine, the jobs are asked in order of how
far they are below their share -- fewest running tasks per unit of weight first (ties to the earlier
release, then the lower job index) -- and the first that takes it launches one task there. Here, at every
event, every machine with room for a task is offered (in a seeded random order, like heartbeats arriving),
one slot after another until no job takes one; a slot nobody takes stays idle until the next event, where
it is offered again. A task fits a slot when its demand fits the machine's free room and, with
``--option slots=k``, the machine runs fewer than ``k`` tasks (Hadoop's fixed slots per machine).

Which task of a job a slot runs is the job's most local pending task for that machine (node-local, else
rack-local, else any: ``solver.sim.locality``); tasks of stages without input are local anywhere.

* ``fair`` (the paper's naive fair sharing, Algorithm 1): the first job in order with a task that fits
  takes the slot, with a local task if it has one, else any.
* ``delay`` (Algorithm 2 with the node and rack levels of HFS, ``--option d1=..,d2=..``): a job whose best
  task on the offered machine is not node-local is *skipped* (the slot goes to the next job) and its skip
  count rises by one. With a count below ``d1`` it launches node-local tasks only; below ``d1 + d2``,
  node- or rack-local ones; from ``d1 + d2`` on, any. Launching a node-local task resets its count to
  0; launching a rack-local one brings it back to the rack level (count ``min(count, d1)``), so it waits
  ``d2`` skips again before it may launch a remote task. ``d1 = d2 = 0`` is ``fair``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairpack.models.types import Instance
from fairpack.solver.registry import OptionError
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.locality import NODE, RACK, REMOTE
from fairpack.solver.sim.workload import Workload

LOCALITY_POLICIES = ("fair", "delay")


class FairSlots(BasePolicy):
    """``fair``: naive Hadoop fair sharing over slot offers (module docstring)."""

    name = "fair"

    def __init__(self, slots: int | None = None, seed: int = 0) -> None:
        if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int) or slots < 1):
            raise OptionError(f"slots must be a positive whole number, got {slots!r}", "slots")
        self.slots = slots
        self.seed = seed
        self.skipped = 0  # offers a job let pass for locality (delay only)

    def start(self, sim: Simulation) -> None:
        jobs = sim.jobs
        self.rng = np.random.default_rng(self.seed)
        self.running = np.zeros(jobs.num_jobs, dtype=np.int64)
        self.waiting: list[int] = []  # released jobs with tasks never launched
        self.cursor = [int(stages[0]) for stages in jobs.job_stages]  # first stage that may have tasks left
        self.last_stage = [int(stages[-1]) for stages in jobs.job_stages]
        self.smallest = jobs.demand.min(axis=0) if jobs.num_stages else np.zeros(jobs.capacity.size)
        self.offers: list[int] = []
        self.choice = (-1, -1)
        self.launched_level = [0, 0, 0]

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        self.running[sim.jobs.stage_job[group]] -= tasks

    def _open(self, sim: Simulation, machine: int) -> bool:
        """Whether the machine may take one more task of some size (slots, the smallest demand)."""
        if self.slots is not None and sim.machine_tasks[machine] >= self.slots:
            return False
        return bool(np.all(self.smallest <= sim.cluster.room[machine]))

    def on_event(self, sim: Simulation) -> None:
        self.waiting.extend(sim.arrived)
        room = np.all(sim.cluster.room >= self.smallest[None, :], axis=1)
        if self.slots is not None:
            room &= sim.machine_tasks < self.slots
        machines = np.flatnonzero(room)
        self.offers = self.rng.permutation(machines).tolist() if machines.size > 1 else machines.tolist()

    def _order(self, sim: Simulation) -> list[int]:
        """Jobs with tasks left, furthest below their share first."""
        self.waiting = [k for k in self.waiting if sim.tasks_left[k] > 0 and self._has_tasks(sim, k)]
        jobs = sim.jobs
        waiting = self.waiting
        if sim.capped:  # a job whose queue runs its cap takes no slot now (it stays waiting)
            below = sim.tenant_running < jobs.tenant_cap
            waiting = [k for k in waiting if below[jobs.job_tenant[k]]]
        return sorted(waiting, key=lambda k: (self.running[k] / jobs.weight[k], jobs.release[k], k))

    def _has_tasks(self, sim: Simulation, job: int) -> bool:
        unlaunched = sim.unlaunched
        g = self.cursor[job]
        while g <= self.last_stage[job] and unlaunched[g] <= 0:
            g += 1
        self.cursor[job] = g
        return g <= self.last_stage[job]

    def _best(self, sim: Simulation, job: int, machine: int) -> tuple[int, int]:
        """The job's runnable group that fits ``machine`` with the most local task there, and that level."""
        unlaunched, missing, room = sim.unlaunched, sim.missing, sim.cluster.room[machine]
        demand, data = sim.jobs.demand, sim.data
        best, best_level = -1, REMOTE + 1
        for g in range(self.cursor[job], self.last_stage[job] + 1):
            if unlaunched[g] <= 0 or missing[g] > 0 or not np.all(demand[g] <= room):
                continue
            level = NODE if data is None else data.level(g, machine)
            if level < best_level:
                best, best_level = g, level
                if level == NODE:
                    break
        return best, best_level

    def decide(self, sim: Simulation, job: int, group: int, level: int) -> bool:
        """Whether ``job`` launches its best task (of ``group``, at ``level``) on the offered slot."""
        return True

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        if not sim.released.any():
            return None
        while self.offers:
            machine = self.offers[-1]
            if self._open(sim, machine):
                for job in self._order(sim):
                    group, level = self._best(sim, job, machine)
                    if group >= 0 and self.decide(sim, job, group, level):
                        self.choice = (group, machine)
                        self.running[job] += 1
                        self.launched_level[min(level, REMOTE)] += 1
                        return group, 1
            self.offers.pop()  # nobody takes a slot here now
        return None

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        return [(self.choice[1], 1)]

    def counters(self) -> dict[str, Any]:
        """``skips``: offers a job let pass to wait for locality (0 for ``fair``)."""
        return {"skips": self.skipped}


class DelaySlots(FairSlots):
    """``delay``: fair sharing with node- and rack-level delay scheduling (module docstring)."""

    name = "delay"

    def __init__(self, d1: int = 0, d2: int = 0, slots: int | None = None, seed: int = 0) -> None:
        super().__init__(slots, seed)
        for key, value in (("d1", d1), ("d2", d2)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise OptionError(f"{key} must be a whole number of skips (at least 0), got {value!r}", key)
        self.d1, self.d2 = d1, d2

    def start(self, sim: Simulation) -> None:
        super().start(sim)
        self.count = np.zeros(sim.jobs.num_jobs, dtype=np.int64)

    def allowed(self, job: int) -> int:
        """The least local level ``job`` may launch at now."""
        count = int(self.count[job])
        if count < self.d1:
            return NODE
        return RACK if count < self.d1 + self.d2 else REMOTE

    def decide(self, sim: Simulation, job: int, group: int, level: int) -> bool:
        if level > self.allowed(job):
            self.count[job] += 1
            self.skipped += 1
            return False
        if level == NODE:
            if sim.data is not None and sim.data.has_input[group]:
                self.count[job] = 0
        elif level == RACK:
            self.count[job] = min(int(self.count[job]), self.d1)
        return True


def local_probability(p: float, offers: int) -> float:
    """The paper's analysis: a job with data on a fraction ``p`` of the nodes, offered slots on random
    nodes, finds a local one among ``offers`` of them with probability ``1 - (1 - p)^offers``. A job
    allowed ``d1`` skips sees ``d1 + 1`` offers before it may launch anywhere."""
    if not 0 <= p <= 1 or offers < 0:
        raise ValueError(f"need 0 <= p <= 1 and offers >= 0, got p={p}, offers={offers}")
    return 1.0 - (1.0 - p) ** offers


def make_locality_policy(name: str, jobs: Workload, instance: Instance | None, extra: dict[str, Any]) -> BasePolicy:
    """``fair`` or ``delay`` with its settings (``d1``, ``d2``, ``slots``, ``seed``) from ``extra`` (the registry's
    factory)."""
    slots = extra.get("slots")
    seed = int(extra.get("seed", 0) or 0)
    if name == "fair":
        return FairSlots(slots, seed)
    if name == "delay":
        return DelaySlots(extra.get("d1", 0), extra.get("d2", 0), slots, seed)
    raise ValueError(f"unknown locality policy {name!r}; choose from {', '.join(LOCALITY_POLICIES)}")
