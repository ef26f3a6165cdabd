"""The greedy heuristics real schedulers use for flat tenants on heterogeneous servers.

Every heuristic places whole tasks on individual machines (server classes expanded into machines, in
``Instance.machine_names`` order) and returns an integral ``Allocation`` of kind ``"machine"``. All of
them honour tenant weights and task caps (see ``solver.drfh.greedy`` for the shared
conventions: keys, whole caps, fit tolerance).

- ``first_fit`` / ``best_fit``: progressive filling on the weighted *global* dominant share (DRFH's
  First-Fit and Best-Fit).
- ``slots``: a slot scheduler with equal slots cut from the largest machine.
- ``per_server_drf``: DRF run independently inside every machine.
"""

from __future__ import annotations

import heapq

import numpy as np

from models.result import Allocation
from models.types import FloatArray, Instance, IntArray
from solver.drfh.greedy import TOL, FlatSetup, dense_counts, grant_order, prepare, progressive_fill, weighted_units

__all__ = ["best_fit", "first_fit", "per_server_drf", "slots"]


def first_fit(instance: Instance) -> Allocation:
    """First-Fit DRFH: progressive filling that puts each task on the first machine where it fits.

    Repeatedly take the tenant with the lowest weighted global dominant share (ties by index) that is
    neither blocked nor at its cap, and place one task on the first machine, in machine order, with
    room for it. A tenant whose task fits nowhere is blocked for good.

    Parameters
    ----------
    instance : Instance
        Server classes (expanded into machines) and flat tenants.

    Returns
    -------
    Allocation
        Integral task counts per tenant and machine, ``kind="machine"``.

    Notes
    -----
    Free capacity only shrinks, so the first machine that fits tenant ``i`` never moves backwards: each
    tenant keeps a cursor and scans forward from it in vectorised, geometrically growing blocks.
    """
    setup = prepare(instance)
    room = setup.machine_cap * (1 + TOL)  # free capacity plus the rounding tolerance, (machines, resources)
    cursor = np.zeros(setup.tenants, dtype=np.int64)
    machines = setup.machines

    def place(i: int) -> int:
        need = setup.need[i]
        start, block = int(cursor[i]), 32
        while start < machines:
            fits = (room[start : start + block] >= need).all(axis=1)
            first = int(fits.argmax())
            if fits[first]:
                machine = start + first
                cursor[i] = machine
                room[machine] -= setup.demand[i]
                return machine
            start, block = start + block, min(2 * block, 4096)
        cursor[i] = machines
        return -1

    return Allocation(progressive_fill(setup, place), kind="machine", integral=True)


class _BestFitMachines:
    """Free capacity of the machines Best-Fit can tell apart, laid out (resources, machines).

    Untouched machines of a class are identical, so they tie and the lowest-indexed one wins: only the
    touched machines plus the first untouched machine of every class need to be scored.
    """

    def __init__(self, setup: FlatSetup, dominant: IntArray) -> None:
        self.setup = setup
        self.dominant = dominant
        with np.errstate(divide="ignore", invalid="ignore"):
            self.normalised = setup.demand / setup.demand[np.arange(setup.tenants), dominant][:, None]
        resources = setup.demand.shape[1]
        self.others = [[r for r in range(resources) if r != dominant[i]] for i in range(setup.tenants)]
        self.room = np.empty((resources, setup.machines))
        self.ids = np.empty(setup.machines, dtype=np.int64)
        self.size = 0
        self.next_untouched = setup.class_start.copy()
        self.class_end = np.append(setup.class_start[1:], setup.machines)
        for first in setup.class_start.tolist():
            self._add(first)

    def _add(self, machine: int) -> None:
        self.room[:, self.size] = self.setup.machine_cap[machine] * (1 + TOL)
        self.ids[self.size] = machine
        self.size += 1

    def place(self, i: int) -> int:
        """Place one task of tenant ``i`` on its best machine; -1 when it fits nowhere.

        Runs under ``np.errstate(divide="ignore", invalid="ignore")``: machines with no free ``r*``
        divide by zero, but they never fit and are masked out.
        """
        room = self.room[:, : self.size]
        need, star = self.setup.need[i], self.dominant[i]
        fits = room[star] >= need[star]  # fitting implies free r* >= its demand > 0
        fitness = np.zeros(self.size)
        for r in self.others[i]:  # the r* term is |1 - 1| = 0
            if need[r] > 0:
                fits &= room[r] >= need[r]
            fitness += np.abs(room[r] / room[star] - self.normalised[i, r])
        fitness = np.where(fits, fitness, np.inf)
        slot = int(fitness.argmin())
        if fitness[slot] == np.inf:
            return -1
        ties = fitness == fitness[slot]
        if np.count_nonzero(ties) > 1:  # the active set is not in machine order across classes
            tied = np.flatnonzero(ties)
            slot = int(tied[np.argmin(self.ids[tied])])
        room[:, slot] -= self.setup.demand[i]
        machine = int(self.ids[slot])
        cls = int(self.setup.machine_class[machine])
        if machine == self.next_untouched[cls]:
            self.next_untouched[cls] += 1
            if self.next_untouched[cls] < self.class_end[cls]:
                self._add(int(self.next_untouched[cls]))
        return machine


