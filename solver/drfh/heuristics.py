"""The greedy heuristics real schedulers use for flat tenants on heterogeneous servers.

Every heuristic places whole tasks on individual machines (server classes expanded into machines, in
``Instance.machine_names`` order) and returns an integral ``Allocation`` of kind ``"machine"``. All of
them honour tenant weights and task caps (see ``solver.drfh.greedy`` for the shared
conventions: keys, ties, whole caps, fit tolerance). Each raises ``InstanceError`` (field
``servers``, so the CLI exits 2) before building anything per machine when the tenants x machines
table would exceed ``_filling.MAX_CELLS``.

- ``first_fit`` / ``best_fit``: progressive filling on the weighted *global* dominant share (DRFH's
  First-Fit and Best-Fit).
- ``slots``: a slot scheduler with equal slots cut from the largest machine.
- ``per_server_drf``: DRF run independently inside every machine.

A server class is kept as its capacity and count, not expanded: the cluster is a list of *runs*,
consecutive machines whose free room is identical (at first one run per class), and a run is split
only where a task lands. Tasks of one tenant that come one after another in the grant order are
placed as a batch (``k`` tasks on each of ``n`` machines at once) where the rule puts them on
consecutive identical machines.
"""

from __future__ import annotations

import bisect
import math
import sys
from collections.abc import Callable
from dataclasses import replace
from operator import ge, itemgetter

import numpy as np

from fairpack.models.result import Allocation
from fairpack.models.types import FloatArray, Instance, IntArray
from fairpack.solver.drfh.greedy import (
    TIE,
    TOL,
    Alive,
    Chunk,
    FlatSetup,
    Placements,
    check_size,
    fitness_ties,
    prepare,
    progressive_fill,
)

__all__ = ["best_fit", "first_fit", "per_server_drf", "slots"]


Vector = list[float]


def _fit_test(resources: int) -> Callable[[Vector, Vector], bool]:
    """``room >= need`` in every resource, spelled out for few resources (several times faster)."""
    if resources == 1:
        return lambda room, need: room[0] >= need[0]
    if resources == 2:
        return lambda room, need: room[0] >= need[0] and room[1] >= need[1]
    if resources == 3:
        return lambda room, need: room[0] >= need[0] and room[1] >= need[1] and room[2] >= need[2]
    return lambda room, need: all(map(ge, room, need))


def _subtraction(resources: int) -> Callable[[Vector, Vector], Vector]:
    """``room - demand`` as a new list, spelled out for few resources (several times faster)."""
    if resources == 1:
        return lambda room, demand: [room[0] - demand[0]]
    if resources == 2:
        return lambda room, demand: [room[0] - demand[0], room[1] - demand[1]]
    if resources == 3:
        return lambda room, demand: [room[0] - demand[0], room[1] - demand[1], room[2] - demand[2]]
    return lambda room, demand: [a - d for a, d in zip(room, demand, strict=True)]


