"""The one discrete-event cluster simulator every online policy runs in.

Time jumps from event to event; there is no time step. Events are task ends (a heap, tasks of a group
launched together on one machine ending together are one entry), job arrivals (releases) and policy timers.
At every event time, in this order:

1. the tasks ending then free their machine's room; a group whose tasks have all ended completes and
   releases its children (a child starts only after *every* task of every parent group ends); a job
   whose tasks have all ended finishes;
2. jobs arriving then become active; due timers fire (:meth:`Policy.on_timer`);
3. the policy sees the new state (:meth:`Policy.on_event`), then is asked repeatedly which demand is
   served next (:meth:`Policy.next`: a group and at most how many of its tasks) and on which machines
   (:meth:`Policy.place`), until it has nothing more; the engine launches, and records every task.

A task's length is its group's duration, except for tasks reading an input block (``Instance.data``, only
with tracked machines): a chunk placed on a machine runs that machine's most local pending tasks of the
group, each for the duration times its locality level's factor (``solver.sim.locality``). Workloads without
input blocks take none of that path.

Time has the resolution of ``models.tolerance``: at event time ``t`` a task end, a release or a timer due at
``x`` happens now when ``settled(x) <= t`` (``x`` within ``time_tol(x)`` of ``t``), the very rule the checker
judges the schedule by, so a run is verified at every time scale.

A group with placement options (``Stage.options``, tracked machines) runs every task under one option, for
that option's duration (times the locality factor, if it reads input). Option-aware policies name the option
when they launch (:meth:`Simulation.launch`, a gang's tasks all at once on one label group); every other
policy sees only the machines some task-by-task option may use (:meth:`Simulation.fits`, the placements) and
each task runs under the first such option its machine matches ("where it lands").

An option may carry its own demand (``Option.demand``, e.g. 1 GPU + 1 CPU on a GPU machine, or 4 CPUs
anywhere): a task then holds its option's demand, not the stage's, from launch to end -- the machine's room,
the cluster's free total, the job's and tenant's usage all move by it. For such a group a task fits a machine
when some task-by-task option that may use the machine fits its free room with its own demand, and a task
placed by an option-unaware policy lands under the first such option that fits the machine's room *now*; the
default placement scores every machine by best fit under the option a task would land under there. So when
an option with a bigger demand fits nowhere now but another one does, the task runs under the one that fits
rather than wait. Groups without options of their own demand take none of this (their runs are unchanged).

Queues' running-task caps (``Workload.tenant_cap``: a declared tenant's ``tasks``) are the engine's one rule,
whatever the policy: a group whose queue runs its cap is not runnable (:meth:`Simulation.runnable`, hence not a
candidate), a pick's ``most`` is clamped to the queue's room (:meth:`Simulation.cap_room`), and a launch past a cap
is refused (a policy bug). Policies that keep their own queues (sampling, shared state, offers) ask
:meth:`Simulation.cap_room` themselves. Workloads whose caps can never hold a queue back (every cap at least the
queue's tasks) take none of that path.

With a ``horizon`` the run stops there (backlogs never drain); tasks still running are reported with their
ends beyond it.

Observers (:class:`Observer`) are told the state after every event and how long it held: the metrics of
``solver.sim.record`` and the hierarchical share meters are observers.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from fairpack.models.result import Schedule
from fairpack.models.tolerance import settled
from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray
from fairpack.solver import interrupt
from fairpack.solver.sim.cluster import Cluster, fit_count
from fairpack.solver.sim.locality import TaskData
from fairpack.solver.sim.workload import GroupOptions, Workload

#: Standard exponential draws taken from the generator at once (one numpy call per batch, not per task).
DRAW_BATCH = 4096


class Policy(Protocol):
    """What an online scheduler decides; the engine does everything else."""

    name: str

    def start(self, sim: Simulation) -> None:
        """Once, before the first event."""

    def on_event(self, sim: Simulation) -> None:
        """After the ends, arrivals and timers of an event time, before :meth:`next` is asked."""

    def on_timer(self, sim: Simulation) -> None:
        """A timer set with :meth:`Simulation.wake_at` is due."""

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        """``tasks`` tasks of ``group`` ended on ``machine`` (their room is already free)."""

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        """The group served next and at most how many of its tasks (one must fit now), or None to stop."""

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        """``(machine, tasks)`` chunks for up to ``most`` tasks of ``group`` (at least one)."""


class Observer(Protocol):
    def state(self, sim: Simulation) -> None:
        """The state after an event time's launches (it holds until the next event)."""

    def hold(self, sim: Simulation, start: float, end: float) -> None:
        """The state seen by :meth:`state` held over ``[start, end)``."""

    def close(self, sim: Simulation) -> None:
        """The run is over."""


