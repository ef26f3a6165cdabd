"""Best-Fit's two-resource search compiled with numba: the fallback kernel of :mod:`fairpack.solver.drfh.ratio_index`.

The C extension :mod:`fairpack.solver.drfh._ratio_search` is the same code, line for line, and is preferred where
it was built (it loads in a millisecond, where this module costs a fresh process about 0.45 s of CPU to import
numba and load the cached machine code). Both take the same arguments and give the same allocation to the last
bit; the structure and the rules are described in :mod:`fairpack.solver.drfh.ratio_index`.

Compiled with ``cache=True``: the first call in a fresh environment compiles (seconds) and stores the machine code
beside this file (or in numba's user cache when that folder is read-only); later processes load it. The float
operations are those of the definition (no fastmath), so the allocations are the same to the last bit as the
machine-by-machine reference.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fairpack.solver.drfh.greedy import TIE
from fairpack.solver.drfh.ratio_index import BLOCKS, CAP, DELTA, DEMAND0, DEMAND1, FREE, NEED0, NEED1, PLACED, TARGET

__all__ = ["serve_chunk"]


# ---- the blocked sorted list -------------------------------------------------------------------------
#
# Every array a compiled function takes costs an atomic reference-count increment and decrement per call
# (numba's runtime), whether or not the call is inlined: with a dozen helper calls of five to twenty arrays
# each, that was over half of a placement's time. So the work done for every task (locating a ratio,
# the two walks, moving the machine) is written out in ``serve_chunk``, and the helpers below are the
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


# ---- the chains of near-ties -------------------------------------------------------------------------


@njit(cache=True)
def _enter_chain(lo, hi, tenants, alive, competing, slot):  # fmt: skip
    """The tenants that compete in the fuzzy chain of entries ``lo`` to ``hi - 1``: each alive tenant's first entry
    there, in ``competing``; returns how many. ``slot`` is -1 for every tenant, and is again on return."""
    rivals = 0
    for t in range(lo, hi):
        i = tenants[t]
        if alive[i] and slot[i] < 0:
            slot[i] = rivals
            competing[rivals] = t
            rivals += 1
    for r in range(rivals):
        slot[tenants[competing[r]]] = -1
    return rivals


@njit(cache=True)
def _choose(rivals, tenants, keys, competing):  # fmt: skip
    """Which competitor is served next: the lowest tenant index among the keys within ``TIE`` of the smallest."""
    smallest = keys[competing[0]]
    for r in range(1, rivals):
        smallest = min(smallest, keys[competing[r]])
    best = -1
    for r in range(rivals):
        t = competing[r]
        if keys[t] <= smallest + TIE * smallest and (best < 0 or tenants[t] < tenants[competing[best]]):
            best = r
    return best


@njit(cache=True)
def _advance(r, rivals, hi, keep, tenants, competing):  # fmt: skip
    """Competitor ``r`` moves on to its next entry before ``hi``; without one (or unless ``keep``: its task fitted
    nowhere, or it reached its cap) it stops competing. Returns how many still compete."""
    if keep:
        i = tenants[competing[r]]
        for t in range(competing[r] + 1, hi):
            if tenants[t] == i:
                competing[r] = t
                return rivals
    competing[r] = competing[rivals - 1]
    return rivals - 1


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
def serve_chunk(tenants, keys, chains, counts, caps, alive, totals, tenant, first, machine_class, next_untouched,  # noqa: C901  (one placement kept in one function: see above)
                class_end, placed, found_h, found_m, dead, frontier, competing, slot, machine, items, length,
                sequence, free, where, block_max, stale, box):  # fmt: skip
    """Grant one task to each entry of ``tenants`` in turn, the fuzzy chains ``chains`` settled live (a chunk of the
    grant order, ``greedy.Chunk``).

    Outside the chains, every entry in turn. In a chain, the tenants alive when it starts compete, each with its
    first remaining entry, and the lowest tenant index among the ``keys`` within ``TIE`` of the smallest is served
    next, as ``greedy.resolve_fuzzy`` does; a tenant whose task fits nowhere, or that reaches its cap, stops
    competing. ``competing`` (one per tenant) is scratch, ``slot`` (one per tenant) is -1 and stays so.

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
    e = 0  # the next entry
    chain = 0  # the next chain
    rivals = 0  # tenants competing in the chain under way
    r = hi = 0
    while True:
        if rivals > 0:
            r = _choose(rivals, tenants, keys, competing)
            i = tenants[competing[r]]
        elif e == tenants.size:
            break
        elif chain < chains.shape[0] and e == chains[chain, 0]:  # a chain of near-ties starts
            hi = chains[chain, 1]
            rivals = _enter_chain(e, hi, tenants, alive, competing, slot)
            e = hi
            chain += 1
            continue
        else:
            i = tenants[e]
            e += 1
        if alive[i]:
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
            else:
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
        if rivals > 0:  # the chain under way: the tenant served moves on to its next entry, or stops competing
            rivals = _advance(r, rivals, hi, alive[i], tenants, competing)
