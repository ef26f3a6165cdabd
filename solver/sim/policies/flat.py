"""Flat tenants over time: online DRFH with First-Fit or Best-Fit placement, slots, per-server DRF, FIFO.

Every tenant (a queue: a job's ``tenant``, or one backlog per tenant) serves its work in arrival order: its
*head* is its earliest-arrived runnable group with tasks left. At every event the policy launches tasks
until nothing more fits; a tenant whose head fits no machine now is passed over until the next event
(free room only shrinks within one event).

* ``first-fit`` / ``best-fit`` (DRFH, Wang et al.): progressive filling on the weighted global dominant
  share of the tasks a tenant runs: the tenant with the lowest share launches one task next (ties by
  index, compared with a tolerance), on the first machine it fits (First-Fit) or on the machine of best
  fitness (Best-Fit: demand and free room as fractions of the cluster, each divided by its entry in the
  tenant's dominant resource, ``H = sum over r != r* of |d_r / d_r* - f_r / f_r*|``, ties to the lower
  machine). On a static workload (everything at time 0, nothing ends) both give exactly the allocations
  of the static heuristics in ``solver.drfh``.
* ``slots``: every machine cut into equal slots (the componentwise-largest machine divided by ``k``,
  over the resources the machine has); a task takes a slot if it fits in one; tenants by fewest running
  tasks per weight; the first free slot in machine order on a machine with every resource it needs.
* ``per-server-drf``: DRF inside every machine separately: each machine, in order, serves the tenant
  with the lowest weighted dominant share *of that machine* whose head fits there.
* ``fifo``: groups in arrival order (release, then job and stage order) whatever their tenant; a group
  that fits no machine now, or whose tenant runs its task cap, is passed over (as Kubernetes' scheduling
  queue does) and retried at the next event; tasks go to the first machine they fit.

Every policy here launches no task of a tenant running its task cap (``tasks``; the engine clamps every
pick to the cap's room).
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray
from fairpack.solver.sim.cluster import Cluster
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.workload import Workload

FLAT_POLICIES = ("first-fit", "best-fit", "slots", "per-server-drf", "fifo")
#: Keys closer than this (relative) are ties, broken by tenant index.
TIE = 1e-9


def _key(value: float) -> float:
    """A share rounded so that values within about ``TIE`` of each other compare equal (then by index)."""
    return round(value, 10) if value < 1e3 else value


class TenantQueues:
    """Every tenant's runnable groups in arrival order (its head is the first)."""

    def __init__(self, sim: Simulation, never: BoolArray | None = None) -> None:
        """``never`` marks groups the policy can never launch (a task larger than every slot): they are left
        out of the queues, so one of them cannot hold up its tenant's other work forever (the simulation
        reports their jobs unfinished)."""
        jobs = sim.jobs
        order = np.lexsort((np.arange(jobs.num_stages), jobs.release[jobs.stage_job]))
        if never is not None:
            order = order[~never[order]]
        tenant = jobs.job_tenant[jobs.stage_job]
        self.by_tenant: list[list[int]] = [order[tenant[order] == t].tolist() for t in range(jobs.num_tenants)]
        self.cursor = [0] * jobs.num_tenants

    def head(self, sim: Simulation, tenant: int) -> int:
        """The tenant's first runnable group with tasks left, or -1."""
        groups = self.by_tenant[tenant]
        unlaunched, missing, released, stage_job = sim.unlaunched, sim.missing, sim.released, sim.jobs.stage_job
        start, end = self.cursor[tenant], len(groups)
        while start < end and unlaunched[groups[start]] <= 0:
            start += 1  # launched out: never again
        self.cursor[tenant] = start
        for position in range(start, end):
            g = groups[position]
            if not released[stage_job[g]]:
                return -1  # later arrivals come later in the order
            if unlaunched[g] > 0 and missing[g] == 0:
                return g
        return -1


