"""The list scheduler of :mod:`fairpack.solver.sim.pack`, compiled with numba: the same schedule to the last bit.

:func:`fairpack.solver.sim.pack.pack` is the reference; ``run`` here is its loop, line by line, on arrays: the same
float operations in the same order (IEEE float64, no fastmath), the floor of the same quotients, the heap
ported from ``heapq`` (the same sift-up and sift-down on ``(end, stage, tasks)`` compared as Python compares
tuples), the runnable stages kept as the same sorted list of ranks, and the waves (``_waves``) and rounds of
steady batches (``_rounds``) replayed as the reference does. Python's ``max(a, b)`` is ``b if b > a else a``
and ``min(a, b)`` is ``b if b < a else a``; they are written out so, and list comparisons of the free room are
element-wise ``==``. Counts are int64; a fit count is kept as the float ``np.floor`` (an exact whole number)
until it is known to be below the tasks left, so a fit of billions of tasks cannot overflow an integer.

Inputs are arrays, the DAG in CSR form (:class:`fairpack.solver.sim.pack.Dag`, built once per job by the caller); the
launches come back flat, in the order the reference appends them, with each launch's stage
(``Packed.launches`` groups them by stage, which keeps that order within a stage).

Compiled with ``cache=True``: the first call in a fresh environment compiles (seconds) and stores the machine
code beside this file (or in numba's user cache when that folder is read-only); later processes load it.
numba is imported with this module: callers import it only when a run is large enough to pay for that.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from fairpack.models.tolerance import TIME_ATOL, TIME_RTOL
from fairpack.models.types import FloatArray, IntArray
from fairpack.solver.sim.pack import EPS, Dag, Packed

__all__ = ["late_tasks", "pack_compiled", "run"]


def pack_compiled(
    duration: FloatArray,
    demand: FloatArray,
    count: IntArray | FloatArray,
    parents: Sequence[Sequence[int]],
    capacity: FloatArray,
    priority: FloatArray,
    running: Sequence[tuple[int, float, int]] = (),
    record: bool = True,
) -> Packed:
    """:func:`fairpack.solver.sim.pack.pack`, compiled: the same arguments and the same :class:`Packed`, bit for bit."""
    dag = Dag.of(parents, priority)
    stages = np.array([g for g, _, _ in running], dtype=np.int64)
    remaining = np.array([float(r) for _, r, _ in running], dtype=np.float64)
    tasks = np.array([n for _, _, n in running], dtype=np.int64)
    makespan, stage, start, launched = run(np.asarray(duration, dtype=np.float64),
                                           np.ascontiguousarray(demand, dtype=np.float64),
                                           np.asarray(count).astype(np.int64), dag.parent_ptr, dag.parent_idx,
                                           dag.child_ptr, dag.child_idx, dag.order,
                                           np.asarray(capacity, dtype=np.float64), stages, remaining, tasks,
                                           record)  # fmt: skip
    launches: list[list[tuple[float, int]]] = [[] for _ in range(dag.order.size)]
    for g, t, n in zip(stage.tolist(), start.tolist(), launched.tolist(), strict=True):
        launches[g].append((t, n))
    return Packed(float(makespan), tuple(tuple(x) for x in launches))


# ---- the kernel ---------------------------------------------------------------------------------------


@njit(cache=True)
def _settled(t):  # fmt: skip
    """fairpack.models.tolerance.settled, with Python's max written out."""
    x = TIME_RTOL * abs(t)
    return t - (TIME_ATOL if x < TIME_ATOL else x)


@njit(cache=True)
def _before(e1, g1, n1, e2, g2, n2):  # fmt: skip
    """``(e1, g1, n1) < (e2, g2, n2)`` as Python compares tuples (the first unequal entry decides)."""
    if e1 != e2:
        return e1 < e2
    if g1 != g2:
        return g1 < g2
    return n1 < n2


