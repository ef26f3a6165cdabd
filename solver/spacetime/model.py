"""The time-indexed MILP for space-time packing of DAG jobs (method ``spacetime``; formulation only).

Time
----
Time is cut into slots ``t = 0 .. H-1`` of length ``slot = instance.time_slot``. A stage of duration
``D`` occupies ``d = ceil(D / slot)`` slots and a job released at ``r`` may start from slot
``ceil(r / slot)``; a schedule in slots maps back to times by ``start = t * slot`` and
``end = start + D`` (the true duration). Rounding up keeps every slotted schedule feasible in real time
(a task reserves at least its true duration). When every duration and release is a whole number of
slots (``SlotData.exact``) the slotted optimum is the true optimum: some optimal schedule is
left-justified, and then every start is a release or another task's end, i.e. a whole slot. Otherwise
the optimum and the bound hold for the slotted problem only.

Variables (per stage ``s`` of job ``k`` with ``n_s`` tasks; ``l`` a capacity unit, see Placement)
------------------------------------------------------------------------------------------------
* ``x[s,l,t]`` integer in ``[0, n_s]``: how many tasks of ``s`` start in slot ``t`` (aggregated: the
  tasks of a stage are identical), only for ``t`` in the stage's window ``[a_s, b_s]`` where
  ``a_s = release_k + head_s`` (longest precedence path before ``s``) and ``b_s = U_k - tail_s``
  (``tail_s``: longest path from the start of ``s`` to the end of the job, ``U_k``: an upper bound on
  ``C_k`` from the horizon, the objective value of a heuristic schedule, or a fair cap).
* ``y[s,l,t] = sum_{t' <= t} x[s,l,t']`` (continuous, one equality row each): tasks started by ``t``.
* ``z[s,t]`` binary for ``t`` in ``[a_s + d_s, b_s + d_s - 1]``: "stage ``s`` has completed by slot
  ``t``", enforced by ``n_s z[s,t] <= sum_l y[s,l,t - d_s]`` (all tasks started ``d_s`` slots ago),
  and monotone ``z[s,t] <= z[s,t+1]``. Before the window ``z = 0``, after it ``z = 1`` (the window
  bounds guarantee both), so no variable is needed there.
* ``C_k`` (continuous, slots) completion of job ``k``; ``M`` the makespan when the objective uses it.

Constraints
-----------
* all tasks start: ``sum_l y[s,l,b_s] = n_s``;
* capacity per resource ``r``, unit ``l`` and slot ``t``:
  ``sum_s demand[s,r] * running[s,l,t] <= cap[l,r]`` where ``running = y[t] - y[t - d_s]`` (tasks started
  in ``(t - d_s, t]``), written with the ``x`` of those slots directly when ``d_s <= 2``; resources whose
  total demand can never exceed the capacity get no rows;
* barriers: for every parent ``p`` of child ``c`` and slot ``t``:
  ``sum_l y[c,l,t] <= n_c z[p,t]`` -- no task of ``c`` starts before every task of ``p`` has finished.
  The LP relaxation of this pair is ``y_c(t) / n_c <= y_p(t - d_p) / n_p`` (the child may have started
  no larger fraction than the parent has finished), the aggregated version of the strong
  (cumulative) time-indexed precedence inequality; binary ``z`` makes it an exact barrier;
* completion: for every sink stage ``s`` of job ``k``: ``C_k >= a_s + d_s + (w_s - 1) - sum_t z[s,t]``
  (``w_s`` the window length), i.e. the first slot at which ``z`` switches on; ``M >= C_k``;
* releases and critical paths are in the windows; a fair cap ``C_k <= T_k`` is the bound
  ``C_k <= floor(T_k / slot)`` (conservative when durations are rounded up).

Objectives (identical to ``spacetime-cp``), in real time units, minimised:
``sum_k a_k (slot * C_k - r_k) + b * slot * M`` with ``(a, b) = (0, 1)`` for ``makespan``,
``(w / W, 0)`` for ``avg-jct`` (``W = sum_k w_k``) and ``(alpha w / W, 1 - alpha)`` for ``mix``.

Placement
---------
``placement='pooled'`` (the default) has one unit, the whole cluster. ``placement='servers'`` requires
every task to run on a single machine that it fits, and no machine to be overloaded; the units are

* ``per_machine=False``: one unit per server class, ``x[s,l,t]`` only where one task of ``s`` fits a
  machine of class ``l``, capacity rows with ``count_l * capacity_l``. Whenever a class has more than one
  machine this is a *relaxation* of per-machine packing: tasks never straddle classes, but within a class
  the aggregate may fragment across machines (two 3-CPU tasks and one 2-CPU task fit 2 x 4 CPUs in
  aggregate, not on two 4-CPU machines). Its optimum is a lower bound; it is a per-machine optimum
  only when its time-table can be assigned to machines (``solver.spacetime.milp`` tries, and the checker
  verifies the machines). With one machine per class it is exact.
* ``per_machine=True``: one unit per machine, so capacity rows are per machine and the model is exact.
  Identical machines make every schedule appear ``count!`` times; rows ``load(m) >= load(m + 1)`` for
  consecutive machines of a class keep one labelling (:func:`order_machines_by_load`). The ``x``
  variables and capacity rows grow with the number of machines instead of classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fairpack.models.dag import adjacency, longest_paths
from fairpack.models.diagnose import placement_fits
from fairpack.models.result import SCHEDULE_OBJECTIVES
from fairpack.models.types import BoolArray, FloatArray, Instance, InstanceError, IntArray
from fairpack.solver.lp import Block, LinearProgram, LPBuilder
from fairpack.solver.spacetime.units import to_units

#: Relative slack when deciding whether a task's demand fits a capacity (as ``solver.spacetime.engine.EPS``).
FIT_TOL = 1e-9


@dataclass(frozen=True)
class SlotData:
    """The DAG jobs of an instance as flat per-stage arrays, in slots (global stage numbering).

    Capacity comes in *units*, the ``l`` of the variables: the pooled cluster (one unit), a server class
    (``count`` identical machines aggregated) or a single machine (``per_machine``). ``machine_*`` lists
    the individual machines (the pool counts as one machine), which list schedules and the checker use.
    """

    slot: float
    exact: bool  # every duration and release is a whole number of slots
    stage_job: IntArray
    stage_local: IntArray
    tasks: IntArray  # per stage
    duration: IntArray  # per stage, slots (rounded up)
    real_duration: FloatArray
    demand: FloatArray  # (stages, resources)
    release: IntArray  # per job, slots (rounded up)
    real_release: FloatArray
    weight: FloatArray
    edges: IntArray  # (edges, 2): parent stage, child stage
    head: IntArray  # per stage: longest path (slots) from the job start to the stage start
    tail: IntArray  # per stage: longest path from the stage start to the job end, itself included
    fits: BoolArray  # (stages, units): one task fits one machine of the unit
    class_capacity: FloatArray  # (units, resources): count * machine capacity (pooled: the cluster total)
    placement: str
    unit_count: IntArray  # (units,): machines in the unit
    machine_capacity: FloatArray  # (machines, resources)
    machine_unit: IntArray  # (machines,)
    machine_class: IntArray  # (machines,): server class (-1 for the pool)
    machine_number: IntArray  # (machines,): number within its class (-1 for the pool)

    @staticmethod
    def of(instance: Instance, placement: str = "pooled", per_machine: bool = False) -> SlotData:
        """Slot data for ``placement`` 'pooled' or 'servers' (units: classes, or machines if ``per_machine``)."""
        if not instance.jobs:
            raise InstanceError("space-time packing needs DAG jobs", "jobs")
        class_fits = placement_fits(instance, placement)
        slot = float(instance.time_slot)
        counts = np.array([len(job.stages) for job in instance.jobs], dtype=np.int64)
        offset = np.concatenate([[0], np.cumsum(counts)])[:-1]
        stages = [stage for job in instance.jobs for stage in job.stages]
        real_duration = np.array([s.duration for s in stages], dtype=np.float64)
        real_release = np.array([job.release for job in instance.jobs], dtype=np.float64)
        duration, durations_whole = to_units(real_duration, slot)
        release, releases_whole = to_units(real_release, slot)
        exact = durations_whole and releases_whole
        edges = np.array(
            [(int(offset[k]) + p, int(offset[k]) + s)
             for k, job in enumerate(instance.jobs) for s, stage in enumerate(job.stages) for p in stage.after],
            dtype=np.int64,
        ).reshape(-1, 2)  # fmt: skip
        head, tail = _heads_tails(len(stages), edges, duration)
        demand = np.array([s.demand for s in stages], dtype=np.float64).reshape(-1, len(instance.resources))
        if placement == "pooled":
            machine_class = np.full(1, -1, dtype=np.int64)
            machine_number = np.full(1, -1, dtype=np.int64)
            machine_capacity = instance.total_capacity[None, :].astype(np.float64)
            machine_unit = np.zeros(1, dtype=np.int64)
            unit_count = np.ones(1, dtype=np.int64)
            fits = class_fits
        else:
            machine_class = instance.machine_class().astype(np.int64)
            machine_number = np.arange(machine_class.size) - np.searchsorted(machine_class, machine_class)
            machine_capacity = instance.capacity[machine_class].astype(np.float64)
            if per_machine:
                machine_unit = np.arange(machine_class.size, dtype=np.int64)
                unit_count = np.ones(machine_class.size, dtype=np.int64)
                fits = class_fits[:, machine_class]
            else:
                machine_unit = machine_class.copy()
                unit_count = instance.counts.astype(np.int64)
                fits = class_fits
        capacity = np.zeros((unit_count.size, len(instance.resources)))
        np.add.at(capacity, machine_unit, machine_capacity)
        return SlotData(
            slot=slot,
            exact=exact,
            stage_job=np.repeat(np.arange(len(instance.jobs)), counts),
            stage_local=np.concatenate([np.arange(c) for c in counts]),
            tasks=np.array([s.tasks for s in stages], dtype=np.int64),
            duration=duration,
            real_duration=real_duration,
            demand=demand,
            release=release,
            real_release=real_release,
            weight=np.array([job.weight for job in instance.jobs], dtype=np.float64),
            edges=edges,
            head=head,
            tail=tail,
            fits=fits,
            class_capacity=capacity,
            placement=placement,
            unit_count=unit_count,
            machine_capacity=machine_capacity,
            machine_unit=machine_unit,
            machine_class=machine_class,
            machine_number=machine_number,
        )

    @property
    def units_are_machines(self) -> bool:
        """Every unit is one machine, so unit capacities are machine capacities and the model is exact."""
        return bool(np.all(self.unit_count == 1))

    @property
    def num_stages(self) -> int:
        return int(self.tasks.size)

    @property
    def num_jobs(self) -> int:
        return int(self.weight.size)

    @property
    def task_stage(self) -> IntArray:
        """Global stage of every task, tasks numbered stage by stage."""
        return np.repeat(np.arange(self.num_stages), self.tasks)

    @property
    def first_task(self) -> IntArray:
        return np.concatenate([[0], np.cumsum(self.tasks)])[:-1].astype(np.int64)

    @property
    def sinks(self) -> BoolArray:
        has_child = np.zeros(self.num_stages, dtype=bool)
        has_child[self.edges[:, 0]] = True
        return ~has_child

    def job_lower(self) -> IntArray:
        """Lower bound on every job's completion slot: release + longest path, ignoring resources."""
        length = np.zeros(self.num_jobs, dtype=np.int64)
        np.maximum.at(length, self.stage_job, self.tail)
        return self.release + length

    def sum_horizon(self) -> int:
        """Slots by which some optimal schedule has finished: the last release plus every task's
        duration (a left-justified schedule is never idle after the last release), caps or not."""
        return int(self.release.max(initial=0) + int(self.tasks @ self.duration))

    def completions(self, starts: IntArray) -> IntArray:
        """Completion slot of every job for task start slots (flat task order)."""
        completion = self.release.copy()
        stage = self.task_stage
        np.maximum.at(completion, self.stage_job[stage], starts + self.duration[stage])
        return completion


