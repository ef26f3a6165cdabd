"""Omega (Schwarzkopf et al., EuroSys'13): schedulers on shared cell state with optimistic commits, and the
monolithic scheduler they are measured against, on the one simulator.

Every scheduler has a FIFO queue of jobs and makes one decision at a time. A job goes to scheduler 0 when
its tenant is ``service`` (``SERVICE``) and to the batch scheduler (1 .. k-1) with the fewest jobs queued
or in hand otherwise (ties to the lower number); with one scheduler every job goes to it. A decision
(a *transaction*):

1. the idle scheduler takes the first job of its queue one task of which fits some machine now (passing
   over jobs that fit nowhere, retried when a task ends) and a *snapshot* of the cell's free room;
2. it places every runnable unlaunched task of the job that fits the snapshot: each task on a uniformly
   random free task-sized place of the snapshot (so a machine with room for three more tasks is three
   times as likely as a machine with room for one), the tasks placed so far taken out of the snapshot;
3. the decision takes ``t_job + t_task * tasks`` (``t_job_service`` and ``t_task_service`` for service jobs,
   default the same) -- a policy timer -- and then commits: a claim on a machine that can no longer hold
   it (fine-grained ``detection``; ``coarse``: a machine that changed at all since the snapshot, a task
   started or ended there) is a *conflict* and its tasks are not launched; the rest start (incremental
   transactions). Tasks not launched stay with the job, which the scheduler retries at once (it is still
   first in its queue).

Queues' running-task caps are part of the shared state: a scheduler passes over a job whose queue runs its
cap (counting tasks committed but not yet started), places no more of its tasks than the cap's room in its
snapshot, and a commit that would take the queue past its cap (another scheduler committed first) is a conflict
for the tasks beyond it.

``monolithic`` is the same with one scheduler: every decision serialised, whatever the job. With zero
decision times it is the ideal centralised list scheduler: jobs in arrival order, every task started as
soon as room frees anywhere (the reference of the Sparrow benchmark; for Omega, the zero-cost packing of
the same arrivals, and where waiting is unavoidable the clairvoyant packing ``spacetime-cp`` is the
yardstick: ``benchmarks/sparrow_omega.py``).

Counters in ``Result.extra``: ``transactions``, ``conflicts`` (transactions with a conflict),
``conflict_fraction`` (their ratio), ``attempted_tasks``, ``conflicted_tasks``, ``busy_time`` per scheduler
(time spent deciding), ``wasted_time`` (the decision time of conflicted claims: a transaction's time times
the fraction of its tasks that conflicted), ``first_attempt_wait`` (mean time from a job's arrival to its
first decision), ``wait_mean`` (mean time from a job's arrival to its last task's start, over jobs fully
started) and its floor ``decision_floor_mean`` (the mean of those jobs' own decision times
``t_job + t_task * tasks``: every task starts only when a decision that placed it commits, and one
scheduler decides a job's tasks one transaction after another, so no job waits less).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fairpack.models.tolerance import FIT_EPS
from fairpack.models.types import FloatArray, Instance, IntArray
from fairpack.solver.registry import OptionError
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.policies.options import choice, duration, integer
from fairpack.solver.sim.policies.sparrow import Agenda, Submissions
from fairpack.solver.sim.workload import Workload

OMEGA_POLICIES = ("omega", "monolithic")
SERVICE = "service"
DETECTION = ("fine", "coarse")
#: The Omega paper's batch decision times (seconds): per job and per task.
DEFAULT_T_JOB, DEFAULT_T_TASK = 0.1, 0.005


@dataclass
class Transaction:
    """One decision in flight: the job, its claims ``(group, machine, tasks)``, and what it cost."""

    job: int
    claims: list[tuple[int, int, int]]
    versions: IntArray
    duration: float
    tasks: int


def fit_counts(room: FloatArray, demand: FloatArray) -> IntArray:
    """Per machine (rows of ``room``), how many tasks of ``demand`` fit (a zero demand: a large number)."""
    need = demand > 0
    if not need.any():
        return np.full(room.shape[0], 1 << 30, dtype=np.int64)
    ratio = np.min(room[:, need] / demand[need], axis=1)
    return np.maximum(np.floor(ratio + FIT_EPS), 0).astype(np.int64)


class Omega(BasePolicy):
    """``omega`` (``schedulers`` = k) and ``monolithic`` (k = 1), module docstring."""

    def __init__(self, name: str = "omega", schedulers: int = 2, t_job: float = DEFAULT_T_JOB,
                 t_task: float = DEFAULT_T_TASK, t_job_service: float | None = None,
                 t_task_service: float | None = None, detection: str = "fine", seed: int = 0) -> None:  # fmt: skip
        if name not in OMEGA_POLICIES:
            raise ValueError(f"unknown shared-state policy {name!r}; choose from {', '.join(OMEGA_POLICIES)}")
        if schedulers < 1 or (name == "monolithic" and schedulers != 1):
            raise ValueError(f"{name} needs schedulers >= 1 (monolithic: exactly 1), got {schedulers}")
        times = (t_job, t_task, t_job if t_job_service is None else t_job_service,
                 t_task if t_task_service is None else t_task_service)  # fmt: skip
        if not all(x >= 0 for x in times):
            raise ValueError(f"decision times must be non-negative, got {times}")
        if detection not in DETECTION:
            raise ValueError(f"detection must be one of {', '.join(DETECTION)}, got {detection!r}")
        self.name = name
        self.k = schedulers
        self.t_job = np.array([times[0], times[2]])  # indexed by is-service
        self.t_task = np.array([times[1], times[3]])
        self.detection = detection
        self.seed = seed

    def start(self, sim: Simulation) -> None:
        jobs = sim.jobs
        service = jobs.tenants.index(SERVICE) if SERVICE in jobs.tenants else -1
        self.service = (jobs.job_tenant == service).astype(np.int64)
        self.rng = np.random.default_rng(self.seed)
        self.submissions = Submissions(sim)
        self.agenda = Agenda()
        self.queues: list[list[int]] = [[] for _ in range(self.k)]
        self.queued = np.zeros(jobs.num_jobs, dtype=bool)
        self.flight: list[Transaction | None] = [None] * self.k
        self.stale = [False] * self.k  # something changed since the scheduler last found nothing to place
        self.version = np.zeros(sim.cluster.machines, dtype=np.int64)
        self.pending: list[tuple[int, list[tuple[int, int]]]] = []  # committed (group, chunks) to launch now
        # Room taken by commits whose tasks the engine has not launched yet: several schedulers may commit at
        # one event time, and each must see the claims committed before it.
        self.committed = np.zeros_like(sim.cluster.free)
        self.committed_tasks = np.zeros(jobs.num_tenants)  # per queue, tasks committed and not yet launched
        self.chunks: list[tuple[int, int]] = []
        self.busy = np.zeros(self.k)
        self.first_attempt = np.full(jobs.num_jobs, np.nan)
        self.last_start = np.full(jobs.num_jobs, np.nan)
        tasks = np.zeros(jobs.num_jobs)
        np.add.at(tasks, jobs.stage_job, jobs.count)
        self.floor = self.t_job[self.service] + self.t_task[self.service] * tasks
        self.release = jobs.release
        self.counts = {"transactions": 0, "conflicts": 0, "attempted_tasks": 0, "conflicted_tasks": 0}
        self.wasted = 0.0

    def counters(self) -> dict[str, Any]:
        tried = ~np.isnan(self.first_attempt)
        waits = self.first_attempt[tried] - self.release[tried] if tried.any() else np.zeros(1)
        fraction = self.counts["conflicts"] / max(1, self.counts["transactions"])
        started = ~np.isnan(self.last_start)
        wait, floor = (float(np.mean(x[started])) if started.any() else None
                       for x in (self.last_start - self.release, self.floor))  # fmt: skip
        return {**self.counts, "conflict_fraction": fraction, "busy_time": self.busy.tolist(),
                "wasted_time": self.wasted, "first_attempt_wait": float(np.mean(waits)),
                "wait_mean": wait, "decision_floor_mean": floor, "schedulers": self.k}  # fmt: skip

    # --- events -----------------------------------------------------------------------------------

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        self.version[machine] += 1
        self.stale = [True] * self.k
        if sim.jobs.children[group]:
            self.submissions.waiting.add(int(sim.jobs.stage_job[group]))

    def on_event(self, sim: Simulation) -> None:
        for k, _ in self.submissions.new(sim):
            if not self.queued[k]:
                s = self._scheduler_for(k)
                self.queues[s].append(k)
                self.queued[k] = True
                self.stale[s] = True
        for s in self.agenda.pop_due(sim):
            self._commit(sim, s)

    def _scheduler_for(self, job: int) -> int:
        if self.k == 1 or self.service[job]:
            return 0
        held = [len(self.queues[s]) + (self.flight[s] is not None) for s in range(1, self.k)]
        return 1 + int(np.argmin(held))

    # --- decisions --------------------------------------------------------------------------------

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        while not self.pending:
            idle = [s for s in range(self.k) if self.flight[s] is None and self.stale[s] and self.queues[s]]
            if not idle:
                return None
            for s in idle:
                self._begin(sim, s)
                if self.pending:
                    break
        g, self.chunks = self.pending.pop(0)
        return g, sum(n for _, n in self.chunks)

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        for machine, n in self.chunks:
            self.committed[machine] -= n * sim.jobs.demand[group]
        job = int(sim.jobs.stage_job[group])
        self.committed_tasks[sim.jobs.job_tenant[job]] -= sum(n for _, n in self.chunks)
        groups = sim.jobs.job_stages[job]
        if sim.unlaunched[groups].sum() == sum(n for _, n in self.chunks):  # these are the job's last tasks
            self.last_start[job] = sim.t
        return self.chunks

    def _cap_room(self, sim: Simulation, job: int) -> float:
        """Tasks the job's queue may still start under its cap, counting commits not yet launched."""
        if not sim.capped:
            return np.inf
        tenant = int(sim.jobs.job_tenant[job])
        return float(sim.jobs.tenant_cap[tenant] - sim.tenant_running[tenant] - self.committed_tasks[tenant])

    def _groups(self, sim: Simulation, job: int) -> IntArray:
        groups = sim.jobs.job_stages[job]
        return groups[(sim.unlaunched[groups] > 0) & (sim.missing[groups] == 0)]

    def _begin(self, sim: Simulation, s: int) -> None:
        """Scheduler ``s`` takes its first job that fits somewhere and places it on a snapshot."""
        queue, job, groups = self.queues[s], -1, np.zeros(0, dtype=np.int64)
        position = 0
        while position < len(queue):
            k = queue[position]
            groups = self._groups(sim, k)
            if groups.size == 0:  # launched out (or its next stages wait for parents): leaves the queue
                queue.pop(position)
                self.queued[k] = False
                continue
            if self._cap_room(sim, k) > 0 and sim.fits(groups).any():  # else retried when a task ends
                job = k
                break
            position += 1
        self.stale[s] = False
        if job < 0:
            return
        claims = self._claims(sim, groups, np.array(sim.cluster.room), self._cap_room(sim, job))  # on a snapshot
        tasks = sum(n for _, _, n in claims)
        kind = int(self.service[job])
        duration = float(self.t_job[kind] + self.t_task[kind] * tasks)
        if np.isnan(self.first_attempt[job]):
            self.first_attempt[job] = sim.t
        self.busy[s] += duration
        self.flight[s] = Transaction(job, claims, self.version.copy(), duration, tasks)
        if duration > 0:
            self.agenda.at(sim, sim.t + duration, s)
        else:
            self._commit(sim, s)

    def _claims(self, sim: Simulation, groups: IntArray, room: FloatArray,
                limit: float = np.inf) -> list[tuple[int, int, int]]:  # fmt: skip
        """Every task of ``groups`` that fits ``room`` on a random free place (module docstring), at most
        ``limit`` of them (the queue's cap room), as ``(group, machine, tasks)``; groups of equal demand are
        placed together, their tasks in group order."""
        demand = sim.jobs.demand[groups]
        if np.all(demand == demand[0]):  # the usual case: one shape, no sort
            shapes, which = demand[:1], np.zeros(groups.size, dtype=np.int64)
        else:
            shapes, which = np.unique(demand, axis=0, return_inverse=True)
        claims: list[tuple[int, int, int]] = []
        machines_total = room.shape[0]
        for shape in range(shapes.shape[0]):
            mine = groups[which.ravel() == shape]
            tasks = np.repeat(mine, sim.unlaunched[mine].astype(np.int64))
            counts = np.minimum(fit_counts(room, shapes[shape]), tasks.size)  # no machine takes more than exist
            total = int(counts.sum())
            take = int(min(tasks.size, total, limit))
            if take == 0:
                continue
            places = self.rng.choice(total, size=take, replace=False)
            machines = np.searchsorted(np.cumsum(counts), places, side="right")
            keys, n = np.unique(tasks[:take] * machines_total + machines, return_counts=True)
            claims.extend(zip((keys // machines_total).tolist(), (keys % machines_total).tolist(), n.tolist(),
                              strict=True))  # fmt: skip
            room -= np.bincount(machines, minlength=machines_total)[:, None] * shapes[shape][None, :]
            limit -= take
        return claims

    def _commit(self, sim: Simulation, s: int) -> None:
        transaction = self.flight[s]
        assert transaction is not None
        self.flight[s] = None
        self.stale[s] = True
        room: dict[int, FloatArray] = {}
        launched: dict[int, list[tuple[int, int]]] = {}
        rejected = 0
        cap_room = self._cap_room(sim, transaction.job)  # what the queue's cap leaves now
        for g, machine, n in transaction.claims:
            demand = sim.jobs.demand[g]
            free = room.setdefault(machine, sim.cluster.room[machine] - self.committed[machine])
            changed = self.detection == "coarse" and self.version[machine] != transaction.versions[machine]
            if changed or fit_counts(free[None, :], demand)[0] < n:
                rejected += n
                continue
            if n > cap_room:  # another scheduler's commit took the queue's room first: a conflict beyond it
                rejected += n - int(max(cap_room, 0))
                n = int(max(cap_room, 0))
                if n == 0:
                    continue
            cap_room -= n
            free -= n * demand
            launched.setdefault(g, []).append((machine, n))
        for g, chunks in launched.items():
            for machine, n in chunks:
                self.committed[machine] += n * sim.jobs.demand[g]
                self.committed_tasks[sim.jobs.job_tenant[transaction.job]] += n
                self.version[machine] += 1  # the commit changes the shared state (what coarse detection sees)
        self.pending.extend(launched.items())
        self.counts["transactions"] += 1
        self.counts["attempted_tasks"] += transaction.tasks
        if rejected:
            self.counts["conflicts"] += 1
            self.counts["conflicted_tasks"] += rejected
            self.wasted += transaction.duration * rejected / transaction.tasks


def make_omega_policy(name: str, jobs: Workload, instance: Instance | None, extra: dict[str, Any]) -> Omega:
    """``omega`` or ``monolithic`` with its ``--option`` settings (module docstring; the registry's factory).

    Raises ``OptionError`` naming a setting of the wrong kind or out of range.
    """
    schedulers = integer(extra, "schedulers", 1 if name == "monolithic" else 2, least=1)
    if name == "monolithic" and schedulers != 1:
        raise OptionError("monolithic is one scheduler; use omega for more", "schedulers")
    t_job, t_task = duration(extra, "t_job", DEFAULT_T_JOB), duration(extra, "t_task", DEFAULT_T_TASK)
    assert t_job is not None and t_task is not None
    return Omega(name, schedulers, t_job, t_task, duration(extra, "t_job_service", None),
                 duration(extra, "t_task_service", None), choice(extra, "detection", "fine", DETECTION),
                 integer(extra, "seed", 0))  # fmt: skip
