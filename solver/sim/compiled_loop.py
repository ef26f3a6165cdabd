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
grow.

Two kernels run the slices, with the same arguments and the same schedule to the last bit: the C extension
:mod:`fairpack.solver.sim._fifo_loop`, built when fairpack is installed, and the numba code of
:mod:`fairpack.solver.sim.fifo_numba` where the extension was not built (no C compiler at install). The extension
is preferred because it loads in a millisecond, where a process that runs numba's kernel first pays about 0.45 s
of CPU to import numba and load its cached machine code (a third of a 100,000-job run). This module imports
neither until a run starts.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from fairpack.models.result import Schedule
from fairpack.models.types import Instance, IntArray
from fairpack.solver import interrupt
from fairpack.solver.kernels import KERNELS, built, pick
from fairpack.solver.sim.cluster import Cluster
from fairpack.solver.sim.fifo_state import _EVENTS, _LAUNCHES, _ROWS, _T, DONE, NEED_ROWS
from fairpack.solver.sim.workload import Workload

#: Events per compiled slice between checks of the deadline and of Ctrl-C.
SLICE_EVENTS = 1 << 15


def c_built() -> bool:
    """Whether the loop's C extension was built (found without loading it)."""
    return built("fairpack.solver.sim._fifo_loop")


def kernel(name: str = "auto") -> Callable[..., int]:
    """The slice function of kernel ``name`` ('c', 'numba', or 'auto': the C extension if it was built).

    Raises
    ------
    ImportError
        'c' asked for and the extension was not built.
    """
    slice_run: Callable[..., int] = pick(name, "fairpack.solver.sim._fifo_loop", "fairpack.solver.sim.fifo_numba",
                                         "slice_run")  # fmt: skip
    return slice_run


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
                 horizon: float | None = None, deadline: float | None = None, kernel_name: str = "auto"
                 ) -> None:  # fmt: skip
        self.slice_run = kernel(kernel_name)
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
        self.release = np.ascontiguousarray(jobs.release, dtype=np.float64)
        sizes = np.bincount(jobs.stage_job, minlength=jobs.num_jobs).astype(np.int64)
        self.job_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.released_pos = np.cumsum(sizes[self.release_order]).astype(np.int64)
        self.dclass = _classes(demand)
        positive = demand > 0
        self.need_ptr = np.concatenate([[0], np.cumsum(positive.sum(axis=1))]).astype(np.int64)
        self.need_idx = np.nonzero(positive)[1].astype(np.int64)
        self.demand = demand
        self.duration = np.ascontiguousarray(jobs.duration, dtype=np.float64)
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
            status = self.slice_run(self.state, self.time, SLICE_EVENTS, self.horizon, self.order, self.alive,
                               self.release_order, self.release, self.job_ptr, self.released_pos, self.dclass,
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
    """Compile the numba kernel into numba's cache (``make`` runs this once after installing) on a tiny workload,
    and run the C kernel if it was built."""
    from fairpack.models.types import Job, ServerClass, Stage

    instance = Instance(("cpu",), (ServerClass("m", np.array([1.0]), 2),),
                        jobs=tuple(Job(f"j{k}", (Stage("s", 1, 1.0, np.array([1.0])),), 1.0, 0.0) for k in range(3)))
    for name in KERNELS:
        with contextlib.suppress(ImportError):
            CompiledRun(instance, Workload.of_jobs(instance, "servers"), "servers", kernel_name=name).run()
