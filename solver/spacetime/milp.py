"""``spacetime``: exact space-time packing of DAG jobs with the time-indexed MILP of ``solver.spacetime.model``.

Steps
-----
1. Heuristic schedules in slots (:mod:`fairpack.solver.spacetime.warmstart`): serial list scheduling (stage by stage,
   each task at the earliest slot where precedence, release and a machine's capacity allow) under two
   priority rules -- longest remaining critical path first, and whole jobs shortest-first -- plus the DAG
   heuristics ``carbyne``, ``sjf``, ``drf-dag``, ``tetris`` when their starts fall on whole slots. All are
   feasible per machine (the pool is one machine). The best one that meets the fair caps wins.
2. Completion bounds: its objective value ``V`` bounds the optimum, which yields a per-job bound on
   ``C_k`` (``solver.spacetime.model.completion_upper``) and so the horizon: it never cuts off an optimum. Without
   a feasible heuristic the horizon is the last release plus every task's duration (always valid).
3. The MILP is built over those windows and warm-started from the heuristic schedule (HiGHS
   ``setSolution``; CBC and SCIP MIP starts) when the backend supports it.
4. The solution (or the heuristic schedule if the solver found none in time) becomes a ``Schedule``
   with ``start = slot * t`` and true durations; task ``i`` of a stage takes the ``i``-th start slot.

Per-server placement (``placement='servers'``, ``servers_model``)
-----------------------------------------------------------------
Every task must run on one machine it fits, and no machine may be overloaded; the schedule names each
task's server class and machine, and the checker verifies every machine. ``servers_model``:

* ``'auto'`` (default): solve the compact *class-aggregated* MILP (one capacity unit per server class,
  ``count x capacity``; a relaxation when a class has several machines, see ``solver.spacetime.model``), then
  place its time-table on machines -- first fit in start order, else the exact assignment MILP
  (``solver.spacetime.model.build_assignment``). If that works, the schedule is feasible per machine and the
  relaxation's bound is a valid bound, so ``optimal`` is a per-machine optimum. If no placement exists,
  the per-machine MILP is solved with the remaining time (warm-started from the best list schedule) and
  the relaxation's bound is kept when it is the better one. Under a time limit the relaxation gets
  ``RELAXATION_SHARE`` of the time, so that the per-machine MILP keeps the rest.
* ``'machine'``: the per-machine MILP from the start (exact; grows with the machine count).
* ``'class'``: the relaxation only; when its time-table fits no machines the best per-machine heuristic
  schedule is returned, ``feasible`` with the relaxation's bound, never ``optimal``.

Warm starts and horizons stay valid for either placement because every heuristic schedule is built per
machine; for the per-machine model identical machines are relabelled by load to satisfy its symmetry rows.

Alternatives, and what is refused
---------------------------------
Placement options, gangs and ``--objective utility`` (:func:`fairpack.solver.spacetime.choice_model.uses_choices`)
are solved by the time-indexed MILP over each task's alternatives, :mod:`fairpack.solver.spacetime.choice_milp`,
on machines (or the pooled cluster, utility without options), with ``spacetime-cp``'s fair caps and
objectives. Tasks that read input blocks on machines (data locality: durations that depend on the machine) are
refused before anything is built (:func:`refuse_locality`, an ``InstanceError`` naming ``spacetime-cp``): that
model states them exactly but is far too slow to solve; pooled runs ignore locality, as ``spacetime-cp``'s do.

Fair caps ``C_k <= T_k``: ``fair_completion`` given explicitly (job name -> T_k), else, unless
``fair_cap=False``, the fair completion times of :func:`fairpack.solver.sim.fairshare.fair_completion_times`: each job's
completion in the ``drf-strict`` schedule on the same placement, with durations and releases rounded up to
slots as the MILP sees them (:mod:`fairpack.solver.spacetime.fair`). That schedule meets every cap, so the caps never
make the MILP infeasible, and it is one of the warm starts. It is simulated within the time limit; if it does
not finish, the result is a ``time_limit`` with no schedule. Under ``fair_cap=False`` it is computed with a part
of the time and reported beside each job, not enforced.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fairpack.models.result import Result, Schedule, Status
from fairpack.models.types import FloatArray, Instance, InstanceError, IntArray
from fairpack.solver.backends import Backend, SolveOutcome, SolverSettings, get_backend
from fairpack.solver.sim.fairshare import given_completion_times
from fairpack.solver.spacetime.fair import fair_mode, fair_share, no_fair_share, share_deadline, unfinished
from fairpack.solver.spacetime.model import (
    FIT_TOL,
    SlotData,
    SpacetimeModel,
    WindowError,
    build_assignment,
    build_spacetime,
    completion_upper,
    model_size,
    objective_coefficients,
    objective_in_slots,
    order_machines_by_load,
)
from fairpack.solver.spacetime.warmstart import heuristic_starts, priority_rules, schedule_starts, serial_sgs

SERVERS_MODELS = ("auto", "class", "machine")
#: Seconds below which the per-machine MILP is not started after the relaxation (it could not even load).
MIN_PHASE_S = 0.5
#: ``servers_model='auto'`` under a time limit: share of the remaining time the class relaxation may use.
RELAXATION_SHARE = 0.5
#: Most nonzeros (estimated by ``model_size``) of a MILP spacetime builds: about 24 bytes each in the builder
#: and as much again in the solver; a 60-query TPC-H mix asked for ~10^8 and ran out of memory.
MAX_NONZEROS = 10_000_000
#: Seconds per nonzero to build a MILP and load it into HiGHS, which watches no clock meanwhile (measured on
#: 14-48 million nonzeros at load 6 on 2 cores: 2.6-4.1 microseconds, 58-124 s); under a time limit a MILP
#: that cannot be loaded in the time left is not started.
LOAD_S_PER_NONZERO = 4e-6
#: Under a time limit, MILPs with more nonzeros than this are solved without presolve (see ``_solve_phase``).
PRESOLVE_MAX_NONZEROS = 500_000
#: Under a time limit, the share of the time left after building a MILP that its solver is given.
SOLVER_SHARE = 0.85
#: Under a time limit, the share of the time left that the simulated warm-start heuristics may take together.
HEURISTIC_SHARE = 0.25
#: Most slots the jobs may span (the last release plus every task's duration, ``SlotData.sum_horizon``): slot
#: numbers are whole in float64, and in the MILP solver's doubles, only up to 2**53, and int64 sums of them
#: stay far from overflow. Checked in floats before any slot arithmetic.
MAX_SLOTS = 2**53


def check_slots(instance: Instance) -> None:
    """Refuse, naming the limit, jobs whose schedules may span more than ``MAX_SLOTS`` slots.

    A duration of 1e15 in slots of 5e-10 is 2e24 slots: no integer slot number holds it (casting it gave
    garbage sizes and a RuntimeWarning), so the question is answered in floats before any is made."""
    slot = float(instance.time_slot)
    work = math.fsum(stage.tasks * stage.duration for job in instance.jobs for stage in job.stages)
    span = (max((job.release for job in instance.jobs), default=0.0) + work) / slot
    if not span <= MAX_SLOTS:
        raise InstanceError(f"the jobs may span {span:.3g} slots of {slot:g} (the last release plus every task's "
                            f"duration); the time-indexed MILP numbers slots exactly only up to MAX_SLOTS = 2**53; "
                            f"use spacetime-cp or a coarser time.slot", "time.slot")  # fmt: skip


def refuse_locality(instance: Instance) -> None:
    """Refuse, before any model is built, tasks that read input blocks on machines (data locality).

    Their durations depend on the machine (the locality factor of node, rack or remote placement): the model over
    alternatives (:mod:`fairpack.solver.spacetime.choice_milp`) states them exactly, one alternative per machine
    in ticks as fine as the factors (a tenth for 1.3), and HiGHS then takes from seconds to beyond 100 s on four
    HDFS jobs of nine tasks on four machines, where CP-SAT proves the same optima in 0.01-3 s. Pooled runs
    ignore locality (as ``spacetime-cp``'s) and are not refused."""
    if instance.data is None:
        return
    for k, job in enumerate(instance.jobs):
        for i, stage in enumerate(job.stages):
            if stage.input:
                raise InstanceError("spacetime (the time-indexed MILP) does not solve data locality on machines: "
                                    "tasks reading input blocks run their duration times the locality factor of "
                                    "each machine, which it only states with one start variable per machine and "
                                    "tick as fine as the factors, too many to solve; use spacetime-cp --placement "
                                    "servers (or locality-cp), or --placement pooled, which ignores locality",
                                    f"jobs[{k}].stages[{i}].input")  # fmt: skip


def _heuristics(instance: Instance, data: SlotData, deadline: float | None = None, end: float | None = None
                ) -> dict[str, tuple[IntArray, IntArray]]:  # fmt: skip
    """Start slots and machines (flat order) of the list schedules and, on whole slots, the DAG heuristics
    (those still running at ``deadline`` are stopped; the first list schedule only at ``end``).

    Every one is feasible per machine (the pool is one machine), so each bounds the optimum of either
    placement and warm-starts either model.
    """
    found: dict[str, tuple[IntArray, IntArray] | None] = {}
    for rule, priority in priority_rules(data.stage_job, data.tail, data.release, data.weight).items():
        # The first list schedule may take all the time left (``end``): without it there may be no answer.
        found[rule] = serial_sgs(data.stage_job, data.tasks, data.duration, data.demand, data.release, data.edges,
                                 priority, data.machine_capacity, data.fits[:, data.machine_unit],
                                 deadline if any(found.values()) else end)  # fmt: skip
    if data.exact:  # the heuristics run in real time: on whole slots their schedules are slotted ones
        found.update(heuristic_starts(instance, data.slot, data.placement, deadline=deadline))
    return {rule: value for rule, value in found.items() if value is not None}


class _NoFairShare(Exception):
    """The fair-share schedule that sets the caps did not finish within the time limit."""


def _fair_mapping(instance: Instance, fair: Mapping[str, float] | FloatArray | None) -> dict[str, float] | None:
    """Explicit fair completion times by job name (as the model over alternatives takes them), or None."""
    if fair is None or isinstance(fair, Mapping):
        return None if fair is None else dict(fair)
    array = _fair_array(instance, fair)
    if array is None:  # no finite time: no job is capped
        return {}
    return {job.name: float(t) for job, t in zip(instance.jobs, array, strict=True)}


def _fair_array(instance: Instance, fair: Any) -> FloatArray | None:
    if fair is None:
        return None
    if isinstance(fair, Mapping):
        array = given_completion_times(instance, fair)
    else:
        array = np.asarray(fair, dtype=np.float64).reshape(-1)
        if array.size != len(instance.jobs):
            raise ValueError(f"{array.size} fair completion times for {len(instance.jobs)} jobs")
    return array if np.isfinite(array).any() else None


@dataclass
class _Phase:
    """One MILP solve: the model, the solver's outcome and the time-table read from it."""

    model: SpacetimeModel
    outcome: SolveOutcome
    warm: bool
    starts: IntArray | None = None
    units: IntArray | None = None


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(deadline - time.perf_counter(), 0.01)


def _solve_phase(
    data: SlotData,
    objective: str,
    alpha: float,
    upper: IntArray,
    start: tuple[IntArray, IntArray] | None,
    solver: Backend,
    deadline: float | None,
    algorithm: str | None,
    name: str,
    notes: list[str],
) -> _Phase:
    """Build the MILP on ``data``'s units, warm-start it from ``start`` (slots, machines) and solve it.

    Raises ``WindowError`` when the completion bounds leave some stage no start slot.
    """
    model = build_spacetime(data, objective, alpha, upper, name=name)
    warm = None
    if start is not None:
        starts, machine = start
        if data.units_are_machines:
            machine = order_machines_by_load(data, machine)  # the per-machine model's symmetry rows
        warm = model.start_vector(starts, data.machine_unit[machine])
        violation = model.lp.max_violation(warm)
        if violation > 1e-6:  # would be a bug in the heuristic or the model; never hand it to a solver
            notes.append(f"heuristic start violates the model by {violation:.3g}; not used")
            warm = None
    use_warm = warm is not None and "warm_start" in solver.capabilities()
    limit = _remaining(deadline)
    # The solver overruns its own limit (HiGHS's presolve passes do not watch the clock: one took 15 s on a
    # 365,000-row MILP given 20 s, which then ran 29 s), and the schedule is read and verified after it: keep
    # a margin, and under a limit skip presolve on large models (2 s over instead).
    given = None if limit is None else SOLVER_SHARE * limit
    if limit is not None and solver.name == "highs" and model.lp.matrix.nnz > PRESOLVE_MAX_NONZEROS:
        session = solver.session(model.lp, given, algorithm, presolve=False)
        if use_warm and warm is not None:
            session.set_start(warm)
        outcome = session.solve()
    else:
        outcome = solver.solve(model.lp, time_limit=given, warm_start=warm if use_warm else None, algorithm=algorithm)
    phase = _Phase(model, outcome, use_warm)
    if outcome.x is not None:
        phase.starts, phase.units = model.task_starts(outcome.x)
    return phase


def _first_fit(data: SlotData, starts: IntArray, units: IntArray) -> IntArray | None:
    """Machines by first fit, tasks in start order (larger first at equal starts); ``None`` on failure."""
    first = np.searchsorted(data.machine_unit, np.arange(data.unit_count.size))
    machine = first[units].astype(np.int64)
    stage = data.task_stage
    size = data.demand[stage].sum(axis=1)
    for unit in np.flatnonzero(data.unit_count > 1).tolist():
        tasks = np.flatnonzero((units == unit) & (data.duration[stage] > 0))
        if tasks.size < 2:
            continue
        tasks = tasks[np.lexsort((-size[tasks], starts[tasks]))]
        limit = data.machine_capacity[first[unit]] * (1 + FIT_TOL) + FIT_TOL
        usage = np.zeros((int((starts[tasks] + data.duration[stage[tasks]]).max()), int(data.unit_count[unit]),
                          limit.size))  # fmt: skip
        for task in tasks.tolist():
            t, d, need = int(starts[task]), int(data.duration[stage[task]]), data.demand[stage[task]]
            room = np.all(usage[t : t + d] + need <= limit, axis=(0, 2))
            if not room.any():
                return None
            j = int(np.argmax(room))
            usage[t : t + d, j] += need
            machine[task] = first[unit] + j
    return machine


def _machines(
    data: SlotData, starts: IntArray, units: IntArray, solver: Backend, deadline: float | None
) -> tuple[IntArray | None, str, float]:
    """Machines for a time-table on capacity units: ``(machine per task or None, how, solve seconds)``.

    Units of one machine need nothing; otherwise first fit, then the exact assignment MILP (which also
    proves that no placement exists).
    """
    if data.units_are_machines:
        return np.searchsorted(data.machine_unit, units).astype(np.int64), "units are machines", 0.0
    found = _first_fit(data, starts, units)
    if found is not None:
        return found, "first fit", 0.0
    model = build_assignment(data, starts, units)
    if model is None:
        return None, "too large for the exact assignment", 0.0
    outcome = solver.solve(model.lp, time_limit=_remaining(deadline))
    if outcome.x is not None and model.lp.max_violation(outcome.x) <= 1e-6:
        return model.machines(outcome.x), "assignment MILP", outcome.solve_s
    reason = "no placement exists" if outcome.status == "infeasible" else f"assignment MILP {outcome.status}"
    return None, reason, outcome.solve_s


def _better_bound(*bounds: float | None) -> float | None:
    known = [b for b in bounds if b is not None and math.isfinite(b)]
    return max(known) if known else None


def solve_spacetime(
    instance: Instance,
    backend: str = "highs",
    objective: str | None = None,
    time_limit: float | None = None,
    alpha: float = 0.5,
    fair_completion: Mapping[str, float] | FloatArray | None = None,
    fair_cap: bool = True,
    placement: str = "pooled",
    algorithm: str | None = None,
    servers_model: str = "auto",
    settings: SolverSettings | None = None,
) -> Result:
    """Pack all tasks of all DAG jobs in space and time with the time-indexed MILP.

    Parameters
    ----------
    instance : Instance
        Needs ``jobs``; slots of length ``instance.time_slot``.
    backend : str
        MILP backend (``highs``, ``ortools`` (SCIP), ``cbc``).
    objective : {'makespan', 'avg-jct', 'mix'}, optional
        Default ``makespan`` for one job, ``avg-jct`` for several (as ``spacetime-cp``).
    time_limit : float, optional
        Seconds for the whole method (fair completion times included); the incumbent (at worst the
        heuristic schedule) is returned.
    alpha : float
        Weight of the average JCT in ``mix``.
    fair_completion : mapping job name -> T_k or array (jobs,), optional
        Deadlines ``C_k <= T_k``; when omitted the fair-share baseline is used.
    fair_cap : bool
        ``False`` (``--no-fair-cap``) enforces no fair completion time; the fair-share ``T_k`` are then
        computed with a part of the time limit and reported beside each job only.
    placement : {'pooled', 'servers'}
        One pooled cluster, or every task on one machine it fits (module docstring).
    algorithm : str, optional
        Backend variant (``scip`` for ``ortools``).
    servers_model : {'auto', 'class', 'machine'}
        With ``placement='servers'``: relaxation then per-machine if needed, relaxation only, or
        per-machine only (module docstring).
    settings : SolverSettings, optional
        Threads, seed and log of the MILP solver (``--workers``, ``--seed``, ``--verbose``).

    Returns
    -------
    Result
        ``schedule`` in real times (with server and machine per task for ``servers``);
        ``solver_objective`` and ``bound`` (a valid dual bound) in real units; status
        ``optimal``/``feasible``/``time_limit``/``infeasible``/``error``. When durations or releases are
        not whole slots, ``optimal`` becomes ``feasible`` and the bound (of the slotted problem only)
        moves to ``extra['slotted_bound']``.
    """
    if servers_model not in SERVERS_MODELS:
        raise ValueError(f"servers_model must be one of {', '.join(SERVERS_MODELS)}, not {servers_model!r}")
    check_slots(instance)
    from fairpack.solver.spacetime.choice_model import uses_choices

    placement = "servers" if instance.has_options else placement  # options select machines by label
    if placement == "servers":
        refuse_locality(instance)
    if uses_choices(instance, objective, placement):
        from fairpack.solver.spacetime.choice_milp import solve_choice_milp  # options, gangs, utility

        fair = _fair_mapping(instance, fair_completion)
        return solve_choice_milp(instance, backend, objective, time_limit, alpha, fair, fair_cap, algorithm, settings,
                                 placement)  # fmt: skip
    run = _SpacetimeRun(instance, backend, objective, time_limit, alpha, placement, algorithm, servers_model,
                        settings)  # fmt: skip
    try:
        run.fair_caps(fair_completion, fair_cap)
    except _NoFairShare:
        return run.result("time_limit", no_fair_share(), build_s=time.perf_counter() - run.started)
    try:
        run.heuristics()
        upper = run.completion_bounds()
        run.check_size(upper)
        run.solve_models(upper)
    except WindowError as error:
        reason = f"no schedule meets the fair caps (--no-fair-cap drops them): {error}"
        return run.result("infeasible", reason, build_s=time.perf_counter() - run.started)
    run.fall_back_to_heuristic()
    return run.finish()


class _SpacetimeRun:
    """The steps of :func:`solve_spacetime`, sharing its state (module docstring: steps 1-4)."""

    def __init__(self, instance: Instance, backend: str, objective: str | None, time_limit: float | None,
                 alpha: float, placement: str, algorithm: str | None, servers_model: str,
                 settings: SolverSettings | None = None) -> None:  # fmt: skip
        self.started = time.perf_counter()
        self.instance, self.backend, self.alpha, self.placement = instance, backend, alpha, placement
        self.algorithm, self.servers_model = algorithm, servers_model
        self.time_limit = time_limit
        self.deadline = None if time_limit is None else self.started + float(time_limit)
        self.servers = placement == "servers"
        self.data = SlotData.of(instance, placement, per_machine=self.servers and servers_model == "machine")
        self.objective = objective or ("makespan" if len(instance.jobs) == 1 else "avg-jct")
        self.a, self.b = objective_coefficients(self.data.weight, self.objective, alpha)
        self.notes: list[str] = []
        if not self.data.exact:
            self.notes.append(f"durations/releases rounded up to slots of {self.data.slot:g}: optimal for the "
                              "slotted problem only")  # fmt: skip
        self.fair: FloatArray | None = None  # enforced T_k
        self.reported: FloatArray | None = None  # T_k on the schedule (enforced or not)
        self.witness: tuple[IntArray, IntArray] | None = None  # the fair-share schedule in slots
        self.cap: IntArray | None = None
        self.extra: dict[str, Any] = {"objective_name": self.objective, "alpha": alpha, "slot": self.data.slot,
                                      "placement": placement}  # fmt: skip
        if self.servers:
            self.extra["servers_model"] = servers_model
        self.candidates: dict[str, tuple[float, IntArray, IntArray]] = {}
        self.best: str | None = None
        self.solver = get_backend(backend, None, settings)
        self.solve_s = 0.0
        self.phase: _Phase | None = None
        self.size = 0  # estimated nonzeros of the MILP
        self.status: Status = "error"
        self.bound: float | None = None
        self.solver_objective: float | None = None
        self.chosen: tuple[IntArray, IntArray] | None = None

    def result(self, status: Status, message: str = "", **fields: Any) -> Result:
        joined = "; ".join([*self.notes, message] if message else self.notes)
        return Result(status, "spacetime", self.backend, message=joined, extra=self.extra, **fields)

    def fair_caps(self, fair_completion: Mapping[str, float] | FloatArray | None, fair_cap: bool) -> None:
        """``C_k <= T_k`` as slot caps: explicit ``T_k``, else the fair-share baseline of
        :mod:`fairpack.solver.spacetime.fair` on the instance as the MILP sees it (durations and releases rounded up
        to whole slots, so that its schedule is a witness in slots too); with ``fair_cap`` off the baseline
        is only reported. Raises ``_NoFairShare`` when capped and the baseline did not finish in time."""
        if fair_cap and fair_completion is not None:
            self.fair = _fair_array(self.instance, fair_completion)
        elif fair_completion is None:
            mode = fair_mode(fair_cap)
            share = fair_share(self.instance, self.data.placement, None if self.data.exact else self.data.slot,
                               share_deadline(mode, self.deadline))  # fmt: skip
            if share is None and fair_cap:
                raise _NoFairShare
            if share is None:
                self.notes.append(f"T_k not reported: the fair-share schedule {unfinished()}")
            else:
                # The fair-share schedule meets every cap: a warm start that always exists.
                self.witness = schedule_starts(self.instance, share.schedule, self.data.slot)
                if fair_cap:
                    self.fair = share.completion
                    self.notes.append("fair caps C_k <= T_k from the drf-strict schedule (solver.spacetime.fair)")
                else:
                    self.reported = share.completion
        self.reported = self.fair if self.fair is not None else self.reported
        self.extra["fair_cap"] = self.fair is not None
        if self.fair is not None:
            fair, big = self.fair, self.data.sum_horizon() + 1
            finite = np.isfinite(fair)
            slots = np.floor(np.where(finite, fair, 0) / self.data.slot + 1e-9)
            # A cap beyond the sum horizon constrains nothing (some optimal schedule ends by then); clipping
            # keeps an unfinished-looking T_k of, say, 1e30 from overflowing the integers.
            self.cap = np.where(finite, np.minimum(slots, big), big).astype(np.int64)

    def heuristics(self) -> None:
        """Step 1: heuristic schedules (per machine) that meet the caps; the best is the warm start."""
        until = None
        if self.deadline is not None:  # the simulated heuristics do not watch a clock: stop them at a share
            until = time.perf_counter() + HEURISTIC_SHARE * max(self.deadline - time.perf_counter(), 0.0)
        found = _heuristics(self.instance, self.data, until, self.deadline)
        if self.witness is not None:
            found["drf-strict"] = self.witness
        for rule, (starts, machine) in found.items():
            completion = self.data.completions(starts)
            if self.cap is None or np.all(completion <= self.cap):
                self.candidates[rule] = (objective_in_slots(self.data, completion, self.a, self.b), starts, machine)
        if self.candidates:
            self.best = min(self.candidates, key=lambda rule: self.candidates[rule][0])

    def _start(self) -> tuple[IntArray, IntArray] | None:
        if self.best is None:
            return None
        return self.candidates[self.best][1], self.candidates[self.best][2]

    def completion_bounds(self) -> IntArray:
        """Step 2: per-job completion bounds from the best heuristic's value (so the horizon)."""
        data = self.data
        if self.best is not None:
            upper = completion_upper(data, self.a, self.b, self.candidates[self.best][0])
        else:
            upper = np.full(data.num_jobs, data.sum_horizon(), dtype=np.int64)
        return upper if self.cap is None else np.minimum(upper, self.cap)

    def check_size(self, upper: IntArray) -> None:
        """Refuse, naming the limit, a MILP that would not fit in memory (it is never built)."""
        size = self.size = model_size(self.data, upper)
        if size > MAX_NONZEROS:
            bounds = (f"completion bounds from the {self.best} warm start" if self.best is not None else
                      "no warm start finished in time to bound the completions; more time may help")  # fmt: skip
            raise InstanceError(f"the time-indexed MILP would hold about {size:,} nonzeros (slots of "
                                f"{self.data.slot:g}, {bounds}); spacetime builds at most MAX_NONZEROS = "
                                f"{MAX_NONZEROS:,}; use spacetime-cp, a coarser time.slot, or fewer tasks",
                                "jobs")  # fmt: skip

    def _phase(self, upper: IntArray, deadline: float | None) -> _Phase:
        phase = _solve_phase(self.data, self.objective, self.alpha, upper, self._start(), self.solver, deadline,
                             self.algorithm, self.instance.name, self.notes)  # fmt: skip
        self.solve_s += phase.outcome.solve_s
        return phase

    def solve_models(self, upper: IntArray) -> None:
        """Step 3: build and solve; per-server placement may need machines, or a second, per-machine model."""
        data, deadline = self.data, self.deadline
        load_s = LOAD_S_PER_NONZERO * self.size
        if deadline is not None and deadline - time.perf_counter() < max(MIN_PHASE_S, load_s):
            # Building and loading the MILP alone would outlast the limit (HiGHS does not watch the clock
            # while it takes a model in): keep the best warm start instead.
            self.status = "time_limit"
            self.notes.append(f"the MILP (about {self.size:,} nonzeros, ~{load_s:.2g} s to build and load) was not "
                              "started in the time left")  # fmt: skip
            return
        first_deadline = deadline
        if deadline is not None and self.servers_model == "auto" and not data.units_are_machines:
            # Keep time for the per-machine MILP in case the relaxation's time-table fits no machines.
            first_deadline = time.perf_counter() + RELAXATION_SHARE * max(deadline - time.perf_counter(), 0.0)
        phase = self.phase = self._phase(upper, first_deadline)
        self.status, self.bound = phase.outcome.status, phase.outcome.bound
        self.solver_objective = phase.outcome.objective if phase.outcome.x is not None else None
        if self.servers:
            self.extra["models"] = {"machine" if data.units_are_machines else "class": phase.model.stats()}
        if phase.starts is None or phase.units is None:
            return
        on, how, spent = _machines(data, phase.starts, phase.units, self.solver, deadline)
        self.solve_s += spent
        if self.servers:
            self.extra["machine_assignment"] = how
        if on is not None:
            self.chosen = (phase.starts, on)
            if self.servers and not data.units_are_machines:
                self.notes.append(f"class-aggregated MILP (a relaxation of per-machine packing); its time-table was "
                                  f"placed on machines by {how}, so its bound holds per machine")  # fmt: skip
            return
        self.notes.append(f"the class-aggregated MILP's time-table does not fit the machines ({how})")
        self.status = "feasible" if self.status == "optimal" else self.status
        self.solver_objective = None
        if self.servers_model == "auto" and (deadline is None or deadline - time.perf_counter() > MIN_PHASE_S):
            self._per_machine(upper)

    def _per_machine(self, upper: IntArray) -> None:
        self.data = SlotData.of(self.instance, self.placement, per_machine=True)
        second = self.phase = self._phase(upper, self.deadline)
        self.extra["models"]["machine"] = second.model.stats()
        self.notes.append("then ran the per-machine MILP")
        self.status = second.outcome.status
        self.bound = _better_bound(self.bound, second.outcome.bound)
        if second.starts is not None and second.units is not None:
            self.chosen = (second.starts, second.units)  # per-machine data: unit u is machine u
            self.solver_objective = second.outcome.objective

    def fall_back_to_heuristic(self) -> None:
        """Step 4a: without a solver time-table, the best heuristic schedule (never called optimal)."""
        if self.chosen is None and self.best is not None and self.status in ("time_limit", "error", "feasible",
                                                                             "optimal"):  # fmt: skip
            self.chosen = self._start()
            if self.status == "optimal":  # a relaxation's optimum without machines: its bound holds, not optimality
                self.status = "feasible"
            elif self.status != "feasible":
                self.status = "time_limit" if self.status != "error" else "error"
            self.notes.append(f"returning the {self.best} heuristic schedule")
        if self.status == "infeasible" and self.fair is not None:
            self.notes.append("the fair caps cannot all be met at once (--no-fair-cap drops them)")

    def _schedule(self) -> Schedule | None:
        if self.chosen is None:
            return None
        data = self.data
        starts, machine = self.chosen
        stage = data.task_stage
        begin = starts.astype(np.float64) * data.slot
        placed = (data.machine_class[machine], data.machine_number[machine]) if self.servers else (None, None)
        index = np.arange(stage.size) - data.first_task[stage]
        return Schedule(data.stage_job[stage], data.stage_local[stage], index, begin,
                        begin + data.real_duration[stage], self.reported, *placed)  # fmt: skip

    def finish(self) -> Result:
        """Step 4b: the schedule in real times and the result."""
        phase = self.phase
        status, bound, extra_bound = self.status, self.bound, None
        if not self.data.exact:
            status = "feasible" if status == "optimal" else status
            extra_bound, bound = bound, None
        total = time.perf_counter() - self.started
        result = self.result(status, phase.outcome.message if phase is not None else "", bound=bound,
                             build_s=max(total - self.solve_s, 0.0), solve_s=self.solve_s,
                             solver_objective=self.solver_objective, schedule=self._schedule())  # fmt: skip
        extra = {
            **result.extra,
            **(phase.model.stats() if phase is not None else {}),
            "horizon": phase.model.horizon * self.data.slot if phase is not None else None,
            "heuristic": self.best,
            "heuristic_objective": self.candidates[self.best][0] if self.best is not None else None,
            "warm_start": phase.warm if phase is not None else None,
        }
        if extra_bound is not None:
            extra["slotted_bound"] = extra_bound
        return replace(result, extra=extra)