@njit(cache=True)
def _sift_down(he, hg, hn, start, pos):  # fmt: skip
    """heapq._siftdown."""
    e, g, n = he[pos], hg[pos], hn[pos]
    while pos > start:
        parent = (pos - 1) >> 1
        if _before(e, g, n, he[parent], hg[parent], hn[parent]):
            he[pos], hg[pos], hn[pos] = he[parent], hg[parent], hn[parent]
            pos = parent
            continue
        break
    he[pos], hg[pos], hn[pos] = e, g, n


@njit(cache=True)
def _sift_up(he, hg, hn, size, pos):  # fmt: skip
    """heapq._siftup."""
    start = pos
    e, g, n = he[pos], hg[pos], hn[pos]
    child = 2 * pos + 1
    while child < size:
        right = child + 1
        if right < size and not _before(he[child], hg[child], hn[child], he[right], hg[right], hn[right]):
            child = right
        he[pos], hg[pos], hn[pos] = he[child], hg[child], hn[child]
        pos = child
        child = 2 * pos + 1
    he[pos], hg[pos], hn[pos] = e, g, n
    _sift_down(he, hg, hn, start, pos)


@njit(cache=True)
def _push(he, hg, hn, size, e, g, n):  # fmt: skip
    """heapq.heappush; returns the new size."""
    he[size], hg[size], hn[size] = e, g, n
    _sift_down(he, hg, hn, 0, size)
    return size + 1


@njit(cache=True)
def _pop(he, hg, hn, size):  # fmt: skip
    """heapq.heappop; returns the item and the new size."""
    size -= 1
    e, g, n = he[size], hg[size], hn[size]
    if size > 0:
        e, he[0] = he[0], e
        g, hg[0] = hg[0], g
        n, hn[0] = hn[0], n
        _sift_up(he, hg, hn, size, 0)
    return e, g, n, size