class _TenantPolicy(BasePolicy):
    """Tenants served by the smallest key; subclasses define the key and the placement.

    Incremental: a tenant whose head fits nowhere is *blocked*, with its head's demand remembered; it is
    looked at again only when it may fit -- one of its own tasks ends (its key drops and room frees), a job
    of its arrives, or some machine's room grows enough for that demand (checked for all blocked tenants at
    once). The heap keeps one live entry per unblocked tenant (stale entries carry an old version).
    """

    mask: BoolArray = np.zeros(0, dtype=bool)

    def start(self, sim: Simulation) -> None:
        jobs = sim.jobs
        self.queues = TenantQueues(sim)
        self.inverse = np.divide(1.0, jobs.capacity, out=np.zeros_like(jobs.capacity), where=jobs.capacity > 0)
        self.blocked = np.ones(jobs.num_tenants, dtype=bool)
        self.waiting = np.full((jobs.num_tenants, jobs.capacity.size), np.inf)  # a blocked tenant's head demand
        # The rows of ``waiting`` that are -inf (to rank again) and finite (blocked on a demand), kept beside
        # it so an event looks at those tenants only, not at every tenant (the per-event cost on a long trace).
        self.woken: set[int] = set()
        self.stuck: set[int] = set()
        self.version = [0] * jobs.num_tenants
        self.heap: list[tuple[float, int, int]] = []
        self.changed: set[int] = set()
        self.last = -1

    def keys(self, sim: Simulation) -> FloatArray:
        """Every tenant's key (vectorised); subclasses define it."""
        raise NotImplementedError

    def admitted(self, sim: Simulation, group: int) -> bool:
        """Whether one task of ``group`` can be placed now (the machines it fits are kept for ``place``)."""
        self.mask = sim.cluster.fits(sim.jobs.demand[group])
        return bool(self.mask.any())

    def _push(self, tenant: int, key: float) -> None:
        self.version[tenant] += 1
        self.blocked[tenant] = False
        heapq.heappush(self.heap, (_key(key), tenant, self.version[tenant]))

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        self.changed.add(machine)
        self._wake(int(sim.jobs.job_tenant[sim.jobs.stage_job[group]]))  # its key dropped: rank it again

    def _wake(self, tenant: int) -> None:
        self.waiting[tenant] = -np.inf
        self.woken.add(tenant)
        self.stuck.discard(tenant)

    def on_event(self, sim: Simulation) -> None:
        jobs = sim.jobs
        for k in sim.arrived:
            self._wake(int(jobs.job_tenant[k]))
        if self.changed and self.stuck:
            changed = sorted(self.changed)
            grown = sim.cluster.room[changed[0]] if len(changed) == 1 else sim.cluster.room[changed].max(axis=0)
            stuck = sorted(self.stuck)
            for tenant in np.asarray(stuck)[np.all(self.waiting[stuck] <= grown[None, :], axis=1)].tolist():
                self._wake(tenant)
        self.changed.clear()
        running, cap = sim.tenant_running, jobs.tenant_cap
        wake = sorted(t for t in self.woken if running[t] < cap[t])
        if wake:
            # A few tenants: their keys one by one (the same floats as ``keys``, which computes them all).
            keys = self.keys(sim) if len(wake) > 8 else {t: self.key_after(sim, t, 0, 0) for t in wake}
            for tenant in wake:
                self.woken.discard(tenant)
                self.waiting[tenant] = np.inf
                self._push(tenant, float(keys[tenant]))
        self.last = -1

    #: Whether consecutive tasks of one tenant may be granted in one batch (only where placing them one by
    #: one would put them exactly where the batch does: first fit, first free slot).
    batch = False

    def key_after(self, sim: Simulation, tenant: int, group: int, tasks: int) -> float:
        """The tenant's key once ``tasks`` more tasks of ``group`` run (for batches)."""
        raise NotImplementedError

    def _run_length(self, sim: Simulation, tenant: int, group: int) -> int:
        """How many tasks in a row the tenant gets before another tenant's key comes first (ties by index)."""
        most = int(min(sim.unlaunched[group], sim.jobs.tenant_cap[tenant] - sim.tenant_running[tenant], 1 << 20))
        if not self.batch or most <= 1:
            return 1
        heap = self.heap
        while heap and (heap[0][2] != self.version[heap[0][1]] or self.blocked[heap[0][1]]):
            heapq.heappop(heap)  # stale entries off the top
        if not heap:
            return most
        top = (heap[0][0], heap[0][1])
        # The first count in [1, most) whose key no longer comes first (else most), by bisection: a key only
        # grows with the count (every step of ``key_after`` and ``_key`` is monotone), so this is the count
        # the one-by-one scan finds, with log(most) keys instead of most.
        low, high = 1, most
        while low < high:
            middle = (low + high) // 2
            if (_key(self.key_after(sim, tenant, group, middle)), tenant) < top:
                low = middle + 1
            else:
                high = middle
        return low

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        jobs = sim.jobs
        if self.last >= 0 and sim.tenant_running[self.last] < jobs.tenant_cap[self.last]:
            self._push(self.last, self.key_after(sim, self.last, 0, 0))
        self.last = -1
        while self.heap:
            _, tenant, version = heapq.heappop(self.heap)
            if version != self.version[tenant] or self.blocked[tenant]:
                continue
            g = self.queues.head(sim, tenant)
            if g >= 0 and self.admitted(sim, g):
                self.last = tenant
                self.blocked[tenant] = True  # until it is pushed back after its launch
                return g, self._run_length(sim, tenant, g)
            self.blocked[tenant] = True
            self.waiting[tenant] = jobs.demand[g] if g >= 0 else np.inf
            self.woken.discard(tenant)
            if g >= 0:
                self.stuck.add(tenant)
            else:
                self.stuck.discard(tenant)
        return None


