"""The ``fifo`` policy's compiled event loop as numba code: the kernel that runs where the C extension
(:mod:`fairpack.solver.sim._fifo_loop`, the same code in C) was not built.

:mod:`fairpack.solver.sim.compiled_loop` describes the rules and drives either kernel; both take the same
arguments and give the same schedule to the last bit. Compiled with ``cache=True`` (numba stores the machine
code beside this file, or in its user cache); importing this module imports numba.
"""

from __future__ import annotations

import math

from numba import njit

from fairpack.models.tolerance import FIT_EPS, TIME_ATOL, TIME_RTOL
from fairpack.solver.sim.fifo_state import (
    _ACTIVE,
    _CHANGED,
    _EVENTS,
    _FAILED,
    _HEAP,
    _IN_EVENT,
    _LAUNCHES,
    _NEXT_RELEASE,
    _RELEASED_POS,
    _ROWS,
    _STAMP,
    _T,
    DONE,
    MORE,
    MOST,
    NEED_ROWS,
)


@njit(cache=True)
def _settled(t):  # fmt: skip
    """fairpack.models.tolerance.settled, with Python's max written out."""
    x = TIME_RTOL * abs(t)
    return t - (TIME_ATOL if x < TIME_ATOL else x)


@njit(cache=True)
def _before(e1, s1, e2, s2):  # fmt: skip
    return e1 < e2 or (e1 == e2 and s1 < s2)


@njit(cache=True)
def _heap_push(heap, size, launch, ends):  # fmt: skip
    """heapq.heappush of launch ``launch`` keyed ``(ends[launch], launch)``; returns the new size."""
    pos = size
    e = ends[launch]
    while pos > 0:
        parent = (pos - 1) >> 1
        p = heap[parent]
        if _before(e, launch, ends[p], p):
            heap[pos] = p
            pos = parent
        else:
            break
    heap[pos] = launch
    return size + 1


@njit(cache=True)
def _heap_pop(heap, size, ends):  # fmt: skip
    """heapq.heappop (any correct heap pops the same item: keys are unique); returns the new size."""
    size -= 1
    last = heap[size]
    if size == 0:
        return size
    e = ends[last]
    pos = 0
    child = 1
    while child < size:
        right = child + 1
        c = heap[child]
        if right < size and _before(ends[heap[right]], heap[right], ends[c], c):
            child = right
            c = heap[child]
        if _before(ends[c], c, e, last):
            heap[pos] = c
            pos = child
            child = 2 * pos + 1
        else:
            break
    heap[pos] = last
    return size


@njit(cache=True)
def _find(alive, p):  # fmt: skip
    """The first queue position at or after ``p`` whose group still has tasks to launch (path halving)."""
    while alive[p] != p:
        alive[p] = alive[alive[p]]
        p = alive[p]
    return p


@njit(cache=True)
def _fits(room, d, need, m):  # fmt: skip
    for j in range(need.size):
        r = need[j]
        if room[m, r] < d[r]:
            return False
    return True


@njit(cache=True)
def _fit_count(room, d, need, m):  # fmt: skip
    """solver.sim.cluster.fit_count on machine ``m``."""
    least = math.inf
    for j in range(need.size):
        r = need[j]
        q = room[m, r] / d[r]
        if q < least:
            least = q
    if least == math.inf:
        return math.inf
    v = math.floor(least + FIT_EPS)
    return v if v > 0.0 else 0.0


@njit(cache=True)
def _change(free, room, slack, m, d, n, sign):  # fmt: skip
    """Cluster.take (sign -1) or Cluster.give (sign +1) of ``n`` tasks of ``d`` on machine ``m``."""
    for r in range(d.size):
        value = free[m, r] + n * d[r] if sign > 0 else free[m, r] - n * d[r]
        free[m, r] = value
        room[m, r] = value + slack[m, r]