@njit(cache=True)
def _heapify(he, hg, hn, size):  # fmt: skip
    """heapq.heapify."""
    for i in range(size // 2 - 1, -1, -1):
        _sift_up(he, hg, hn, size, i)


@njit(cache=True)
def _fitting(g, pos_ptr, pos_idx, need, free, tol):  # fmt: skip
    """fairpack.solver.sim.pack._fitting as a float: ``max(0, floor(min over r of (free + tol) / d + EPS))``."""
    a = pos_ptr[g]
    k = pos_ptr[g + 1] - a
    if k == 1:
        r = pos_idx[a]
        q = np.floor((free[r] + tol[r]) / need[g, r] + EPS)
    elif k == 2:
        r, s = pos_idx[a], pos_idx[a + 1]
        first = (free[r] + tol[r]) / need[g, r]
        second = (free[s] + tol[s]) / need[g, s]
        q = np.floor((first if first <= second else second) + EPS)
    else:
        r = pos_idx[a]
        least = (free[r] + tol[r]) / need[g, r]
        for i in range(a + 1, a + k):
            r = pos_idx[i]
            x = (free[r] + tol[r]) / need[g, r]
            if x < least:
                least = x
        q = np.floor(least + EPS)
    return q if q > 0 else 0.0


@njit(cache=True)
def _capped(n, fit):  # fmt: skip
    """``min(n, fit)`` of the tasks left and a float fit count (a whole number)."""
    return int(fit) if fit < n else n


@njit(cache=True)
def _record(log_g, log_t, log_n, count, g, t, n):  # fmt: skip
    log_g[count], log_t[count], log_n[count] = g, t, n
    return count + 1


@njit(cache=True)
def _complete(g, done, child_ptr, child_idx, missing, unlaunched, rank, ready, nr):  # fmt: skip
    """The reference's ``complete``: the stage is done; children with nothing missing become runnable."""
    done[g] = True
    for e in range(child_ptr[g], child_ptr[g + 1]):
        c = child_idx[e]
        missing[c] -= 1
        if missing[c] == 0 and unlaunched[c] > 0:
            nr = _insort(ready, nr, rank[c])
    return nr


@njit(cache=True)
def _insort(ready, nr, x):  # fmt: skip
    """bisect.insort_right into the sorted ``ready[:nr]``; returns the new length."""
    i = _bisect_right(ready, nr, x)
    for j in range(nr, i, -1):
        ready[j] = ready[j - 1]
    ready[i] = x
    return nr + 1


@njit(cache=True)
def _bisect_right(ready, nr, x):  # fmt: skip
    lo, hi = 0, nr
    while lo < hi:
        mid = (lo + hi) // 2
        if x < ready[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _in_steady(steady_g, steady_n, ns, g, n):  # fmt: skip
    """``(g, n) in steady``."""
    for i in range(ns):  # noqa: SIM110  (a plain loop compiles to a plain loop)
        if steady_g[i] == g and steady_n[i] == n:
            return True
    return False


@njit(cache=True)
def _same(a, b):  # fmt: skip
    """``a == b`` of two lists of floats."""
    for i in range(a.size):  # noqa: SIM110
        if a[i] != b[i]:
            return False
    return True


@njit(cache=True)
def _waves(g, end, n, left, free, need, pos_ptr, pos_idx, tol, duration, record, log_g, log_t, log_n, logged,
           makespan):  # fmt: skip
    """fairpack.solver.sim.pack._waves (``free`` updated in place); returns ``(t, n, left, makespan, logged)``."""
    resources = free.size
    has_fit = pos_ptr[g + 1] > pos_ptr[g]
    previous = np.empty(resources)
    previous_n = -1  # no previous wave yet (a wave launches at least one task)
    while True:
        t = end
        for r in range(resources):
            free[r] = free[r] + n * need[g, r]
        if t > makespan:
            makespan = t
        n = _capped(left, _fitting(g, pos_ptr, pos_idx, need, free, tol)) if has_fit else left
        if n <= 0:
            return t, 0, left, makespan, logged
        left -= n
        if record:
            logged = _record(log_g, log_t, log_n, logged, g, t, n)
        end = t + duration
        if end > makespan:
            makespan = end
        for r in range(resources):
            free[r] = free[r] - n * need[g, r]
        if left == 0:
            return t, n, left, makespan, logged
        if previous_n == n and _same(previous, free):
            waves = left // n
            if waves:
                for _ in range(waves):
                    t = end
                    if record:
                        logged = _record(log_g, log_t, log_n, logged, g, t, n)
                    end = t + duration
                left -= waves * n
                if end > makespan:
                    makespan = end
                if left == 0:
                    return t, n, left, makespan, logged
        previous[:] = free
        previous_n = n


@njit(cache=True)
def _rounds(he, hg, hn, size, left, duration, record, log_g, log_t, log_n, logged, makespan):  # fmt: skip
    """solver.sim.pack._rounds on the heap's entries, sorted (in place); returns ``(left, makespan, logged)``."""
    for i in range(1, size):  # sorted(heap): an insertion sort by tuple order
        e, g, n = he[i], hg[i], hn[i]
        j = i
        while j > 0 and _before(e, g, n, he[j - 1], hg[j - 1], hn[j - 1]):
            he[j], hg[j], hn[j] = he[j - 1], hg[j - 1], hn[j - 1]
            j -= 1
        he[j], hg[j], hn[j] = e, g, n
    m = size
    g = hg[0]
    j = 0
    while True:
        t, n = he[j], hn[j]
        if left <= n or (m > 1 and _settled(he[j + 1 if j + 1 < m else 0]) <= t):
            break
        left -= n
        if record:
            logged = _record(log_g, log_t, log_n, logged, g, t, n)
        end = t + duration
        if t > makespan:
            makespan = t
        if end > makespan:
            makespan = end
        ordered = m == 1 or end > he[j - 1 if j > 0 else m - 1]
        he[j] = end
        if not ordered:
            break
        j = j + 1 if j + 1 < m else 0
    return left, makespan, logged


@njit(cache=True)
def run(  # noqa: C901  (the reference's one loop, kept whole so it reads against it line by line)
        duration, need, count, parent_ptr, parent_idx, child_ptr, child_idx, order, capacity, run_stage,
        run_remaining, run_tasks, record):  # fmt: skip
    """fairpack.solver.sim.pack.pack on arrays; returns ``(makespan, stage, start, tasks)`` of the launches in order.

    ``count`` int64 per stage; ``order`` the stages by priority (:class:`Dag`); the running tasks as three
    arrays. The launches are empty unless ``record``.
    """
    stages, resources = need.shape
    # Resources each stage needs (d > 0), as the reference's `positive`.
    pos_ptr = np.zeros(stages + 1, dtype=np.int64)
    pos_idx = np.empty(stages * resources, dtype=np.int64)
    k = 0
    for g in range(stages):
        for r in range(resources):
            if need[g, r] > 0:
                pos_idx[k] = r
                k += 1
        pos_ptr[g + 1] = k
    unlaunched = count.copy()
    active = np.zeros(stages, dtype=np.int64)
    missing = np.empty(stages, dtype=np.int64)
    for g in range(stages):
        missing[g] = parent_ptr[g + 1] - parent_ptr[g]
    free = capacity.copy()
    total = 0  # every heap entry holds at least one task of its own
    for g in range(stages):
        total += max(unlaunched[g], 0)
    heap_size = total + run_stage.size + 1
    he = np.empty(heap_size)
    hg = np.empty(heap_size, dtype=np.int64)
    hn = np.empty(heap_size, dtype=np.int64)
    size = 0
    for i in range(run_stage.size):
        g, n = run_stage[i], run_tasks[i]
        active[g] += n
        for r in range(resources):
            free[r] = free[r] - n * need[g, r]
        he[size], hg[size], hn[size] = run_remaining[i], g, n
        size += 1
    _heapify(he, hg, hn, size)
    logs = total + 1 if record else 1
    log_g = np.empty(logs, dtype=np.int64)
    log_t = np.empty(logs)
    log_n = np.empty(logs, dtype=np.int64)
    logged = 0
    rank = np.empty(stages, dtype=np.int64)
    for position in range(stages):
        rank[order[position]] = position
    done = np.zeros(stages, dtype=np.bool_)
    ready = np.empty(stages + 1, dtype=np.int64)
    nr = 0
    # Stages with nothing left are complete from the start (Kahn's order of models.dag.topological_order).
    pending = missing.copy()
    stack = np.empty(stages, dtype=np.int64)
    top = 0
    for g in range(stages):
        if pending[g] == 0:
            stack[top] = g
            top += 1
    while top > 0:
        top -= 1
        g = stack[top]
        if unlaunched[g] == 0 and active[g] == 0 and missing[g] == 0 and not done[g]:
            nr = _complete(g, done, child_ptr, child_idx, missing, unlaunched, rank, ready, nr)
        for e in range(child_ptr[g], child_ptr[g + 1]):
            c = child_idx[e]
            pending[c] -= 1
            if pending[c] == 0:
                stack[top] = c
                top += 1
    nr = 0
    for position in range(stages):
        g = order[position]
        if unlaunched[g] > 0 and missing[g] == 0:
            ready[nr] = position
            nr += 1
    t = 0.0
    makespan = 0.0
    tol = np.empty(resources)
    for r in range(resources):
        c = capacity[r]
        tol[r] = EPS * (c if c > 1.0 else 1.0)
    waved = False
    steady_g = np.empty(stages + 1, dtype=np.int64)
    steady_n = np.empty(stages + 1, dtype=np.int64)
    ns = 0
    watching = False
    watch_g, watch_n = -1, 0
    watch_free = np.empty(resources)
    while True:
        progressed = not waved
        waved = False
        launched = 0
        launch_g, launch_n = -1, 0
        while progressed:
            progressed = False
            last = -1
            while True:
                i = _bisect_right(ready, nr, last)
                if i >= nr:
                    break
                last = ready[i]
                g = order[last]
                n = unlaunched[g]
                if pos_ptr[g + 1] > pos_ptr[g]:
                    n = _capped(n, _fitting(g, pos_ptr, pos_idx, need, free, tol))
                if n <= 0:
                    continue
                unlaunched[g] -= n
                if unlaunched[g] == 0:
                    for j in range(i, nr - 1):
                        ready[j] = ready[j + 1]
                    nr -= 1
                if record:
                    logged = _record(log_g, log_t, log_n, logged, g, t, n)
                launched += 1
                launch_g, launch_n = g, n
                end = t + duration[g]
                if end > makespan:
                    makespan = end
                if duration[g] > 0:
                    active[g] += n
                    for r in range(resources):
                        free[r] = free[r] - n * need[g, r]
                    size = _push(he, hg, hn, size, end, g, n)
                elif unlaunched[g] == 0 and active[g] == 0:
                    nr = _complete(g, done, child_ptr, child_idx, missing, unlaunched, rank, ready, nr)
                    progressed = True
        if watching:
            if (launched == 1 and launch_g == watch_g and launch_n == watch_n and unlaunched[launch_g] > 0
                    and _same(free, watch_free)):  # fmt: skip
                if not _in_steady(steady_g, steady_n, ns, launch_g, launch_n):
                    if ns == steady_g.size:
                        steady_g = np.concatenate((steady_g, np.empty(ns, dtype=np.int64)))
                        steady_n = np.concatenate((steady_n, np.empty(ns, dtype=np.int64)))
                    steady_g[ns], steady_n[ns] = launch_g, launch_n
                    ns += 1
            else:
                ns = 0
            watching = False
        if size == 0:
            break
        if size == 1 and nr == 1 and order[ready[0]] == hg[0] and duration[hg[0]] > 0:
            end, g, n = he[0], hg[0], hn[0]
            size = 0
            t, n, left, makespan, logged = _waves(g, end, n, unlaunched[g], free, need, pos_ptr, pos_idx, tol,
                                                  duration[g], record, log_g, log_t, log_n, logged, makespan)
            active[g] = n
            if n:
                he[0], hg[0], hn[0] = t + duration[g], g, n
                size = 1
            if left == 0:
                nr = 0
            unlaunched[g] = left
            waved = True
            ns = 0
            continue
        t = he[0]
        _, g, n, size = _pop(he, hg, hn, size)
        alone = size == 0 or _settled(he[0]) > t
        if alone and unlaunched[g] > n and _in_steady(steady_g, steady_n, ns, g, n):
            if t > makespan:
                makespan = t
            unlaunched[g] -= n
            if record:
                logged = _record(log_g, log_t, log_n, logged, g, t, n)
            end = t + duration[g]
            if end > makespan:
                makespan = end
            size = _push(he, hg, hn, size, end, g, n)
            waved = True
            every = True
            for i in range(size):
                if hg[i] != g or not _in_steady(steady_g, steady_n, ns, g, hn[i]):
                    every = False
                    break
            if every:
                unlaunched[g], makespan, logged = _rounds(he, hg, hn, size, unlaunched[g], duration[g], record,
                                                          log_g, log_t, log_n, logged, makespan)  # fmt: skip
                _heapify(he, hg, hn, size)
            continue
        watching = alone
        if alone:
            watch_g, watch_n = g, n
            watch_free[:] = free
        else:
            ns = 0
        while True:
            active[g] -= n
            for r in range(resources):
                free[r] = free[r] + n * need[g, r]
            if active[g] == 0 and unlaunched[g] == 0:
                nr = _complete(g, done, child_ptr, child_idx, missing, unlaunched, rank, ready, nr)
            if size == 0 or _settled(he[0]) > t:
                break
            _, g, n, size = _pop(he, hg, hn, size)
        if t > makespan:
            makespan = t
    for g in range(stages):
        if unlaunched[g] > 0:
            makespan = np.inf
            break
    return makespan, log_g[:logged], log_t[:logged], log_n[:logged]


@njit(cache=True)
def late_tasks(stage, ends, tasks, due, out, first, size):  # fmt: skip
    """``out[first + g]``, for every stage ``g < size``: the tasks of its launches ending at or after ``due``.

    Carbyne's urgent tasks from a reverse pack's launches (``stage``, latest ``ends``, ``tasks``): integer sums.
    """
    for g in range(size):
        out[first + g] = 0
    for i in range(stage.size):
        if ends[i] >= due:
            out[first + stage[i]] += tasks[i]

