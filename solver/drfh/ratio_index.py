"""Best-Fit with two resources, compiled with numba: the machines kept sorted by their free ratio.

For a task with ratio ``q_i = d_b / d_a`` (resources as fractions of the cluster totals), a machine
with free ratio ``q >= q_i`` fits it when its free ``a`` covers the demand, and one with ``q < q_i``
when its free ``b`` does; on each side the DRFH paper's fitness ``H`` grows with the distance in
``q``. So the best machine is the first fitting one on either side of ``q_i``: walk outwards, skip
blocks whose largest free room (an upper bound, made exact again when a block is scanned without a
fit) is too small, and go on while a further machine could tie. Every machine within the tie
tolerance of the best is collected and the lowest machine index wins, so the order among equal ``q``
does not matter.

The sorted order is a list of blocks (``items[block, :length[block]]``, blocks in the order
``sequence``), so that an entry moves from anywhere to anywhere at the cost of two blocks: a task
can move its machine's ``q`` past thousands of others. Untouched machines of a server class are
identical: a class is one entry (its first untouched machine) until a task lands there; then that
machine gets an entry of its own and the class entry moves on to the next machine. Per machine,
``machine[0]`` is ``q``, ``machine[1]`` and ``machine[2]`` the free room of resources ``a`` and ``b``.
An entry that fits no tenant still alive (tested against the staircase of Pareto-minimal needs,
``frontier``) is dropped when a walk meets it.

Compiled with ``cache=True``: the first call in a fresh environment compiles (seconds) and stores the
machine code beside this file (or in numba's user cache when that folder is read-only); later
processes load it. The float operations are those of the definition (no fastmath), so the
allocations are the same to the last bit as the machine-by-machine reference.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fairpack.models.types import BoolArray, FloatArray, IntArray
from fairpack.solver.drfh.greedy import TIE, dense_counts

__all__ = ["RatioState", "serve_segment"]

CAP = 128  # entries a block holds before it splits in two

# Rows of the per-tenant float table ``tenant``.
NEED0, NEED1, DEMAND0, DEMAND1, DELTA, TARGET = range(6)
# Slots of the integer box ``box``: blocks in the sequence, free block ids on the stack, tasks placed.
BLOCKS, FREE, PLACED = range(3)


class RatioState:
    """Everything the compiled search reads and updates, as numpy arrays (numba takes no Python objects).

    Parameters
    ----------
    room : FloatArray
        ``(classes, 2)``: an empty machine's room of resources a and b.
    counts, class_start : IntArray
        Machines per class and the first machine of every class.
    total : tuple of float
        The cluster's totals of resources a and b.
    tenant : FloatArray
        ``(6, tenants)``: need a, need b (``-inf`` where the demand is 0), demand a, demand b, the
        task's ratio ``delta`` and the ``q`` the search starts from.
    first : BoolArray
        Whether each tenant's dominant resource is a.
    """

    def __init__(
        self,
        room: FloatArray,
        counts: IntArray,
        class_start: IntArray,
        total: tuple[float, float],
        tenant: FloatArray,
        first: BoolArray,
    ) -> None:
        machines = int(counts.sum())
        self.totals = np.array(total, dtype=np.float64)
        self.tenant = np.ascontiguousarray(tenant, dtype=np.float64)
        self.first = np.ascontiguousarray(first, dtype=np.bool_)
        machine_class = np.repeat(np.arange(len(counts)), counts)
        self.machine = np.empty((3, machines), dtype=np.float64)
        self.machine[1] = room[machine_class, 0]
        self.machine[2] = room[machine_class, 1]
        f0 = self.machine[1] / self.totals[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.machine[0] = np.where(f0 > 0, self.machine[2] / self.totals[1] / f0, np.inf)
        self.machine_class = machine_class.astype(np.int64)
        self.next_untouched = class_start.astype(np.int64).copy()
        self.class_end = (class_start + counts).astype(np.int64)
        blocks = machines + 2  # at most one block per entry, and one spare for a split
        self.items = np.empty((blocks, CAP), dtype=np.int64)
        self.length = np.zeros(blocks, dtype=np.int64)
        self.sequence = np.empty(blocks, dtype=np.int64)
        self.free = np.arange(blocks - 1, -1, -1, dtype=np.int64)  # a stack: block 0 on top
        self.where = np.full(max(machines, 1), -1, dtype=np.int64)
        self.block_max = np.full((2, blocks), -np.inf)
        self.stale = np.zeros(blocks, dtype=np.bool_)
        self.box = np.array([0, blocks, 0], dtype=np.int64)
        # Every task placed, as (tenant, machine) in placement order: the tenants x machines table is built once
        # at the end (adding 1 to a cell of that 100 MB table at each placement missed the cache every time,
        # about a third of the search on the Google table with 1,000 tenants).
        self.placed = np.empty((2, 4 * max(machines, 1024)), dtype=np.int64)
        self.shape = (int(tenant.shape[1]), machines)
        self.found_h = np.empty(max(machines, 1), dtype=np.float64)
        self.found_m = np.empty(max(machines, 1), dtype=np.int64)
        self.dead = np.empty(max(machines, 1) + 1, dtype=np.int64)
        self.frontier = np.empty((2, 0), dtype=np.float64)
        starts = class_start[counts > 0]
        _build(starts[np.argsort(self.machine[0, starts], kind="stable")].astype(np.int64), *self._structure())

    def _structure(self) -> tuple[object, ...]:
        return (self.machine, self.items, self.length, self.sequence, self.free, self.where, self.block_max,
                self.stale, self.box)  # fmt: skip

    def set_frontier(self, alive: BoolArray) -> IntArray:
        """Keep the Pareto-minimal (need a, need b) of the tenants alive, sorted by need a (need b then falls).

        Returns the tenants they belong to (one per distinct need).
        """
        ids = np.flatnonzero(alive)
        if not ids.size:
            self.frontier = np.empty((2, 0), dtype=np.float64)
            return ids
        needs, first = np.unique(self.tenant[NEED0 : NEED1 + 1, ids].T, axis=0, return_index=True)
        before = np.minimum.accumulate(np.concatenate(([np.inf], needs[:-1, 1])))
        keep = needs[:, 1] < before
        self.frontier = np.ascontiguousarray(needs[keep].T)
        return np.asarray(ids[first[keep]], dtype=np.int64)

    def reserve(self, tasks: int) -> bool:
        """Make room in ``placed`` for ``tasks`` more; True when that took a new array (new ``arguments()``)."""
        needed = int(self.box[PLACED]) + tasks
        if needed <= self.placed.shape[1]:
            return False
        grown = np.empty((2, max(needed, 2 * self.placed.shape[1])), dtype=np.int64)
        grown[:, : self.box[PLACED]] = self.placed[:, : self.box[PLACED]]
        self.placed = grown
        return True

    def tasks(self) -> FloatArray:
        """The tasks placed so far as a read-only (tenants, machines) table."""
        done = int(self.box[PLACED])
        return dense_counts(*self.shape, self.placed[0, :done], self.placed[1, :done])

    def arguments(self) -> tuple[object, ...]:
        """The arguments of ``serve_segment`` after the tenants, counts, caps and alive mask."""
        return (self.totals, self.tenant, self.first, self.machine_class, self.next_untouched, self.class_end,
                self.placed, self.found_h, self.found_m, self.dead, self.frontier, *self._structure())  # fmt: skip


# ---- the blocked sorted list -------------------------------------------------------------------------
#
# Every array a compiled function takes costs an atomic reference-count increment and decrement per call
# (numba's runtime), whether or not the call is inlined: with a dozen helper calls of five to twenty arrays
# each, that was over half of a placement's time. So the work done for every task (locating a ratio,
# the two walks, moving the machine) is written out in ``serve_segment``, and the helpers below are the
# rare steps (a block splits, empties, or has its maxima made exact) or take few arrays.


@njit(cache=True)
def _tighten(blk, machine, items, length, block_max, stale):  # fmt: skip
    """Make a block's maxima exact."""
    top0, top1 = -np.inf, -np.inf
    for k in range(length[blk]):
        m = items[blk, k]
        top0 = max(top0, machine[1, m])
        top1 = max(top1, machine[2, m])
    block_max[0, blk] = top0
    block_max[1, blk] = top1
    stale[blk] = False