def best_fit(instance: Instance) -> Allocation:
    """Best-Fit DRFH: progressive filling that puts each task on the best-matching machine.

    Same tenant order as ``first_fit``; the task goes to the machine ``l`` minimising the DRFH paper's
    fitness ``H(i, l) = || D_i / D_i[r*] - c_l / c_l[r*] ||_1``, where ``r*`` is the tenant's dominant
    resource (largest demand / cluster total, first on ties) and ``c_l`` the machine's free capacity.
    Only machines where the task fits (hence with free ``r*`` > 0) qualify; ties go to the first
    machine in machine order.

    Parameters
    ----------
    instance : Instance
        Server classes (expanded into machines) and flat tenants.

    Returns
    -------
    Allocation
        Integral task counts per tenant and machine, ``kind="machine"``.
    """
    setup = prepare(instance)
    total = instance.total_capacity
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(total > 0, setup.demand / total, 0.0)
    dominant = relative.argmax(axis=1) if setup.tenants else np.zeros(0, dtype=np.int64)
    machines = _BestFitMachines(setup, dominant)
    with np.errstate(divide="ignore", invalid="ignore"):
        tasks = progressive_fill(setup, machines.place)
    return Allocation(tasks, kind="machine", integral=True)


def slots(instance: Instance, slots_per_max_server: int = 10) -> Allocation:
    """Slot scheduler: equal slots, one task per slot, shared by weighted max-min on task counts.

    The slot is the componentwise-largest machine capacity (``max_l c_lr`` for every resource ``r``)
    divided by ``slots_per_max_server``, so a machine that is largest in every resource offers exactly
    that many slots; machine ``l`` offers ``floor(min_r c_lr / slot_r)`` slots over the resources with
    ``slot_r > 0``. A tenant is admitted only if its demand fits in one slot; admitted tenants receive
    slots by progressive filling on ``tasks / weight`` (ties by index) up to their caps, and slots are
    granted in machine order. A task in a slot consumes its real demand, never more than the slot.

    Parameters
    ----------
    instance : Instance
        Server classes (expanded into machines) and flat tenants.
    slots_per_max_server : int
        Number of slots ``k`` the (componentwise) largest machine is cut into; at least 1.

    Returns
    -------
    Allocation
        Integral task counts per tenant and machine, ``kind="machine"``.
    """
    if isinstance(slots_per_max_server, bool) or not isinstance(slots_per_max_server, int | np.integer):
        raise TypeError(f"slots_per_max_server must be an integer, got {slots_per_max_server!r}")
    if slots_per_max_server < 1:
        raise ValueError(f"slots_per_max_server must be at least 1, got {slots_per_max_server}")
    setup = prepare(instance)
    slot = instance.capacity.max(axis=0) / slots_per_max_server
    used = slot > 0
    if used.any():
        per_class = np.floor((instance.capacity[:, used] / slot[used]).min(axis=1) * (1 + 1e-12))
    else:
        per_class = np.zeros(len(instance.servers))
    per_machine = per_class.astype(np.int64)[setup.machine_class]
    admitted = np.flatnonzero(setup.eligible & np.all(setup.demand <= slot * (1 + TOL), axis=1))
    step = 1.0 / setup.weights[admitted]
    counts = weighted_units(step, setup.caps[admitted], int(per_machine.sum()))
    order = admitted[grant_order(step, counts)]
    slot_machine = np.repeat(np.arange(setup.machines), per_machine)[: order.size]
    tasks = dense_counts(setup.tenants, setup.machines, order, slot_machine)
    return Allocation(tasks, kind="machine", integral=True)


