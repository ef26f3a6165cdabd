"""Probes that re-solve: truthfulness (misreported demands) and population monotonicity.

Each takes a ``solve`` callable (``Instance -> Allocation``, or an object with ``.allocation``) and
compares what tenants can actually run across the re-solved instances.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from fairpack.models.check.report import (
    PropertyCheck,
    Solver,
    as_allocation,
    clean_tasks,
    floor_tasks,
    fmt,
    task_slack,
    tenant_index,
    vector_text,
)
from fairpack.models.result import Allocation
from fairpack.models.tolerance import CHECK_RTOL
from fairpack.models.types import FloatArray, Instance

# ----------------------------------------------------------------------------------------------
# Truthfulness
# ----------------------------------------------------------------------------------------------


def runnable_tasks(
    true_demand: FloatArray, claimed_demand: FloatArray, unit_tasks: FloatArray, integral: bool
) -> float:
    """Tasks a tenant can actually run from what it received under a claimed demand.

    On each unit it received ``unit_tasks[u] * claimed_demand``; with its true demand ``D`` it runs
    ``min over r with D[r] > 0 of unit_tasks[u] * claimed[r] / D[r]`` tasks there, rounded down per
    unit when ``integral``. Returns the sum over units (before any task cap).
    """
    needs = true_demand > 0
    per_task = float(np.min(claimed_demand[needs] / true_demand[needs]))
    per_unit = np.maximum(unit_tasks, 0.0) * per_task
    if integral:
        per_unit = floor_tasks(per_unit)
    return float(per_unit.sum())


def random_misreports(instance: Instance, tenant: int | str, count: int, seed: int = 0) -> list[FloatArray]:
    """Random misreported demand vectors for one tenant (same length as the true demand).

    Each misreport is, at random, one of: (a) some needed components inflated by a factor in
    [1.05, 3]; (b) demand added on resources the tenant does not need (and the cluster has), each
    worth 10%-100% of the tenant's dominant share on that resource; (c) both. Components are never
    lowered, so a misreport is never zero; it always differs from the truth.

    Returns
    -------
    list of ndarray
        ``count`` vectors.
    """
    index = tenant_index(instance, tenant)
    rng = np.random.default_rng(seed)
    truth = np.asarray(instance.demand[index], dtype=np.float64)
    total = instance.total_capacity
    needed = np.flatnonzero(truth > 0)
    unneeded = np.flatnonzero((truth <= 0) & (total > 0))
    dominant = float(instance.dominant_demand[index])
    out: list[FloatArray] = []
    for _ in range(count):
        claim = truth.copy()
        mode = int(rng.integers(3)) if unneeded.size else 0
        if mode in (0, 2):
            chosen = needed[rng.random(needed.size) < 0.5]
            if chosen.size == 0:
                chosen = needed[rng.integers(needed.size)][None]
            claim[chosen] *= rng.uniform(1.05, 3.0, size=chosen.size)
        if mode in (1, 2):
            chosen = unneeded[rng.random(unneeded.size) < 0.5]
            if chosen.size == 0:
                chosen = unneeded[rng.integers(unneeded.size)][None]
            level = dominant if dominant > 0 else 1.0 / max(1.0, float(total[chosen].max()))
            claim[chosen] = rng.uniform(0.1, 1.0, size=chosen.size) * level * total[chosen]
        out.append(claim)
    return out


def truthful(
    instance: Instance,
    solve: Solver,
    tenant: int | str,
    misreports: Sequence[Sequence[float] | FloatArray],
    tol: float = CHECK_RTOL,
    *,
    truthful_allocation: Allocation | None = None,
) -> PropertyCheck:
    """Truthfulness probe: misreporting demand never lets a tenant run more tasks.

    ``T`` = the tenant's task count in ``solve(instance)`` (or ``truthful_allocation``). For each
    misreported demand ``m``, the instance is re-solved with the tenant's demand replaced
    (``instance.with_tenants``; a hierarchy, if any, is kept), and the tasks it can actually run
    with what it received are counted with its TRUE demand ``D`` (:func:`runnable_tasks`):
    ``sum_u min over r with D[r] > 0 of x[u] * m[r] / D[r]`` (floor per unit for integral
    allocations), capped at its true task cap.
    Holds iff that is never above ``T + tol * max(1, T)``.

    Parameters
    ----------
    solve : callable
        ``Instance -> Allocation`` (or an object with ``.allocation``, such as ``Result``).
    tenant : int or str
        Index or name of the probed tenant.
    misreports : sequence of vectors
        Claimed demand vectors, ordered like ``instance.resources``; see :func:`random_misreports`.

    Returns
    -------
    PropertyCheck
        ``worst`` is ``(tenant, misreport as text)`` of the best misreport and ``excess`` its gain
        in tasks over ``T`` (the largest gain found, even when it holds).
    """
    index = tenant_index(instance, tenant)
    name = instance.tenants[index].name
    truth = instance.demand[index]
    cap = float(instance.task_caps[index])
    base = truthful_allocation if truthful_allocation is not None else as_allocation(solve(instance))
    honest = float(clean_tasks(base)[index].sum())
    best_gain, best_claim, best_tasks = -math.inf, None, honest
    for claim in misreports:
        vector = np.asarray(claim, dtype=np.float64).reshape(-1)
        if vector.shape != truth.shape:
            raise ValueError(f"misreport has {vector.size} entries for {truth.size} resources")
        tenants = list(instance.tenants)
        tenants[index] = replace(tenants[index], demand=vector)
        # ``with_tenants`` drops any hierarchy; keep it (same tenant count and order) when there is one.
        probe = (
            instance.with_tenants(tenants) if instance.hierarchy is None else replace(instance, tenants=tuple(tenants))
        )
        result = as_allocation(solve(probe))
        row = clean_tasks(result)[index]
        actual = min(cap, runnable_tasks(truth, vector, row, result.integral))
        gain = actual - honest
        if gain > best_gain:
            best_gain, best_claim, best_tasks = gain, vector, actual
    if best_claim is None:
        return PropertyCheck("truthful", True, "no misreports given", (), 0.0)
    claim_text = vector_text(instance.resources, best_claim)
    if best_gain <= float(task_slack(honest, tol)):
        detail = f"no misreport helps {name!r}: best runs {fmt(best_tasks)} tasks vs {fmt(honest)} when truthful"
        return PropertyCheck("truthful", True, detail, (), best_gain)
    detail = (
        f"tenant {name!r} gains by claiming {claim_text} instead of {vector_text(instance.resources, truth)}: "
        f"it can run {fmt(best_tasks)} tasks vs {fmt(honest)} when truthful"
    )
    return PropertyCheck("truthful", False, detail, (name, claim_text), best_gain)


# ----------------------------------------------------------------------------------------------
# Population monotonicity
# ----------------------------------------------------------------------------------------------


def population_monotone(
    instance: Instance,
    solve: Solver,
    tol: float = CHECK_RTOL,
    *,
    tenants: Sequence[int | str] | None = None,
    base: Allocation | None = None,
) -> PropertyCheck:
    """Removing a tenant never lowers another tenant's task count.

    For each removed tenant ``k`` (all tenants, or ``tenants``), re-solve
    ``instance.without_tenant(k)`` and compare every remaining tenant's task count with its count in
    ``solve(instance)`` (or ``base``). Holds iff no count drops by more than ``tol * max(1, X_i)``.

    Parameters
    ----------
    solve : callable
        ``Instance -> Allocation`` (or an object with ``.allocation``).
    tenants : sequence of int or str, optional
        Which tenants to remove, one at a time; default all.
    base : Allocation, optional
        The solution of the full instance, if already computed.

    Returns
    -------
    PropertyCheck
        ``worst`` is ``(removed tenant, tenant that lost)`` for the largest drop and ``excess`` that
        drop in tasks (the largest over all probes, even when it holds; negative when all gained).
    """
    names = [t.name for t in instance.tenants]
    full = base if base is not None else as_allocation(solve(instance))
    before = clean_tasks(full).sum(axis=1)
    chosen = range(len(names)) if tenants is None else [tenant_index(instance, t) for t in tenants]
    best: tuple[float, float, int, int, float] | None = None  # (margin, drop, removed, loser, after)
    for k in chosen:
        if len(names) < 2:
            break
        after = clean_tasks(as_allocation(solve(instance.without_tenant(k)))).sum(axis=1)
        others = np.delete(np.arange(len(names)), k)
        drop = before[others] - after
        margin = drop - task_slack(before[others], tol)
        j = int(np.argmax(margin))
        if best is None or margin[j] > best[0]:
            best = (float(margin[j]), float(drop[j]), k, int(others[j]), float(after[j]))
    if best is None:
        return PropertyCheck("population_monotone", True, "nothing to remove", (), 0.0)
    margin, drop, k, loser, after_count = best
    if margin <= 0:
        detail = "removing any probed tenant never lowers another tenant's task count"
        return PropertyCheck("population_monotone", True, detail, (), drop)
    detail = f"removing {names[k]!r} lowers {names[loser]!r} from {fmt(before[loser])} to {fmt(after_count)} tasks"
    return PropertyCheck("population_monotone", False, detail, (names[k], names[loser]), drop)
