"""Sparrow (Ousterhout et al., SOSP'13): decentralised sampling of per-machine queues, on the one simulator.

Every machine is a worker with a FIFO queue; a queued task starts when it fits the machine's free room
(with the slot workloads of ``models.generators.short_tasks``: when one of its slots frees). A *request*
is the set of a job's tasks that become runnable together (a job's stages without parents when it arrives,
a stage's children when they are released), as a framework submits them to a Sparrow scheduler. Messages
take ``rtt / 2`` each way (``rtt`` in the instance's time unit, default ``DEFAULT_RTT``):

* ``random`` -- each task to a uniformly random worker's queue (arrives ``rtt / 2`` later);
* ``sparrow`` with ``batch=false, late_binding=false`` -- per-task sampling: every task probes ``probes``
  (``d``) distinct random workers and goes to the one with the shortest queue (queued plus running tasks,
  ties at random); the probes read the queues when the request arrives and the task reaches the worker one
  and a half round trips later (probe, reply, task). The tasks of one request probe in parallel, so two of
  them may pick the same worker;
* ``batch=true, late_binding=false`` -- batch sampling: ``d * m`` distinct workers probed for the ``m``
  tasks, one task to each of the ``m`` least loaded (same delays);
* ``batch=true, late_binding=true`` (the default) -- batch sampling with late binding: a *reservation* for
  the request is queued at each of the ``d * m`` probed workers (``rtt / 2`` later). When a reservation
  reaches the head of its queue and the worker's next task would fit, the worker asks the scheduler for a
  task and holds that room idle for the round trip ``rtt``; the scheduler answers at once with the
  request's next unlaunched task, which starts ``rtt`` after the ask. Once every task of the request is
  handed out, its remaining reservations are cancelled (dropped without cost when they reach a head; the
  scheduler answers as the request is sent, so no request is ever answered with nothing).

Queues' running-task caps hold a worker's queue head as room does: a worker whose head task (or, with late
binding, the request's next task) belongs to a queue running its cap -- tasks handed out for asks count --
waits until one of that queue's tasks ends (a queue with jobs capped below one task is refused before the run).

With more probes than workers, probes cycle through random permutations of the workers. The counters in
``Result.extra``: ``probes`` (probe or reservation messages), ``requests`` (late binding asks),
``cancelled`` (reservations dropped), ``idle_slot_time`` (room held idle by asks: ``rtt`` per task), and
the yardstick: ``response_ratio_mean`` and ``response_ratio_p99`` (every finished job's response time over
its proven lower bound, :func:`response_lower_bound`) with ``response_bound_mean``.

The ideal centralised scheduler (every task starts as soon as room frees anywhere, no message delay) is
``monolithic`` with its default zero decision times (:mod:`fairpack.solver.sim.policies.omega`).
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

import numpy as np

from fairpack.models.tolerance import settled
from fairpack.models.types import FloatArray, Instance, IntArray
from fairpack.solver.registry import OptionError
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.policies.options import duration, flag, integer
from fairpack.solver.sim.workload import Workload

SPARROW_POLICIES = ("random", "sparrow")
#: Default network round trip (seconds: 1 ms against the 100 ms tasks of the Sparrow paper's simulations).
DEFAULT_RTT = 0.001


class Agenda:
    """The policy's own timed actions: ``(time, payload)`` kept in order, a policy timer set for each."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Any]] = []
        self._sequence = 0

    def at(self, sim: Simulation, time: float, payload: Any) -> None:
        heapq.heappush(self._heap, (time, self._sequence, payload))
        self._sequence += 1
        sim.wake_at(time)

    def pop_due(self, sim: Simulation) -> list[Any]:
        """Every payload due now, in time order (ties in the order they were set)."""
        out = []
        while self._heap and settled(self._heap[0][0]) <= sim.t:  # the engine's rule for what is due now
            out.append(heapq.heappop(self._heap)[2])
        return out


class Submissions:
    """Groups as they become runnable, batched per job: what a framework submits to a scheduler."""

    def __init__(self, sim: Simulation) -> None:
        self.submitted = np.zeros(sim.jobs.num_stages, dtype=bool)
        self.waiting: set[int] = set()  # released jobs with groups not yet runnable

    def new(self, sim: Simulation) -> list[tuple[int, list[int]]]:
        """``(job, groups)`` for every job with groups runnable since the last call (the jobs arriving now,
        in release order, then the waiting ones); called once per event time, after its arrivals."""
        jobs = sim.jobs
        touched = [*sim.arrived, *sorted(self.waiting)]
        self.waiting.clear()
        out = []
        for k in touched:
            groups = jobs.job_stages[k]
            ready = groups[(sim.missing[groups] == 0) & ~self.submitted[groups]]
            self.submitted[ready] = True
            if ready.size:
                out.append((k, ready.tolist()))
            if not self.submitted[groups].all():
                self.waiting.add(k)
        return out


