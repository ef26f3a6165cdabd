"""The ``solve()`` entry point: one call for every method, every result verified from the instance.

Methods are registered in ``METHODS`` with their family and whether they are exact. Whatever a method
returns, ``solve`` re-checks it with ``models.check.verify_allocation`` and recomputes the objective
(the minimum weighted global dominant share among unsatisfied tenants); a solver's own objective is
reported beside it as ``solver_objective``, never instead of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.check import verify_allocation
from models.result import Allocation, Result
from models.types import Instance, InstanceError
from solver.backends import DEFAULT_BACKEND, get_backend


@dataclass(frozen=True)
class SolveOptions:
    backend: str = DEFAULT_BACKEND
    time_limit: float | None = None
    algorithm: str | None = None  # backend variant, e.g. 'pdlp' for ortools, 'ipm' for highs
    strategy: str = "auto"  # drfh: plain | colgen | aggregate | auto
    slots: int = 10  # slots per largest server, for the slot scheduler
    gap: float = 0.0  # drfh-int: stop once f is within this fraction of its proven upper bound
    placement: str = "auto"  # hdrf, collapsed: pooled | servers | auto (servers when configurations differ);
    # DAG jobs: pooled (also for auto) | servers (every task on one machine it fits)
    objective: str | None = None  # DAG jobs: makespan | avg-jct | mix (None: makespan for one job, else avg-jct)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Method:
    name: str
    family: str
    exact: bool
    uses_backend: bool
    run: Callable[[Instance, SolveOptions], Result]
    summary: str


def _run_drfh(instance: Instance, options: SolveOptions, pooled: bool = False) -> Result:
    from solver.drfh.filling import solve_drfh, unit_tasks

    target = instance.pooled() if pooled else instance
    backend = get_backend(options.backend)
    model, filled, build_s = solve_drfh(target, backend, options.time_limit, options.strategy, options.algorithm)
    per_unit = unit_tasks(model, filled)
    if pooled:
        allocation = Allocation(per_unit.sum(axis=1, keepdims=True), "pool")
    else:
        allocation = Allocation(model.units.split_to_classes(instance, per_unit), "class")
    return Result(
        status=filled.status,
        method="drf" if pooled else "drfh",
        backend=backend.name,
        build_s=build_s,
        solve_s=filled.solve_s,
        allocation=allocation,
        solver_objective=filled.first_level,
        message=filled.message,
        extra={
            "rounds": filled.rounds,
            "lp_solves": filled.lp_solves,
            "units": model.units.num_units,
            "levels": {t.name: float(v) for t, v in zip(instance.tenants, filled.levels, strict=True)},
        },
    )


def _run_drfh_int(instance: Instance, options: SolveOptions) -> Result:
    from solver.drfh.int_search import solve_drfh_int

    backend = get_backend(options.backend)
    started = time.perf_counter()
    lp_result = _run_drfh(instance, SolveOptions(backend=options.backend))
    lp_report = verify_allocation(instance, lp_result.allocation) if lp_result.allocation is not None else None
    lp_bound = lp_report.min_weighted_share if lp_report is not None and lp_result.status == "optimal" else None
    # Warm start from the better of the two placement heuristics (by f, the compared objective).
    from models.metrics import min_weighted_share
    from solver.drfh.heuristics import best_fit, first_fit

    starts = [heuristic(instance) for heuristic in (best_fit, first_fit)]
    start = max(starts, key=lambda allocation: min_weighted_share(instance, allocation))
    filled = solve_drfh_int(instance, backend, options.time_limit, lp_bound, start.tasks, options.gap)
    total = time.perf_counter() - started
    return Result(
        status=filled.status,
        method="drfh-int",
        backend=backend.name,
        build_s=max(total - filled.solve_s, 0.0),
        solve_s=filled.solve_s,
        bound=lp_bound,
        allocation=Allocation(filled.tasks, "machine", integral=True),
        solver_objective=None,
        message=filled.message,
        extra={
            "leximin_steps": filled.steps,
            "milp_solves": filled.milp_solves,
            "max_min_status": filled.max_min_status,
            "max_min_s": filled.max_min_s,
            "proven_bound": filled.first_bound,
            "lp_bound": lp_bound,
        },
    )


def _pooled(instance: Instance, placement: str) -> bool:
    if placement not in ("auto", "pooled", "servers"):
        raise ValueError(f"placement must be auto, pooled or servers, not {placement!r}")
    if placement == "auto":
        # Divisible tasks on identical machines pool exactly, so only distinct configurations matter.
        return len(np.unique(instance.capacity, axis=0)) <= 1
    return placement == "pooled"


def _run_hdrf(instance: Instance, options: SolveOptions) -> Result:
    from solver.hdrf.water_filling import solve_hdrf

    pooled = _pooled(instance, options.placement)
    backend = get_backend(options.backend)
    filled = solve_hdrf(instance, backend, pooled=pooled, time_limit=options.time_limit)
    return Result(
        status=filled.status,
        method="hdrf",
        backend="none" if pooled else backend.name,
        solve_s=filled.solve_s,
        allocation=Allocation(filled.tasks, filled.kind),
        message=filled.message,
        extra={"placement": "pooled" if pooled else "servers", "phases": filled.phases,
               "lp_solves": filled.lp_solves, "events": dict(filled.events)},
    )  # fmt: skip


def _run_collapsed(instance: Instance, options: SolveOptions) -> Result:
    """Flatten the tree into leaf weights (each leaf's guarantee), then weighted DRF / DRFH."""
    from dataclasses import replace

    from models.check.hierarchy import demanding_nodes
    from models.hierarchy import tree_of

    pooled = _pooled(instance, options.placement)
    # The same notion of "demanding" as the share-guarantee check, for the placement used.
    tree = tree_of(instance)
    weights = tree.collapsed_weights(demanding_nodes(instance, "pool" if pooled else "class", tree=tree))
    # Non-demanding leaves get nothing anyway; any positive weight keeps the instance valid.
    weights = np.where(weights > 0, weights, 1.0)
    flat = instance.with_tenants([replace(t, weight=float(w)) for t, w in zip(instance.tenants, weights, strict=True)])
    result = _run_drfh(flat, options, pooled=pooled)
    result.method = "collapsed"
    # Weighted DRF is solved exactly, but as an answer to the hierarchy it is a heuristic.
    result.status = "feasible" if result.status == "optimal" else result.status
    result.extra["placement"] = "pooled" if pooled else "servers"
    result.extra["collapsed_weights"] = {t.name: float(w) for t, w in zip(instance.tenants, weights, strict=True)}
    return result


def _heuristic(name: str, function: Callable[[Instance], Allocation]) -> Callable[[Instance, SolveOptions], Result]:
    def run(instance: Instance, options: SolveOptions) -> Result:
        started = time.perf_counter()
        allocation = function(instance)
        return Result("feasible", name, "none", solve_s=time.perf_counter() - started, allocation=allocation)

    return run


def _slots(instance: Instance, options: SolveOptions) -> Result:
    from solver.drfh.heuristics import slots

    return _heuristic("slots", lambda inst: slots(inst, options.slots))(instance, options)


def _lazy(function_name: str) -> Callable[[Instance], Allocation]:
    def call(instance: Instance) -> Allocation:
        from solver.drfh import heuristics as flat

        function: Callable[[Instance], Allocation] = getattr(flat, function_name)
        return function(instance)

    return call


def _simulated(policy: str) -> Callable[[Instance, SolveOptions], Result]:
    """A hierarchical scheduler run as a discrete-event simulation (``solver.hdrf.hsim``).

    ``options.extra`` carries the simulation settings (``horizon``, ``seed``, ``duration``, ``mean``,
    ``warmup``, ``starvation_after``, ``samples``; ``reference=False`` skips the static H-DRF distance).
    """

    def run(instance: Instance, options: SolveOptions) -> Result:
        from solver.hdrf.hsim import SimOptions, hsim_result

        settings = SimOptions.from_extra(options.extra, options.slots)
        return hsim_result(instance, policy, settings, use_reference=bool(options.extra.get("reference", True)))

    return run


def _job_placement(options: SolveOptions) -> str:
    """DAG jobs: the pooled cluster by default (``auto``), or ``servers`` (each task on one machine)."""
    if options.placement not in ("auto", "pooled", "servers"):
        raise ValueError(f"placement must be auto, pooled or servers, not {options.placement!r}")
    return "servers" if options.placement == "servers" else "pooled"


def _run_spacetime_cp(instance: Instance, options: SolveOptions) -> Result:
    """CP-SAT space-time packing; ``extra`` may carry ``alpha``, ``fair_completion``, ``workers``, ``seed``."""
    from solver.spacetime.cp import solve_spacetime_cp

    return solve_spacetime_cp(
        instance,
        objective=options.objective,
        time_limit=options.time_limit,
        alpha=float(options.extra.get("alpha", 0.5)),
        fair_completion=options.extra.get("fair_completion"),
        workers=int(options.extra.get("workers", 2)),
        seed=int(options.extra.get("seed", 0)),
        placement=_job_placement(options),
    )


def _run_spacetime(instance: Instance, options: SolveOptions) -> Result:
    """Time-indexed MILP; ``extra`` may carry ``alpha``, ``fair_completion``, ``fair_cap`` (default True),
    ``servers_model`` (``auto``/``class``/``machine``, with ``placement='servers'``)."""
    from solver.spacetime.milp import solve_spacetime

    return solve_spacetime(
        instance,
        backend=options.backend,
        objective=options.objective,
        time_limit=options.time_limit,
        alpha=float(options.extra.get("alpha", 0.5)),
        fair_completion=options.extra.get("fair_completion"),
        fair_cap=bool(options.extra.get("fair_cap", True)),
        placement=_job_placement(options),
        algorithm=options.algorithm,
        servers_model=str(options.extra.get("servers_model", "auto")),
    )


def _dag_heuristic(name: str) -> Callable[[Instance, SolveOptions], Result]:
    """A DAG-job heuristic run in the event-driven simulator (``solver.spacetime``).

    ``extra``: ``altruism``, ``reverse_order``, ``seed`` (carbyne), ``fair_completion=False`` (skip T_k),
    ``fair_time_limit``, ``cp_max_tasks``, ``fair_margin``, ``attach_fair`` (default True: T_k goes on the
    schedule and into ``jobs.*.fair_completion``; late jobs are listed in ``extra``, not treated as infeasible).
    """

    def run(instance: Instance, options: SolveOptions) -> Result:
        from solver.spacetime.policies import run_heuristic

        result = run_heuristic(instance, name, dict(options.extra), options.time_limit,
                               placement=_job_placement(options))  # fmt: skip
        if options.objective is not None:
            result.extra["objective_name"] = options.objective
            result.extra["alpha"] = float(options.extra.get("alpha", 0.5))
        return result

    return run


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(
            "drf", "flat", True, True, lambda i, o: _run_drfh(i, o, pooled=True), "weighted DRF on one pooled server"
        ),
        Method("drfh", "flat", True, True, _run_drfh, "DRFH LP, progressive filling (leximin)"),
        Method("drfh-int", "flat", True, True, _run_drfh_int, "DRFH with indivisible tasks (MILP, lexicographic)"),
        Method("first-fit", "flat", False, False, _heuristic("first-fit", _lazy("first_fit")), "First-Fit DRFH"),
        Method("best-fit", "flat", False, False, _heuristic("best-fit", _lazy("best_fit")), "Best-Fit DRFH"),
        Method("slots", "flat", False, False, _slots, "slot scheduler (k slots per largest server)"),
        Method(
            "per-server-drf",
            "flat",
            False,
            False,
            _heuristic("per-server-drf", _lazy("per_server_drf")),
            "DRF inside every server separately",
        ),
        Method("hdrf", "hierarchy", True, True, _run_hdrf, "static H-DRF, exact event-driven water-filling"),
        Method("collapsed", "hierarchy", False, True, _run_collapsed, "flattened leaf weights, then weighted DRF"),
        Method("naive-hdrf", "hierarchy", False, False, _simulated("naive-hdrf"), "naive H-DRF, raw sums (simulated)"),
        Method("dynamic-hdrf", "hierarchy", False, False, _simulated("dynamic-hdrf"), "dynamic H-DRF (simulated)"),
        Method("hslots", "hierarchy", False, False, _simulated("hslots"), "hierarchical slot scheduler (simulated)"),
        Method("spacetime-cp", "jobs", True, False, _run_spacetime_cp, "DAG jobs packed in space and time (CP-SAT)"),
        Method("spacetime", "jobs", True, True, _run_spacetime, "DAG jobs, time-indexed MILP"),
        Method("carbyne", "jobs", False, False, _dag_heuristic("carbyne"), "DRF shares, reverse packing, leftovers"),
        Method("drf-dag", "jobs", False, False, _dag_heuristic("drf-dag"), "DRF between jobs, breadth-first inside"),
        Method("tetris", "jobs", False, False, _dag_heuristic("tetris"), "Tetris packing by alignment score"),
        Method("sjf", "jobs", False, False, _dag_heuristic("sjf"), "shortest remaining critical path first"),
    )
}


