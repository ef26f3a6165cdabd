"""Fairness and efficiency properties of one allocation: envy-freeness, Pareto optimality, sharing incentive.

The Pareto LP is solved with ``scipy.optimize.linprog`` (HiGHS through SciPy), a deliberately
different code path from the project's own backends in ``solver/``.
"""

from __future__ import annotations

import math

import numpy as np

from fairpack.models.check.report import (
    ABS_TOL,
    FIT_EPS,
    PropertyCheck,
    clean_tasks,
    floor_tasks,
    fmt,
    per_unit_ratio,
    row_chunks,
    task_slack,
)
from fairpack.models.result import Allocation, unit_capacity, unit_names
from fairpack.models.tolerance import CHECK_RTOL
from fairpack.models.types import FloatArray, Instance

# ----------------------------------------------------------------------------------------------
# Envy-freeness
# ----------------------------------------------------------------------------------------------


def envy_free(instance: Instance, allocation: Allocation, tol: float = CHECK_RTOL) -> PropertyCheck:
    """Weighted envy-freeness in the DRFH sense.

    Tenant ``j`` receives on unit ``u`` the bundle ``x[j, u] * D[j]``. Tenant ``i`` is entitled to
    compare with ``w_i / w_j`` times that bundle, with which it could run, on each unit,

    ``y[i, j, u] = (w_i / w_j) * x[j, u] * m[i, j]``,  ``m[i, j] = min over r with D[i, r] > 0 of D[j, r] / D[i, r]``

    tasks -- rounded down per unit when ``allocation.integral`` (whole tasks per machine). Its value of
    ``j``'s bundle is ``V[i, j] = min(cap_i, sum_u y[i, j, u])``. ``i`` envies ``j`` when
    ``V[i, j] > X_i + tol * max(1, X_i)``, ``X_i`` being ``i``'s own task count.

    Divisible allocations need no per-unit work (``sum_u y = (w_i/w_j) m[i, j] X_j``); integral ones
    group each tenant's per-unit counts by distinct value. Cost O(tenants^2 * resources).

    Returns
    -------
    PropertyCheck
        ``worst`` is ``(envious tenant, envied tenant)`` for the largest ``V[i, j] - X_i``; ``excess``
        is that difference in tasks (the largest over all pairs ``i != j``, even when it holds).
    """
    n = len(instance.tenants)
    if n < 2:
        return PropertyCheck("envy_free", True, "fewer than two tenants", (), 0.0)
    clean = np.maximum(clean_tasks(allocation), 0.0)
    totals = clean.sum(axis=1)
    demand, weights, caps = instance.demand, instance.weights, instance.task_caps
    names = [t.name for t in instance.tenants]

    # Distinct per-unit counts of each tenant (integral case).
    groups: list[tuple[FloatArray, FloatArray]] = []
    if allocation.integral:
        for j in range(n):
            row = clean[j]
            distinct, occurrences = np.unique(row[row > 0], return_counts=True)
            groups.append((distinct, occurrences.astype(np.float64)))

    best_excess = -math.inf
    best_pair = (0, 1)
    best_value = 0.0
    for rows in row_chunks(n, n * demand.shape[1]):
        d_i = demand[rows]  # (c, R)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(d_i[:, None, :] > 0, demand[None, :, :] / d_i[:, None, :], np.inf)
        m = ratio.min(axis=2)  # (c, n): tasks of i per task of j's bundle
        scale = m * (weights[rows][:, None] / weights[None, :])
        if allocation.integral:
            value = np.zeros_like(scale)
            for j, (values, counts) in enumerate(groups):
                if values.size:
                    value[:, j] = floor_tasks(scale[:, j, None] * values[None, :]) @ counts
        else:
            value = scale * totals[None, :]
        value = np.minimum(value, caps[rows][:, None])
        own = totals[rows]
        excess = value - own[:, None]
        local = np.arange(rows.stop - rows.start)
        excess[local, local + rows.start] = -math.inf  # no self-envy
        flat = int(np.argmax(excess))
        i_loc, j = divmod(flat, n)
        if excess[i_loc, j] > best_excess:
            best_excess = float(excess[i_loc, j])
            best_pair = (rows.start + i_loc, j)
            best_value = float(value[i_loc, j])
    i, j = best_pair
    slack = float(task_slack(totals[i], tol))
    holds = best_excess <= slack
    if holds:
        detail = (
            f"no tenant envies another; closest: {names[i]!r} could run {fmt(best_value)} tasks with "
            f"{names[j]!r}'s weighted bundle and has {fmt(totals[i])}"
        )
        return PropertyCheck("envy_free", True, detail, (), best_excess)
    detail = (
        f"tenant {names[i]!r} envies {names[j]!r}: with {names[j]!r}'s bundle scaled by "
        f"w={fmt(weights[i])}/{fmt(weights[j])} it could run {fmt(best_value)} tasks, but has {fmt(totals[i])}"
    )
    return PropertyCheck("envy_free", False, detail, (names[i], names[j]), best_excess)