@njit(cache=True)
def _launch(g, t, st, cand, ncand, demand, need_ptr, need_idx, duration, free, room, slack, unlaunched, running,
            machine_tasks, next_index, launch_end, launch_lo, heap, row_group, row_first, row_n, row_start,
            row_end, row_machine):  # fmt: skip
    """First-fit launch of group ``g`` (it fits some machine) over machines ``cand[:ncand]`` (ascending, a
    superset of the machines it fits); returns the tasks launched."""
    d = demand[g]
    need = need_idx[need_ptr[g]:need_ptr[g + 1]]
    left = unlaunched[g] if unlaunched[g] < MOST else MOST
    end = t + duration[g]
    rows = st[_ROWS]
    launch = st[_LAUNCHES]
    launch_lo[launch] = rows
    total = 0
    for i in range(ncand):
        m = cand[i]
        if not _fits(room, d, need, m):
            continue
        fc = _fit_count(room, d, need, m)
        n = int(fc) if fc < left else left
        if n > 0:
            row_group[rows] = g
            row_first[rows] = next_index[g]
            row_n[rows] = n
            row_start[rows] = t
            row_end[rows] = end
            row_machine[rows] = m
            rows += 1
            next_index[g] += n
            _change(free, room, slack, m, d, n, -1)
            machine_tasks[m] += n
            left -= n
            total += n
        if left <= 0:
            break
    launch_lo[launch + 1] = rows
    launch_end[launch] = end
    st[_HEAP] = _heap_push(heap, st[_HEAP], launch, launch_end)
    st[_LAUNCHES] = launch + 1
    st[_ROWS] = rows
    unlaunched[g] -= total
    running[g] += total
    return total


@njit(cache=True)
def _end_tasks(t, st, heap, launch_end, launch_lo, row_group, row_n, row_machine, demand, free, room, slack,
               capacity, machine_tasks, running, unlaunched, missing, child_ptr, child_idx, dclass, runnable,
               changed, changed_at):  # fmt: skip
    """Every launch with ``settled(end) <= t`` ends, in heap order (the engine's ``_end_tasks``); the machines
    that gained room are listed in ``changed``."""
    while st[_HEAP] > 0 and _settled(launch_end[heap[0]]) <= t:
        launch = heap[0]
        st[_HEAP] = _heap_pop(heap, st[_HEAP], launch_end)
        lo, hi = launch_lo[launch], launch_lo[launch + 1]
        g = row_group[lo]
        d = demand[g]
        n = 0
        for row in range(lo, hi):
            m = row_machine[row]
            count = row_n[row]
            n += count
            if changed_at[m] != st[_STAMP]:
                changed_at[m] = st[_STAMP]
                changed[st[_CHANGED]] = m
                st[_CHANGED] += 1
            _change(free, room, slack, m, d, count, 1)
            machine_tasks[m] -= count
            if machine_tasks[m] == 0:  # an empty machine sheds the round-off of its adds and subtracts
                for r in range(d.size):
                    free[m, r] = capacity[m, r]
                    room[m, r] = capacity[m, r] + slack[m, r]
        running[g] -= n
        if running[g] == 0 and unlaunched[g] == 0:
            for j in range(child_ptr[g], child_ptr[g + 1]):
                c = child_idx[j]
                missing[c] -= 1
                if missing[c] == 0 and unlaunched[c] > 0:
                    runnable[dclass[c]] += 1
                    if runnable[dclass[c]] == 1:
                        st[_ACTIVE] += 1


@njit(cache=True)
def _release(t, st, release_order, release, job_ptr, released_pos, missing, unlaunched, dclass, runnable):  # fmt: skip
    """Jobs with ``settled(release) <= t`` arrive, in ``(release, job)`` order."""
    i = st[_NEXT_RELEASE]
    while i < release_order.size and _settled(release[release_order[i]]) <= t:
        k = release_order[i]
        for g in range(job_ptr[k], job_ptr[k + 1]):
            if missing[g] == 0 and unlaunched[g] > 0:
                runnable[dclass[g]] += 1
                if runnable[dclass[g]] == 1:
                    st[_ACTIVE] += 1
        i += 1
        st[_RELEASED_POS] = released_pos[i - 1]
    st[_NEXT_RELEASE] = i


@njit(cache=True)
def _fits_somewhere(room, d, need, cand, ncand):  # fmt: skip
    for i in range(ncand):  # noqa: SIM110  (numba compiles no generator inside any())
        if _fits(room, d, need, cand[i]):
            return True
    return False