def _machine_drf(
    setup: FlatSetup, needs: list[list[tuple[int, float]]], capacity: FloatArray, remaining: FloatArray
) -> IntArray:
    """Weighted DRF of whole tasks on one machine: progressive filling on the machine-local dominant share.

    ``needs[i]`` lists the (resource, demand) pairs tenant ``i`` needs; ``remaining`` caps every
    tenant's tasks; a tenant whose next task does not fit is blocked on this machine.
    """
    room = (capacity * (1 + TOL)).tolist()
    present = capacity > 0
    fits = setup.eligible & (remaining >= 1) & np.all(setup.need <= capacity * (1 + TOL), axis=1)
    local = (setup.demand[:, present] / capacity[present]).max(axis=1) if present.any() else np.zeros(setup.tenants)
    step = (local / setup.weights).tolist()
    counts = [0] * setup.tenants
    heap = [(0.0, i) for i in np.flatnonzero(fits).tolist()]  # sorted, hence a valid heap
    caps = remaining.tolist()
    while heap:
        _, i = heapq.heappop(heap)
        need = needs[i]
        if any(room[r] < d for r, d in need):
            if len(heap) > 16:  # drop every tenant that no longer fits at once (free room only shrinks)
                still = np.all(setup.need <= np.array(room), axis=1)
                heap = [entry for entry in heap if still[entry[1]]]
                heapq.heapify(heap)
            continue
        for r, d in need:
            room[r] -= d
        counts[i] += 1
        if counts[i] + 1 <= caps[i]:
            heapq.heappush(heap, (counts[i] * step[i], i))
    return np.array(counts, dtype=np.int64)


def per_server_drf(instance: Instance) -> Allocation:
    """DRF inside every machine separately, ignoring the rest of the cluster.

    On each machine, progressive filling of whole tasks serves the tenant with the lowest weighted
    dominant share relative to *that machine's* capacity (ties by index); a tenant whose next task
    does not fit on the machine is blocked there.

    Parameters
    ----------
    instance : Instance
        Server classes (expanded into machines) and flat tenants.

    Returns
    -------
    Allocation
        Integral task counts per tenant and machine, ``kind="machine"``.

    Notes
    -----
    Task caps are cluster-wide, so machines are processed in machine order and each machine's DRF
    sees every tenant's cap minus the tasks it already got on earlier machines. Machines of a class
    that see the same remaining caps get the same outcome, so one machine's DRF is computed and
    replicated over as many machines as the caps allow before any of them binds.
    """
    setup = prepare(instance)
    tasks = np.zeros((setup.tenants, setup.machines))
    remaining = setup.caps.copy()
    needs = [[(r, d) for r, d in enumerate(row) if d > 0] for row in setup.demand.tolist()]
    for cls, server in enumerate(instance.servers):
        machine, left = int(setup.class_start[cls]), server.count
        while left > 0:
            outcome = _machine_drf(setup, needs, instance.capacity[cls], remaining)
            placed = outcome > 0
            if not placed.any():
                break
            repeat = int(min(left, np.floor(remaining[placed] / outcome[placed]).min()))  # >= 1 by the caps
            tasks[:, machine : machine + repeat] = outcome[:, None]
            remaining = remaining - repeat * outcome
            machine, left = machine + repeat, left - repeat
    return Allocation(tasks, kind="machine", integral=True)
