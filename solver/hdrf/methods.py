"""The hierarchy family's drivers: static H-DRF, the collapsed tree, and the simulated schedulers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from fairpack.models.check.hierarchy import demanding_nodes
from fairpack.models.hierarchy import tree_of
from fairpack.models.result import Allocation, Result
from fairpack.models.types import Instance
from fairpack.solver.backends import get_backend
from fairpack.solver.budget import Budget
from fairpack.solver.registry import OptionError, SolveOptions


def pooled_placement(instance: Instance, placement: str) -> bool:
    """Whether an allocation is computed on the pooled cluster (``auto``: when all servers are alike)."""
    if placement not in ("auto", "pooled", "servers"):
        raise OptionError(f"must be auto, pooled or servers, not {placement!r}", "placement")
    if placement == "auto":
        # Divisible tasks on identical machines pool exactly, so only distinct configurations matter.
        return len(np.unique(instance.capacity, axis=0)) <= 1
    return placement == "pooled"


def run_hdrf(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
    from fairpack.solver.hdrf.water_filling import solve_hdrf

    pooled = pooled_placement(instance, options.placement)
    backend = get_backend(options.backend or "highs", options.algorithm, options.solver_settings())
    filled = solve_hdrf(instance, backend, pooled=pooled, time_limit=budget.remaining())
    unused = [f"--{name}" for name in ("workers", "seed") if name in options.given()]
    warnings = (f"the pooled cluster needs no LP solver, so {' and '.join(unused)} had no effect",) if (
        pooled and unused) else ()  # fmt: skip
    return Result(
        status=filled.status,
        method="hdrf",
        backend="none" if pooled else backend.name,
        solve_s=filled.solve_s,
        allocation=Allocation(filled.tasks, filled.kind),
        message=filled.message,
        extra={"placement": "pooled" if pooled else "servers", "phases": filled.phases,
               "lp_solves": filled.lp_solves, "events": dict(filled.events)},
        warnings=warnings,
    )  # fmt: skip


def run_collapsed(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
    """Flatten the tree into leaf weights (each leaf's guarantee), then weighted DRF / DRFH."""
    from fairpack.solver.drfh.methods import run_drfh

    pooled = pooled_placement(instance, options.placement)
    # The same notion of "demanding" as the share-guarantee check, for the placement used.
    tree = tree_of(instance)
    weights = tree.collapsed_weights(demanding_nodes(instance, "pool" if pooled else "class", tree=tree))
    # Non-demanding leaves get nothing anyway; any positive weight keeps the instance valid.
    weights = np.where(weights > 0, weights, 1.0)
    flat = instance.with_tenants([replace(t, weight=float(w)) for t, w in zip(instance.tenants, weights, strict=True)])
    result = run_drfh(flat, replace(options, placement="auto"), budget, pooled=pooled)
    # Weighted DRF is solved exactly, but as an answer to the hierarchy it is a heuristic.
    return replace(
        result,
        method="collapsed",
        status="feasible" if result.status == "optimal" else result.status,
        extra={**result.extra, "placement": "pooled" if pooled else "servers",
               "collapsed_weights": {t.name: float(w) for t, w in zip(instance.tenants, weights, strict=True)}},
    )  # fmt: skip


def _simulated(policy: str) -> Callable[[Instance, SolveOptions, Budget], Result]:
    """A hierarchical scheduler run on the one simulator over the tenants' endless backlogs (``solver.sim.backlog``).

    ``options.extra`` carries the simulation settings (``horizon``, ``duration``, ``mean``, ``warmup``,
    ``starvation_after``, ``samples``; ``reference=False`` skips the static H-DRF distance); ``seed`` and
    ``slots`` come from the options.
    """

    def run(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
        from fairpack.solver.hdrf.water_filling import hdrf_shares
        from fairpack.solver.sim.backlog import SimOptions, backlog_result
        from fairpack.solver.sim.policies.options import flag

        extra = dict(options.extra)
        if options.seed is not None:
            extra["seed"] = options.seed
        settings = SimOptions.from_extra(extra, options.slots)
        # The distance to static H-DRF: pooled water-filling of the same tree.
        reference = hdrf_shares(instance) if flag(extra, "reference", True) else None
        left = budget.remaining()
        deadline = None if left is None else time.perf_counter() + left
        return backlog_result(instance, policy, settings, reference, deadline)

    return run


run_naive_hdrf = _simulated("naive-hdrf")
run_dynamic_hdrf = _simulated("dynamic-hdrf")
run_hslots = _simulated("hslots")