class _Runs:
    """The machines that may still take a task, as runs of consecutive machines with identical room.

    ``starts`` is sorted; ``count[s]`` machines ``s, s+1, ...`` all have room ``room[s]`` (a list, one
    float per resource). A run that fits no tenant still alive is dropped lazily, when a search meets
    it: ``witness[s]`` is a tenant known to fit it, checked first.
    """

    def __init__(self, setup: FlatSetup, alive: Alive) -> None:
        self.setup = setup
        self.alive = alive
        self.needs = setup.need.tolist()
        self.fits = _fit_test(setup.demand.shape[1])
        self.minus = _subtraction(setup.demand.shape[1])
        self.frontier: list[tuple[int, list[float]]] = []
        self.starts: list[int] = []
        self.count: dict[int, int] = {}
        self.room: dict[int, list[float]] = {}
        self.witness: dict[int, int] = {}
        for cls, start in enumerate(setup.class_start.tolist()):
            if setup.counts[cls] > 0:
                self.add(start, int(setup.counts[cls]), setup.room[cls].tolist(), -1)

    def add(self, start: int, count: int, room: list[float], witness: int) -> None:
        bisect.insort(self.starts, start)
        self.count[start] = count
        self.room[start] = room
        self.witness[start] = witness

    def drop(self, start: int) -> None:
        del self.starts[bisect.bisect_left(self.starts, start)]
        del self.count[start], self.room[start], self.witness[start]

    def _refresh_frontier(self) -> None:
        """The tenants still alive whose need no other alive tenant's need is below (Pareto-minimal)."""
        ids = np.flatnonzero(self.alive.mask)
        needs, first = np.unique(self.setup.need[ids], axis=0, return_index=True)
        if needs.shape[1] == 2:  # a staircase: sorted by the first need, keep strict new minima of the second
            before = np.minimum.accumulate(np.concatenate(([np.inf], needs[:-1, 1])))
            keep = needs[:, 1] < before
        else:
            below = np.all(needs[:, None, :] <= needs[None, :, :], axis=2)
            np.fill_diagonal(below, False)
            keep = ~below.any(axis=0)
        self.frontier = [(int(ids[first[k]]), needs[k].tolist()) for k in np.flatnonzero(keep).tolist()]

    def useful(self, start: int) -> bool:
        """Whether some tenant still alive fits the run (finds a new witness when the old one lapsed)."""
        room, w, dead = self.room[start], self.witness[start], self.alive.dead
        if w >= 0 and not dead[w] and self.fits(room, self.needs[w]):
            return True
        if any(dead[t] for t, _ in self.frontier) or not self.frontier:
            self._refresh_frontier()
        for t, need in self.frontier:
            if self.fits(room, need):
                self.witness[start] = t
                return True
        return False

    def place_one(self, start: int, i: int, demand: list[float], record: Placements) -> None:
        """One task of tenant ``i`` on the run's first machine (which fits it)."""
        record.single_tenant.append(i)
        record.single_machine.append(start)
        room = self.room[start]
        if self.count[start] == 1:
            self.room[start] = self.minus(room, demand)
        else:
            self.place_one_split(start, room, demand)

    def place_one_split(self, start: int, room: list[float], demand: list[float]) -> None:
        """One task on the first machine of a run of several: the first machine leaves the run."""
        self.add(start + 1, self.count[start] - 1, room, self.witness[start])
        self.count[start] = 1
        self.room[start] = self.minus(room, demand)

    def place_batch(self, start: int, i: int, limit: int, demand: list[float], record: Placements) -> tuple[int, int]:
        """Up to ``limit`` tasks of tenant ``i`` on the run, first machine first, as First-Fit would.

        The run's first machine fits at least one task. Returns (tasks placed, last machine used).
        Machines filled until tenant ``i`` no longer fits are identical, so they are filled ``n`` at a
        time, each by the same sequence of subtractions.
        """
        count, room, need = self.count[start], self.room[start], self.needs[i]
        each, left = 0, room
        while each < limit and self.fits(left, need):
            left = self.minus(left, demand)
            each += 1
        machines = 1 if each == limit or count == 1 else min(count, limit // each)
        record.tenant.append(i)
        record.machine.append(start)
        record.each.append(each)
        record.span.append(machines)
        witness = self.witness[start]
        self.count[start] = machines
        self.room[start] = left
        if count > machines:
            self.add(start + machines, count - machines, room, witness)
        return machines * each, start + machines - 1


# ---- First-Fit ----------------------------------------------------------------------------------------


def first_fit(instance: Instance, stop: Callable[[], bool] | None = None) -> Allocation:
    """First-Fit DRFH: progressive filling that puts each task on the first machine where it fits.

    Repeatedly take the tenant with the lowest weighted global dominant share (ties under a tolerance
    by index) that is neither blocked nor at its cap, and place one task on the first machine, in
    machine order, with room for it. A tenant whose task fits nowhere is blocked for good.

    Parameters
    ----------
    instance : Instance
        Server classes and flat tenants.

    Returns
    -------
    Allocation
        Integral task counts per tenant and machine, ``kind="machine"``.

    Notes
    -----
    Free room only shrinks, so a tenant's first fitting machine never moves backwards: each tenant
    keeps a cursor and only runs at or after it are searched.
    """
    setup = prepare(instance, "first-fit")
    alive = Alive(setup.eligible)
    runs = _Runs(setup, alive)
    record = Placements()
    cursor = [0] * setup.tenants
    demands = setup.demand.tolist()
    starts, rooms, count, witness, needs = runs.starts, runs.room, runs.count, runs.witness, runs.needs
    dead, fits, minus = alive.dead, runs.fits, runs.minus

    singles_t, singles_m = record.single_tenant, record.single_machine

    def place(i: int, k: int) -> int:
        need, demand = needs[i], demands[i]
        placed = 0
        while placed < k:
            here = cursor[i]
            j = bisect.bisect_left(starts, here)
            if j and starts[j - 1] + count[starts[j - 1]] > here:
                j -= 1  # the cursor lies inside a run that starts before it
            while j < len(starts):
                start = starts[j]
                room = rooms[start]
                if fits(room, need):
                    break
                w = witness[start]
                if (w >= 0 and not dead[w] and fits(room, needs[w])) or runs.useful(start):
                    j += 1
                else:
                    runs.drop(start)
            else:
                return placed
            cursor[i] = start
            if k - placed > 1:
                done, cursor[i] = runs.place_batch(start, i, k - placed, demand, record)
                placed += done
                continue
            # One task (nearly every call): inlined, it is most of the work.
            singles_t.append(i)
            singles_m.append(start)
            if count[start] == 1:
                rooms[start] = minus(room, demand)
            else:
                runs.place_one_split(start, room, demand)
            return k
        return placed

    progressive_fill(setup, place, alive, stop=stop)
    return record.allocation(setup.tenants, setup.machines)


# ---- Best-Fit -----------------------------------------------------------------------------------------


def _dominant(relative: FloatArray) -> IntArray:
    """Each row's dominant resource: the lowest index within ``TIE`` of the row's largest entry."""
    if not relative.shape[0]:
        return np.zeros(0, dtype=np.int64)
    top = relative.max(axis=1, keepdims=True)
    return np.asarray(np.argmax(relative >= top - TIE * top, axis=1), dtype=np.int64)


def best_fit_terms(instance: Instance) -> tuple[FloatArray, IntArray, FloatArray]:
    """What Best-Fit's fitness needs: cluster totals, dominant resources and normalised demands.

    Returns ``(total, star, delta)``: ``total`` per resource, ``star[i]`` tenant ``i``'s dominant
    resource (largest ``demand / total``, lowest index on ties) and ``delta[i] = (D_i / total) /
    (D_i[star] / total[star])``. Resources the cluster lacks get ``delta`` 0 and drop out of ``H``.
    """
    total = instance.total_capacity
    present = total > 0
    demand = np.asarray(instance.demand, dtype=np.float64).reshape(len(instance.tenants), len(instance.resources))
    relative = np.zeros_like(demand)
    relative[:, present] = demand[:, present] / total[present]
    star = _dominant(relative)
    top = relative[np.arange(len(star)), star]
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(top[:, None] > 0, relative / top[:, None], 0.0)
    return total, star, delta


#: Best-Fit with two resources runs its compiled search (``solver.drfh.ratio_index``) from this many machines
#: on (unless told otherwise) where the C extension was built: it loads in a millisecond, and the compiled
#: search is the faster one from a few dozen machines on. Measured in fresh processes on the Google table
#: scaled down (24 tasks a machine; CPU, median of five, load 3): 10 machines 1.7 ms pure Python against 2.5 ms
#: compiled, 30 2.7 against 2.6, 50 3.4 against 2.5, 100 9.6 against 2.7, 1,000 96 against 9.0, 3,000 351
#: against 30.
COMPILED_FROM_MACHINES = 32

#: The same threshold where only numba's kernel is there: a fresh process pays about 0.35 s of CPU to import
#: numba and set it up for the cached machine code (scipy.linalg included, which numba imports for its BLAS
#: check), which the pure-Python search (about 5.5 us per task placed, against 0.2-0.4 us compiled) only costs
#: once there are some 80,000 tasks to place. Measured in fresh processes on the Google table scaled down (24
#: tasks a machine): 1,500 machines 0.19 s pure Python against 0.44 s compiled, 3,000 0.39 s against 0.49 s,
#: 4,500 0.53 s against 0.50 s, 6,000 0.66 s against 0.52 s.
NUMBA_FROM_MACHINES = 4000
#: Entries of the grant order a compiled call serves (``progressive_fill``'s chunk): each chunk costs a sort and
#: some numpy in Python. On the Google table with 1,000 tenants (296,049 tasks), warm CPU of the search: 8,192
#: entries 0.078 s, 16,384 0.074 s, 32,768 0.074 s.
COMPILED_CHUNK = 16384


def _compiled_by_default(machines: int) -> bool:
    """Whether Best-Fit with two resources runs compiled when not told: from ``COMPILED_FROM_MACHINES`` machines
    with the C extension; without it from ``NUMBA_FROM_MACHINES``, or at any size once numba's kernel has been
    loaded in this process (its one-off costs are paid, and it is the faster one)."""
    from fairpack.solver.drfh.ratio_index import c_built

    if c_built():
        return machines >= COMPILED_FROM_MACHINES
    return machines >= NUMBA_FROM_MACHINES or "fairpack.solver.drfh.ratio_numba" in sys.modules


def best_fit(
    instance: Instance, compiled: bool | str | None = None, stop: Callable[[], bool] | None = None
) -> Allocation:
    """Best-Fit DRFH: progressive filling that puts each task on the best-matching machine.

    Same tenant order as ``first_fit``. The task goes to the machine ``l`` minimising the DRFH paper's
    fitness, with demand and free room both as fractions of the cluster's total per resource::

        H(i, l) = sum over r != r* of | d_ir / d_ir* - f_lr / f_lr* |,  d_i = D_i / total,  f_l = free_l / total

    where ``r*`` is tenant ``i``'s dominant resource (largest ``d_ir``, lowest index on ties). Only
    machines where the task fits qualify; among the machines whose ``H`` is within a tolerance of the
    smallest, the first in machine order wins.

    Parameters
    ----------
    instance : Instance
        Server classes and flat tenants.
    compiled : bool or {'c', 'numba'}, optional
        With two resources, whether to run the compiled search or the pure-Python one; all give the same
        allocation. True runs the C extension where it was built, else numba's kernel; 'c' or 'numba' asks
        for one kernel. By default the compiled one from ``COMPILED_FROM_MACHINES`` machines (without
        the C extension: from ``NUMBA_FROM_MACHINES``, or at any size once numba's kernel has been loaded).

    Returns
    -------
    Allocation
        Integral task counts per tenant and machine, ``kind="machine"``.

    Notes
    -----
    Units do matter with three resources or more: in raw units the terms of ``H`` weigh resources by
    their units, and a CPU task can be sent to the only GPU machine. With one resource ``H`` is 0
    everywhere, so Best-Fit is First-Fit. With two, ``H`` is the distance between the machine's free
    ratio and the task's, and the search walks a list of runs sorted by that ratio (``_RatioIndex``, or
    the same search compiled, ``solver.drfh.ratio_index``).
    """
    check_size(instance, "best-fit")
    total, star, delta = best_fit_terms(instance)
    present = np.flatnonzero(total > 0)
    if present.size <= 1:
        return first_fit(instance, stop)
    setup = prepare(instance, "best-fit")
    alive = Alive(setup.eligible)
    if present.size == 2 and (_compiled_by_default(setup.machines) if compiled is None else compiled):
        kernel = compiled if isinstance(compiled, str) else "auto"
        index = _CompiledRatioIndex(setup, total, star, delta, present, kernel)
        progressive_fill(setup, None, alive, COMPILED_CHUNK, serve=index.serve, stop=stop)
        return index.allocation()
    record = Placements()
    search = _RatioIndex if present.size == 2 else _ScoredRuns
    place = search(_Runs(setup, alive), record, total, star, delta, present).place
    progressive_fill(setup, place, alive, stop=stop)
    return record.allocation(setup.tenants, setup.machines)


class _CompiledRatioIndex:
    """Best-Fit with two resources: the compiled search of ``solver.drfh.ratio_index``, by kernel ``name``.

    The kernel (the C extension, or numba's where it was not built) is loaded here, on the first Best-Fit call
    with two resources, so that no other method pays for it.
    """

    def __init__(self, setup: FlatSetup, total: FloatArray, star: IntArray, delta: FloatArray, present: IntArray,
                 name: str = "auto") -> None:  # fmt: skip
        from fairpack.solver.drfh import ratio_index

        self.bind = ratio_index.binder(name)
        a, b = int(present[0]), int(present[1])
        first = star == a  # the dominant resource is resource a
        other = np.where(first, b, a)
        ratio = delta[np.arange(len(star)), other]
        with np.errstate(divide="ignore"):
            target = np.where(first, ratio, np.where(ratio > 0, 1.0 / ratio, np.inf))
        table = np.stack([setup.need[:, a], setup.need[:, b], setup.demand[:, a], setup.demand[:, b], ratio, target])
        self.state = ratio_index.RatioState(
            setup.room[:, [a, b]], setup.counts, setup.class_start, (float(total[a]), float(total[b])), table, first
        )
        self.caps = np.asarray(setup.caps, dtype=np.float64)
        self.frontier_ids = np.zeros(0, dtype=np.int64)
        self.search = self.bind(self.state.arguments())

    def _frontier(self, alive: Alive) -> None:
        """Recompute the Pareto-minimal needs when a tenant on the current frontier has died."""
        if self.frontier_ids.size and alive.mask[self.frontier_ids].all():
            return
        self.frontier_ids = self.state.set_frontier(alive.mask)
        self.search = self.bind(self.state.arguments())

    def serve(self, chunk: Chunk, counts: IntArray, alive: Alive) -> None:
        """Grant a chunk of the grant order, its chains of near-ties settled live, in one compiled call."""
        self._frontier(alive)
        if self.state.reserve(chunk.tenants.size):
            self.search = self.bind(self.state.arguments())
        mask = alive.mask.copy()
        self.search(chunk.tenants, chunk.keys, chunk.chains, counts, self.caps, mask)
        alive.kill_where(~mask)

    def allocation(self) -> Allocation:
        return self.state.allocation()


class _ScoredRuns:
    """Best-Fit over any number of resources: score every useful run with numpy for every task."""

    def __init__(
        self, runs: _Runs, record: Placements, total: FloatArray, star: IntArray, delta: FloatArray, present: IntArray
    ) -> None:
        self.runs = runs
        self.record = record
        self.demands = runs.setup.demand.tolist()
        self.total = total[present]
        self.present = present
        position = {int(r): k for k, r in enumerate(present.tolist())}
        self.star = [position.get(int(r), 0) for r in star.tolist()]
        self.delta = delta[:, present]
        self.need = runs.setup.need[:, present]

    def place(self, i: int, k: int) -> int:
        runs = self.runs
        for placed in range(k):
            starts = np.asarray(runs.starts, dtype=np.int64)
            room = np.array([runs.room[s] for s in runs.starts]).reshape(len(starts), -1)[:, self.present]
            fits = np.all(room >= self.need[i], axis=1)
            if not fits.any():
                return placed
            free = room[fits] / self.total
            star = self.star[i]
            ratio = free / free[:, star : star + 1]
            fitness = np.abs(self.delta[i] - ratio).sum(axis=1)  # the r* term is |1 - 1| = 0
            best = float(fitness.min())
            tied = fitness <= best + TIE * (1.0 + best)
            runs.place_one(int(starts[fits][tied].min()), i, self.demands[i], self.record)
        return k


Item = tuple[float, int, float, float]  # (free ratio q, first machine, room of resource a, of resource b)


class _RatioIndex:
    """Best-Fit with two resources: runs kept sorted by their free ratio ``q = f_b / f_a``.

    For a task with ratio ``q_i = d_b / d_a``, a run with ``q >= q_i`` fits it when its free ``a``
    covers the demand, and one with ``q < q_i`` when its free ``b`` does; on each side ``H`` grows with
    the distance in ``q``. So the best run is the first fitting one on either side of ``q_i``: walk
    outwards, skip blocks of the sorted list whose largest free room is too small, and go on while a
    further run could tie. Items live in blocks of at most ``2 * _BLOCK`` (a sorted list of lists),
    with their ``q`` alone in a parallel list of floats for fast bisection. Items with equal ``q``
    may sit in any order: they tie in ``H``, and ties are settled by machine index after the walk.
    """

    _BLOCK = 48

    def __init__(
        self, runs: _Runs, record: Placements, total: FloatArray, star: IntArray, delta: FloatArray, present: IntArray
    ) -> None:
        self.runs = runs
        self.record = record
        self.a, self.b = int(present[0]), int(present[1])
        self.t0, self.t1 = float(total[self.a]), float(total[self.b])
        self.demands = runs.setup.demand.tolist()
        self.first = [int(s) == self.a for s in star.tolist()]  # the dominant resource is resource a
        other = np.where(star == self.a, self.b, self.a)
        self.delta = delta[np.arange(len(star)), other].tolist()
        self.need0 = runs.setup.need[:, self.a].tolist()
        self.need1 = runs.setup.need[:, self.b].tolist()
        self.blocks: list[list[Item]] = []
        self.keys: list[list[float]] = []
        self.fronts: list[float] = []
        self.max0: list[float] = []
        self.max1: list[float] = []
        self.stale: list[bool] = []
        items = sorted(self._item(s) for s in runs.starts)
        for offset in range(0, len(items), self._BLOCK):
            self._new_block(len(self.blocks), items[offset : offset + self._BLOCK])

    def _item(self, start: int) -> Item:
        room = self.runs.room[start]
        r0, r1 = room[self.a], room[self.b]
        f0 = r0 / self.t0
        return (r1 / self.t1 / f0 if f0 > 0 else np.inf, start, r0, r1)

    # -- the sorted list of items --

    def _new_block(self, b: int, items: list[Item]) -> None:
        self.blocks.insert(b, items)
        self.keys.insert(b, [item[0] for item in items])
        self.fronts.insert(b, items[0][0])
        self.max0.insert(b, max(map(itemgetter(2), items)))
        self.max1.insert(b, max(map(itemgetter(3), items)))
        self.stale.insert(b, False)

    def _insert(self, item: Item) -> None:
        if not self.blocks:
            self._new_block(0, [item])
            return
        q = item[0]
        b = bisect.bisect_right(self.fronts, q) - 1
        if b < 0:
            b = 0
        keys, block = self.keys[b], self.blocks[b]
        k = bisect.bisect_right(keys, q)
        keys.insert(k, q)
        block.insert(k, item)
        if k == 0:
            self.fronts[b] = q
        if item[2] > self.max0[b]:
            self.max0[b] = item[2]
        if item[3] > self.max1[b]:
            self.max1[b] = item[3]
        if len(block) > 2 * self._BLOCK:
            half = block[self._BLOCK :]
            del block[self._BLOCK :], keys[self._BLOCK :]
            self.stale[b] = True
            self._new_block(b + 1, half)

    def _remove(self, item: Item) -> None:
        q, start = item[0], item[1]
        b = bisect.bisect_left(self.fronts, q) - 1  # equal keys may begin in the block before
        if b < 0:
            b = 0
        while True:
            keys, block = self.keys[b], self.blocks[b]
            k = bisect.bisect_left(keys, q)
            while k < len(keys) and keys[k] == q and block[k][1] != start:
                k += 1
            if k < len(keys) and keys[k] == q:
                break
            b += 1
        self._remove_at(b, k, item)

    def _remove_at(self, b: int, k: int, item: Item) -> None:
        """Remove ``item``, which sits at position ``k`` of block ``b``."""
        keys, block = self.keys[b], self.blocks[b]
        del keys[k], block[k]
        if not block:
            del self.blocks[b], self.keys[b], self.fronts[b], self.max0[b], self.max1[b], self.stale[b]
            return
        if k == 0:
            self.fronts[b] = keys[0]
        if item[2] >= self.max0[b] or item[3] >= self.max1[b]:
            self.stale[b] = True  # the block's largest room may have left with it

    # -- the search --

    def _search(self, i: int, b: int, j: int, dead: list[Item]) -> list[tuple[float, int, int, int]]:
        """The fitting runs that may be best for tenant ``i``, walking out from position (b, j).

        (b, j) is the first item with ``q`` at or above the task's ratio. The walk goes right, then
        left; ``H`` only grows along each way, so a way stops at the first run beyond ``bound``, which
        tightens to the best fitting run's ``H`` plus the tie tolerance (with a margin for rounding).
        Returns (fitness, first machine, block, position) for each. Runs met on the way that fit no
        tenant still alive go to ``dead``. The walk reads items by index, never copying a block: it runs
        once per task placed, 300,000 times on the Google cluster with 1,000 tenants.
        """
        found: list[tuple[float, int, int, int]] = []
        bound = self._walk(i, 1, b, j, math.inf, found, dead)
        self._walk(i, -1, b if j > 0 else b - 1, j - 1, bound, found, dead)  # k = -1: from the block's end
        return found

    def _walk(self, i: int, step: int, at: int, k: int, bound: float, found: list[tuple[float, int, int, int]],
              dead: list[Item]) -> float:  # fmt: skip
        """One way of ``_search`` from item ``k`` of block ``at``: appends to ``found``, returns the bound."""
        need0, need1, delta, first = self.need0[i], self.need1[i], self.delta[i], self.first[i]
        t0, t1, blocks, runs, max0, max1 = self.t0, self.t1, self.blocks, self.runs, self.max0, self.max1
        inf = math.inf
        count = len(blocks)
        while 0 <= at < count:
            if max0[at] < need0 or max1[at] < need1:  # nothing in the block fits
                if bound < inf:  # but the walk may already be past the bound
                    block = blocks[at]
                    first_item = k if k >= 0 else k + len(block)
                    if 0 <= first_item < len(block):
                        q, _, r0, r1 = block[first_item]
                        h = abs(delta - q) if first else (abs(delta - r0 / t0 / (r1 / t1)) if r1 > 0 else inf)
                        if h > bound:
                            break
                at += step
                k = 0 if step > 0 else -1  # -1: from the end of the next block
                continue
            block = blocks[at]
            size = len(block)
            if k < 0:
                k += size
            fitted = past = False
            while 0 <= k < size:
                item = block[k]
                q, start, r0, r1 = item
                fits = r0 >= need0 and r1 >= need1
                if fits or bound < inf:
                    h = abs(delta - q) if first else (abs(delta - r0 / t0 / (r1 / t1)) if r1 > 0 else inf)
                    if h > bound:
                        past = True
                        break
                    if fits:
                        fitted = True
                        found.append((h, start, at, k))
                        limit = h + 2 * TIE * (1.0 + h)
                        if limit < bound:
                            bound = limit
                elif not runs.useful(start):
                    dead.append(item)
                k += step
            if past:
                break
            if not fitted and self.stale[at]:  # scanned without a fit: tighten its maxima
                max0[at] = max(map(itemgetter(2), block))
                max1[at] = max(map(itemgetter(3), block))
                self.stale[at] = False
            at += step
            k = 0 if step > 0 else -1
        return bound

    def place(self, i: int, k: int) -> int:
        runs, demand, record = self.runs, self.demands[i], self.record
        delta = self.delta[i]
        target = delta if self.first[i] else (1.0 / delta if delta > 0 else np.inf)
        for placed in range(k):
            if not self.blocks:
                return placed
            dead: list[Item] = []
            b = bisect.bisect_left(self.fronts, target) - 1
            if b < 0:
                b = 0
            j = bisect.bisect_left(self.keys[b], target)
            if j == len(self.keys[b]) and b + 1 < len(self.blocks):
                b, j = b + 1, 0
            found = self._search(i, b, j, dead)
            if not found:
                for item in dead:
                    self._remove(item)
                    runs.drop(item[1])
                return placed
            best, start, at, position = found[0]
            if len(found) > 1:
                best = min(h for h, _, _, _ in found)
                start, at, position = min((s, a, p) for h, s, a, p in found if fitness_ties(h, best))
            count = runs.count[start]
            before = self.blocks[at][position]
            if dead:  # dropping dead runs moves items: find the chosen one again
                for item in dead:
                    self._remove(item)
                    runs.drop(item[1])
                self._remove(before)
                at = -1
            runs.place_one(start, i, demand, record)
            if count > 1 and at >= 0:
                # The rest of the run keeps the old room, hence the old ratio and the old place.
                self.blocks[at][position] = (before[0], start + 1, before[2], before[3])
            else:
                if at >= 0:
                    self._remove_at(at, position, before)
                if count > 1:
                    self._insert((before[0], start + 1, before[2], before[3]))
            self._insert(self._item(start))
        return k


# ---- slots --------------------------------------------------------------------------------------------


def slots(instance: Instance, slots_per_max_server: int = 10, stop: Callable[[], bool] | None = None) -> Allocation:
    """Slot scheduler: equal slots, one task per slot, shared by weighted max-min on task counts.

    The slot is the componentwise-largest machine capacity (``max_l c_lr`` for every resource ``r``)
    divided by ``slots_per_max_server``. Machine ``l`` offers ``floor(min_r c_lr / slot_r)`` slots over
    the resources ``r`` it has (``c_lr > 0``): a machine without GPUs still offers slots, to the tasks
    that need no GPU. A tenant is admitted if its demand fits in one slot; admitted tenants receive
    slots by progressive filling on ``tasks / weight`` (ties by index) up to their caps, each grant
    taking the first free slot, in machine order, on a machine that has every resource the tenant
    needs. A task in a slot consumes its real demand, never more than the slot.

    Parameters
    ----------
    instance : Instance
        Server classes and flat tenants.
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
    setup = prepare(instance, "slots")
    capacity = instance.capacity
    slot = capacity.max(axis=0) / slots_per_max_server
    has = capacity > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(has, capacity / np.where(slot > 0, slot, 1.0), np.inf)
    per_class = np.where(has.any(axis=1), np.floor(ratio.min(axis=1) * (1 + 1e-12)), 0.0).astype(np.int64)
    admitted = setup.eligible & np.all(setup.demand <= slot * (1 + TOL), axis=1)
    # Which classes' slots a tenant may use: the class has every resource the tenant needs.
    usable = np.all(has[None, :, :] | (setup.demand[:, None, :] <= 0), axis=2) & (per_class > 0)[None, :]
    admitted &= usable.any(axis=1)
    # Slots of one class are consumed in machine order; classes a tenant can use are searched in order.
    offered = (per_class * setup.counts).tolist()
    taken = [0] * len(offered)
    usable_classes = [np.flatnonzero(row).tolist() for row in usable]
    record = Placements()
    per = per_class.tolist()
    starts = setup.class_start.tolist()

    def place(i: int, k: int) -> int:
        placed = 0
        for cls in usable_classes[i]:
            while placed < k and taken[cls] < offered[cls]:
                grant = min(k - placed, offered[cls] - taken[cls])
                first, size = taken[cls], per[cls]
                # Slots first..first+grant-1 of the class: a partial first machine, whole ones, a partial last.
                head = min(grant, size - first % size)
                rest = grant - head
                whole = rest // size
                machine = starts[cls] + first // size
                pieces = ((machine, head, 1), (machine + 1, size, whole), (machine + 1 + whole, rest - whole * size, 1))
                for at, tasks, span in pieces:
                    if tasks and span:
                        record.tenant.append(i)
                        record.machine.append(at)
                        record.each.append(tasks)
                        record.span.append(span)
                taken[cls] += grant
                placed += grant
            if placed >= k:
                break
        return placed

    # Slots are shared by weighted max-min on task counts: the key is tasks / weight.
    progressive_fill(replace(setup, eligible=admitted, step=1.0 / setup.weights), place, Alive(admitted), stop=stop)
    return record.allocation(setup.tenants, setup.machines)


# ---- per-server DRF -----------------------------------------------------------------------------------

#: Entries of the grant order cut at a time on one machine: a machine holds a few dozen tasks, and a chunk that
#: is all of them most of the time keeps the numpy per chunk to one cut.
MACHINE_CHUNK = 256


def _machine_drf(
    setup: FlatSetup, capacity: FloatArray, remaining: FloatArray, needs: list[list[float]], demands: list[list[float]]
) -> tuple[list[int], FloatArray | None]:
    """Weighted DRF of whole tasks on one machine: progressive filling on the machine-local dominant share.

    ``remaining`` caps every tenant's tasks; a tenant whose next task does not fit is blocked on this
    machine. Ties between tenants follow the shared rule (tolerance, then index). ``needs`` and
    ``demands`` are ``setup.need`` and ``setup.demand`` as lists. Returns the task counts and, if the filling
    met a chain of near-ties, the local steps (the keys are ``n * step``; NaN for the tenants not in the order),
    else None.
    """
    room = (capacity * (1 + TOL)).tolist()
    present = capacity > 0
    fits = setup.eligible & (remaining >= 1) & np.all(setup.need <= capacity * (1 + TOL), axis=1)
    local = (setup.demand[:, present] / capacity[present]).max(axis=1) if present.any() else np.zeros(setup.tenants)
    alive = Alive(fits)
    fit, minus = _fit_test(len(room)), _subtraction(len(room))

    def place(i: int, k: int) -> int:
        nonlocal room
        placed = 0
        while placed < k and fit(room, needs[i]):
            room = minus(room, demands[i])
            placed += 1
        if placed < k:
            # The machine is filling up: block at once every tenant that no longer fits, so that a full machine
            # ends its filling now; they stay in the order until their turn, where the definition finds them out.
            alive.block_where(~np.all(setup.need <= np.asarray(room), axis=1))
        return placed

    step = np.where(fits, local / setup.weights, 1.0)
    local_setup = replace(setup, step=step, caps=remaining, eligible=fits)
    counts = progressive_fill(local_setup, place, alive, chunk=MACHINE_CHUNK)
    return counts, (np.where(fits, step, np.nan) if alive.chains else None)


def _copies(outcome: FloatArray, remaining: FloatArray, left: int, step: FloatArray | None) -> int:
    """How many machines of a class, the one just filled and the next ones, get the same ``outcome``.

    Every copy sees the same tenants and the same caps but smaller remaining ones, so it repeats the filling
    until a cap binds: on the copy where a tenant's remaining cap equals its outcome, it leaves the order at its
    cap right after its last task, where on the first machine it stayed in until its next turn (key ``outcome *
    step``) and was blocked there. That changes nobody's order unless the key falls in a chain of near-ties
    (``grant_chunks``): with another tenant's key within ``TIE`` of it but not equal to it, and then the first
    machine's filling met that chain. ``step`` is None where it met none (see ``_machine_drf``); else a copy
    where such a key falls in a chain is left out, to be filled afresh.
    """
    placed = outcome > 0
    bound = float(np.floor(remaining[placed] / outcome[placed]).min())  # >= 1 by the caps, inf without caps
    if bound > left or bound == 1 or step is None:
        return int(min(left, bound))
    binding = np.flatnonzero(placed & (remaining == bound * outcome))
    keys = (outcome[binding] * step[binding])[:, None]
    steps = step[None, :]  # NaN (never near) for the tenants not in the order
    # The only entry n * step of a tenant that can lie within TIE of a key is the one with n nearest to key / step
    # (the next ones are a whole step away). Twice TIE: a margin over the rounding of the chain test.
    with np.errstate(divide="ignore", invalid="ignore"):  # a step of 0 (keys all 0) is never near a key > 0
        near = np.rint(keys / steps) * steps
    ties = (near != keys) & (near <= keys + 2 * TIE * keys) & (keys <= near + 2 * TIE * near)
    return int(bound) - 1 if ties.any() else int(bound)


def per_server_drf(instance: Instance, stop: Callable[[], bool] | None = None) -> Allocation:
    """DRF inside every machine separately, ignoring the rest of the cluster.

    On each machine, progressive filling of whole tasks serves the tenant with the lowest weighted
    dominant share relative to *that machine's* capacity (ties by index); a tenant whose next task
    does not fit on the machine is blocked there.

    Parameters
    ----------
    instance : Instance
        Server classes and flat tenants.

    Returns
    -------
    Allocation
        Integral task counts per tenant and machine, ``kind="machine"``.

    Notes
    -----
    Task caps are cluster-wide, so machines are processed in machine order and each machine's DRF
    sees every tenant's cap minus the tasks it already got on earlier machines. Machines of a class
    that see the same remaining caps get the same outcome, so one machine's DRF is computed and
    replicated over as many machines as the caps allow before any of them binds (and the one where a cap
    binds, unless that changes a chain of near-ties there: ``_copies``).
    """
    setup = prepare(instance, "per-server-drf")
    record = Placements()
    remaining = setup.caps.copy()
    needs, demands = setup.need.tolist(), setup.demand.tolist()
    for cls, server in enumerate(instance.servers):
        machine, left = int(setup.class_start[cls]), int(server.count)
        while left > 0 and not (stop is not None and stop()):
            counts, step = _machine_drf(setup, instance.capacity[cls], remaining, needs, demands)
            outcome = np.asarray(counts, dtype=np.float64)
            placed = outcome > 0
            if not placed.any():
                break
            repeat = _copies(outcome, remaining, left, step)
            for i in np.flatnonzero(placed).tolist():
                record.tenant.append(i)
                record.machine.append(machine)
                record.each.append(int(outcome[i]))
                record.span.append(repeat)
            remaining = remaining - repeat * outcome
            machine, left = machine + repeat, left - repeat
    return record.allocation(setup.tenants, setup.machines)