class DrfhOnline(_TenantPolicy):
    """``first-fit`` or ``best-fit``: the lowest weighted global dominant share first."""

    def __init__(self, name: str) -> None:
        self.name = name
        # Best-Fit batches too: ``best_fitness_run`` places a run's tasks one by one exactly as separate
        # launches would (only the chosen machine's fitness changes between them).
        self.batch = True

    def start(self, sim: Simulation) -> None:
        super().start(sim)
        # Plain floats for ``key_after``, asked several times per launch (numpy's per-call cost dominates there).
        self.demand_rows: list[list[float]] = sim.jobs.demand.tolist()
        self.inverse_row: list[float] = self.inverse.tolist()
        self.weights: list[float] = sim.jobs.tenant_weight.tolist()

    def keys(self, sim: Simulation) -> FloatArray:
        return np.asarray((sim.tenant_usage * self.inverse).max(axis=1) / sim.jobs.tenant_weight)

    def key_after(self, sim: Simulation, tenant: int, group: int, tasks: int) -> float:
        # The same operations as ``keys`` (so the same floats), one resource at a time.
        usage = sim.tenant_usage[tenant].tolist()
        share = max((used + tasks * need) * inverse
                    for used, need, inverse in zip(usage, self.demand_rows[group], self.inverse_row, strict=True))
        return share / self.weights[tenant]

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        demand = sim.jobs.demand[group]
        if self.name == "first-fit":
            return sim.cluster.first_fit(demand, most, self.mask)
        return best_fitness_run(sim.cluster, self.mask, demand, self.inverse, most)


def best_fitness_machine(free: FloatArray, fitting: BoolArray, demand: FloatArray, inverse_total: FloatArray) -> int:
    """The DRFH paper's Best-Fit choice among the ``fitting`` machines (module docstring), ties to the lower."""
    relative = demand * inverse_total
    star = int(np.argmax(relative))
    top = float(relative[star])
    candidates = np.flatnonzero(fitting)
    others = [r for r in np.flatnonzero(inverse_total > 0).tolist() if r != star]
    if top <= 0 or not others:
        return int(candidates[0])
    room = free[candidates]
    base = room[:, star] * inverse_total[star]
    fitness = np.zeros(candidates.size)
    for r in others:  # one column at a time: few resources, many machines
        ratio = np.divide(room[:, r] * inverse_total[r], base, out=np.zeros(candidates.size), where=base > 0)
        fitness += np.abs(relative[r] / top - ratio)
    best = fitness.min()
    return int(candidates[np.flatnonzero(fitness <= best + TIE * (1.0 + abs(best)))[0]])


