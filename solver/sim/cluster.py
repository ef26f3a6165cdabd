"""The machines of a simulation: every machine's free capacity, and the placement rules policies share.

With ``placement='pooled'`` the cluster is one machine holding the total capacity (the setting of DRF and of
the DAG heuristics' pooled model); with ``'servers'`` every machine of every server class is tracked. A task
fits a machine when its demand is at most the free room plus ``FIT_RTOL`` of the machine's capacity (the
round-off of repeated add/subtract; ``models.tolerance``), checked only on the resources it needs.

Placement rules return ``(machine, tasks)`` chunks and change nothing; the engine launches them:

* :meth:`Cluster.best_fit` -- the machine with the least room left after the task, summed over resources as
  fractions of the cluster (ties to the lower machine), filled before the next;
* :meth:`Cluster.first_fit` -- machines in order, each filled before the next.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fairpack.models.tolerance import FIT_EPS, FIT_RTOL
from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray

#: Launches on at most this many machines update them row by row (cheaper than numpy's fancy indexing).
SMALL = 4
#: A machine's update on at most this many resources runs element by element: plain float operations, the same
#: as numpy's on the row, at half the cost of its per-call overhead (every launch and task end does two).
FEW = 4


def fit_count(free: FloatArray, demand: FloatArray) -> float:
    """How many tasks of ``demand`` fit in ``free`` (``inf`` for a zero demand)."""
    # Plain floats: with a handful of resources, numpy's per-call overhead is most of the cost (hot path).
    least = math.inf
    for room, need in zip(free.tolist(), demand.tolist(), strict=True):
        if need > 0 and room / need < least:
            least = room / need
    if least == math.inf:
        return math.inf
    return float(max(0.0, math.floor(least + FIT_EPS)))


class Cluster:
    """Free capacity of every machine (``(machines, resources)``), and where tasks fit."""

    def __init__(self, instance: Instance, placement: str = "pooled") -> None:
        if placement not in ("pooled", "servers"):
            raise ValueError(f"placement must be pooled or servers, not {placement!r}")
        self.placement = placement
        total = np.asarray(instance.total_capacity, dtype=np.float64)
        self.total = total
        if placement == "servers":
            self.machine_class: IntArray | None = instance.machine_class()
            self.capacity = instance.capacity[self.machine_class].astype(np.float64)
        else:
            self.machine_class = None
            self.capacity = total[None, :].copy()
        self.free = self.capacity.copy()
        self.slack = FIT_RTOL * np.maximum(1.0, self.capacity)
        # free + slack, kept up to date machine by machine, column by column: a fit test is one comparison
        # per resource the task needs (the hot path of every placement).
        self.room = np.asfortranarray(self.free + self.slack)
        # Best fit scores leftovers as fractions of the cluster, so resources are comparable.
        self.inverse_total = np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)

    @property
    def machines(self) -> int:
        return int(self.capacity.shape[0])

    @property
    def pooled(self) -> bool:
        return self.machine_class is None

    def free_total(self) -> FloatArray:
        return np.asarray(self.free.sum(axis=0))

    def fits(self, demand: FloatArray) -> BoolArray:
        """Per machine: one task of ``demand`` (resources) fits its free room."""
        need = np.flatnonzero(demand > 0).tolist()
        if not need:
            return np.ones(self.room.shape[0], dtype=bool)
        mask = self.room[:, need[0]] >= demand[need[0]]
        for r in need[1:]:
            mask &= self.room[:, r] >= demand[r]
        return mask

    def fits_any(self, demands: FloatArray, machines: IntArray | None = None) -> BoolArray:
        """Per row of ``demands`` (tasks, resources): one task fits some machine (of ``machines``, if given)."""
        room = self.room if machines is None else self.room[machines]
        need = np.where(demands > 0, demands, -np.inf)  # a zero demand never blocks a fit
        if room.shape[0] == 1:
            return np.all(need <= room[0][None, :], axis=1)
        return np.any(np.all(need[:, None, :] <= room[None, :, :], axis=2), axis=1)

    def best_fit(self, demand: FloatArray, most: int, mask: BoolArray | None = None) -> list[tuple[int, int]]:
        """Up to ``most`` tasks by best fit (see the module docstring), on the machines of ``mask`` if given."""
        room = self.room
        if room.shape[0] == 1 and mask is None:
            n = int(min(most, fit_count(room[0], demand)))
            return [(0, n)] if n > 0 else []
        chunks: list[tuple[int, int]] = []
        left = most
        fitting = np.all(demand[None, :] <= room, axis=1)
        if mask is not None:
            fitting &= mask
        # Leftover after one task on every machine; placing more on the chosen machine only lowers its
        # score, so it stays the best fit until it is full.
        score = (self.free - demand[None, :]) @ self.inverse_total
        while left > 0 and np.any(fitting):
            machine = int(np.flatnonzero(fitting)[np.argmin(score[fitting])])
            n = int(min(left, fit_count(room[machine], demand)))
            chunks.append((machine, n))
            left -= n
            fitting[machine] = False
        return chunks

    def first_fit(self, demand: FloatArray, most: int, mask: BoolArray | None = None) -> list[tuple[int, int]]:
        """Up to ``most`` tasks on the lowest-numbered machines they fit, each filled before the next.

        ``mask`` is :meth:`fits` of ``demand`` when the caller has it already.
        """
        room = self.room
        chunks: list[tuple[int, int]] = []
        left = most
        fitting = np.flatnonzero(self.fits(demand) if mask is None else mask)
        for block in range(0, fitting.size, 16):  # a few machines usually take the tasks: no list of them all
            for machine in fitting[block:block + 16].tolist():
                n = int(min(left, fit_count(room[machine], demand)))
                if n > 0:
                    chunks.append((machine, n))
                    left -= n
                if left <= 0:
                    return chunks
        return chunks

    def take(self, machine: int, demand: FloatArray, n: int) -> None:
        if demand.size <= FEW:  # element by element: the same float operations as the row update below
            free, room, slack = self.free, self.room, self.slack
            for r, d in enumerate(demand.tolist()):
                value = free[machine, r] - n * d
                free[machine, r] = value
                room[machine, r] = value + slack[machine, r]
            return
        self.free[machine] -= n * demand
        self.room[machine] = self.free[machine] + self.slack[machine]

    def give(self, machine: int, demand: FloatArray, n: int) -> None:
        if demand.size <= FEW:  # element by element: the same float operations as the row update below
            free, room, slack = self.free, self.room, self.slack
            for r, d in enumerate(demand.tolist()):
                value = free[machine, r] + n * d
                free[machine, r] = value
                room[machine, r] = value + slack[machine, r]
            return
        self.free[machine] += n * demand
        self.room[machine] = self.free[machine] + self.slack[machine]

    def take_many(self, machines: Sequence[int], demand: FloatArray, counts: Sequence[int]) -> None:
        """``take`` on several machines at once (one by one if a machine repeats)."""
        if len(machines) <= SMALL or len(set(machines)) < len(machines):  # row by row: the same floats
            for machine, count in zip(machines, counts, strict=True):
                self.take(machine, demand, count)
            return
        rows = np.asarray(machines)
        self.free[rows] -= np.asarray(counts, dtype=np.float64)[:, None] * demand[None, :]
        self.room[rows] = self.free[rows] + self.slack[rows]

    def give_many(self, machines: Sequence[int], demand: FloatArray, counts: Sequence[int]) -> None:
        """``give`` on several machines at once (one by one if a machine repeats)."""
        if len(machines) <= SMALL or len(set(machines)) < len(machines):  # row by row: the same floats
            for machine, count in zip(machines, counts, strict=True):
                self.give(machine, demand, count)
            return
        rows = np.asarray(machines)
        self.free[rows] += np.asarray(counts, dtype=np.float64)[:, None] * demand[None, :]
        self.room[rows] = self.free[rows] + self.slack[rows]

    def reset(self, machine: int) -> None:
        """The machine runs nothing: its free room is its capacity exactly."""
        self.free[machine] = self.capacity[machine]
        self.room[machine] = self.free[machine] + self.slack[machine]

    def machine_names(self, instance: Instance) -> tuple[IntArray, IntArray] | tuple[None, None]:
        """Server class and number within the class of every machine (``(None, None)`` when pooled)."""
        if self.machine_class is None:
            return None, None
        first = np.searchsorted(self.machine_class, np.arange(len(instance.servers)))
        return self.machine_class, np.arange(self.machines) - first[self.machine_class]
