"""``spacetime``: exact space-time packing of DAG jobs with the time-indexed MILP of ``models.spacetime``.

Steps
-----
1. Heuristic schedules in slots: serial list scheduling (stage by stage, each task at the earliest slot
   where precedence, release and capacity allow) under two priority rules -- longest remaining critical
   path first, and whole jobs shortest-first -- plus, when registered in ``solver.api.METHODS``, the
   DAG heuristics ``carbyne``, ``tetris``, ``sjf``, ``drf-dag`` (used only when their starts fall on
   whole slots and their slotted schedule is feasible). The best one that meets the fair caps wins.
2. Completion bounds: its objective value ``V`` bounds the optimum, which yields a per-job bound on
   ``C_k`` (``models.spacetime.completion_upper``) and so the horizon: it never cuts off an optimum. Without
   a feasible heuristic the horizon is the last release plus every task's duration (always valid).
3. The MILP is built over those windows and warm-started from the heuristic schedule (HiGHS
   ``setSolution``; CBC and SCIP MIP starts) when the backend supports it.
4. The solution (or the heuristic schedule if the solver found none in time) becomes a ``Schedule``
   with ``start = slot * t`` and true durations; task ``i`` of a stage takes the ``i``-th start slot.

Fair caps ``C_k <= T_k``: ``fair_completion`` given explicitly (job name -> T_k), else, unless
``fair_cap=False``, the fair-share baseline ``fair_completion(instance)`` from ``solver.dag_sim`` or
``solver.dag`` when one of them exists; if neither does the cap is off and the result message says so.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from models.lp import LinearProgram
from models.solution import Result, Schedule, Status
from models.spacetime import (
    FloatArray,
    IntArray,
    SlotData,
    WindowError,
    build_spacetime,
    completion_upper,
    objective_coefficients,
    objective_in_slots,
)
from models.types import Instance, InstanceError
from solver.backends import get_backend

#: The list heuristic keeps a (slots x classes x resources) profile; larger instances skip it.
MAX_PROFILE_CELLS = 20_000_000
#: DAG heuristics tried for the horizon and warm start when they are registered.
EXTERNAL_HEURISTICS = ("carbyne", "tetris", "sjf", "drf-dag")


def list_schedule(data: SlotData, priority: FloatArray) -> tuple[IntArray, IntArray] | None:
    """Serial list scheduling in slots: start slot and server class of every task (flat order).

    Repeatedly takes the eligible stage (all parents scheduled) with the smallest ``priority`` and places
    its tasks one by one at the earliest slot from its release and its parents' end where one fitting
    class has room for the whole duration. ``None`` if the profile would be too large.
    """
    n_classes, n_res = data.class_capacity.shape
    span = data.sum_horizon() + int(data.duration.max(initial=0)) + 1
    if span * n_classes * max(n_res, 1) > MAX_PROFILE_CELLS:
        return None
    limit = data.class_capacity * (1 + 1e-9) + 1e-9
    usage = np.zeros((span, n_classes, n_res))
    starts = np.zeros(int(data.tasks.sum()), dtype=np.int64)
    classes = np.zeros_like(starts)
    stage_end = np.zeros(data.num_stages, dtype=np.int64)
    parents: list[list[int]] = [[] for _ in range(data.num_stages)]
    children: list[list[int]] = [[] for _ in range(data.num_stages)]
    for parent, child in data.edges.tolist():
        parents[child].append(parent)
        children[parent].append(child)
    missing = [len(p) for p in parents]
    eligible = {s for s in range(data.num_stages) if not missing[s]}
    first = data.first_task
    while eligible:
        stage = min(eligible, key=lambda s: (priority[s], s))
        eligible.remove(stage)
        earliest = max([int(data.release[data.stage_job[stage]])] + [int(stage_end[p]) for p in parents[stage]])
        d, need = int(data.duration[stage]), data.demand[stage]
        fitting = np.flatnonzero(data.fits[stage])
        end = earliest
        for k in range(int(data.tasks[stage])):
            t, cls = earliest, int(fitting[0])
            if d > 0 and np.any(need > 0):
                room = np.all(usage[earliest:, fitting] + need <= limit[fitting], axis=2)  # (slots, classes)
                blocked = np.concatenate([np.zeros((1, fitting.size), dtype=np.int64), np.cumsum(~room, axis=0)])
                free = (blocked[d:] - blocked[:-d]) == 0
                first_free = np.where(free.any(axis=0), free.argmax(axis=0), np.iinfo(np.int64).max)
                choice = int(np.argmin(first_free))
                t, cls = earliest + int(first_free[choice]), int(fitting[choice])
                usage[t : t + d, cls] += need
            starts[first[stage] + k] = t
            classes[first[stage] + k] = cls
            end = max(end, t + d)
        stage_end[stage] = end
        for child in children[stage]:
            missing[child] -= 1
            if not missing[child]:
                eligible.add(child)
    return starts, classes


def _rules(data: SlotData) -> dict[str, FloatArray]:
    tail = data.tail.astype(np.float64)
    length = np.zeros(data.num_jobs)
    np.maximum.at(length, data.stage_job, tail)
    rank = np.argsort(np.argsort((data.release + length) / data.weight, kind="stable"), kind="stable")
    return {"critical-path": -tail, "shortest-job": rank[data.stage_job] * (tail.max(initial=0) + 1) - tail}


def _external(instance: Instance, data: SlotData) -> dict[str, tuple[IntArray, IntArray]]:
    """Registered DAG heuristics whose schedules are whole-slot and feasible in the slotted model."""
    if data.placement != "pooled" or not data.exact:
        return {}
    from models.check import verify_schedule
    from solver.api import METHODS, SolveOptions

    found = {}
    stage_offset = np.concatenate([[0], np.cumsum([len(job.stages) for job in instance.jobs])])[:-1]
    for name in EXTERNAL_HEURISTICS:
        if name not in METHODS:
            continue
        try:
            schedule = METHODS[name].run(instance, SolveOptions()).schedule
        except Exception:  # a heuristic in progress elsewhere must not break the exact method
            continue
        if schedule is None or not verify_schedule(instance, schedule, np.full(len(instance.jobs), np.inf)).ok:
            continue
        ticks = schedule.start / data.slot
        if np.any(np.abs(ticks - np.round(ticks)) > 1e-9):
            continue
        flat = data.first_task[stage_offset[schedule.job] + schedule.stage] + schedule.index
        starts = np.zeros(int(data.tasks.sum()), dtype=np.int64)
        starts[flat] = np.round(ticks).astype(np.int64)
        found[name] = (starts, np.zeros_like(starts))
    return found


def _fair_baseline(instance: Instance) -> tuple[Any, str]:
    """The fair-share baseline's ``T_k`` (``solver.dag.fair_completion_times`` or a ``fair_completion``
    function in ``solver.dag_sim`` / ``solver.dag``), or ``None`` with the reason when there is none."""
    for module_name, function_name in (
        ("solver.dag", "fair_completion_times"),
        ("solver.dag", "fair_completion"),
        ("solver.dag_sim", "fair_completion"),
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:  # absent, or still being written
            reason = str(error)
            continue
        function = getattr(module, function_name, None)
        if function is not None:
            found = function(instance)
            return getattr(found, "completion", found), f"fair caps C_k <= T_k from {module_name}.{function_name}"
    return None, f"fair cap off: no fair-share baseline could be imported ({reason})"


def _fair_array(instance: Instance, fair: Any) -> FloatArray | None:
    if fair is None:
        return None
    if isinstance(fair, Mapping):
        names = {job.name: k for k, job in enumerate(instance.jobs)}
        array = np.full(len(instance.jobs), np.inf)
        for name, value in fair.items():
            if name not in names:
                raise InstanceError(f"unknown job {name!r}", f"fair_completion.{name}")
            array[names[name]] = math.inf if value is None else float(value)
    else:
        array = np.asarray(fair, dtype=np.float64).reshape(-1)
        if array.size != len(instance.jobs):
            raise ValueError(f"{array.size} fair completion times for {len(instance.jobs)} jobs")
    return array if np.isfinite(array).any() else None


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
        Seconds for the whole method; the incumbent (at worst the heuristic schedule) is returned.
    alpha : float
        Weight of the average JCT in ``mix``.
    fair_completion : mapping job name -> T_k or array (jobs,), optional
        Deadlines ``C_k <= T_k``; when omitted the fair-share baseline is used if available.
    fair_cap : bool
        ``False`` ignores every fair completion time (``--no-fair-cap``).
    placement : {'pooled', 'servers'}
        One pooled cluster, or per-server-class capacities with every task fitting one machine.
    algorithm : str, optional
        Backend variant (``scip`` for ``ortools``).

    Returns
    -------
    Result
        ``schedule`` in real times; ``solver_objective`` and ``bound`` (the MILP dual bound) in real
        units; status ``optimal``/``feasible``/``time_limit``/``infeasible``/``error``. When durations or
        releases are not whole slots, ``optimal`` becomes ``feasible`` and the bound (of the slotted
        problem only) moves to ``extra['slotted_bound']``.
    """
    started = time.perf_counter()
    data = SlotData.of(instance, placement)
    objective = objective or ("makespan" if len(instance.jobs) == 1 else "avg-jct")
    a, b = objective_coefficients(data.weight, objective, alpha)
    notes: list[str] = []
    if not data.exact:
        notes.append(f"durations/releases rounded up to slots of {data.slot:g}: optimal for the slotted problem only")

    fair = None
    if fair_cap:
        if fair_completion is None:
            fair_completion, note = _fair_baseline(instance)
            notes.append(note)
        fair = _fair_array(instance, fair_completion)
    deadline = None
    if fair is not None:
        big = data.sum_horizon() + 1
        deadline = np.where(np.isfinite(fair), np.floor(np.where(np.isfinite(fair), fair, 0) / data.slot + 1e-9), big)
        deadline = deadline.astype(np.int64)

    def base(status: Status, message: str = "", **fields: Any) -> Result:
        return Result(status, "spacetime", backend, message="; ".join([*notes, message] if message else notes),
                      extra={"objective_name": objective, "alpha": alpha, "slot": data.slot,
                             "placement": placement, "fair_cap": fair is not None}, **fields)  # fmt: skip

    # 1. Heuristic schedules.
    candidates: dict[str, tuple[float, IntArray, IntArray]] = {}
    heuristics = {rule: list_schedule(data, priority) for rule, priority in _rules(data).items()}
    heuristics.update(_external(instance, data))
    for rule, found in heuristics.items():
        if found is None:
            continue
        completion = data.completions(found[0])
        if deadline is None or np.all(completion <= deadline):
            candidates[rule] = (objective_in_slots(data, completion, a, b), found[0], found[1])
    best = min(candidates, key=lambda rule: candidates[rule][0]) if candidates else None

    # 2. Completion bounds and horizon.
    if best is not None:
        upper = completion_upper(data, a, b, candidates[best][0])
    else:
        upper = np.full(data.num_jobs, data.sum_horizon(), dtype=np.int64)
    if deadline is not None:
        upper = np.minimum(upper, deadline)

    # 3. Build and solve.
    try:
        model = build_spacetime(data, objective, alpha, upper, name=instance.name)
    except WindowError as error:
        reason = f"no schedule meets the fair caps (--no-fair-cap drops them): {error}"
        return base("infeasible", reason, build_s=time.perf_counter() - started)
    lp: LinearProgram = model.lp
    solver = get_backend(backend)
    warm = None
    if best is not None:
        warm = model.start_vector(candidates[best][1], candidates[best][2])
        violation = lp.max_violation(warm)
        if violation > 1e-6:  # would be a bug in the heuristic or the model; never hand it to a solver
            notes.append(f"heuristic start violates the model by {violation:.3g}; not used")
            warm = None
    build_s = time.perf_counter() - started
    remaining = None if time_limit is None else max(float(time_limit) - build_s, 0.01)
    outcome = solver.solve(
        lp, time_limit=remaining, warm_start=warm if solver.capabilities.warm_start else None, algorithm=algorithm
    )

    # 4. Schedule.
    status: Status = outcome.status
    bound = outcome.bound
    chosen: tuple[IntArray, IntArray] | None = None
    if outcome.x is not None:
        chosen = model.task_starts(outcome.x)
    elif best is not None and status in ("time_limit", "error", "feasible"):
        chosen = (candidates[best][1], candidates[best][2])
        status = "time_limit" if status != "error" else "error"
        notes.append(f"the solver found no solution; returning the {best} list schedule")
    if status == "infeasible" and fair is not None:
        notes.append("the fair caps cannot all be met at once (--no-fair-cap drops them)")
    extra_bound = None
    if not data.exact:
        status = "feasible" if status == "optimal" else status
        extra_bound, bound = bound, None
    schedule = None
    task_class = None
    if chosen is not None:
        starts, task_class = chosen
        stage = data.task_stage
        begin = starts.astype(np.float64) * data.slot
        schedule = Schedule(
            data.stage_job[stage],
            data.stage_local[stage],
            np.arange(stage.size) - data.first_task[stage],
            begin,
            begin + data.real_duration[stage],
            fair,
        )
    result = base(
        status,
        outcome.message,
        bound=bound,
        build_s=build_s,
        solve_s=outcome.solve_s,
        solver_objective=outcome.objective if outcome.x is not None else None,
        schedule=schedule,
    )
    result.extra.update(
        {
            **model.stats(),
            "horizon": model.horizon * data.slot,
            "heuristic": best,
            "heuristic_objective": candidates[best][0] if best is not None else None,
            "warm_start": warm is not None and solver.capabilities.warm_start,
        }
    )
    if extra_bound is not None:
        result.extra["slotted_bound"] = extra_bound
    if placement == "servers" and task_class is not None:
        names = [server.name for server in instance.servers]
        result.extra["task_class"] = [names[c] for c in task_class.tolist()]
    return result
