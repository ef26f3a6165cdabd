"""The ``fifo`` policy's event loop compiled with numba: the engine's schedule to the last bit, without a Python
call per event.

:class:`fairpack.solver.sim.engine.Simulation` running :class:`fairpack.solver.sim.policies.flat.Fifo` is the
reference; :class:`CompiledRun` runs the same event loop on arrays when the workload is in its domain
(:func:`in_domain`: DAG jobs, no placement options, no input blocks, no queue cap that can hold a queue back, no
observers); ``solver.sim.run`` leaves every other workload to the engine. The same rules, step by step:

* event times are the earliest task end (a heap of launches ordered by ``(end, launch number)``, as the
  engine's ``(end, sequence)``) or job release; at time ``t`` every launch with ``settled(end) <= t`` ends, in
  heap order, giving its room back machine by machine with the same float operations (``free + n * d``, then
  ``room = free + slack``; an emptied machine is reset to its capacity), and every job with
  ``settled(release) <= t`` arrives, in ``(release, job)`` order;
* groups are served in FIFO order (release, then group number); a runnable group is tested against every
  machine (``room >= demand`` on the resources it needs), launched first-fit (``fit_count`` per machine, at most
  ``2**30`` tasks a launch) while it fits, and passed over once it does not.

The engine's FIFO remembers the groups it passed over and re-tests them only on the machines where tasks ended;
that is an optimisation of "test against every machine" (room elsewhere only shrank), so the two agree. Here the
saving is different: free room only shrinks within an event, so a demand vector that did not fit once does not
fit again in that event, and the scan stops as soon as every demand vector with runnable work has failed (one
test per event on a saturated one-slot cluster, whatever the queue's length); a demand vector that failed at the
previous event is tested only on the machines where tasks ended since (the others only lost room: the engine's
FIFO rule). Launched-out groups leave the queue through a "next alive" table with path halving.

The loop runs in slices of events; between slices the caller's deadline and Ctrl-C are checked (the run then
stops between events, or between launches when a slice ran out of row space mid-event), and the row buffers
grow. Compiled with ``cache=True`` (numba stores the machine code beside this file, or in its user cache);
numba is imported with this module, so callers import it only for runs large enough to pay for that.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from numba import njit

from fairpack.models.result import Schedule
from fairpack.models.tolerance import FIT_EPS, TIME_ATOL, TIME_RTOL
from fairpack.models.types import Instance, IntArray
from fairpack.solver import interrupt
from fairpack.solver.sim.cluster import Cluster
from fairpack.solver.sim.workload import Workload

#: Events per compiled slice between checks of the deadline and of Ctrl-C.
SLICE_EVENTS = 1 << 15
#: At most this many tasks a launch (the engine's FIFO asks for ``min(unlaunched, 1 << 30)``).
MOST = 1 << 30

# Slots of the integer state vector.
(_EVENTS, _LAUNCHES, _ROWS, _HEAP, _NEXT_RELEASE, _RELEASED_POS, _IN_EVENT, _STAMP, _FAILED, _ACTIVE,
 _CHANGED) = range(11)
# Slots of the float state vector.
_T = 0
# Statuses of a slice.
DONE, MORE, NEED_ROWS = 0, 1, 2


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


def _classes(demand: np.ndarray) -> IntArray:
    """Every group's demand vector as a class number (groups with bitwise equal vectors share one)."""
    if demand.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    _, inverse = np.unique(np.ascontiguousarray(demand), axis=0, return_inverse=True)
    return np.asarray(inverse, dtype=np.int64).reshape(-1)


def _csr(lists: tuple[tuple[int, ...], ...]) -> tuple[IntArray, IntArray]:
    sizes = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    flat = np.fromiter((c for x in lists for c in x), dtype=np.int64, count=int(ptr[-1]))
    return ptr, flat


def _grown(array: np.ndarray, size: int, used: int) -> np.ndarray:
    fresh = np.zeros(size, dtype=array.dtype)
    fresh[:used] = array[:used]
    return fresh