@njit(cache=True)
def _new_block(s, sequence, free, box):  # fmt: skip
    """Take a free block id and put it at place ``s`` of the sequence."""
    box[FREE] -= 1
    blk = free[box[FREE]]
    for t in range(box[BLOCKS], s, -1):
        sequence[t] = sequence[t - 1]
    sequence[s] = blk
    box[BLOCKS] += 1
    return blk


@njit(cache=True)
def _build(ranked, machine, items, length, sequence, free, where, block_max, stale, box):  # fmt: skip
    """Fill the structure with the machines ``ranked`` (sorted by ``q``), half-full blocks."""
    half = CAP // 2
    for start in range(0, ranked.shape[0], half):
        blk = _new_block(box[BLOCKS], sequence, free, box)
        stop = min(start + half, ranked.shape[0])
        for k in range(start, stop):
            items[blk, k - start] = ranked[k]
            where[ranked[k]] = blk
        length[blk] = stop - start
        _tighten(blk, machine, items, length, block_max, stale)


@njit(cache=True)
def _locate(key, strict, machine, items, length, sequence, box):  # fmt: skip
    """Where ``key`` falls in the order: (place ``s`` in the sequence, entry ``k`` of that block).

    The block is the last one whose first entry's ``q`` is below ``key`` (or equal, unless ``strict``),
    the first block when there is none; ``k`` is its first entry whose ``q`` is above ``key``
    (``strict``) or at or above it. The sequence holds at least one block.
    """
    lo, hi = 0, box[BLOCKS]
    while lo < hi:
        mid = (lo + hi) // 2
        q = machine[0, items[sequence[mid], 0]]
        if q < key or (strict and q == key):
            lo = mid + 1
        else:
            hi = mid
    s = max(lo - 1, 0)
    blk = sequence[s]
    lo, hi = 0, length[blk]
    while lo < hi:
        mid = (lo + hi) // 2
        q = machine[0, items[blk, mid]]
        if q < key or (strict and q == key):
            lo = mid + 1
        else:
            hi = mid
    return s, lo


