"""The flat family's drivers: each takes an instance and the request and returns a ``Result``.

``solve_drfh`` picks the LP strategy (every column in one model, column generation, or the pooled
relaxation certified on the real machines) and runs progressive filling; ``drfh_allocation`` turns its
shares into task counts per server class, which ``collapsed`` H-DRF reuses. ``drfh-int`` starts from the
better of First-Fit and Best-Fit and searches f's levels up to the divisible LP's bound.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from fairpack.models.metrics import min_weighted_share
from fairpack.models.result import Allocation, Result
from fairpack.models.types import Instance
from fairpack.solver import interrupt
from fairpack.solver.backends import Backend, get_backend
from fairpack.solver.budget import Budget
from fairpack.solver.drfh.colgen import ColumnGenerationRounds, solve_by_aggregation
from fairpack.solver.drfh.decompose import DecomposedRounds
from fairpack.solver.drfh.filling import (
    FillingResult,
    RoundSolver,
    SessionRounds,
    interior_first,
    level_upper_bound,
    progressive_filling,
    repair_shares,
    unit_tasks,
)
from fairpack.solver.drfh.model import DrfhModel, UnitGrouping
from fairpack.solver.lp import LinearProgram
from fairpack.solver.registry import SolveOptions

#: drfh-int under a time limit: Best-Fit's warm start may take this share of the time left, and stops there (its
#: cost against First-Fit's ranges from a quarter, compiled with two resources, to a hundred times and more with
#: three: 1.2 s against 0.01 s on the Alibaba cluster, which had made a 0.5 s limit end after 1.3 s).
BEST_FIT_SHARE = 0.25
#: Above this many distinct placement units, ``strategy='auto'`` certifies a pooled relaxation instead of
#: putting every (tenant, unit) column into one LP.
AGGREGATE_ABOVE_UNITS = 200
#: ``strategy='auto'`` decomposes from this many tenants, and this many per capacity row (units x resources, less
#: the implied rows), when some tenant has a task cap: the master's iterations grow with its rows, the plain LP's
#: cost with tenants x units. Measured crossovers: about 5 tenants per row on the Google table's 10 classes (100
#: tenants: 8.7 ms either way; 400: 28 ms plain, 11 ms decomposed), 1-1.5 on 100 distinct machines (100 tenants:
#: 195 ms plain, 346 ms decomposed; 300: 1.16 s plain, 0.25 s decomposed). Below 50 tenants every round LP takes
#: milliseconds. Without task caps every tenant grows in one round and the master stalls short of its price bound,
#: handing the round to the plain LP after all (Gavel's LP as DRFH, 1,000 x 100: 0.09 s of master, then the plain
#: LP; the Google table uncapped, 1,000 tenants: 0.31 s decomposed against 0.20 s plain).
DECOMPOSE_FROM_TENANTS = 50
DECOMPOSE_TENANTS_PER_ROW = 2


def drfh_model(instance: Instance) -> DrfhModel:
    """The LP model ``solve_drfh`` solves: scaled copies of a machine pooled into one unit, and the capacity rows
    another row implies left empty. Both are exact for divisible tasks, and together they turn Gavel's LP written
    as DRFH (100 classes, 10 resources) from 100 units x 10 rows into 10 units x 1 row (one all-columns simplex
    solve: 9.9 s before, 0.17 s after; see ``benchmarks/gavel_lp``)."""
    return DrfhModel(instance, UnitGrouping.merge_proportional(instance)).without_implied_rows()


def solve_drfh(
    instance: Instance,
    backend: Backend | None = None,
    time_limit: float | None = None,
    strategy: str = "auto",
    budget: Budget | None = None,
) -> tuple[DrfhModel, FillingResult, float]:
    """Build and solve DRFH; returns the model, the filling result and the build time.

    The LP's shares are brought inside the tolerance policy (``solver.drfh.tolerance``) before they are
    returned; ``FillingResult.repair`` says what that cost.

    ``strategy`` is 'plain' (all columns; from ``filling.INTERIOR_FROM_PAIRS`` columns without task caps, on HiGHS
    with no algorithm asked for, its first solve is the interior point), 'decompose' (rounds on a master LP over the
    capacity rows only, ``solver.drfh.decompose``), 'colgen' (progressive filling with column generation), 'aggregate'
    (certify the pooled-groups relaxation, falling back to column generation) or 'auto', which picks
    'aggregate' when the merged instance has many distinct units and the backend keeps its basis between
    solves (column generation on a backend that rebuilds every LP would be slow), else 'decompose' when
    the backend has row duals, tenants are many (``DECOMPOSE_FROM_TENANTS``, ``DECOMPOSE_TENANTS_PER_ROW``) and
    some tenant has a task cap: its master has ``units x resources + 2`` rows whatever the tenants, where the
    plain LP's simplex cost grows faster than the tenants (one solve: 31 s at 10,000 tenants on the Google
    table's 10 classes; the decomposition's whole filling: 0.2 s), else 'plain'. The model is ``drfh_model``'s
    (scaled copies pooled, implied capacity rows empty).
    """
    started = time.perf_counter()
    budget = budget or Budget.of(time_limit)
    backend = backend or get_backend()
    model = drfh_model(instance)
    chosen = strategy
    if strategy == "auto":
        incremental = "incremental" in backend.capabilities()
        if incremental and model.units.num_units > AGGREGATE_ABOVE_UNITS:
            chosen = "aggregate"
        else:
            many = model.num_tenants >= max(DECOMPOSE_FROM_TENANTS, DECOMPOSE_TENANTS_PER_ROW * model.capacity_rows)
            # Without task caps every tenant grows in one round; there the master stalls (see DECOMPOSE_FROM_TENANTS).
            capped = bool(np.isfinite(model.instance.task_caps).any())
            chosen = "decompose" if many and capped and "duals" in backend.capabilities() else "plain"
    if chosen == "aggregate":
        build_s = time.perf_counter() - started
        filled = solve_by_aggregation(model, backend, budget)
        return model, repair_shares(model, replace(filled, strategy=chosen)), build_s
    rounds: RoundSolver
    if chosen == "plain":
        first = interior_first(model, backend)
        rounds = SessionRounds.all_columns(model, backend, budget, interior_first=first)
        chosen = "plain, interior point first" if first else chosen
    elif chosen == "colgen":
        rounds = ColumnGenerationRounds(model, backend, budget)
    else:
        rounds = DecomposedRounds(model, backend, budget)
    build_s = time.perf_counter() - started
    return model, repair_shares(model, replace(progressive_filling(model, rounds), strategy=chosen)), build_s


def drfh_allocation(instance: Instance, backend: Backend, budget: Budget, strategy: str = "auto",
                    pooled: bool = False) -> tuple[Allocation, FillingResult, float, DrfhModel]:  # fmt: skip
    """DRFH (or, ``pooled``, DRF on the cluster as one server) as task counts per server class (or pool)."""
    target = instance.pooled() if pooled else instance
    model, filled, build_s = solve_drfh(target, backend, strategy=strategy, budget=budget)
    per_unit = unit_tasks(model, filled)
    if pooled:
        allocation = Allocation(per_unit.sum(axis=1, keepdims=True), "pool")
    else:
        allocation = Allocation(model.units.split_to_classes(instance, per_unit), "class")
    return allocation, filled, build_s, model


def run_drfh(instance: Instance, options: SolveOptions, budget: Budget, pooled: bool = False) -> Result:
    backend = get_backend(options.backend or "highs", options.algorithm, options.solver_settings())
    allocation, filled, build_s, model = drfh_allocation(instance, backend, budget, options.strategy, pooled)
    return Result(
        status=filled.status,
        method="drf" if pooled else "drfh",
        backend=backend.name,
        build_s=build_s,
        solve_s=filled.solve_s,
        # A failed LP (HiGHS's "Not Set" on weights 1e-6 beside 1e6, say) leaves no allocation to stand
        # by: whatever its last point held would pass the checker as zeros and read "error, verified".
        allocation=None if filled.status == "error" else allocation,
        solver_objective=filled.first_level,
        # A repair that cost more than the checker's precision leaves the LP's level as the bound.
        bound=filled.first_level if filled.repair is not None and filled.status == "feasible" else None,
        message=filled.message,
        extra={
            "rounds": filled.rounds,
            "lp_solves": filled.lp_solves,
            "strategy": filled.strategy,
            "units": model.units.num_units,
            "capacity_rows": model.capacity_rows,
            # How far the widest price bound of a round's duals lay above its level (relative; 0: certified by
            # construction). Above CHECK_RTOL the status is "feasible".
            "certificate_gap": filled.gap,
            "levels": {t.name: float(v) for t, v in zip(instance.tenants, filled.levels, strict=True)},
            **({"repair": filled.repair.as_dict()} if filled.repair is not None else {}),
        },
    )


def run_drf(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
    return run_drfh(instance, options, budget, pooled=True)


def run_drfh_int(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
    from fairpack.solver.drfh.heuristics import best_fit, first_fit
    from fairpack.solver.drfh.int_search import IntegerFilling, solve_drfh_int

    backend = get_backend(options.backend or "highs", options.algorithm, options.solver_settings())
    started = time.perf_counter()
    # First-Fit first: whatever the time limit, there is an answer (it runs to its end). Best-Fit may cost a hundred
    # First-Fits (three resources: every machine scored for every task), so under a time limit it gets a share of
    # the time left and stops there; a Best-Fit cut short is still feasible, and the better of the two is kept.
    first = first_fit(instance)
    # The divisible relaxation bounds f only over the tenants whole tasks can serve: a task too large for
    # every machine runs divisibly but never whole, so it gets no share in the relaxation either.
    relaxed = instance.with_tenants([t if ok else replace(t, tasks=0.0)
                                     for t, ok in zip(instance.tenants, instance.placeable, strict=True)])  # fmt: skip
    # Progressive filling freezes tenants by row duals; a MILP-only algorithm (ortools scip) has none, so
    # the relaxation runs on the backend's own LP algorithm and only the MILPs use the one asked for.
    relaxing = backend if "duals" in backend.capabilities() else get_backend(backend.name, None, backend.settings)
    lp_bound = None
    if not budget.expired():
        allocation, filled, _, _ = drfh_allocation(relaxed, relaxing, budget)
        lp_bound = min_weighted_share(relaxed, allocation) if filled.status == "optimal" else None
    # Warm start from the better of the two placement heuristics (by f, the compared objective).
    starts = [first] if budget.expired() else [best_fit(instance, stop=budget.part(BEST_FIT_SHARE).expired), first]
    start = max(starts, key=lambda candidate: min_weighted_share(instance, candidate))
    prepared = time.perf_counter() - started
    if budget.expired():
        found = IntegerFilling("time_limit", start.tasks, 0, 0, 0.0, lp_bound, "time_limit",
                               message=f"{interrupt.stop_reason()} before the level search: the better "
                               "heuristic's allocation")  # fmt: skip
    else:
        found = solve_drfh_int(instance, backend, budget, lp_bound, start.tasks, options.gap)
    total = time.perf_counter() - started
    # Build: everything before the level search starts (the LP bound, both heuristics, the model).
    build_s = prepared + found.setup_s
    return Result(
        status=found.status,
        method="drfh-int",
        backend=backend.name,
        build_s=build_s,
        solve_s=max(total - build_s, 0.0),
        # The best proven bound on f: f itself once leximin is done (the checker's f then sets it, gap 0),
        # else the level search's proof. The divisible LP's f is a weaker bound, reported as lp_bound.
        bound=None if found.status == "optimal" else found.first_bound,
        allocation=Allocation(found.tasks, "machine", integral=True),
        message=found.message,
        extra={
            "leximin_steps": found.steps,
            "milp_solves": found.milp_solves,
            "max_min_status": found.max_min_status,
            "max_min_s": found.max_min_s,
            "proven_bound": found.first_bound,
            "lp_bound": lp_bound,
        },
    )


def export_drfh(instance: Instance) -> LinearProgram:
    """The first progressive-filling round: maximise the common weighted level of every tenant."""
    model = DrfhModel(instance, UnitGrouping.merge_identical(instance))
    tenants, units = model.all_pairs()
    return model.build(tenants, units, level_upper_bound(model))


def export_drf(instance: Instance) -> LinearProgram:
    return export_drfh(instance.pooled())


def export_drfh_int(instance: Instance) -> LinearProgram:
    """drfh-int's first max-min MILP (whole tasks on machines)."""

    from fairpack.solver.drfh.int_model import DrfhIntModel

    return DrfhIntModel.build_pairs(instance).build(1, np.zeros(0))