def _heads_tails(num_stages: int, edges: IntArray, duration: IntArray) -> tuple[IntArray, IntArray]:
    head, tail = longest_paths(*adjacency(num_stages, edges.tolist()), duration)
    return np.rint(head).astype(np.int64), np.rint(tail).astype(np.int64)  # integer slots stay integral


def objective_coefficients(weight: FloatArray, objective: str, alpha: float = 0.5) -> tuple[FloatArray, float]:
    """``(a, b)`` with objective ``sum_k a_k (C_k - r_k) + b * makespan`` (the ``spacetime-cp`` objectives)."""
    if objective not in SCHEDULE_OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose from {', '.join(SCHEDULE_OBJECTIVES)}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    share = weight / weight.sum()
    if objective == "makespan":
        return np.zeros_like(weight), 1.0
    if objective == "avg-jct":
        return share, 0.0
    return alpha * share, 1.0 - alpha


def objective_in_slots(data: SlotData, completion: IntArray, a: FloatArray, b: float) -> float:
    """The objective, in real time units, of job completion slots (slotted durations)."""
    real = completion * data.slot
    return float(a @ (real - data.real_release) + b * real.max(initial=0.0))


def completion_upper(data: SlotData, a: FloatArray, b: float, value: float) -> IntArray:
    """Upper bounds on every job's completion slot in any schedule no worse than ``value``.

    With lower bounds ``L_k`` (release + critical path) the objective is at least
    ``lower = sum_k a_k (L_k - r_k) + b max_k L_k``, so an optimal schedule has slack
    ``value - lower`` to spend: ``C_k <= L_k + slack / a_k`` and ``C_k <= M <= max L + slack / b``.
    """
    low = data.job_lower()
    low_real = low * data.slot
    lower = float(a @ (low_real - data.real_release) + b * low_real.max(initial=0.0))
    slack = max(value - lower, 0.0) / data.slot  # in slots
    upper = np.full(data.num_jobs, np.inf)
    if b > 0:
        upper = np.minimum(upper, low.max(initial=0) + slack / b)
    positive = a > 0
    upper[positive] = np.minimum(upper[positive], low[positive] + slack / a[positive])
    if not np.all(np.isfinite(upper)):
        raise ValueError("an objective with zero weight on a job and no makespan term bounds nothing")
    return np.floor(upper + 1e-7).astype(np.int64)