def solve(
    instance: Instance,
    method: str = "drfh",
    backend: str = DEFAULT_BACKEND,
    time_limit: float | None = None,
    **options: Any,
) -> Result:
    """Solve ``instance`` with ``method`` and verify the answer independently.

    Parameters
    ----------
    instance
        A validated instance; flat methods need ``tenants`` (hierarchy leaves count as tenants).
    method
        One of ``METHODS``.
    backend
        Solver backend for exact methods (``highs``, ``ortools``, ``cbc``); heuristics ignore it.
    time_limit
        Seconds for the whole method; exact methods report the incumbent when it runs out.
    **options
        Fields of ``SolveOptions`` (``algorithm``, ``strategy``, ``slots``).

    Returns
    -------
    Result
        ``verified`` is True only if ``models.check`` accepts the allocation; ``objective`` is
        recomputed from it; ``gap`` compares it with ``bound`` when the method has one.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    if METHODS[method].family == "jobs":
        if not instance.jobs:
            raise InstanceError("this method needs DAG jobs", "jobs")
    elif not instance.tenants:
        raise InstanceError("this method needs tenants (or a hierarchy whose leaves are tenants)", "tenants")
    spec = METHODS[method]
    settings = SolveOptions(backend=backend, time_limit=time_limit, **options)
    result = spec.run(instance, settings)
    if result.schedule is not None:
        _verify_schedule_result(instance, result, spec.exact)
    if result.allocation is not None:
        report = verify_allocation(instance, result.allocation)
        result.verified = report.ok
        result.violations = list(report.violations)
        result.objective = report.min_weighted_share
        if instance.hierarchy is not None:
            from models.metrics import guarantee_ratio

            result.extra["min_weighted_leaf_share"] = report.min_weighted_share
            result.objective = guarantee_ratio(instance, result.allocation)
        if spec.exact and result.bound is None and result.status == "optimal":
            result.bound = result.objective
        if result.bound is not None and result.objective is not None and result.bound > 0:
            result.gap = max(0.0, (result.bound - result.objective) / result.bound)
        if (
            result.solver_objective is not None
            and result.status == "optimal"
            and not np.isclose(result.solver_objective, result.objective, rtol=1e-6, atol=1e-9)
        ):
            result.extra.setdefault("notes", []).append(
                "solver's level differs from the recomputed minimum (satisfied tenants are excluded from it)"
            )
    return result


def _verify_schedule_result(instance: Instance, result: Result, exact: bool) -> None:
    """Re-verify a schedule and recompute its objective (minimised, so the gap is (objective - bound) / objective)."""
    from models.check import verify_schedule

    assert result.schedule is not None
    # For an exact method C_k <= T_k is a constraint it promised to meet; for a heuristic T_k is only
    # reported (Carbyne's promise can fail), so its schedule is checked for feasibility alone.
    deadlines = None if exact else np.full(len(instance.jobs), np.inf)
    placed = result.extra.get("placement") == "servers"
    report = verify_schedule(instance, result.schedule, fair_completion=deadlines, require_placement=placed)
    result.verified = report.ok
    result.violations = list(report.violations)
    name = str(result.extra.get("objective_name", "makespan"))
    result.objective = report.objective(name, float(result.extra.get("alpha", 0.5)))
    if exact and result.bound is None and result.status == "optimal":
        result.bound = result.objective
    if result.bound is not None:
        gap = (result.objective - result.bound) / result.objective if result.objective > 0 else 0.0
        result.gap = gap if gap > 1e-12 else 0.0  # rounding noise of the tick scaling is no gap
    if result.solver_objective is not None and not np.isclose(
        result.solver_objective, result.objective, rtol=1e-6, atol=1e-9
    ):
        result.extra.setdefault("notes", []).append(
            f"solver objective {result.solver_objective:.9g} differs from the recomputed {result.objective:.9g}"
        )