def response_lower_bound(jobs: Workload) -> FloatArray:
    """Per job, a lower bound on its response time (completion minus arrival) in any schedule.

    A job ends no sooner than its longest chain of tasks after its arrival (its critical path), nor than
    its work on any resource divided by the cluster's capacity of it (every task has to run somewhere,
    and the cluster holds at most that much at once). Message delays and queueing come on top.
    """
    return np.maximum(jobs.critical_path(), jobs.work().max(axis=1))


def response_ratios(sim: Simulation) -> dict[str, float | None]:
    """The yardstick of a finished run: mean and p99 over finished jobs of response time over
    :func:`response_lower_bound`, and the bound's mean (None when no job finished)."""
    bound = response_lower_bound(sim.jobs)
    done = sim.finished & (bound > 0)
    if not done.any():
        return {"response_bound_mean": None, "response_ratio_mean": None, "response_ratio_p99": None}
    ratio = (sim.completion[done] - sim.jobs.release[done]) / bound[done]
    return {"response_bound_mean": float(bound[done].mean()), "response_ratio_mean": float(ratio.mean()),
            "response_ratio_p99": float(np.percentile(ratio, 99))}  # fmt: skip


def distinct_machines(rng: np.random.Generator, machines: int, count: int) -> IntArray:
    """``count`` random machines, all distinct while ``count <= machines`` (then whole permutations)."""
    if count <= machines // 8:
        # Few probes among many machines: draw with replacement and redraw the repeats (cheap, exact).
        picked: list[int] = []
        seen: set[int] = set()
        while len(picked) < count:
            for m in rng.integers(0, machines, size=2 * (count - len(picked))).tolist():
                if m not in seen and len(picked) < count:
                    seen.add(m)
                    picked.append(m)
        return np.array(picked, dtype=np.int64)
    rounds = -(-count // machines)
    return np.concatenate([rng.permutation(machines) for _ in range(rounds)])[:count]


class Sparrow(BasePolicy):
    """``random`` and the three ``sparrow`` variants (module docstring)."""

    def __init__(self, name: str = "sparrow", probes: int = 2, batch: bool = True, late_binding: bool = True,
                 rtt: float = DEFAULT_RTT, seed: int = 0) -> None:  # fmt: skip
        if name not in SPARROW_POLICIES:
            raise ValueError(f"unknown sampling policy {name!r}; choose from {', '.join(SPARROW_POLICIES)}")
        if probes < 1:
            raise ValueError(f"probes must be at least 1, got {probes}")
        if not rtt >= 0:
            raise ValueError(f"rtt must be a non-negative time, got {rtt}")
        if late_binding and not batch:
            raise ValueError("late binding places reservations by batch sampling: give batch=true")
        self.name = name
        self.probes, self.batch, self.late_binding, self.rtt = probes, batch, late_binding, float(rtt)
        self.seed = seed

    def start(self, sim: Simulation) -> None:
        machines = sim.cluster.machines
        self.rng = np.random.default_rng(self.seed)
        self.submissions = Submissions(sim)
        self.agenda = Agenda()
        # A queue entry is a group (one of its tasks) or, with late binding, a request number.
        self.queues: list[deque[int]] = [deque() for _ in range(machines)]
        self.held = np.zeros_like(sim.cluster.free)  # room held idle by late-binding asks, per machine
        self.dirty: list[int] = []  # machines whose head may start now
        self.is_dirty = np.zeros(machines, dtype=bool)
        self.requests: list[list[int]] = []  # late binding: the groups of every request
        self.promised = np.zeros(sim.jobs.num_stages, dtype=np.int64)  # handed out, not yet launched
        self.launches: list[tuple[int, int]] = []  # (group, machine) answers due now
        self.promised_queue = np.zeros(sim.jobs.num_tenants)  # per queue, tasks handed out, not yet launched
        self.cap_waiting: dict[int, set[int]] = {}  # per queue at its cap, the machines whose head waits for it
        self.choice = -1
        self.counts = {"probes": 0, "requests": 0, "cancelled": 0}
        self.idle_slot_time = 0.0
        self.sim = sim

    def counters(self) -> dict[str, Any]:
        return {**self.counts, "idle_slot_time": self.idle_slot_time, **response_ratios(self.sim)}

    # --- events -----------------------------------------------------------------------------------

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        self._touch(machine)
        for waiting in self.cap_waiting.pop(int(sim.group_tenant[group]), ()):
            self._touch(waiting)  # its queue ran its cap; a task of it ended
        k = int(sim.jobs.stage_job[group])
        if sim.jobs.children[group]:
            self.submissions.waiting.add(k)

    def on_event(self, sim: Simulation) -> None:
        for kind, machine, item in self.agenda.pop_due(sim):
            if kind == "answer":  # the task handed out for a late-binding ask reaches its worker
                self.held[machine] -= sim.jobs.demand[item]
                self.launches.append((item, machine))
            else:  # a task or a reservation reaches its worker's queue
                self.queues[machine].append(item)
                self._touch(machine)
        for _, groups in self.submissions.new(sim):
            self._submit(sim, groups)

    def _touch(self, machine: int) -> None:
        if not self.is_dirty[machine]:
            self.is_dirty[machine] = True
            self.dirty.append(machine)

    def _submit(self, sim: Simulation, groups: list[int]) -> None:
        """Send one request's tasks (or reservations) to workers, as the policy samples them."""
        tasks = np.repeat(np.array(groups, dtype=np.int64), sim.unlaunched[groups].astype(np.int64))
        m, machines, t = tasks.size, sim.cluster.machines, sim.t
        if self.name == "random":
            for g, machine in zip(tasks.tolist(), self.rng.integers(0, machines, size=m).tolist(), strict=True):
                self.agenda.at(sim, t + self.rtt / 2, ("queue", machine, g))
            return
        d = self.probes
        self.counts["probes"] += d * m
        if self.late_binding:
            self.requests.append(groups)
            r = len(self.requests) - 1
            for machine in distinct_machines(self.rng, machines, d * m).tolist():
                self.agenda.at(sim, t + self.rtt / 2, ("queue", machine, r))
            return
        load = self._load(sim)
        if self.batch:
            probed = distinct_machines(self.rng, machines, d * m)
            chosen = probed[np.argsort(load[probed], kind="stable")[:m]]  # probes in random order: random ties
        else:
            probed = np.stack([distinct_machines(self.rng, machines, d) for _ in range(m)])
            chosen = probed[np.arange(m), np.argmin(load[probed], axis=1)]
        for g, machine in zip(tasks.tolist(), chosen.tolist(), strict=True):
            self.agenda.at(sim, t + 1.5 * self.rtt, ("queue", machine, g))

    def _load(self, sim: Simulation) -> FloatArray:
        """What a probe reads: every worker's queued tasks plus the tasks it runs."""
        return np.array([len(q) for q in self.queues], dtype=np.float64) + sim.machine_tasks

    # --- decisions --------------------------------------------------------------------------------

    def _fits(self, sim: Simulation, machine: int, group: int) -> bool:
        demand = sim.jobs.demand[group]
        need = demand > 0
        return bool(np.all(demand[need] <= sim.cluster.room[machine, need] - self.held[machine, need]))

    def _cap_held(self, sim: Simulation, machine: int, group: int) -> bool:
        """Whether ``group``'s queue runs its cap (asks handed out count); the machine then waits for it."""
        if not sim.capped:
            return False
        tenant = int(sim.group_tenant[group])
        if sim.tenant_running[tenant] + self.promised_queue[tenant] < sim.jobs.tenant_cap[tenant]:
            return False
        self.cap_waiting.setdefault(tenant, set()).add(machine)
        return True

    def _next_of(self, sim: Simulation, request: int) -> int:
        """The request's next task not yet handed out (its group), or -1 when all are."""
        for g in self.requests[request]:
            if sim.unlaunched[g] - self.promised[g] > 0:
                return g
        return -1

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        if self.launches:
            g, self.choice = self.launches.pop(0)
            self.promised[g] -= 1
            self.promised_queue[sim.group_tenant[g]] -= 1
            return g, 1
        while self.dirty:
            machine = self.dirty[-1]
            queue = self.queues[machine]
            if not queue:
                self._clean()
                continue
            if not self.late_binding:
                g = queue[0]
                if not self._fits(sim, machine, g) or self._cap_held(sim, machine, g):
                    self._clean()
                    continue
                queue.popleft()
                self.choice = machine
                return g, 1
            g = self._next_of(sim, queue[0])
            if g < 0:  # every task of the request is handed out: the reservation was cancelled
                queue.popleft()
                self.counts["cancelled"] += 1
                continue
            if not self._fits(sim, machine, g) or self._cap_held(sim, machine, g):
                self._clean()
                continue
            queue.popleft()
            self.promised[g] += 1
            self.promised_queue[sim.group_tenant[g]] += 1
            self.held[machine] += sim.jobs.demand[g]
            self.counts["requests"] += 1
            self.idle_slot_time += self.rtt
            self.agenda.at(sim, sim.t + self.rtt, ("answer", machine, g))
        return None

    def _clean(self) -> None:
        self.is_dirty[self.dirty.pop()] = False

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        return [(self.choice, 1)]


def make_sparrow_policy(name: str, jobs: Workload, instance: Instance | None, extra: dict[str, Any]) -> Sparrow:
    """``random`` or ``sparrow`` with its ``--option`` settings (``probes``, ``batch``, ``late_binding``, ``rtt``;
    the registry's factory).

    Raises ``OptionError`` naming a setting of the wrong kind, or late binding without batch sampling.
    """
    rtt = duration(extra, "rtt", DEFAULT_RTT)
    assert rtt is not None
    seed = integer(extra, "seed", 0)
    if name == "random":
        return Sparrow("random", 1, False, False, rtt, seed)
    batch = flag(extra, "batch", True)
    late = flag(extra, "late_binding", batch)
    if late and not batch:
        raise OptionError("late binding places reservations by batch sampling: give batch=true", "late_binding")
    return Sparrow(name, integer(extra, "probes", 2, least=1), batch, late, rtt, seed)
