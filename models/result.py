"""What every method returns: the allocation or schedule it found, its status, bound and timings.

``Allocation`` (tasks per tenant and placement unit) and ``Schedule`` (start, end and place of every task)
are the two shapes an answer takes; ``Result`` wraps either with the method's status, proven bound and
timings. Exact, heuristic and simulated methods return the same ``Result``; ``solver.api.solve`` builds
the final one after ``models.check`` has re-verified the answer and recomputed its objective. A
``Result`` is frozen: nothing changes it after it is built. Its JSON view is in :mod:`fairpack.models.view`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from fairpack.models.stages import stage_table
from fairpack.models.types import FloatArray, Instance, InstanceError, IntArray

Status = Literal["optimal", "feasible", "infeasible", "unbounded", "time_limit", "interrupted", "error"]
UnitKind = Literal["class", "machine", "pool"]
#: Every status a result may have, in the order of the ``Status`` type.
STATUSES: tuple[Status, ...] = ("optimal", "feasible", "infeasible", "unbounded", "time_limit", "interrupted", "error")
#: Statuses that promise an answer (an allocation or a schedule) in the result.
SOLUTION_STATUSES = ("optimal", "feasible", "time_limit")


Cells = tuple[IntArray, IntArray, FloatArray]


@dataclass(frozen=True, init=False, eq=False)
class Allocation:
    """Tasks of every tenant on every placement unit.

    A unit is a whole server class (divisible tasks: identical machines pool exactly), a single machine
    (indivisible tasks must fit on one machine) or the whole cluster as one pool (the DRF setting).

    An allocation is given either as its table, ``Allocation(tasks, kind, integral)``, or as its non-zero cells,
    :meth:`Allocation.from_cells`. Whole tasks on single machines are mostly zeros (1,000 tenants on the Google
    table's 12,583 machines: 2% of the cells), so the heuristics that place them give cells, and the checker, the
    report and the JSON view read the cells; the dense ``tasks`` table is built only when something asks for it.

    Attributes
    ----------
    tasks : ndarray of float64, shape (tenants, units)
        The table, read-only (built on first access from the cells).
    kind : {'class', 'machine', 'pool'}
    integral : bool
        Whether the counts are whole tasks.
    shape : tuple of int
        The table's shape, without building it.
    """

    kind: UnitKind
    integral: bool
    shape: tuple[int, ...]
    _table: FloatArray | None = field(repr=False)
    _cells: Cells | None = field(repr=False)

    def __init__(self, tasks: Any, kind: UnitKind, integral: bool = False) -> None:
        # Already read-only and owning its data (a table built for the allocation): kept, not copied.
        if not (isinstance(tasks, np.ndarray) and tasks.dtype == np.float64 and tasks.base is None
                and not tasks.flags.writeable):  # fmt: skip
            tasks = np.array(tasks, dtype=np.float64)
            tasks.setflags(write=False)
        self._set(kind, integral, tuple(tasks.shape), tasks, None)

    @classmethod
    def from_cells(cls, shape: tuple[int, int], tenants: Any, units: Any, counts: Any = None, *,
                   kind: UnitKind, integral: bool = False) -> Allocation:  # fmt: skip
        """The allocation with ``counts`` (default 1 each) tasks of ``tenants[k]`` on ``units[k]``.

        Pairs may repeat (their counts add up) and come in any order; the cells are kept sorted row-major (by
        tenant, then unit) with zero sums dropped.

        Raises
        ------
        InstanceError
            Arrays of different lengths, or a tenant or unit outside ``shape``.
        """
        rows, columns = np.asarray(tenants, dtype=np.int64).ravel(), np.asarray(units, dtype=np.int64).ravel()
        values = np.ones(rows.size) if counts is None else np.asarray(counts, dtype=np.float64).ravel()
        height, width = (int(size) for size in shape)
        if not rows.size == columns.size == values.size:
            raise InstanceError(f"{rows.size} tenants, {columns.size} units and {values.size} counts", "allocation")
        for name, index, size in (("tenant", rows, height), ("unit", columns, width)):
            if index.size and (int(index.min()) < 0 or int(index.max()) >= size):
                raise InstanceError(f"a {name} index is outside 0 .. {size - 1}", "allocation")
        flat = rows * width + columns
        if counts is None:  # one task a pair: sorting the cells' flat indices is all (a third of an argsort's time)
            flat = np.sort(flat)
        else:
            order = np.argsort(flat)
            flat, values = flat[order], values[order]
        first = np.flatnonzero(np.concatenate(([True], flat[1:] != flat[:-1]))) if flat.size else flat
        if first.size < flat.size:  # repeated pairs: one cell each, their counts summed
            values = np.add.reduceat(values, first)
            flat = flat[first]
        kept = values != 0  # NaN is kept: the checker reports it
        flat, values = flat[kept], values[kept]
        cells = (*np.divmod(flat, max(width, 1)), values)
        for array in cells:
            array.setflags(write=False)
        allocation = cls.__new__(cls)
        allocation._set(kind, integral, (height, width), None, cells)
        return allocation

    def _set(self, kind: UnitKind, integral: bool, shape: tuple[int, ...], table: FloatArray | None,
             cells: Cells | None) -> None:  # fmt: skip
        for name, value in (("kind", kind), ("integral", integral), ("shape", shape), ("_table", table),
                            ("_cells", cells), ("_totals", None)):  # fmt: skip
            object.__setattr__(self, name, value)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickled arrays come back writable: read-only again, as the allocation was made.
        for value in (state.get("_table"), *(state.get("_cells") or ()), state.get("_totals")):
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        self.__dict__.update(state)

    @property
    def tasks(self) -> FloatArray:
        if self._table is None:
            assert self._cells is not None
            rows, columns, values = self._cells
            height, width = self.shape
            table = np.zeros(height * width)
            table[rows * width + columns] = values  # one value per cell
            table.shape = (height, width)
            table.setflags(write=False)
            object.__setattr__(self, "_table", table)
        return self._table  # type: ignore[return-value]

    @property
    def sparse(self) -> bool:
        """Whether the allocation was given as cells (and its table not built yet)."""
        return self._table is None

    def cells(self) -> Cells:
        """(tenant, unit, count) of every non-zero cell (NaN included), sorted row-major."""
        if self._cells is None:
            table = self.tasks
            if table.ndim != 2:
                raise ValueError(f"an allocation's table has two dimensions, this one has shape {table.shape}")
            nonzero = table != 0  # numpy finds the non-zero entries of a boolean array faster than of a float one
            tenants, units = np.divmod(np.flatnonzero(nonzero).astype(np.int64), max(table.shape[1], 1))
            cells = (tenants, units, np.asarray(table[tenants, units], dtype=np.float64))
            for array in cells:
                array.setflags(write=False)
            object.__setattr__(self, "_cells", cells)
        return self._cells  # type: ignore[return-value]

    def unit_names(self, instance: Instance) -> list[str]:
        return unit_names(instance, self.kind)

    def unit_capacity(self, instance: Instance) -> FloatArray:
        return unit_capacity(instance, self.kind)

    @property
    def tenant_tasks(self) -> FloatArray:
        """Tasks per tenant (summed once)."""
        totals: FloatArray | None = self.__dict__.get("_totals")
        if totals is None:
            if self._table is None:
                tenants, _, values = self.cells()
                totals = np.bincount(tenants, weights=values, minlength=self.shape[0]).astype(np.float64)
            else:
                totals = np.asarray(self._table.sum(axis=1))
            totals.setflags(write=False)
            object.__setattr__(self, "_totals", totals)
        return totals


def unit_names(instance: Instance, kind: UnitKind) -> list[str]:
    if kind == "pool":
        return ["pool"]
    if kind == "class":
        return [s.name for s in instance.servers]
    return instance.machine_names()


def unit_capacity(instance: Instance, kind: UnitKind) -> FloatArray:
    """Capacity of every unit, derived from the instance alone."""
    if kind == "pool":
        return instance.total_capacity[None, :]
    if kind == "class":
        return instance.capacity * instance.counts[:, None]
    return instance.capacity[instance.machine_class()]


#: Objectives of schedule results (``SolveOptions.objective`` / ``--objective``); ``utility`` is maximised.
SCHEDULE_OBJECTIVES = ("makespan", "avg-jct", "mix", "utility")
#: Schedule objectives that are maximised (the others are minimised).
MAXIMISED_OBJECTIVES = ("utility",)


@dataclass(frozen=True)
class Schedule:
    """Start and end time of every task of every DAG job, one entry per task, and where it ran.

    Only shapes are validated here; whether the schedule is feasible is for
    :func:`fairpack.models.check.verify_schedule` to decide from the instance.

    Attributes
    ----------
    job, stage, index : ndarray of int64, shape (tasks,)
        Job index into ``Instance.jobs``, stage index into that job's ``stages`` and task number
        ``0 .. stage.tasks - 1`` within the stage.
    start, end : ndarray of float64, shape (tasks,)
        Absolute times in the instance's time unit (the same unit as durations and releases).
    fair_completion : ndarray of float64, shape (jobs,), optional
        Deadline ``T_k`` each job had to meet (its fair completion time); ``inf`` where a job has none,
        ``None`` when no job has one.
    server, machine : ndarray of int64, shape (tasks,), optional
        Per-server placement (``placement='servers'``): the server class index into ``Instance.servers``
        and the machine number ``0 .. count - 1`` within that class of every task; ``-1`` marks a task
        left unplaced. ``None`` (both) for a schedule on the pooled cluster.
    option : ndarray of int64, shape (tasks,), optional
        The placement option (index into its stage's ``options``) every task ran under; ``-1`` for tasks
        of stages without options. ``None`` when no task has one.
    """

    job: IntArray
    stage: IntArray
    index: IntArray
    start: FloatArray
    end: FloatArray
    fair_completion: FloatArray | None = None
    server: IntArray | None = None
    machine: IntArray | None = None
    option: IntArray | None = None

    def __post_init__(self) -> None:
        if (self.server is None) != (self.machine is None):
            raise InstanceError("server and machine go together", "schedule.server")
        size = None
        placed = () if self.server is None else (("server", np.int64), ("machine", np.int64))
        chosen = () if self.option is None else (("option", np.int64),)
        for name, kind in (("job", np.int64), ("stage", np.int64), ("index", np.int64),
                           ("start", np.float64), ("end", np.float64), *placed, *chosen):  # fmt: skip
            raw = np.asarray(getattr(self, name))
            if raw.ndim != 1:
                raise InstanceError(f"must be one-dimensional, got shape {raw.shape}", f"schedule.{name}")
            fractional = raw.size and not np.issubdtype(raw.dtype, np.integer)
            if kind is np.int64 and fractional and not (np.all(np.isfinite(raw)) and np.all(raw == np.round(raw))):
                raise InstanceError("must hold whole numbers", f"schedule.{name}")
            array = raw.astype(kind)
            if size is None:
                size = array.size
            elif array.size != size:
                raise InstanceError(f"has {array.size} entries, schedule.job has {size}", f"schedule.{name}")
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        if self.fair_completion is not None:
            fair = np.array(self.fair_completion, dtype=np.float64).reshape(-1)
            fair.setflags(write=False)
            object.__setattr__(self, "fair_completion", fair)

    def __len__(self) -> int:
        return int(self.job.size)


def job_completion(instance: Instance, schedule: Schedule) -> FloatArray:
    """Completion time ``C_k`` of every job: the latest end of its tasks, or ``nan`` for a job the schedule
    does not finish (fewer rows than the job has tasks: a simulated policy that could not place them, a run
    stopped by its time limit). An unfinished job has no completion, no JCT and no utility.

    Rows with a job index out of range or a non-finite end are ignored (the checker reports them).
    """
    jobs = len(instance.jobs)
    table = stage_table(instance)
    completion = table.release.copy()
    valid = (schedule.job >= 0) & (schedule.job < jobs) & np.isfinite(schedule.end)
    np.maximum.at(completion, schedule.job[valid], schedule.end[valid])
    listed = np.bincount(schedule.job[valid], minlength=jobs)[:jobs]
    tasks = table.job_tasks
    completion[listed < tasks] = np.nan
    return completion


def task_demand(instance: Instance, schedule: Schedule) -> FloatArray:
    """Demand of every task of the schedule, ``(tasks, resources)``: its stage's, or, for a task that names a
    placement option with a demand of its own (``Schedule.option``), that option's (what it held while it ran)."""
    arrays = stage_table(instance)
    demand = arrays.demand
    g = arrays.offset[schedule.job] + schedule.stage
    out = demand[g]
    if schedule.option is not None and instance.has_option_demands:
        stages = [stage for job in instance.jobs for stage in job.stages]
        widest = max(len(s.options) for s in stages)
        table = np.repeat(demand[:, None, :], widest, axis=1)  # (stages, options, resources)
        for i, stage in enumerate(stages):
            for o, option in enumerate(stage.options):
                if option.demand is not None:
                    table[i, o] = option.demand
        count = np.array([len(s.options) for s in stages], dtype=np.int64)
        named = (schedule.option >= 0) & (schedule.option < count[g])  # an option the stage has
        out[named] = table[g[named], schedule.option[named]]
    return out


def schedule_objectives(instance: Instance, completion: FloatArray) -> dict[str, float]:
    """Makespan and weighted average JCT from job completion times.

    ``makespan = max_k C_k`` (absolute time, measured from 0) and
    ``avg_jct = sum_k w_k (C_k - r_k) / sum_k w_k``: the weighted mean over jobs of completion minus release.
    With an unfinished job (``C_k`` nan) both are nan: a schedule that leaves work undone has no objective
    (over the finished jobs alone it could beat every complete schedule); ``avg_jct_finished`` is the
    weighted mean over the ``finished_jobs`` alone, named as such.
    """
    if not instance.jobs:
        return {"makespan": 0.0, "avg_jct": 0.0, "avg_jct_finished": 0.0, "finished_jobs": 0.0}
    table = stage_table(instance)
    weights, releases = table.weight, table.release
    done = ~np.isnan(completion)
    jct = np.where(done, completion - releases, 0.0)
    finished = float(weights[done] @ jct[done] / weights[done].sum()) if done.any() else math.nan
    if done.all():
        return {"makespan": float(completion.max()), "avg_jct": float(weights @ jct / weights.sum()),
                "avg_jct_finished": finished, "finished_jobs": float(done.sum())}  # fmt: skip
    return {"makespan": math.nan, "avg_jct": math.nan, "avg_jct_finished": finished,
            "finished_jobs": float(done.sum())}  # fmt: skip


def job_utilities(instance: Instance, completion: FloatArray) -> FloatArray:
    """Every job's utility at its completion time (``Job.utility_at``: its points, else ``-weight * JCT``)."""
    table = stage_table(instance)
    # Without points: -weight * (completion - release), the same floats as Job.utility_at, for every job at once.
    values = -table.weight * (np.asarray(completion, dtype=np.float64) - table.release)
    for k in np.flatnonzero(table.utility).tolist():
        values[k] = float(instance.jobs[k].utility_at(completion[k]))
    return values


def relative_gap(objective: float, bound: float, maximised: bool) -> float:
    """How far ``objective`` is from the proven ``bound``, relative to the bound's size (never negative)."""
    distance = bound - objective if maximised else objective - bound
    scale = abs(bound) if maximised else abs(objective)
    return max(distance, 0.0) / scale if scale > 0 else 0.0


def objective_value(makespan: float, avg_jct: float, objective: str, alpha: float = 0.5,
                    utility: float = math.nan) -> float:  # fmt: skip
    """A schedule objective: ``makespan``, ``avg-jct``, ``mix`` = alpha * avg JCT + (1 - alpha) * makespan,
    or ``utility`` (the total, given)."""
    if objective == "utility":
        return utility
    if objective == "makespan":
        return makespan
    if objective == "avg-jct":
        return avg_jct
    if objective == "mix":
        return alpha * avg_jct + (1 - alpha) * makespan
    raise ValueError(f"unknown objective {objective!r}; choose from {', '.join(SCHEDULE_OBJECTIVES)}")


@dataclass(frozen=True)
class Result:
    """What every method returns; ``verified`` and the recomputed numbers come from ``models.check``.

    Attributes
    ----------
    status
        ``optimal`` only when the gap to ``bound`` is zero; ``time_limit`` when a limit stopped the method
        (with its best answer, if any); ``interrupted`` when Ctrl-C (SIGINT) stopped it (with its best answer so
        far, if any, verified like any other; a simulation's partial run says in ``extra['stopped_at']`` how far it
        got); ``infeasible``/``unbounded``/``error`` carry no answer.
    objective
        Recomputed from the answer by the checker, never read back from a solver (``solver_objective``
        is the solver's own number, reported beside it).
    bound
        The best proven bound of ``objective`` (upper for maximised objectives, lower for minimised ones).
    build_s, solve_s, wall_s
        Model building, solver time and the whole call (build, solve and verification).
    warnings
        Things the user should know about the input or the answer (e.g. a tenant whose task fits nowhere).
    """

    status: Status
    method: str
    backend: str
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    wall_s: float = 0.0
    verified: bool = False
    allocation: Allocation | None = None
    solver_objective: float | None = None
    message: str = ""
    violations: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    schedule: Schedule | None = None  # DAG-job methods: task start/end times
    warnings: tuple[str, ...] = ()
    #: The instance the answer is for (set by ``solve``/``simulate``), so the result can lay itself out.
    instance: Instance | None = field(default=None, repr=False, compare=False)

    def to_frame(self, table: str | None = None) -> Any:
        """The answer as a pandas DataFrame, one row per tenant, hierarchy node, job or task.

        Parameters
        ----------
        table
            ``tenants``, ``nodes``, ``jobs`` or ``tasks``; None: ``nodes`` for a hierarchy, ``tenants`` for
            other allocations, ``jobs`` for schedules and simulations.

        Returns
        -------
        pandas.DataFrame
            The rows of the CLI's JSON view (``fairpack.models.frames``), resources as columns.
        """
        from fairpack.models.frames import result_frame  # a method of the data type (tests/test_architecture.py)

        if self.instance is None:
            raise ValueError("this result does not know its instance: use fairpack.models.frames.result_frame("
                             "instance, result) or a result returned by solve or simulate")  # fmt: skip
        return result_frame(self.instance, self, table)

    @property
    def has_answer(self) -> bool:
        """Whether the result carries an allocation or a schedule."""
        return self.allocation is not None or self.schedule is not None