@njit(cache=True)
def _split(s, machine, items, length, sequence, free, where, block_max, stale, box):  # fmt: skip
    """A full block at place ``s`` splits in two: the upper half goes to a new block right after."""
    blk = sequence[s]
    half = CAP // 2
    new = _new_block(s + 1, sequence, free, box)
    for t in range(half, CAP):
        e = items[blk, t]
        items[new, t - half] = e
        where[e] = new
    length[blk] = half
    length[new] = CAP - half
    _tighten(blk, machine, items, length, block_max, stale)
    _tighten(new, machine, items, length, block_max, stale)


@njit(cache=True)
def _remove(m, items, length, where, stale):  # fmt: skip
    """Take machine ``m`` out of its block; returns the block when that leaves it empty, else -1."""
    blk = where[m]
    k = 0
    while items[blk, k] != m:
        k += 1
    for t in range(k, length[blk] - 1):
        items[blk, t] = items[blk, t + 1]
    length[blk] -= 1
    where[m] = -1
    stale[blk] = True
    return blk if length[blk] == 0 else -1


@njit(cache=True)
def _drop_block(blk, sequence, free, box):  # fmt: skip
    """An emptied block leaves the sequence and goes back on the free stack."""
    s = 0
    while sequence[s] != blk:
        s += 1
    for t in range(s, box[BLOCKS] - 1):
        sequence[t] = sequence[t + 1]
    box[BLOCKS] -= 1
    free[box[FREE]] = blk
    box[FREE] += 1


# ---- the search --------------------------------------------------------------------------------------


@njit(cache=True)
def _fitness(first, delta, q, r0, r1, t0, t1):  # fmt: skip
    """The paper's ``H`` for a task of ratio ``delta`` (its non-dominant over its dominant resource)."""
    if first:
        return abs(delta - q)
    if r1 > 0:
        return abs(delta - r0 / t0 / (r1 / t1))
    return np.inf


@njit(cache=True)
def _useful(r0, r1, frontier):  # fmt: skip
    """Whether some (need a, need b) of the staircase ``frontier`` fits in room (r0, r1)."""
    lo, hi = 0, frontier.shape[1]
    while lo < hi:  # the last need a <= r0 has the smallest need b among those
        mid = (lo + hi) // 2
        if frontier[0, mid] <= r0:
            lo = mid + 1
        else:
            hi = mid
    return lo > 0 and frontier[1, lo - 1] <= r1