def in_domain(instance: Instance, jobs: Workload, placement: str) -> bool:
    """Whether the compiled loop runs this workload exactly as the engine would (module docstring)."""
    return (jobs.kind == "jobs" and not jobs.exponential and not jobs.has_options and jobs.num_stages > 0
            and not (instance.data is not None and placement == "servers")
            and not jobs.capped  # no queue cap that can hold a queue back (the engine's cap rule is not here)
            and bool(np.all(np.isfinite(jobs.count))) and bool(np.all(jobs.count >= 1)))  # fmt: skip


class CompiledRun:
    """One FIFO run on arrays; the engine's :class:`Simulation` answers (``schedule``, ``counters``,
    ``unfinished``, ``stopped_at``) from the same state."""

    def __init__(self, instance: Instance, jobs: Workload, placement: str = "servers",
                 horizon: float | None = None, deadline: float | None = None) -> None:  # fmt: skip
        self.instance = instance
        self.jobs = jobs
        self.cluster = Cluster(instance, placement)
        self.horizon = math.inf if horizon is None else float(horizon)
        self.deadline = deadline
        self.stopped_at: float | None = None
        groups = jobs.num_stages
        demand = np.ascontiguousarray(jobs.demand, dtype=np.float64)
        self.order = np.lexsort((np.arange(groups), jobs.release[jobs.stage_job])).astype(np.int64)
        self.release_order = np.lexsort((np.arange(jobs.num_jobs), jobs.release)).astype(np.int64)
        sizes = np.bincount(jobs.stage_job, minlength=jobs.num_jobs).astype(np.int64)
        self.job_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.released_pos = np.cumsum(sizes[self.release_order]).astype(np.int64)
        self.dclass = _classes(demand)
        positive = demand > 0
        self.need_ptr = np.concatenate([[0], np.cumsum(positive.sum(axis=1))]).astype(np.int64)
        self.need_idx = np.nonzero(positive)[1].astype(np.int64)
        self.demand = demand
        self.duration = np.asarray(jobs.duration, dtype=np.float64)
        if any(jobs.children):
            self.child_ptr, self.child_idx = _csr(jobs.children)
            missing = np.fromiter((len(p) for p in jobs.parents), dtype=np.int64, count=groups)
        else:
            self.child_ptr, self.child_idx = np.zeros(groups + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
            missing = np.zeros(groups, dtype=np.int64)
        self.missing = missing
        self.unlaunched = jobs.count.astype(np.int64)
        self.running = np.zeros(groups, dtype=np.int64)
        self.runnable = np.zeros(int(self.dclass.max()) + 1 if groups else 0, dtype=np.int64)
        self.failed_at = np.full(self.runnable.size, -1, dtype=np.int64)
        self.alive = np.arange(groups + 1, dtype=np.int64)
        self.free = np.ascontiguousarray(self.cluster.free)
        self.room = np.ascontiguousarray(self.cluster.room)
        self.slack = np.ascontiguousarray(self.cluster.slack)
        self.capacity = np.ascontiguousarray(self.cluster.capacity)
        self.machine_tasks = np.zeros(self.cluster.machines, dtype=np.int64)
        self.changed = np.zeros(self.cluster.machines, dtype=np.int64)  # machines with task ends this event
        self.changed_at = np.full(self.cluster.machines, -1, dtype=np.int64)  # the event that listed them last
        self.machines = np.arange(self.cluster.machines, dtype=np.int64)
        self.next_index = np.zeros(groups, dtype=np.int64)
        self.state = np.zeros(11, dtype=np.int64)
        self.time = np.zeros(1, dtype=np.float64)
        size = int(min(max(groups, 16), 1 << 22)) + self.cluster.machines
        self.row_group, self.row_first, self.row_n, self.row_machine = (np.empty(size, dtype=np.int64)
                                                                        for _ in range(4))  # fmt: skip
        self.row_start, self.row_end = np.empty(size), np.empty(size)
        self.launch_end, self.launch_lo, self.heap = (np.zeros(size + 1), np.zeros(size + 1, dtype=np.int64),
                                                      np.zeros(size + 1, dtype=np.int64))  # fmt: skip

    def _allocate(self, size: int) -> None:
        """Row and launch buffers of ``size`` entries, the used part kept."""
        rows, launches = int(self.state[_ROWS]), int(self.state[_LAUNCHES]) + 1
        self.row_group, self.row_first, self.row_n, self.row_machine, self.row_start, self.row_end = (
            _grown(a, size, rows) for a in (self.row_group, self.row_first, self.row_n, self.row_machine,
                                            self.row_start, self.row_end))  # fmt: skip
        self.launch_end, self.launch_lo, self.heap = (_grown(a, size + 1, launches)
                                                      for a in (self.launch_end, self.launch_lo, self.heap))

    def _late(self) -> bool:
        return interrupt.requested() or (self.deadline is not None and time.perf_counter() > self.deadline)

    def run(self) -> CompiledRun:
        """Run to the end (every task done) or to the horizon; returns itself."""
        while True:
            if self._late():
                self.stopped_at = float(self.time[_T])
                return self
            status = slice_run(self.state, self.time, SLICE_EVENTS, self.horizon, self.order, self.alive,
                               self.release_order, self.jobs.release, self.job_ptr, self.released_pos, self.dclass,
                               self.demand, self.need_ptr, self.need_idx, self.duration, self.child_ptr,
                               self.child_idx, self.free, self.room, self.slack, self.capacity, self.unlaunched,
                               self.running, self.missing, self.runnable, self.failed_at, self.machine_tasks,
                               self.next_index, self.heap, self.launch_end, self.launch_lo, self.row_group,
                               self.row_first, self.row_n, self.row_start, self.row_end, self.row_machine,
                               self.changed, self.changed_at, self.machines)  # fmt: skip
            if status == DONE:
                return self
            if status == NEED_ROWS:
                self._allocate(2 * self.row_group.size + self.cluster.machines)

    # --- the engine's answers -----------------------------------------------------------------------

    def schedule(self) -> Schedule:
        """Every launched task: job, stage, index, start, end and (with servers) its machine (the engine's rows)."""
        jobs, rows = self.jobs, int(self.state[_ROWS])
        stage, n = self.row_group[:rows], self.row_n[:rows]
        g = np.repeat(stage, n)
        offsets = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        index = np.repeat(self.row_first[:rows], n) + offsets
        server, number = self.cluster.machine_names(self.instance)
        placement: tuple[Any, Any] = (None, None)
        if server is not None and number is not None:
            machine = np.repeat(self.row_machine[:rows], n)
            placement = (server[machine], number[machine])
        return Schedule(jobs.stage_job[g], jobs.stage_local[g], index, np.repeat(self.row_start[:rows], n),
                        np.repeat(self.row_end[:rows], n), None, *placement)  # fmt: skip

    def counters(self) -> dict[str, Any]:
        return {"events": int(self.state[_EVENTS]), "launches": int(self.state[_LAUNCHES])}

    def unfinished(self) -> IntArray:
        left = np.zeros(self.jobs.num_jobs, dtype=bool)
        left[self.jobs.stage_job[self.unlaunched > 0]] = True
        return np.flatnonzero(left)


def warm_up() -> None:
    """Compile the loop into numba's cache (``make`` runs this once after installing) on a tiny workload."""
    from fairpack.models.types import Job, ServerClass, Stage

    instance = Instance(("cpu",), (ServerClass("m", np.array([1.0]), 2),),
                        jobs=tuple(Job(f"j{k}", (Stage("s", 1, 1.0, np.array([1.0])),), 1.0, 0.0) for k in range(3)))
    CompiledRun(instance, Workload.of_jobs(instance, "servers"), "servers").run()