@dataclass(frozen=True)
class SpacetimeModel:
    """The MILP and where its variables are: per stage window start ``a``, length ``w``, classes."""

    lp: LinearProgram
    data: SlotData
    window_start: IntArray  # a_s
    window: IntArray  # w_s (>= 1)
    classes: tuple[IntArray, ...]  # fitting classes of every stage
    x: tuple[Block, ...]  # (classes_s, w_s)
    y: tuple[Block, ...]
    z: tuple[Block | None, ...]  # (w_s - 1,) or None
    completion: Block  # C_k, slots
    makespan: Block | None
    horizon: int

    def start_vector(self, starts: IntArray, task_class: IntArray | None = None) -> FloatArray:
        """A full primal vector for a schedule given as start slots (and classes) of every task."""
        data = self.data
        vector = np.zeros(self.lp.num_columns)
        stage = data.task_stage
        cls = np.zeros(stage.size, dtype=np.int64) if task_class is None else task_class
        completion = data.completions(starts)
        for s in range(data.num_stages):
            rows = slice(int(data.first_task[s]), int(data.first_task[s] + data.tasks[s]))
            position = np.searchsorted(self.classes[s], cls[rows])
            counts = np.zeros(self.x[s].shape)
            np.add.at(counts, (position, starts[rows] - self.window_start[s]), 1.0)
            vector[self.x[s].indices()] = counts
            cumulative = np.cumsum(counts, axis=1)
            vector[self.y[s].indices()] = cumulative
            block = self.z[s]
            if block is not None:
                vector[block.indices()] = cumulative.sum(axis=0)[:-1] >= data.tasks[s] - 0.5
        vector[self.completion.indices()] = completion
        if self.makespan is not None:
            vector[self.makespan.start] = completion.max(initial=0)
        return vector

    def task_starts(self, x: FloatArray) -> tuple[IntArray, IntArray]:
        """Start slot and class of every task (flat order, within a stage in start order)."""
        data = self.data
        starts = np.zeros(int(data.tasks.sum()), dtype=np.int64)
        classes = np.zeros_like(starts)
        for s in range(data.num_stages):
            counts = np.maximum(np.round(self.x[s].values(x)), 0).astype(np.int64)
            cls, offset = np.nonzero(counts)
            times = self.window_start[s] + offset
            order = np.argsort(times, kind="stable")
            repeat = counts[cls, offset][order]
            first = int(data.first_task[s])
            slot_list = np.repeat(times[order], repeat)[: data.tasks[s]]
            class_list = np.repeat(self.classes[s][cls[order]], repeat)[: data.tasks[s]]
            starts[first : first + slot_list.size] = slot_list
            classes[first : first + class_list.size] = class_list
        return starts, classes

    def stats(self) -> dict[str, int]:
        return {
            "columns": self.lp.num_columns,
            "rows": self.lp.num_rows,
            "nonzeros": int(self.lp.matrix.nnz),
            "integers": int(self.lp.integrality.sum()),
            "horizon_slots": self.horizon,
        }