@njit(cache=True)
def serve_segment(tenants, counts, caps, alive, totals, tenant, first, machine_class, next_untouched, class_end,  # noqa: C901  (one placement kept in one function: see above)
                  placed, found_h, found_m, dead, frontier, machine, items, length, sequence, free, where,
                  block_max, stale, box):  # fmt: skip
    """Grant one task to each entry of ``tenants`` in turn (a plain segment of the grant order).

    Each task goes to the best machine: from the first entry with ``q`` at or above the tenant's target,
    one walk goes right and one left, collecting the fitting entries with ``H`` within the bound, which
    tightens to the best fitting entry's ``H`` plus twice the tie tolerance (so every entry that may tie
    is collected; the lowest machine index among the ties wins). A block whose largest room cannot hold
    the task is skipped whole, unless the walk is already past the bound there. Entries met that fit no
    tenant still alive are dropped. The machine then leaves the order and comes back at its new ``q``.

    A tenant whose task fits nowhere, or that reaches its cap, is marked not ``alive``; entries of
    tenants not alive are skipped. ``counts`` counts every tenant's tasks. Each task placed is appended to
    ``placed`` as (tenant, machine), which has room for one per entry of ``tenants``.
    """
    t0, t1 = totals[0], totals[1]
    for i in tenants:
        if not alive[i]:
            continue
        found = 0
        dead[0] = 0
        if box[BLOCKS] > 0:
            need0, need1, delta, head = tenant[NEED0, i], tenant[NEED1, i], tenant[DELTA, i], first[i]
            s0, k0 = _locate(tenant[TARGET, i], False, machine, items, length, sequence, box)
            bound = np.inf
            for way in range(2):  # right from the first entry at or above the target, then left of it
                step = 1 if way == 0 else -1
                s, k = s0, k0
                if way == 1:
                    if k > 0:
                        k -= 1
                    else:
                        s, k = s - 1, -1  # -1: from the end of the block before
                while 0 <= s < box[BLOCKS]:
                    blk = sequence[s]
                    size = length[blk]
                    if k < 0:
                        k += size
                    if not 0 <= k < size:
                        s += step
                        k = 0 if step > 0 else -1
                        continue
                    if block_max[0, blk] < need0 or block_max[1, blk] < need1:  # nothing in the block fits
                        if bound < np.inf:  # but the walk may already be past the bound
                            m = items[blk, k]
                            if _fitness(head, delta, machine[0, m], machine[1, m], machine[2, m], t0, t1) > bound:
                                break
                        s += step
                        k = 0 if step > 0 else -1
                        continue
                    fitted = past = False
                    while 0 <= k < size:
                        m = items[blk, k]
                        r0, r1 = machine[1, m], machine[2, m]
                        fits = r0 >= need0 and r1 >= need1
                        if fits or bound < np.inf:
                            h = _fitness(head, delta, machine[0, m], r0, r1, t0, t1)
                            if h > bound:
                                past = True
                                break
                            if fits:
                                fitted = True
                                found_h[found] = h
                                found_m[found] = m
                                found += 1
                                limit = h + 2 * TIE * (1.0 + h)
                                if limit < bound:
                                    bound = limit
                        if not fits and not _useful(r0, r1, frontier):
                            dead[0] += 1
                            dead[dead[0]] = m
                        k += step
                    if past:
                        break
                    if not fitted and stale[blk]:  # scanned without a fit: make its maxima exact
                        _tighten(blk, machine, items, length, block_max, stale)
                    s += step
                    k = 0 if step > 0 else -1
            for d in range(1, dead[0] + 1):  # drop the entries no tenant alive fits
                emptied = _remove(dead[d], items, length, where, stale)
                if emptied >= 0:
                    _drop_block(emptied, sequence, free, box)
        if found == 0:
            alive[i] = False
            continue
        best = found_h[0]
        for f in range(1, found):
            best = min(best, found_h[f])
        m = -1
        for f in range(found):
            if found_h[f] <= best + TIE * (1.0 + best) and (m < 0 or found_m[f] < m):
                m = found_m[f]
        n = box[PLACED]
        placed[0, n] = i
        placed[1, n] = m
        box[PLACED] = n + 1
        r0 = machine[1, m] - tenant[DEMAND0, i]
        r1 = machine[2, m] - tenant[DEMAND1, i]
        f0 = r0 / t0
        c = machine_class[m]
        if m == next_untouched[c]:  # the class's entry: it moves on to the next untouched machine, if any
            next_untouched[c] = m + 1
            blk = where[m]
            if m + 1 < class_end[c]:
                k = 0
                while items[blk, k] != m:
                    k += 1
                items[blk, k] = m + 1  # same room, same q: same place
                where[m + 1] = blk
                where[m] = -1
        if where[m] >= 0:
            emptied = _remove(m, items, length, where, stale)
            if emptied >= 0:
                _drop_block(emptied, sequence, free, box)
        machine[0, m] = r1 / t1 / f0 if f0 > 0 else np.inf
        machine[1, m] = r0
        machine[2, m] = r1
        # Back in the order at its new q, after equal ones; a full block splits in two.
        if box[BLOCKS] == 0:
            s = 0
            blk = _new_block(0, sequence, free, box)
            length[blk] = 0
            block_max[0, blk] = block_max[1, blk] = -np.inf
            stale[blk] = False
            k = 0
        else:
            s, k = _locate(machine[0, m], True, machine, items, length, sequence, box)
            blk = sequence[s]
        for t in range(length[blk], k, -1):
            items[blk, t] = items[blk, t - 1]
        items[blk, k] = m
        length[blk] += 1
        where[m] = blk
        block_max[0, blk] = max(block_max[0, blk], r0)
        block_max[1, blk] = max(block_max[1, blk], r1)
        if length[blk] == CAP:
            _split(s, machine, items, length, sequence, free, where, block_max, stale, box)
        counts[i] += 1
        if counts[i] >= caps[i]:
            alive[i] = False