def best_fitness_run(cluster: Cluster, fitting: BoolArray, demand: FloatArray, inverse_total: FloatArray,
                     most: int) -> list[tuple[int, int]]:  # fmt: skip
    """Up to ``most`` tasks of ``demand``, each on the machine :func:`best_fitness_machine` would choose after
    the tasks before it: one ``(machine, 1)`` chunk per task, in order (a machine may come back).

    Taking a task changes the free room, the fit and the fitness of its machine only, so the fitness of
    every machine is computed once (the same arithmetic as :func:`best_fitness_machine`, so the same
    floats) and then only the chosen machine's is recomputed, on its room less the tasks put there so far
    (subtracted one at a time, as the cluster will).
    """
    relative = demand * inverse_total
    star = int(np.argmax(relative))
    top = float(relative[star])
    others = [r for r in np.flatnonzero(inverse_total > 0).tolist() if r != star]
    plain = top <= 0 or not others  # no fitness to compare: the first machine that fits
    fitness = np.full(fitting.size, np.inf)
    candidates = np.flatnonzero(fitting)
    if plain:
        fitness[candidates] = 0.0
    else:
        room = cluster.free[candidates]
        base = room[:, star] * inverse_total[star]
        score = np.zeros(candidates.size)
        for r in others:  # one column at a time: few resources, many machines
            ratio = np.divide(room[:, r] * inverse_total[r], base, out=np.zeros(candidates.size), where=base > 0)
            score += np.abs(relative[r] / top - ratio)
        fitness[candidates] = score
    # Per task, plain floats: numpy's per-call cost on a row of a few resources is most of the time.
    need, wanted = np.flatnonzero(demand > 0).tolist(), demand.tolist()
    inverse, targets = inverse_total.tolist(), [float(relative[r]) / top for r in others] if not plain else []
    taken: dict[int, list[float]] = {}  # free room of the machines used so far, after their tasks
    chunks: list[tuple[int, int]] = []
    while len(chunks) < most:
        best = float(fitness.min())
        if best == np.inf:
            break
        machine = int(np.argmax(fitness <= best + TIE * (1.0 + abs(best))))  # the first within the tie
        chunks.append((machine, 1))
        row = taken.get(machine)
        if row is None:
            row = cluster.free[machine].tolist()
        row = [room - amount for room, amount in zip(row, wanted, strict=True)]
        taken[machine] = row
        slack = cluster.slack[machine]
        if not all(row[r] + float(slack[r]) >= wanted[r] for r in need):
            fitness[machine] = np.inf
        elif not plain:
            base = row[star] * inverse[star]
            value = 0.0
            for r, target in zip(others, targets, strict=True):
                value += abs(target - (row[r] * inverse[r] / base if base > 0 else 0.0))
            fitness[machine] = value
    return chunks


class SlotPolicy(_TenantPolicy):
    """``slots``: equal slots per machine, tenants by running tasks per weight (module docstring)."""

    name = "slots"

    def __init__(self, slots: int = 10) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.slots = slots

    def start(self, sim: Simulation) -> None:
        super().start(sim)
        jobs, capacity = sim.jobs, sim.cluster.capacity
        slot = sim.instance.capacity.max(axis=0) / self.slots
        has = capacity > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(has, capacity / np.where(slot > 0, slot, 1.0), np.inf)
        self.per_machine = np.where(has.any(axis=1), np.floor(ratio.min(axis=1) * (1 + 1e-12)), 0).astype(np.int64)
        self.slot = slot
        # Which machines a group may use depends only on which resources it needs: one mask per pattern.
        patterns, self.pattern = np.unique(jobs.demand > 0, axis=0, return_inverse=True)
        self.pattern = self.pattern.ravel()
        self.usable = np.all(has[None, :, :] | ~patterns[:, None, :], axis=2)  # (patterns, machines)
        self.fits_slot = np.all(jobs.demand <= slot[None, :] * (1 + 1e-10), axis=1)
        self.free_slots = int(self.per_machine.sum())  # slots not taken, over all machines
        # A task larger than a slot, or needing a resource no machine with slots has, never launches.
        never = ~self.fits_slot | ~np.any(self.usable[self.pattern] & (self.per_machine > 0)[None, :], axis=1)
        self.queues = TenantQueues(sim, never)

    def keys(self, sim: Simulation) -> FloatArray:
        return np.asarray(sim.tenant_running / sim.jobs.tenant_weight)

    def key_after(self, sim: Simulation, tenant: int, group: int, tasks: int) -> float:
        return float(sim.tenant_running[tenant] + tasks) / float(sim.jobs.tenant_weight[tenant])

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        super().on_finish(sim, group, tasks, machine)
        self.free_slots += tasks

    def _machines(self, sim: Simulation, group: int) -> IntArray:
        if self.free_slots <= 0 or not self.fits_slot[group]:  # the common case under load: all slots taken
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self.usable[self.pattern[group]] & (sim.machine_tasks < self.per_machine))

    def admitted(self, sim: Simulation, group: int) -> bool:
        return bool(self._machines(sim, group).size)

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        machine = int(self._machines(sim, group)[0])
        self.free_slots -= 1
        return [(machine, 1)]