# ----------------------------------------------------------------------------------------------
# Pareto optimality
# ----------------------------------------------------------------------------------------------


def pareto_optimal(instance: Instance, allocation: Allocation, tol: float = CHECK_RTOL) -> PropertyCheck:
    """Whether some tenant can get more without any other tenant getting less.

    Divisible allocations (``not allocation.integral``): solve with ``scipy.optimize.linprog``
    (HiGHS) the LP over ``x[i, u] >= 0`` for every usable pair (unit ``u`` has every resource tenant
    ``i`` needs)::

        maximise   sum_i s_i * X'_i                     (s_i = dominant_demand, X'_i = sum_u x[i, u])
        subject to sum_i x[i, u] * D[i, r] <= C[u, r]   for every unit u and resource r
                   X_i * (1 - tol/10) <= X'_i <= cap_i  (X_i: current tasks, clipped to the cap)

    Units with identical capacity vectors are merged first (exact for divisible tasks). Relaxing the
    lower bounds by ``tol/10`` raises the optimum by at most ``tol/10`` of the current objective
    (resources freed by a tenant are worth at most its own dominant share to anyone), so the
    allocation is Pareto optimal iff ``optimum <= current * (1 + tol) + ABS_TOL``, with
    ``current = sum_i s_i X_i``.

    Integral allocations: not Pareto optimal if one more whole task of some tenant below its cap
    (``X_i + 1 <= cap_i + tol``) fits in the remaining capacity of some unit (for kind ``'class'`` it
    must also fit on one machine of the class; as the split over the class's machines is unknown,
    the probe is optimistic there). This is the "add a task" probe; it does not search for
    improvements that move other tenants' tasks.

    Returns
    -------
    PropertyCheck
        Divisible: ``excess`` is the LP's gain in summed dominant share beyond the tolerance
        (``optimum - current * (1 + tol)``) and ``worst`` is the tenant that grows most
        (in dominant share). If the LP is infeasible (the allocation itself violates capacity or
        caps) the check fails with that explanation. Integral: ``worst`` is ``(tenant, unit)`` of a
        task that fits (the lowest weighted-share tenant that can grow); ``excess`` is the number of
        tenants that could get one more task.
    """
    if not instance.tenants:
        return PropertyCheck("pareto_optimal", True, "no tenants", (), 0.0)
    if allocation.integral:
        return _pareto_integral(instance, allocation)
    return _pareto_divisible(instance, allocation, tol)


def _pareto_integral(instance: Instance, allocation: Allocation) -> PropertyCheck:
    clean = np.maximum(clean_tasks(allocation), 0.0)
    totals = clean.sum(axis=1)
    capacity = unit_capacity(instance, allocation.kind)
    demand = instance.demand
    usage = clean.T @ demand
    free = capacity - usage + FIT_EPS * np.maximum(capacity, 1.0)
    caps = instance.task_caps
    names = [t.name for t in instance.tenants]
    eligible = np.flatnonzero(totals + 1.0 <= caps + FIT_EPS * np.maximum(1.0, caps))
    class_fit = instance.fits() if allocation.kind == "class" else None
    n_units = capacity.shape[0]
    growable: list[tuple[int, int]] = []
    for rows in row_chunks(eligible.size, n_units):
        who = eligible[rows]
        fits = np.ones((who.size, n_units), dtype=bool) if class_fit is None else class_fit[who].copy()
        for r in range(demand.shape[1]):
            need = demand[who, r]
            if not np.any(need > 0):
                continue
            fits &= need[:, None] <= free[None, :, r]
        any_fit = np.asarray(fits.any(axis=1))
        first = fits.argmax(axis=1)
        growable.extend((int(i), int(u)) for i, u, ok in zip(who, first, any_fit, strict=True) if ok)
    if not growable:
        return PropertyCheck(
            "pareto_optimal", True, "no tenant below its cap has room for one more whole task anywhere", (), 0.0
        )
    weighted = totals * instance.dominant_demand / instance.weights
    i, u = min(growable, key=lambda pair: weighted[pair[0]])
    unit = unit_names(instance, allocation.kind)[u]
    detail = (
        f"tenant {names[i]!r} can run one more task on {unit!r} (has {fmt(totals[i])}); "
        f"{len(growable)} tenant(s) can grow"
    )
    return PropertyCheck("pareto_optimal", False, detail, (names[i], unit), float(len(growable)))


