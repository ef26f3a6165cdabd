"""Feasibility: re-verify an allocation and its reported amounts from the instance alone."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from models.check.report import (
    ABS_TOL,
    CheckReport,
    _clean_tasks,
    _empty_report,
    _fmt,
    _limited,
    _row_chunks,
    _shares,
    _task_slack,
    _utilisation,
    _vector,
)
from models.result import Allocation, unit_capacity, unit_names
from models.types import FloatArray, Instance


def verify_allocation(
    instance: Instance,
    allocation: Allocation,
    *,
    tol: float = 1e-6,
    amounts: Mapping[str, Any] | None = None,
) -> CheckReport:
    """Re-verify an allocation from the instance alone and recompute its numbers.

    Parameters
    ----------
    instance : Instance
        The problem; capacities come from ``unit_capacity(instance, allocation.kind)``.
    allocation : Allocation
        Task counts, shape (tenants, units of ``allocation.kind``).
    tol : float
        Relative tolerance. Task counts may be off by ``tol * max(1, |x|)`` (integrality, caps,
        negativity); resource use may exceed a unit's capacity ``C`` by ``max(tol * C, ABS_TOL)``.
    amounts : mapping, optional
        Reported per-resource amounts per tenant; if given, :func:`verify_amounts` runs too.

    Returns
    -------
    CheckReport
        ``ok`` is True iff none of the following is violated:

        * shape is ``(len(instance.tenants), number of units of the kind)`` (if not, nothing else is
          checked);
        * every task count is finite and ``>= -tol``;
        * when ``allocation.integral`` -- or for kind ``'machine'``, where an indivisible task cannot
          be split over machines -- every count is within ``tol`` of an integer;
        * per unit ``u`` and resource ``r``: ``sum_i x[i, u] * D[i, r] <= C[u, r] + max(tol*C[u, r], ABS_TOL)``;
        * per tenant: ``sum_u x[i, u] <= cap_i + tol * max(1, cap_i)``;
        * no tenant has tasks (more than ``ABS_TOL`` of the resource) on a unit with zero capacity of
          a resource it needs;
        * for integral allocations of kind ``'class'``: no tasks on a class whose single machine cannot
          hold one whole task (a necessary condition only: per-machine packing is not checked).

        The recomputed numbers use the task matrix with non-finite entries replaced by 0.
    """
    n_tenants, n_res = len(instance.tenants), len(instance.resources)
    tasks = allocation.tasks
    names: list[str] | None = None

    def unit_name(u: int) -> str:
        nonlocal names
        if names is None:
            names = unit_names(instance, allocation.kind)
        return names[u]

    tenant_names = [t.name for t in instance.tenants]
    resources = instance.resources

    if allocation.kind not in ("class", "machine", "pool"):
        return _empty_report(instance, [f"unknown unit kind {allocation.kind!r}"])
    capacity = unit_capacity(instance, allocation.kind)
    expected = (n_tenants, capacity.shape[0])
    if tasks.ndim != 2 or tasks.shape != expected:
        return _empty_report(
            instance,
            [f"allocation has shape {tasks.shape}, expected {expected} (tenants x {allocation.kind} units)"],
        )

    n_units = expected[1]
    nonfinite: list[tuple[float, str]] = []
    negative: list[tuple[float, str]] = []
    fractional: list[tuple[float, str]] = []
    whole = allocation.integral or allocation.kind == "machine"
    why_whole = "integral allocation" if allocation.integral else "indivisible tasks cannot be split over machines"
    for rows in _row_chunks(n_tenants, n_units):
        block = tasks[rows]
        bad = ~np.isfinite(block)
        if bad.any():
            for i, u in zip(*np.nonzero(bad), strict=True):
                nonfinite.append(
                    (1.0, f"tenant {tenant_names[rows.start + i]!r} on {unit_name(int(u))!r}: task count {block[i, u]}")
                )
        safe = np.where(bad, 0.0, block) if bad.any() else block
        neg = safe < -tol
        if neg.any():
            for i, u in zip(*np.nonzero(neg), strict=True):
                negative.append(
                    (
                        -float(safe[i, u]),
                        f"tenant {tenant_names[rows.start + i]!r} on {unit_name(int(u))!r}: "
                        f"negative task count {_fmt(safe[i, u])}",
                    )
                )
        if whole:
            off = np.abs(safe - np.rint(safe))
            frac = off > _task_slack(safe, tol)
            if frac.any():
                for i, u in zip(*np.nonzero(frac), strict=True):
                    fractional.append(
                        (
                            float(off[i, u]),
                            f"tenant {tenant_names[rows.start + i]!r} on {unit_name(int(u))!r}: "
                            f"{_fmt(safe[i, u])} tasks is not a whole number ({why_whole})",
                        )
                    )

    clean = _clean_tasks(allocation)
    totals = np.asarray(clean.sum(axis=1))
    demand = instance.demand

    # Capacity per unit and resource.
    usage = np.asarray(clean.T @ demand)  # (units, resources)
    limit = capacity + np.maximum(tol * capacity, ABS_TOL)
    over_u, over_r = np.nonzero(usage > limit)
    capacity_msgs: list[tuple[float, str]] = []
    for u, r in zip(over_u, over_r, strict=True):
        cap = capacity[u, r]
        excess = usage[u, r] - cap
        severity = excess / cap if cap > 0 else math.inf
        capacity_msgs.append(
            (
                severity,
                f"unit {unit_name(int(u))!r} resource {resources[r]!r}: uses {_fmt(usage[u, r])} "
                f"of capacity {_fmt(cap)} (over by {_fmt(excess)})",
            )
        )

    # Task caps.
    caps = instance.task_caps
    cap_msgs: list[tuple[float, str]] = []
    finite_caps = np.isfinite(caps)
    over_cap = finite_caps & (
        totals > np.where(finite_caps, caps, 0.0) + _task_slack(np.where(finite_caps, caps, 0), tol)
    )
    for i in np.flatnonzero(over_cap):
        cap_msgs.append(
            (
                float(totals[i] - caps[i]),
                f"tenant {tenant_names[i]!r}: {_fmt(totals[i])} tasks exceed its cap of {_fmt(caps[i])}",
            )
        )

    # Tasks on units lacking a needed resource.
    lacking: list[tuple[float, str]] = []
    for res in range(n_res):
        zero_units = np.flatnonzero(capacity[:, res] <= 0)
        needers = np.flatnonzero(demand[:, res] > 0)
        if zero_units.size == 0 or needers.size == 0:
            continue
        for rows in _row_chunks(needers.size, zero_units.size):
            who = needers[rows]
            amount = clean[np.ix_(who, zero_units)] * demand[who, res][:, None]
            hit_i, hit_u = np.nonzero(amount > ABS_TOL)
            for i, u in zip(hit_i, hit_u, strict=True):
                tenant, unit = who[i], zero_units[u]
                lacking.append(
                    (
                        float(amount[i, u]),
                        f"tenant {tenant_names[tenant]!r} has {_fmt(clean[tenant, unit])} tasks on "
                        f"{unit_name(int(unit))!r}, which has no {resources[res]!r} (needs {_fmt(amount[i, u])})",
                    )
                )

    # Whole tasks of an integral class allocation must each fit on one machine of the class.
    oversized: list[tuple[float, str]] = []
    if allocation.integral and allocation.kind == "class":
        too_big = ~instance.fits()
        placed = (clean > tol) & too_big
        for i, u in zip(*np.nonzero(placed), strict=True):
            oversized.append(
                (
                    float(clean[i, u]),
                    f"tenant {tenant_names[i]!r} has {_fmt(clean[i, u])} whole tasks on class "
                    f"{unit_name(int(u))!r}, but one task does not fit on a single machine of it",
                )
            )

    violations = (
        _limited(nonfinite, "non-finite")
        + _limited(negative, "negative")
        + _limited(fractional, "integrality")
        + _limited(capacity_msgs, "capacity")
        + _limited(cap_msgs, "task cap")
        + _limited(lacking, "missing-resource")
        + _limited(oversized, "oversized-task")
    )
    report = _report(instance, totals, violations)
    if amounts is not None:
        report = report.merged(verify_amounts(instance, allocation, amounts, tol=tol))
    return report


def verify_amounts(
    instance: Instance,
    allocation: Allocation,
    amounts: Mapping[str, Any],
    *,
    tol: float = 1e-6,
) -> CheckReport:
    """Check reported per-resource amounts against ``tasks * demand`` (non-wastefulness).

    An allocation gives each tenant exactly ``sum_u x[i, u] * D[i]``; a saved result's per-tenant
    ``allocation`` field must say the same.

    Parameters
    ----------
    instance : Instance
    allocation : Allocation
    amounts : mapping of tenant name to amounts
        Each value is either a sequence ordered like ``instance.resources`` or a mapping
        ``{resource: amount}`` (missing resources mean 0, as in the instance format).
    tol : float
        Relative tolerance: ``|reported - expected| <= tol * max(|expected|, |reported|) + ABS_TOL``.

    Returns
    -------
    CheckReport
        Violations for: unknown tenant names, unknown resource names, vectors of the wrong length,
        non-numeric or non-finite amounts, tenants with tasks whose amounts are missing, and any amount
        differing from ``tasks * demand``. The numbers are recomputed as in :func:`verify_allocation`.
    """
    tenant_names = [t.name for t in instance.tenants]
    resources = instance.resources
    res_index = {name: r for r, name in enumerate(resources)}
    violations: list[str] = []
    clean = _clean_tasks(allocation)
    if clean.ndim != 2 or clean.shape[0] != len(tenant_names):
        return _empty_report(instance, [f"allocation has shape {clean.shape}: cannot compare amounts"])
    totals = np.asarray(clean.sum(axis=1))
    expected = totals[:, None] * instance.demand
    known = set(tenant_names)
    for name in amounts:
        if name not in known:
            violations.append(f"amounts reported for unknown tenant {name!r}")
    mismatches: list[tuple[float, str]] = []
    for i, name in enumerate(tenant_names):
        want = expected[i]
        if name not in amounts:
            if np.any(np.abs(want) > ABS_TOL):
                violations.append(f"tenant {name!r}: no amounts reported, expected {_vector(resources, want)}")
            continue
        reported = amounts[name]
        got = np.zeros(len(resources))
        try:
            if isinstance(reported, Mapping):
                for key, value in reported.items():
                    if key not in res_index:
                        violations.append(f"tenant {name!r}: amount for unknown resource {key!r}")
                        continue
                    got[res_index[key]] = float(value)
            else:
                vector = np.asarray(reported, dtype=np.float64).reshape(-1)
                if vector.shape != (len(resources),):
                    violations.append(f"tenant {name!r}: {vector.size} amounts reported for {len(resources)} resources")
                    continue
                got = vector
        except (TypeError, ValueError) as error:
            violations.append(f"tenant {name!r}: amounts are not numbers ({error})")
            continue
        diff = np.abs(got - want)
        allowed = tol * np.maximum(np.abs(want), np.abs(got)) + ABS_TOL
        for r in np.flatnonzero(~(diff <= allowed)):  # NaN compares false: flagged too
            mismatches.append(
                (
                    float(diff[r]) if math.isfinite(diff[r]) else math.inf,
                    f"tenant {name!r} resource {resources[r]!r}: reported {_fmt(got[r])}, but "
                    f"{_fmt(totals[i])} tasks x {_fmt(instance.demand[i, r])} = {_fmt(want[r])}",
                )
            )
    violations += _limited(mismatches, "amount")
    return _report(instance, totals, violations)


def _report(instance: Instance, totals: FloatArray, violations: list[str]) -> CheckReport:
    """The report both checks return: violations plus the shares recomputed from the task totals."""
    dominant, weighted, minimum = _shares(instance, totals)
    return CheckReport(
        ok=not violations,
        violations=violations,
        tasks=totals,
        dominant_shares=dominant,
        weighted_shares=weighted,
        min_weighted_share=minimum,
        utilisation=_utilisation(instance, totals),
    )