class BasePolicy:
    """Defaults: no set-up, nothing on events or timers, best-fit placement."""

    name = "policy"

    def start(self, sim: Simulation) -> None:
        pass

    def on_event(self, sim: Simulation) -> None:
        pass

    def on_timer(self, sim: Simulation) -> None:
        pass

    def on_finish(self, sim: Simulation, group: int, tasks: int, machine: int) -> None:
        pass

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        raise NotImplementedError

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        return sim.place(group, most)

    def counters(self) -> dict[str, Any]:
        """The policy's own statistics (conflicts, probes, ...), reported in ``Result.extra``."""
        return {}


class Simulation:
    """Mutable state of one run; policies read it and never change it (the engine does)."""

    def __init__(self, instance: Instance, workload: Workload, policy: Policy, placement: str = "pooled",
                 horizon: float | None = None, seed: int = 0,
                 observers: Sequence[Observer] = (), snapshot: bool = False,
                 deadline: float | None = None) -> None:  # fmt: skip
        self.instance = instance
        self.deadline = deadline  # time.perf_counter() value past which the run stops (the caller's time limit)
        self.stopped_at: float | None = None  # simulated time where the deadline (or Ctrl-C) stopped the run
        self._late = False
        self.jobs = workload
        self.policy = policy
        self.cluster = Cluster(instance, placement)
        self.horizon = horizon
        self.observers = list(observers)
        self.t = 0.0
        jobs = workload
        self.free = self.cluster.free_total()
        self.usage = np.zeros((jobs.num_jobs, jobs.capacity.size))  # per job, resources in use
        self.tenant_usage = np.zeros((jobs.num_tenants, jobs.capacity.size))
        self.tenant_running = np.zeros(jobs.num_tenants)
        self.unlaunched = jobs.count.copy()
        self.running = np.zeros(jobs.num_stages, dtype=np.int64)
        self.missing = np.array([len(p) for p in jobs.parents], dtype=np.int64)
        self.released = np.zeros(jobs.num_jobs, dtype=bool)
        self.finished = np.zeros(jobs.num_jobs, dtype=bool)
        self.tasks_left = np.zeros(jobs.num_jobs)
        np.add.at(self.tasks_left, jobs.stage_job, jobs.count)
        self.stage_done = np.zeros(jobs.num_stages, dtype=bool)
        self.running_ends: list[list[tuple[float, int]]] = [[] for _ in range(jobs.num_stages)]  # (end, tasks)
        self.active_changed = True  # set when a job is released or finishes
        self.first_start = np.full(jobs.num_jobs, np.inf)
        self.completion = np.full(jobs.num_jobs, np.inf)
        self.events = 0
        self.launches = 0
        self.completions = 0  # task-end heap entries processed
        self.arrived: list[int] = []  # the jobs released at the current event time
        self.placed: FloatArray | None = np.zeros((jobs.num_stages, self.cluster.machines)) if snapshot else None
        self.machine_tasks = np.zeros(self.cluster.machines, dtype=np.int64)  # tasks running on every machine
        # (end, sequence, group, tasks, machines, tasks per machine, option): one entry per launch and option
        self._heap: list[tuple[float, int, int, int, tuple[int, ...], tuple[int, ...], int]] = []
        self._timers: list[float] = []
        self._sequence = 0
        self._next_index = np.zeros(jobs.num_stages, dtype=np.int64)
        # (group, first index, n, start, end, machine, option)
        self._rows: list[tuple[int, int, int, float, float, int, int]] = []
        self._releases = sorted(range(jobs.num_jobs), key=lambda k: (jobs.release[k], k))
        self._next_release = 0
        self._rng = np.random.default_rng(seed)
        self._draws = self._rng.standard_exponential(DRAW_BATCH) if jobs.exponential else np.zeros(0)
        self._drawn = 0
        # Input blocks (``Instance.data``): a task's duration depends on its machine. Only tracked machines
        # can hold blocks, so a pooled run ignores locality (and the checker expects plain durations there).
        self.data: TaskData | None = None
        if instance.data is not None and placement == "servers" and instance.jobs and not jobs.exponential:
            self.data = TaskData(instance, jobs)
        self.level_counts = [0, 0, 0]  # tasks launched node-local, rack-local, remote
        # The cap rule runs only where a cap can hold a queue back, so a workload without such caps is simulated
        # exactly as before the rule.
        self.capped = jobs.capped
        self.group_tenant = jobs.job_tenant[jobs.stage_job]

    # --- what policies read -----------------------------------------------------------------------

    @property
    def active(self) -> IntArray:
        return np.flatnonzero(self.released & ~self.finished)

    def runnable(self) -> BoolArray:
        """Groups with tasks left to launch whose job has arrived, whose parent groups are all done and whose
        queue runs fewer tasks than its cap."""
        ready = (self.unlaunched > 0) & (self.missing == 0) & self.released[self.jobs.stage_job]
        return ready & self.below_cap() if self.capped else ready

    def below_cap(self, groups: IntArray | None = None) -> BoolArray:
        """Whether the queue of each group (default all) runs fewer tasks than its cap now."""
        below = self.tenant_running < self.jobs.tenant_cap
        return below[self.group_tenant if groups is None else self.group_tenant[groups]]

    def cap_room(self, g: int) -> float:
        """How many more tasks group ``g``'s queue may run now (``inf``: no cap can hold it back)."""
        if not self.capped:
            return math.inf
        tenant = int(self.group_tenant[g])
        return float(self.jobs.tenant_cap[tenant] - self.tenant_running[tenant])

    def at_cap(self, g: int) -> bool:
        """Whether group ``g``'s queue runs its cap now (no task of it may start)."""
        return self.capped and self.cap_room(g) <= 0

    def fits(self, groups: IntArray | None = None) -> BoolArray:
        """Whether one more task of each group (default all) fits the free room of some machine (for a group
        with placement options, a machine a task-by-task option may use, under that option's demand)."""
        demand = self.jobs.demand if groups is None else self.jobs.demand[groups]
        found = self.cluster.fits_any(demand)
        if self.jobs.has_options:
            chosen = np.arange(self.jobs.num_stages) if groups is None else np.asarray(groups)
            for i, g in enumerate(chosen.tolist()):
                entry = self.jobs.options[g]
                if entry is not None and entry.own_demand:  # the stage's demand says nothing: test each option's
                    found[i] = bool(np.any(entry.landing_now(self.cluster.room) >= 0))
                elif entry is not None and found[i]:
                    found[i] = bool(np.any(self.cluster.fits(demand[i]) & entry.landing()))
        return found

    def candidates(self) -> IntArray:
        """Runnable groups one of whose tasks fits some machine now."""
        runnable = np.flatnonzero(self.runnable())
        return runnable[self.fits(runnable)]

    def place(self, group: int, most: int) -> list[tuple[int, int]]:
        """Best fit (the default placement), on the machines a task-by-task option may use if it has options."""
        entry = self.jobs.options[group] if self.jobs.has_options else None
        if entry is not None and entry.own_demand:
            return self._best_fit_landing(entry, most)
        return self.cluster.best_fit(self.jobs.demand[group], most, None if entry is None else entry.landing())

    def _best_fit_landing(self, entry: GroupOptions, most: int) -> list[tuple[int, int]]:
        """Best fit for a group whose options carry their own demands: every machine scored (as
        :meth:`Cluster.best_fit` scores) under the option a task would land under there now, then filled, in
        score order (ties to the lower machine), with as many tasks of that option as fit its room."""
        cluster = self.cluster
        landing = entry.landing_now(cluster.room)
        usable = np.flatnonzero(landing >= 0)
        if usable.size == 0:
            return []
        demand = entry.demand[landing[usable]]
        score = ((cluster.free[usable] - demand) * cluster.inverse_total[None, :]).sum(axis=1)
        chunks: list[tuple[int, int]] = []
        left = most
        for i in np.lexsort((usable, score)).tolist():
            n = int(min(left, fit_count(cluster.room[usable[i]], demand[i])))
            if n > 0:
                chunks.append((int(usable[i]), n))
                left -= n
            if left <= 0:
                break
        return chunks

    def task_demand(self, g: int, option: int) -> FloatArray:
        """One task's demand of group ``g`` run under ``option`` (``-1``: none): the option's own demand when the
        group's options carry their own, else the group's (the very array, so plain runs are unchanged)."""
        if option >= 0 and self.jobs.has_option_demands:
            entry = self.jobs.options[g]
            if entry is not None and entry.own_demand:
                return entry.demand[option]
        return self.jobs.demand[g]

    def wake_at(self, time: float) -> None:
        """Call the policy's :meth:`Policy.on_timer` at ``time`` (an event of its own)."""
        heapq.heappush(self._timers, max(float(time), self.t))

    # --- the loop ---------------------------------------------------------------------------------

    def _next_time(self) -> float:
        candidates = [self._heap[0][0] if self._heap else math.inf, self._timers[0] if self._timers else math.inf]
        if self._next_release < len(self._releases):
            candidates.append(float(self.jobs.release[self._releases[self._next_release]]))
        return min(candidates)

    def run(self) -> Simulation:
        """Run to the end (every task done) or to the horizon; returns itself."""
        self.policy.start(self)
        previous = 0.0
        while True:
            if self._late or interrupt.requested() or (self.deadline is not None
                                                       and time.perf_counter() > self.deadline):  # fmt: skip
                # Out of wall time, or interrupted (solver.interrupt): the state so far is what the run returns.
                self.stopped_at = previous
                for observer in self.observers:
                    observer.hold(self, previous, previous)
                break
            t = self._next_time()
            stop = self.horizon if self.horizon is not None else math.inf
            if t == math.inf or t > stop:
                end = stop if math.isfinite(stop) else previous
                for observer in self.observers:
                    observer.hold(self, previous, max(end, previous))
                break
            for observer in self.observers:
                observer.hold(self, previous, t)
            self.t = previous = t
            self.events += 1
            self._end_tasks(t)
            self._release_jobs(t)
            while self._timers and settled(self._timers[0]) <= t:
                heapq.heappop(self._timers)
                self.policy.on_timer(self)
            self.policy.on_event(self)
            self.active_changed = False
            self._dispatch()
            for observer in self.observers:
                observer.state(self)
        for observer in self.observers:
            observer.close(self)
        return self

    def unfinished(self) -> IntArray:
        """Jobs with tasks never launched: the policy could not place them (slots too small, ...) or the
        horizon came first."""
        left = np.zeros(self.jobs.num_jobs, dtype=bool)
        left[self.jobs.stage_job[self.unlaunched > 0]] = True
        return np.flatnonzero(left)

    def _end_tasks(self, t: float) -> None:
        jobs, heap = self.jobs, self._heap
        while heap and settled(heap[0][0]) <= t:
            # One entry per launch: its tasks end together on one or more machines (group totals once).
            end, _, g, n, machines, counts, option = heapq.heappop(heap)
            self.completions += len(machines)
            k = int(jobs.stage_job[g])
            tenant = int(jobs.job_tenant[k])
            demand = self.task_demand(g, option)  # what the tasks took at launch
            amount = n * demand
            self.running_ends[g].remove((end, n))
            self.running[g] -= n
            self.free += amount
            self.usage[k] -= amount
            self.tenant_usage[tenant] -= amount
            self.tenant_running[tenant] -= n
            self.tasks_left[k] -= n
            self.cluster.give_many(machines, demand, counts)
            for machine, count in zip(machines, counts, strict=True):
                if self.placed is not None:
                    self.placed[g, machine] -= count
                self.machine_tasks[machine] -= count
                if self.machine_tasks[machine] == 0:
                    self.cluster.reset(machine)  # an empty machine sheds the round-off of its adds and subtracts
                self.policy.on_finish(self, g, count, machine)
            if self.running[g] == 0 and self.unlaunched[g] == 0:
                self.stage_done[g] = True
                for c in jobs.children[g]:
                    self.missing[c] -= 1
            if self.tasks_left[k] == 0:
                self.finished[k] = True
                self.completion[k] = end
                self.usage[k] = 0.0
                self.active_changed = True

    def _release_jobs(self, t: float) -> None:
        jobs = self.jobs
        order = self._releases
        self.arrived = []
        while self._next_release < len(order) and settled(float(jobs.release[order[self._next_release]])) <= t:
            self.released[order[self._next_release]] = True
            self.arrived.append(order[self._next_release])
            self.active_changed = True
            self._next_release += 1

    def _dispatch(self) -> None:
        while True:
            # One event can launch millions of tasks, and one launch can take a tenth of a second (a policy that
            # scans a million machines): stop inside the event, at the first launch past the deadline (checking
            # every 1,024th launch let a 2 s limit run 100 s; a clock read costs well under a launch).
            if interrupt.requested() or (self.deadline is not None and time.perf_counter() > self.deadline):
                self._late = True
                return
            choice = self.policy.next(self)
            if choice is None:
                return
            g, most = choice
            most = int(min(most, self.unlaunched[g]))
            if self.capped:
                most = int(min(most, self.cap_room(g)))
            if most <= 0:
                raise RuntimeError(f"policy {self.policy.name} picked group {g}, whose queue "
                                   f"{self.jobs.tenants[int(self.group_tenant[g])]!r} runs its cap")  # fmt: skip
            chunks = self.policy.place(self, g, most)
            if sum(count for _, count in chunks) <= 0:
                raise RuntimeError(f"policy {self.policy.name} picked group {g}, which cannot launch a task")
            self.launch(g, chunks)

    def _duration(self, g: int) -> float:
        if not self.jobs.exponential:
            return float(self.jobs.duration[g])
        if self._drawn == DRAW_BATCH:
            self._draws, self._drawn = self._rng.standard_exponential(DRAW_BATCH), 0
        value = float(self._draws[self._drawn]) * float(self.jobs.duration[g])
        self._drawn += 1
        return value

    def _push(self, g: int, end: float, n: int, machines: tuple[int, ...], counts: tuple[int, ...],
              option: int = -1) -> None:  # fmt: skip
        heapq.heappush(self._heap, (end, self._sequence, g, n, machines, counts, option))
        self._sequence += 1
        self.running_ends[g].append((end, n))
        if self.jobs.exponential:
            self._rows.append((g, int(self._next_index[g]), n, self.t, end, machines[0], -1))
            self._next_index[g] += n

    def _options_of(self, g: int, chunks: list[tuple[int, int]], option: int | None) -> list[int]:
        """The option every chunk runs under (``-1``: the group has none); see the module docstring."""
        entry = self.jobs.options[g] if self.jobs.has_options else None
        if entry is None:
            if option is not None and option >= 0:
                raise RuntimeError(f"policy {self.policy.name} named option {option} of group {g}, which has none")
            return [-1] * len(chunks)
        if option is not None:
            chosen = [option] * len(chunks)
        elif entry.own_demand:  # where it lands, under the first option whose own demand fits the room now
            chosen = [entry.landed(m, self.cluster.room[m]) for m, _ in chunks]
        else:
            chosen = [entry.landed(m) for m, _ in chunks]
        for (machine, _), o in zip(chunks, chosen, strict=True):
            if not (0 <= o < entry.count and entry.machines[o, machine]):
                raise RuntimeError(f"policy {self.policy.name} put group {g} on machine {machine}, which option "
                                   f"{o} cannot use")  # fmt: skip
        if option is not None and entry.gang[option]:
            groups = {int(entry.group[option, m]) for m, _ in chunks}
            whole = sum(n for _, n in chunks) == self.unlaunched[g] == self.jobs.count[g]
            if len(groups) != 1 or not whole:
                raise RuntimeError(f"policy {self.policy.name} launched gang option {option} of group {g} "
                                   "partly, or over several label groups")  # fmt: skip
        return chosen

    def launch(self, g: int, chunks: list[tuple[int, int]], option: int | None = None) -> None:
        """Start the chunks' tasks of group ``g`` now (only the engine and ported policies call this), under
        placement ``option`` (None: where each chunk lands; see the module docstring)."""
        jobs, t = self.jobs, self.t
        k = int(jobs.stage_job[g])
        tenant = int(jobs.job_tenant[k])
        demand = jobs.demand[g]
        if self.capped and self.tenant_running[tenant] + sum(n for _, n in chunks) > jobs.tenant_cap[tenant]:
            raise RuntimeError(f"policy {self.policy.name} launched tasks of group {g} past the cap of "
                               f"{jobs.tenant_cap[tenant]:g} running tasks of queue "
                               f"{jobs.tenants[tenant]!r}")  # fmt: skip
        total = 0
        chosen = self._options_of(g, chunks, option)
        entry = jobs.options[g] if jobs.has_options else None
        if self.data is not None and self.data.has_input[g]:
            self._launch_located(g, chunks, chosen)
        elif jobs.exponential:  # every task draws its own length: one heap entry per task
            for machine, count in chunks:
                for _ in range(count):
                    self._push(g, t + self._duration(g), 1, (machine,), (1,))
        elif entry is not None:  # options: one heap entry per option's length
            for o in sorted(set(chosen)):
                mine = [chunk for chunk, c in zip(chunks, chosen, strict=True) if c == o]
                self._push_launch(g, mine, float(entry.duration[o]), o)
        else:  # the launch's tasks all end together: one heap entry
            self._push_launch(g, chunks, float(jobs.duration[g]), -1)
        for machine, count in chunks:
            self.machine_tasks[machine] += count
            if self.placed is not None:
                self.placed[g, machine] += count
            total += count
        if entry is not None and entry.own_demand:  # every chunk takes its option's own demand
            amount = np.zeros_like(demand)
            for (machine, count), o in zip(chunks, chosen, strict=True):
                self.cluster.take(machine, entry.demand[o], count)
                amount += count * entry.demand[o]
        else:
            self.cluster.take_many([m for m, _ in chunks], demand, [c for _, c in chunks])
            amount = total * demand
        self.unlaunched[g] -= total
        self.running[g] += total
        self.free -= amount
        self.usage[k] += amount
        self.tenant_usage[tenant] += amount
        self.tenant_running[tenant] += total
        self.first_start[k] = min(self.first_start[k], t)
        self.launches += 1

    def _push_launch(self, g: int, chunks: list[tuple[int, int]], length: float, option: int) -> None:
        """One heap entry for chunks whose tasks all run ``length``, and their rows."""
        t = self.t
        machines = tuple(machine for machine, _ in chunks)
        counts = tuple(count for _, count in chunks)
        self._push(g, t + length, sum(counts), machines, counts, option)
        for machine, count in chunks:
            self._rows.append((g, int(self._next_index[g]), count, t, t + length, machine, option))
            self._next_index[g] += count

    def _launch_located(self, g: int, chunks: list[tuple[int, int]], options: list[int]) -> None:
        """Tasks reading input blocks: each chunk runs the machine's most local pending tasks, each for the
        stage's (or its option's) duration times its level's factor; one heap entry per (machine, level)."""
        assert self.data is not None
        t = self.t
        entry = self.jobs.options[g] if self.jobs.has_options else None
        for (machine, count), option in zip(chunks, options, strict=True):
            base = float(self.jobs.duration[g]) if entry is None else float(entry.duration[option])
            by_level: dict[int, int] = {}
            for task, level in self.data.take(g, machine, count):
                end = t + base * self.data.factors[level]
                self._rows.append((g, task, 1, t, end, machine, option))
                by_level[level] = by_level.get(level, 0) + 1
                self.level_counts[level] += 1
            for level, n in sorted(by_level.items()):
                self._push(g, t + base * self.data.factors[level], n, (machine,), (n,), option)

    # --- results ----------------------------------------------------------------------------------

    def schedule(self) -> Schedule:
        """Every launched task: job, stage, index, start, end and (with servers) its machine."""
        jobs = self.jobs
        data = np.array(self._rows, dtype=np.float64).reshape(-1, 7)
        stage = data[:, 0].astype(np.int64)
        n = data[:, 2].astype(np.int64)
        g = np.repeat(stage, n)
        offsets = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        index = np.repeat(data[:, 1].astype(np.int64), n) + offsets
        server, number = self.cluster.machine_names(self.instance)
        placement: tuple[Any, Any] = (None, None)
        if server is not None and number is not None:
            machine = np.repeat(data[:, 5].astype(np.int64), n)
            placement = (server[machine], number[machine])
        option = np.repeat(data[:, 6].astype(np.int64), n)
        return Schedule(jobs.stage_job[g], jobs.stage_local[g], index, np.repeat(data[:, 3], n),
                        np.repeat(data[:, 4], n), None, *placement,
                        option=option if np.any(option >= 0) else None)  # fmt: skip

    def counters(self) -> dict[str, Any]:
        counters: dict[str, Any] = {"events": self.events, "launches": self.launches}
        if self.data is not None:
            counters["locality"] = dict(zip(("node", "rack", "remote"), self.level_counts, strict=True))
        return counters