def _pareto_divisible(instance: Instance, allocation: Allocation, tol: float) -> PropertyCheck:
    # Imported here, not at the top: scipy.optimize takes 0.4-0.5 s to import (scipy.sparse another 0.2 s),
    # and verifying a result, which every solve and every CLI command does, never needs the Pareto LP.
    import scipy.sparse as sp
    from scipy.optimize import linprog

    names = [t.name for t in instance.tenants]
    n = len(names)
    clean = np.maximum(clean_tasks(allocation), 0.0)
    totals = clean.sum(axis=1)
    share = instance.dominant_demand
    demand = instance.demand
    caps = instance.task_caps
    current = float(share @ totals)

    # Merge units with identical capacity vectors (exact for divisible tasks).
    capacity = unit_capacity(instance, allocation.kind)
    merged, inverse = np.unique(capacity, axis=0, return_inverse=True)
    multiplicity = np.bincount(inverse.reshape(-1), minlength=merged.shape[0]).astype(np.float64)
    capacity = merged * multiplicity[:, None]
    n_units, n_res = capacity.shape

    needs = demand > 0
    lacks = needs.astype(np.int64) @ (capacity <= 0).astype(np.int64).T
    usable = (lacks == 0) & (share > 0)[:, None]
    pair_t, pair_u = np.nonzero(usable)
    n_pairs = pair_t.size

    # Columns: pair tasks x (n_pairs), then tenant totals y (n).
    # Capacity rows, scaled by capacity: sum_i x[i,u] D[i,r] / C[u,r] <= 1.
    present = capacity > 0
    use = demand[pair_t] / np.where(present[pair_u], capacity[pair_u], 1.0)  # (pairs, R)
    use = np.where(needs[pair_t], use, 0.0)
    p_idx, r_idx = np.nonzero(use)
    a_ub = sp.csr_matrix(
        (use[p_idx, r_idx], (pair_u[p_idx] * n_res + r_idx, p_idx)), shape=(n_units * n_res, n_pairs + n)
    )
    # Capacities get a 1e-9 relative allowance, so an allocation that fills them up to round-off stays
    # feasible with its exact task counts as lower bounds. (Relaxing the lower bounds instead lets one
    # tenant's round-off be traded for a larger gain of another, a false alarm.)
    b_ub = np.full(n_units * n_res, 1.0 + 1e-9)
    keep = np.asarray(a_ub.getnnz(axis=1) > 0)
    a_ub, b_ub = a_ub[keep], b_ub[keep]
    # Definition rows: y_i - sum_u x[i,u] = 0.
    a_eq = sp.csr_matrix(
        (
            np.concatenate([-np.ones(n_pairs), np.ones(n)]),
            (np.concatenate([pair_t, np.arange(n)]), np.concatenate([np.arange(n_pairs), n_pairs + np.arange(n)])),
        ),
        shape=(n, n_pairs + n),
    )
    b_eq = np.zeros(n)
    lower = np.maximum(np.minimum(totals, caps), 0.0)
    upper = np.where(np.isfinite(caps), caps, np.inf)
    bounds = np.column_stack(
        [np.concatenate([np.zeros(n_pairs), lower]), np.concatenate([np.full(n_pairs, np.inf), upper])]
    )
    cost = np.concatenate([np.zeros(n_pairs), -share])
    result = linprog(
        cost,
        A_ub=a_ub if a_ub.shape[0] else None,
        b_ub=b_ub if a_ub.shape[0] else None,
        A_eq=a_eq,
        b_eq=b_eq,
        bounds=bounds,
        method="highs",
        options={"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9},
    )
    if result.status == 2:
        return PropertyCheck(
            "pareto_optimal",
            False,
            "cannot check: the allocation's task counts are themselves infeasible (capacity, caps or "
            "tasks on units lacking a resource); run verify_allocation",
            (),
            math.inf,
        )
    if result.status == 3:
        return PropertyCheck(
            "pareto_optimal",
            False,
            "some tenant can grow without bound (uncapped tenant with free capacity)",
            (),
            math.inf,
        )
    if result.status != 0:
        raise RuntimeError(f"Pareto LP failed: {result.message}")
    optimum = -float(result.fun)
    excess = optimum - (current * (1.0 + tol) + ABS_TOL)
    grown = np.asarray(result.x[n_pairs:])
    if excess <= 0:
        detail = (
            f"no tenant can grow without another shrinking: max total dominant share {fmt(optimum)} "
            f"vs current {fmt(current)}"
        )
        return PropertyCheck("pareto_optimal", True, detail, (), excess)
    gain = (grown - totals) * share
    i = int(np.argmax(gain))
    detail = (
        f"not Pareto optimal: tenant {names[i]!r} can run {fmt(grown[i])} tasks instead of "
        f"{fmt(totals[i])} without any tenant losing (total dominant share {fmt(optimum)} vs {fmt(current)})"
    )
    return PropertyCheck("pareto_optimal", False, detail, (names[i],), excess)


# ----------------------------------------------------------------------------------------------
# Sharing incentive
# ----------------------------------------------------------------------------------------------


def equal_split_tasks(instance: Instance, kind: str = "class", integral: bool = False) -> FloatArray:
    """Tasks each tenant could run with its weighted equal split of every unit.

    Tenant ``i`` gets the fraction ``f_i = w_i / sum_j w_j`` of every unit's capacity and runs
    ``sum_u min over r with D[i, r] > 0 of f_i * C[u, r] / D[i, r]`` tasks, capped at ``cap_i``.
    With ``integral`` the count is rounded down per machine (per pool for kind ``'pool'``); for kind
    ``'class'`` or ``'machine'`` the units are machines (``count`` identical ones per class), which for
    divisible tasks equals the sum over classes.

    Returns
    -------
    ndarray, shape (tenants,)
    """
    share = instance.weights / instance.weights.sum()
    demand = instance.demand
    if kind == "pool":
        capacity = instance.total_capacity[None, :]
        multiplicity = np.ones(1)
    else:
        capacity = instance.capacity
        multiplicity = instance.counts.astype(np.float64)
    entitled = np.zeros(len(instance.tenants))
    for rows in row_chunks(len(instance.tenants), capacity.shape[0]):
        per_unit = per_unit_ratio(demand[rows], capacity) * share[rows][:, None]
        if integral:
            per_unit = floor_tasks(per_unit)
        entitled[rows] = per_unit @ multiplicity
    return np.minimum(entitled, instance.task_caps)


def sharing_incentive(instance: Instance, allocation: Allocation, tol: float = CHECK_RTOL) -> PropertyCheck:
    """Every tenant runs at least as many tasks as under a weighted equal split of every unit.

    The entitlement is :func:`equal_split_tasks` for the allocation's kind and integrality: with
    share ``f_i = w_i / sum_j w_j``, ``E_i = min(cap_i, sum_u g(min over r with D[i, r] > 0 of
    f_i * C[u, r] / D[i, r]))``, ``g`` = floor per machine for integral allocations, identity otherwise.
    Holds iff ``X_i >= E_i - tol * max(1, E_i)`` for every tenant.

    Returns
    -------
    PropertyCheck
        ``worst`` is the tenant with the largest shortfall ``E_i - X_i`` and ``excess`` that shortfall
        in tasks (the largest over tenants, even when it holds).
    """
    names = [t.name for t in instance.tenants]
    if not names:
        return PropertyCheck("sharing_incentive", True, "no tenants", (), 0.0)
    totals = clean_tasks(allocation).sum(axis=1)
    entitled = equal_split_tasks(instance, allocation.kind, allocation.integral)
    shortfall = entitled - totals
    i = int(np.argmax(shortfall - task_slack(entitled, tol)))
    worst = float(shortfall[i])
    if worst <= float(task_slack(entitled[i], tol)):
        detail = "every tenant runs at least its equal-split task count"
        return PropertyCheck("sharing_incentive", True, detail, (), float(shortfall.max()))
    detail = (
        f"tenant {names[i]!r} runs {fmt(totals[i])} tasks, fewer than the {fmt(entitled[i])} of its equal split "
        f"(share {fmt(instance.weights[i] / instance.weights.sum())} of every unit)"
    )
    return PropertyCheck("sharing_incentive", False, detail, (names[i],), worst)
