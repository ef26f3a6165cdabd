"""Shared machinery of the flat heuristics: per-tenant arrays, the progressive-filling driver, and
whole-unit weighted max-min filling.

Conventions shared by every flat heuristic:

- A tenant's weighted global dominant share after ``n`` tasks is the key ``n * step[i]`` with
  ``step = dominant_demand / weight``; the tenant with the smallest key goes next, ties by index.
- Task caps are whole numbers: a cap of 2.5 allows 2 tasks.
- A task fits where ``demand <= free + TOL * capacity`` for every resource it needs (``TOL`` only
  absorbs the rounding of repeated subtraction); resources it does not need are never checked.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from models.types import BoolArray, FloatArray, Instance, IntArray

TOL = 1e-10  # relative to a machine's capacity; well inside the 1e-9 a checker allows


@dataclass(frozen=True)
class FlatSetup:
    """Per-tenant and per-machine arrays every flat heuristic starts from."""

    demand: FloatArray  # (tenants, resources)
    need: FloatArray  # demand, with -inf where the demand is zero (never blocks a fit test)
    weights: FloatArray
    step: FloatArray  # weighted global dominant share of one task
    caps: FloatArray  # whole-task caps, inf when unbounded
    eligible: BoolArray  # may get a task at all: cap >= 1 and one task fits on some empty machine
    machine_cap: FloatArray  # (machines, resources)
    machine_class: IntArray  # class of every machine
    class_start: IntArray  # first machine of every class (classes are contiguous in machine order)

    @property
    def tenants(self) -> int:
        return int(self.demand.shape[0])

    @property
    def machines(self) -> int:
        return int(self.machine_cap.shape[0])


def prepare(instance: Instance) -> FlatSetup:
    """Build the shared arrays of ``instance``."""
    demand = np.asarray(instance.demand, dtype=np.float64).reshape(len(instance.tenants), len(instance.resources))
    capacity = instance.capacity
    fits_class = np.all(demand[:, None, :] <= capacity[None, :, :] * (1 + TOL), axis=2)
    caps = np.floor(instance.task_caps) if len(instance.tenants) else np.zeros(0)
    eligible = fits_class.any(axis=1) & instance.runnable & (caps >= 1)
    step = instance.dominant_demand / instance.weights if len(instance.tenants) else np.zeros(0)
    starts = np.concatenate(([0], np.cumsum(instance.counts)[:-1])).astype(np.int64)
    return FlatSetup(
        demand=demand,
        need=np.where(demand > 0, demand, -np.inf),
        weights=np.asarray(instance.weights, dtype=np.float64),
        step=np.asarray(step, dtype=np.float64),
        caps=caps,
        eligible=eligible,
        machine_cap=instance.capacity[instance.machine_class()],
        machine_class=instance.machine_class(),
        class_start=starts,
    )


def progressive_fill(setup: FlatSetup, place: Callable[[int], int]) -> FloatArray:
    """Serve the tenant with the lowest weighted global dominant share, one whole task at a time.

    ``place(i)`` puts one task of tenant ``i`` on a machine and returns its index, or returns -1 when
    the task fits nowhere; the tenant is then blocked for good (free capacity only shrinks). Returns
    the task counts, shape (tenants, machines).
    """
    step = setup.step.tolist()
    caps = setup.caps.tolist()
    counts = [0] * setup.tenants
    heap = [(0.0, i) for i in np.flatnonzero(setup.eligible).tolist()]  # sorted, hence a valid heap
    tenants: list[int] = []
    machines: list[int] = []
    while heap:
        _, i = heapq.heappop(heap)
        machine = place(i)
        if machine < 0:
            continue
        tenants.append(i)
        machines.append(machine)
        counts[i] += 1
        if counts[i] + 1 <= caps[i]:
            heapq.heappush(heap, (counts[i] * step[i], i))
    return dense_counts(setup.tenants, setup.machines, tenants, machines)


def dense_counts(tenants: int, machines: int, rows: list[int] | IntArray, columns: list[int] | IntArray) -> FloatArray:
    """A (tenants, machines) float array counting every (row, column) pair."""
    flat = np.asarray(rows, dtype=np.int64) * machines + np.asarray(columns, dtype=np.int64)
    counts = np.bincount(flat, weights=np.ones(flat.size), minlength=tenants * machines)  # float64, no copy below
    return np.asarray(counts, dtype=np.float64).reshape(tenants, machines)


def _keys_below(step: FloatArray, caps: FloatArray, level: float) -> FloatArray:
    """How many keys ``n * step`` (n = 0, 1, ...) lie strictly below ``level``, capped; exact in floats."""
    count = np.ceil(level / step)
    for _ in range(4):  # the float product may sit one off the real-number estimate either way
        count = np.where((count > 0) & ((count - 1) * step >= level), count - 1, count)
        count = np.where(count * step < level, count + 1, count)
    return np.minimum(count, caps)


def weighted_units(step: FloatArray, caps: FloatArray, units: int) -> IntArray:
    """Hand out ``units`` identical whole units by progressive filling on ``n_i * step_i``.

    Equivalent to giving one unit at a time to the tenant with the smallest ``n_i * step_i`` (ties by
    index) until the units or every cap run out, but a bisection on the level hands out the bulk at
    once and a heap only settles the last units at the final level. ``step`` must be positive.
    """
    caps = np.floor(caps)
    if not len(step) or units <= 0:
        return np.zeros(len(step), dtype=np.int64)
    if caps.sum() <= units:
        return caps.astype(np.int64)
    low, high = 0.0, (units + 1) * float(step.max())  # at ``high`` every tenant has > units keys or its cap
    while True:
        middle = 0.5 * (low + high)
        if not low < middle < high:
            break
        if _keys_below(step, caps, middle).sum() <= units:
            low = middle
        else:
            high = middle
    counts = _keys_below(step, caps, low).astype(np.int64)
    heap = [(float(counts[i] * step[i]), i) for i in np.flatnonzero(counts < caps).tolist()]
    heapq.heapify(heap)
    for _ in range(units - int(counts.sum())):
        _, i = heapq.heappop(heap)
        counts[i] += 1
        if counts[i] < caps[i]:
            heapq.heappush(heap, (float(counts[i] * step[i]), i))
    return counts


def grant_order(step: FloatArray, counts: IntArray) -> IntArray:
    """The tenant of every unit in the order progressive filling grants them (by key, then index)."""
    tenants = np.repeat(np.arange(len(counts)), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    keys = (np.arange(len(tenants)) - starts) * step[tenants]
    return tenants[np.lexsort((tenants, keys))]