class PerServerDrf(BasePolicy):
    """``per-server-drf``: DRF within every machine, machines in order (module docstring)."""

    name = "per-server-drf"

    def start(self, sim: Simulation) -> None:
        self.queues = TenantQueues(sim)
        machines, tenants = sim.cluster.machines, sim.jobs.num_tenants
        self.local = np.zeros((machines, tenants))  # dominant share of every tenant on every machine
        capacity = sim.cluster.capacity
        self.inverse = np.divide(1.0, capacity, out=np.zeros_like(capacity), where=capacity > 0)
        self.choice: tuple[int, int] = (-1, -1)

    def _share(self, sim: Simulation, group: int, machine: int) -> float:
        return float((sim.jobs.demand[group] * self.inverse[machine]).max())

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        tenant = int(sim.jobs.job_tenant[sim.jobs.stage_job[group]])
        self.local[machine, tenant] -= tasks * self._share(sim, group, machine)

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        jobs = sim.jobs
        below = sim.tenant_running < jobs.tenant_cap
        heads = [(t, self.queues.head(sim, t)) for t in np.flatnonzero(below).tolist()]
        heads = [(t, g) for t, g in heads if g >= 0]
        if not heads:
            return None
        fits = np.stack([sim.cluster.fits(jobs.demand[g]) for _, g in heads])  # (heads, machines)
        anywhere = fits.any(axis=0)
        if not anywhere.any():
            return None
        machine = int(np.argmax(anywhere))  # the first machine some head fits: machines are served in order
        keys = [(_key(self.local[machine, t] / jobs.tenant_weight[t]), t, g)
                for (t, g), fit in zip(heads, fits[:, machine].tolist(), strict=True) if fit]  # fmt: skip
        _, tenant, group = min(keys)
        self.choice = (group, machine)
        self.local[machine, tenant] += self._share(sim, group, machine)
        return group, 1

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        return [(self.choice[1], 1)]


class Fifo(BasePolicy):
    """``fifo``: arrival order, passing over what does not fit now (module docstring).

    Every event rescans the queue from its head, so a long queue of groups that do not fit would make each
    event cost the queue's length in fit tests. A group found not to fit is marked ``rejected``; since only
    the machines where tasks ended gained room, at the next event it can fit only there, so all rejected
    groups are re-tested at once against those machines and the rest are passed over without a test.
    """

    name = "fifo"
    mask: BoolArray | None = None

    def start(self, sim: Simulation) -> None:
        jobs = sim.jobs
        self.order = np.lexsort((np.arange(jobs.num_stages), jobs.release[jobs.stage_job])).tolist()
        self.done = 0  # every group before this position is launched out
        self.position = 0
        self.rejected = np.zeros(jobs.num_stages, dtype=bool)  # did not fit at its last test
        self.changed: set[int] = set()  # machines where tasks ended since the last event

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        self.changed.add(machine)

    def on_event(self, sim: Simulation) -> None:
        looked = np.asarray(self.order[self.done:self.position], dtype=np.int64)
        looked = looked[self.rejected[looked]]
        if looked.size and self.changed:
            machines = np.fromiter(self.changed, dtype=np.int64)
            self.rejected[looked[sim.cluster.fits_any(sim.jobs.demand[looked], machines)]] = False
        self.changed.clear()
        self.position = self.done

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        jobs, order = sim.jobs, self.order
        while self.done < len(order) and sim.unlaunched[order[self.done]] <= 0:
            self.done += 1
        self.position = max(self.position, self.done)
        while self.position < len(order):
            g = order[self.position]
            if not sim.released[jobs.stage_job[g]]:
                return None
            # A group whose tenant runs its cap is passed over, not rejected: its room comes back with its
            # tenant's task ends, on any machine.
            if sim.unlaunched[g] > 0 and sim.missing[g] == 0 and not self.rejected[g] and not sim.at_cap(g):
                self.mask = sim.cluster.fits(jobs.demand[g])
                if self.mask.any():
                    return g, int(min(sim.unlaunched[g], 1 << 30))
                self.rejected[g] = True
            self.position += 1
        return None

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        return sim.cluster.first_fit(sim.jobs.demand[group], most, self.mask)


def make_flat_policy(name: str, jobs: Workload, instance: Instance | None, settings: dict[str, Any]) -> BasePolicy:
    """The registry's factory of the flat policies (jobs or backlogs alike); ``slots`` (default 10) is ``--slots``."""
    slots = settings.get("slots", 10)
    if name in ("first-fit", "best-fit"):
        return DrfhOnline(name)
    if name == "slots":
        return SlotPolicy(slots)
    if name == "per-server-drf":
        return PerServerDrf()
    if name == "fifo":
        return Fifo()
    raise ValueError(f"unknown flat policy {name!r}; choose from {', '.join(FLAT_POLICIES)}")