class WindowError(ValueError):
    """Some stage has an empty start window: no schedule meets the completion bounds."""


def model_size(data: SlotData, upper: IntArray) -> int:
    """About how many nonzeros :func:`build_spacetime` would build for completion bounds ``upper``.

    Every (stage, unit, slot of its window) cell holds an ``x`` and a ``y`` column, three nonzeros of the
    running totals, two or three per resource in the capacity rows and one per barrier to each parent
    (within about 10% on random mixes and TPC-H). A guard: a model that cannot fit in memory is refused
    before it is built.
    """
    start = data.release[data.stage_job] + data.head
    window = np.maximum(np.asarray(upper, dtype=np.int64)[data.stage_job] - data.tail - start + 1, 0)
    units = data.fits.sum(axis=1)
    cells = units * window
    parents = np.bincount(data.edges[:, 1], minlength=data.num_stages) if data.edges.size else 0
    per_cell = 6 + parents
    # Capacity rows: a stage of d slots puts w * d terms per resource when d <= 2, else two running-total
    # terms over the w + d - 1 slots it may occupy -- which a huge duration makes huge even for a tiny window.
    d = np.asarray(data.duration, dtype=np.int64)
    capacity_terms = np.where(d <= 2, window * d, 2 * (window + d)) * units * (data.demand > 0).sum(axis=1)
    return int((cells * per_cell).sum() + capacity_terms.sum())