@njit(cache=True)
def _dispatch(st, ft, order, alive, dclass, demand, need_ptr, need_idx, duration, free, room, slack, unlaunched,
              running, missing, runnable, failed_at, machine_tasks, next_index, heap, launch_end, launch_lo,
              row_group, row_first, row_n, row_start, row_end, row_machine, changed, machines):  # fmt: skip
    """FIFO's launches of the event in progress; returns NEED_ROWS when the buffers may be too small for the next
    launch (called again, it continues: passed-over demands stay marked for this event), else MORE."""
    t = ft[_T]
    stamp = st[_STAMP]
    end = st[_RELEASED_POS]
    nchanged = st[_CHANGED]
    changed[:nchanged].sort()  # ascending: first fit over them is first fit over all
    p = _find(alive, 0)
    while p < end and st[_FAILED] < st[_ACTIVE]:
        g = order[p]
        c = dclass[g]
        if missing[g] == 0 and failed_at[c] != stamp:
            need = need_idx[need_ptr[g]:need_ptr[g + 1]]
            # A demand that fitted no machine at the last event fits, if anywhere, on a machine that gained room
            # since (the others only lost some): only those are tested.
            cand, ncand = (changed, nchanged) if failed_at[c] == stamp - 1 else (machines, machines.size)
            while True:
                if not _fits_somewhere(room, demand[g], need, cand, ncand):
                    failed_at[c] = stamp
                    st[_FAILED] += 1
                    break
                if st[_ROWS] + room.shape[0] > row_group.size or st[_LAUNCHES] + 1 >= launch_end.size:
                    return NEED_ROWS
                _launch(g, t, st, cand, ncand, demand, need_ptr, need_idx, duration, free, room, slack, unlaunched,
                        running, machine_tasks, next_index, launch_end, launch_lo, heap, row_group, row_first, row_n,
                        row_start, row_end, row_machine)  # fmt: skip
                if unlaunched[g] == 0:
                    alive[p] = p + 1
                    runnable[c] -= 1
                    if runnable[c] == 0:
                        st[_ACTIVE] -= 1
                    break
        p = _find(alive, p + 1)
    return MORE


@njit(cache=True)
def _next_time(st, heap, launch_end, release_order, release):  # fmt: skip
    t = math.inf
    if st[_HEAP] > 0:
        t = launch_end[heap[0]]
    if st[_NEXT_RELEASE] < release_order.size:
        r = release[release_order[st[_NEXT_RELEASE]]]
        if r < t:
            t = r
    return t


@njit(cache=True)
def slice_run(st, ft, max_events, horizon, order, alive, release_order, release, job_ptr, released_pos, dclass,
              demand, need_ptr, need_idx, duration, child_ptr, child_idx, free, room, slack, capacity, unlaunched,
              running, missing, runnable, failed_at, machine_tasks, next_index, heap, launch_end, launch_lo,
              row_group, row_first, row_n, row_start, row_end, row_machine, changed, changed_at,
              machines):  # fmt: skip
    """Up to ``max_events`` events; returns DONE, MORE (slice over) or NEED_ROWS (grow the row buffers and call
    again: the event in progress continues)."""
    done = 0
    while True:
        if st[_IN_EVENT] == 0:
            if done >= max_events:
                return MORE
            t = _next_time(st, heap, launch_end, release_order, release)
            if t == math.inf or t > horizon:
                return DONE
            ft[_T] = t
            st[_EVENTS] += 1
            done += 1
            st[_STAMP] += 1
            st[_CHANGED] = 0
            _end_tasks(t, st, heap, launch_end, launch_lo, row_group, row_n, row_machine, demand, free, room,
                       slack, capacity, machine_tasks, running, unlaunched, missing, child_ptr, child_idx, dclass,
                       runnable, changed, changed_at)  # fmt: skip
            _release(t, st, release_order, release, job_ptr, released_pos, missing, unlaunched, dclass, runnable)
            st[_FAILED] = 0
            st[_IN_EVENT] = 1
        if _dispatch(st, ft, order, alive, dclass, demand, need_ptr, need_idx, duration, free, room, slack,
                     unlaunched, running, missing, runnable, failed_at, machine_tasks, next_index, heap, launch_end,
                     launch_lo, row_group, row_first, row_n, row_start, row_end, row_machine, changed,
                     machines) == NEED_ROWS:
            return NEED_ROWS
        st[_IN_EVENT] = 0