def build_spacetime(
    data: SlotData, objective: str, alpha: float, upper: IntArray, name: str = "spacetime"
) -> SpacetimeModel:
    """Build the time-indexed MILP (module docstring) with job completion slots bounded by ``upper``.

    Raises ``WindowError`` when a stage cannot start inside its window (release + critical path
    beyond its job's bound); tasks that fit no unit were already refused by ``SlotData.of``.
    """
    a_job, b_coef = objective_coefficients(data.weight, objective, alpha)
    lower = data.job_lower()
    upper = np.asarray(upper, dtype=np.int64)
    if np.any(upper < lower):
        raise WindowError(f"job {int(np.argmax(upper < lower))} cannot complete by its bound")
    start = data.release[data.stage_job] + data.head
    last = upper[data.stage_job] - data.tail
    window = last - start + 1
    horizon = int(upper.max(initial=0))
    builder = LPBuilder("min", name)
    classes = tuple(np.flatnonzero(data.fits[s]) for s in range(data.num_stages))
    x_blocks, y_blocks, z_blocks = [], [], []
    for s in range(data.num_stages):
        label = f"{data.stage_job[s]}_{data.stage_local[s]}"
        shape = (classes[s].size, int(window[s]))
        n = float(data.tasks[s])
        x_blocks.append(builder.add_variables(f"x_{label}", shape, upper=n, integer=True))
        y_blocks.append(builder.add_variables(f"y_{label}", shape, upper=n))
        z_blocks.append(
            builder.add_variables(f"z_{label}", (int(window[s]) - 1,), upper=1.0, integer=True)
            if window[s] > 1
            else None
        )
    completion = builder.add_variables(
        "C", (data.num_jobs,), lower=lower.astype(np.float64), upper=upper.astype(np.float64),
        cost=data.slot * a_job,
    )  # fmt: skip
    builder.offset = -float(a_job @ data.real_release)
    makespan = None
    if b_coef > 0:
        makespan = builder.add_variables(
            "M", (), lower=float(lower.max(initial=0)), upper=float(horizon), cost=data.slot * b_coef
        )

    parts = _Rows()
    # y[s,l,t] - y[s,l,t-1] - x[s,l,t] = 0, and all tasks start.
    for s in range(data.num_stages):
        x, y = x_blocks[s].indices(), y_blocks[s].indices()
        local = np.arange(y.size).reshape(y.shape)
        parts.add("cumulative", local, y, 1.0)
        parts.add("cumulative", local, x, -1.0)
        parts.add("cumulative", local[:, 1:], y[:, :-1], -1.0)
        parts.next("cumulative", y.size)
        parts.add("assign", np.zeros(y.shape[0], dtype=np.int64), y[:, -1], 1.0)
        parts.next("assign", 1, float(data.tasks[s]), float(data.tasks[s]))
        block = z_blocks[s]
        if block is not None:
            z = block.indices()
            rows = np.arange(z.size)
            # n z[t] <= sum_l y[t - d]; monotone z.
            parts.add("complete", rows, z, float(data.tasks[s]))
            parts.add("complete", np.broadcast_to(rows, y[:, :-1].shape), y[:, :-1], -1.0)
            parts.next("complete", z.size, -math.inf, 0.0)
            parts.add("monotone", np.arange(z.size - 1), z[:-1], 1.0)
            parts.add("monotone", np.arange(z.size - 1), z[1:], -1.0)
            parts.next("monotone", z.size - 1, -math.inf, 0.0)
    # Barriers: sum_l y[c, t] <= n_c z[p, t] while the parent may still be running.
    for parent, child in data.edges.tolist():
        zp = z_blocks[parent]
        if zp is None:
            continue
        y = y_blocks[child].indices()
        # child slot t = a_c + j; parent completion index i = t - a_p - d_p, meaningful while i < w_p - 1.
        j = np.arange(y.shape[1])
        i = start[child] + j - start[parent] - data.duration[parent]
        keep = i < window[parent] - 1
        j, i = j[keep], i[keep]
        parts.add("barrier", np.broadcast_to(np.arange(j.size), (y.shape[0], j.size)), y[:, j], 1.0)
        parts.add("barrier", np.arange(j.size), zp.indices()[i], -float(data.tasks[child]))
        parts.next("barrier", j.size, -math.inf, 0.0)
    # Completion of sink stages, makespan.
    for s in np.flatnonzero(data.sinks).tolist():
        k = int(data.stage_job[s])
        parts.add("completion", np.zeros(1, dtype=np.int64), np.array([completion.start + k]), 1.0)
        block = z_blocks[s]
        if block is not None:
            parts.add("completion", np.zeros(block.size, dtype=np.int64), block.indices(), 1.0)
        parts.next("completion", 1, float(start[s] + data.duration[s] + window[s] - 1), math.inf)
    if makespan is not None:
        rows = np.arange(data.num_jobs)
        parts.add("makespan", rows, np.full(data.num_jobs, makespan.start), 1.0)
        parts.add("makespan", rows, completion.indices(), -1.0)
        parts.next("makespan", data.num_jobs, 0.0, math.inf)
    for label in parts.order:
        builder.add_rows(label, *parts.arrays(label))
    _capacity_rows(builder, data, start, window, classes, x_blocks, y_blocks)
    _symmetry_rows(builder, data, classes, x_blocks)
    return SpacetimeModel(
        lp=builder.build(),
        data=data,
        window_start=start,
        window=window,
        classes=classes,
        x=tuple(x_blocks),
        y=tuple(y_blocks),
        z=tuple(z_blocks),
        completion=completion,
        makespan=makespan,
        horizon=horizon,
    )


class _Rows:
    """COO triplets of one row family, collected stage by stage with a running row offset."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self._count: dict[str, int] = {}
        self._parts: dict[str, list[tuple[IntArray, IntArray, FloatArray]]] = {}
        self._bounds: dict[str, list[tuple[FloatArray, FloatArray]]] = {}

    def add(self, label: str, rows: npt.ArrayLike, cols: npt.ArrayLike, value: float) -> None:
        if label not in self._count:
            self.order.append(label)
            self._count[label] = 0
            self._parts[label] = []
            self._bounds[label] = []
        local = np.asarray(rows, dtype=np.int64).reshape(-1) + self._count[label]
        columns = np.asarray(cols, dtype=np.int64).reshape(-1)
        self._parts[label].append((local, columns, np.full(local.size, value)))

    def next(self, label: str, count: int, lower: float = 0.0, upper: float = 0.0) -> None:
        if label not in self._count:
            self.add(label, [], [], 0.0)
        self._count[label] += count
        self._bounds[label].append((np.full(count, lower), np.full(count, upper)))

    def arrays(self, label: str) -> tuple[int, IntArray, IntArray, FloatArray, FloatArray, FloatArray]:
        parts = self._parts[label]
        bounds = self._bounds[label]
        return (
            self._count[label],
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
            np.concatenate([b[0] for b in bounds]),
            np.concatenate([b[1] for b in bounds]),
        )


def _capacity_rows(
    builder: LPBuilder,
    data: SlotData,
    start: IntArray,
    window: IntArray,
    classes: tuple[IntArray, ...],
    x_blocks: list[Block],
    y_blocks: list[Block],
) -> None:
    """``sum_s demand[s,r] * running[s,l,t] <= cap[l,r]`` for every (class, resource) that can bind."""
    capacity = data.class_capacity
    n_classes, n_res = capacity.shape
    # Total demand each (class, resource) could ever see; only pairs that can exceed capacity get rows.
    total = np.zeros((n_classes, n_res))
    for s in range(data.num_stages):
        if data.duration[s] > 0:
            total[classes[s]] += data.tasks[s] * data.demand[s]
    binding = total > capacity * (1 + 1e-12) + 1e-12
    span = int((start + window + data.duration).max(initial=1))
    rows, cols, vals = [], [], []
    for s in range(data.num_stages):
        d = int(data.duration[s])
        if d == 0:
            continue
        for position, cls in enumerate(classes[s].tolist()):
            resources = np.flatnonzero(binding[cls] & (data.demand[s] > 0))
            if resources.size == 0:
                continue
            base = (cls * n_res + resources) * span  # first row of each (class, resource)
            w = int(window[s])
            if d <= 2:
                # x[t'] runs in slots t' .. t' + d - 1.
                offsets = np.arange(w)[:, None] + np.arange(d)[None, :]
                t = start[s] + offsets
                col = np.broadcast_to(x_blocks[s].indices()[position][:, None], offsets.shape)
                r_rows = base[:, None] + t.reshape(-1)[None, :]
                rows.append(r_rows.reshape(-1))
                cols.append(np.broadcast_to(col.reshape(-1), r_rows.shape).reshape(-1))
                vals.append(np.broadcast_to(data.demand[s, resources][:, None], r_rows.shape).reshape(-1))
                continue
            # running(t) = y[min(t - a, w - 1)] - y[t - a - d] (the latter only when t - a - d >= 0).
            y = y_blocks[s].indices()[position]
            rel = np.arange(w + d - 1)
            upper_col = y[np.minimum(rel, w - 1)]
            minus = rel - d >= 0
            lower_col = y[np.minimum(rel[minus] - d, w - 1)]
            t_all = start[s] + rel
            for sign, t, col in ((1.0, t_all, upper_col), (-1.0, t_all[minus], lower_col)):
                r_rows = base[:, None] + t[None, :]
                rows.append(r_rows.reshape(-1))
                cols.append(np.broadcast_to(col, r_rows.shape).reshape(-1))
                vals.append(sign * np.broadcast_to(data.demand[s, resources][:, None], r_rows.shape).reshape(-1))
    if not rows:
        return
    all_rows = np.concatenate(rows)
    used, local = np.unique(all_rows, return_inverse=True)
    pair = used // span
    upper = capacity.reshape(-1)[pair]
    builder.add_rows("capacity", used.size, local, np.concatenate(cols), np.concatenate(vals), -math.inf, upper)


def task_load(data: SlotData) -> FloatArray:
    """Per stage, the load one task puts on a machine for symmetry breaking: slots x normalised demand."""
    total = data.machine_capacity.sum(axis=0)
    share = np.divide(data.demand, total, out=np.zeros_like(data.demand), where=total > 0)
    return np.asarray(data.duration * share.sum(axis=1), dtype=np.float64)


def order_machines_by_load(data: SlotData, machine: IntArray) -> IntArray:
    """Relabel identical machines so that, within every server class, load decreases with the number.

    Machines of a class are interchangeable, so this maps any schedule to one that satisfies the
    per-machine model's symmetry rows (``_symmetry_rows``); ``machine`` is per task, flat order.
    """
    n_machines = data.machine_class.size
    load = np.bincount(machine, weights=task_load(data)[data.task_stage], minlength=n_machines)
    # Machines are numbered class by class, so sorting by (class, -load) keeps each class's block of numbers.
    order = np.lexsort((np.arange(n_machines), -load, data.machine_class))
    relabel = np.empty(n_machines, dtype=np.int64)
    relabel[order] = np.arange(n_machines)
    return relabel[machine]


def _symmetry_rows(builder: LPBuilder, data: SlotData, classes: tuple[IntArray, ...], x_blocks: list[Block]) -> None:
    """Per-machine units only: ``load(m) >= load(m + 1)`` for consecutive machines of one class.

    Identical machines make every schedule appear ``count!`` times; ordering them by load (work placed
    on them, :func:`task_load`) keeps one representative (:func:`order_machines_by_load`).
    """
    if data.unit_count.size < 2 or not data.units_are_machines or data.placement != "servers":
        return
    same = (data.machine_class[:-1] == data.machine_class[1:]) & (data.machine_class[:-1] >= 0)
    if not np.any(same):
        return
    pair_row = np.full(data.unit_count.size, -1, dtype=np.int64)  # row of the pair (u, u + 1)
    pair_row[np.flatnonzero(same)] = np.arange(int(same.sum()))
    load = task_load(data)
    rows, cols, vals = [], [], []
    for s in np.flatnonzero(load > 0).tolist():
        x = x_blocks[s].indices()
        units = classes[s]
        for sign, row in ((1.0, pair_row[units]), (-1.0, np.where(units > 0, pair_row[units - 1], -1))):
            keep = row >= 0
            rows.append(np.repeat(row[keep], x.shape[1]))
            cols.append(x[keep].reshape(-1))
            vals.append(np.full(rows[-1].size, sign * load[s]))
    if not rows:
        return
    builder.add_rows("symmetry", int(same.sum()), np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                     0.0, math.inf)  # fmt: skip


#: The assignment MILP keeps a (tasks x start slots) running matrix per class; larger classes skip it.
MAX_ASSIGNMENT_CELLS = 5_000_000


@dataclass(frozen=True)
class AssignmentModel:
    """Feasibility MILP putting tasks with fixed start slots on the machines of their class units.

    ``a[i, j]`` (binary, shape ``(tasks, largest count)``) says task ``i`` runs on the ``j``-th machine of
    its unit (machines of a unit are numbered in ``SlotData.machine_unit`` order).
    """

    lp: LinearProgram
    a: Block
    first_machine: IntArray  # per task: global number of its unit's first machine

    def machines(self, x: FloatArray) -> IntArray:
        """Global machine of every task in a solution."""
        return self.first_machine + np.argmax(self.a.values(x), axis=1).astype(np.int64)


def build_assignment(data: SlotData, starts: IntArray, task_unit: IntArray) -> AssignmentModel | None:
    """Machines for a class-unit time-table, exactly: the per-machine feasibility question (module docstring).

    Rows: every task on one machine; for every unit, machine ``j``, resource ``r`` and slot ``tau`` at
    which some task of the unit starts (usage peaks at starts), ``sum_i demand[i,r] a[i,j] <= capacity``
    over the unit's tasks running at ``tau`` -- only where those tasks together exceed one machine.
    Symmetry: the ``q``-th task of a unit (tasks in flat order) may only use machines ``0 .. q``, since
    relabelling machines by their first task always gets there. ``None`` if a unit's running matrix
    exceeds ``MAX_ASSIGNMENT_CELLS``.
    """
    n_tasks = starts.size
    first_of_unit = np.searchsorted(data.machine_unit, np.arange(data.unit_count.size))
    count = data.unit_count[task_unit]
    width = int(data.unit_count.max(initial=1))
    # rank[i]: tasks of the same unit before i (flat order), the symmetry bound on i's machine.
    order = np.argsort(task_unit, kind="stable")
    sorted_units = task_unit[order]
    rank = np.empty(n_tasks, dtype=np.int64)
    rank[order] = np.arange(n_tasks) - np.searchsorted(sorted_units, sorted_units)
    allowed = np.arange(width)[None, :] < np.minimum(count, rank + 1)[:, None]
    builder = LPBuilder("min", "assignment")
    a = builder.add_variables("a", (n_tasks, width), upper=allowed.astype(np.float64), integer=True)
    index = a.indices()
    rows_one = np.repeat(np.arange(n_tasks), width)
    builder.add_rows("one_machine", n_tasks, rows_one, index.reshape(-1), 1.0, 1.0, 1.0)
    rows, cols, vals, upper = [], [], [], []
    total_rows = 0
    stage = data.task_stage
    for unit in np.flatnonzero(data.unit_count > 1).tolist():
        tasks = np.flatnonzero((task_unit == unit) & (data.duration[stage] > 0))
        if tasks.size < 2:
            continue
        taus = np.unique(starts[tasks])
        if tasks.size * taus.size > MAX_ASSIGNMENT_CELLS:
            return None
        begin, end = starts[tasks], starts[tasks] + data.duration[stage[tasks]]
        running = (begin[:, None] <= taus[None, :]) & (taus[None, :] < end[:, None])  # (tasks, taus)
        need = data.demand[stage[tasks]]
        cap = data.machine_capacity[first_of_unit[unit]]
        tau_b, res_b = np.nonzero(running.T.astype(np.float64) @ need > cap[None, :] * (1 + FIT_TOL))
        if tau_b.size == 0:
            continue
        task_b, pair = np.nonzero(running[:, tau_b])  # task positions running in each binding (tau, r)
        machines = np.arange(int(data.unit_count[unit]))
        local = pair[None, :] + tau_b.size * machines[:, None]  # row per (machine, binding pair)
        rows.append((local + total_rows).reshape(-1))
        cols.append(index[tasks[task_b][None, :], machines[:, None]].reshape(-1))
        vals.append(np.broadcast_to(need[task_b, res_b[pair]], local.shape).reshape(-1))
        upper.append(np.tile(cap[res_b], machines.size))
        total_rows += tau_b.size * machines.size
    if total_rows:
        builder.add_rows("machine_capacity", total_rows, np.concatenate(rows), np.concatenate(cols),
                         np.concatenate(vals), -math.inf, np.concatenate(upper))  # fmt: skip
    return AssignmentModel(builder.build(), a, first_of_unit[task_unit].astype(np.int64))
