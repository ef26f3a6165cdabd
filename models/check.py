"""Independent verification of allocations, from the instance alone.

Nothing here trusts a solver: every number is recomputed from ``Instance`` and the task counts of an
``Allocation``. The LP used by the Pareto check is solved with ``scipy.optimize.linprog`` (HiGHS through
SciPy), a deliberately different code path from the project's own backends in ``solver/``.

Two layers:

* :func:`verify_allocation` / :func:`verify_amounts` check feasibility (shape, signs, integrality,
  capacities, task caps, placement on units that have the needed resources, whole tasks on machines)
  and the reported per-resource amounts, and recompute tasks, dominant shares and utilisation.
* Property checks (:func:`envy_free`, :func:`pareto_optimal`, :func:`truthful`,
  :func:`sharing_incentive`, :func:`population_monotone`) each return a :class:`PropertyCheck`.

Everything is vectorised over tenants and units and processed in row chunks, so allocations of
1,000 tenants x 12,583 machines check in well under a second per check (except the Pareto LP).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import linprog

from models.solution import Allocation, FloatArray, unit_capacity, unit_names
from models.types import Instance

BoolArray = npt.NDArray[np.bool_]

#: Absolute tolerance on resource amounts, used where a capacity is zero.
ABS_TOL = 1e-9
#: Slack used when deciding whether a whole task fits or how many whole tasks a bundle holds
#: (guards ``floor(2.9999999999)`` and exact fits against rounding noise).
FIT_EPS = 1e-9
#: Elements per temporary array when processing (tenants x units) matrices in row chunks.
_CHUNK_ELEMENTS = 1 << 22
#: Messages reported per violation category; the rest are summarised in one line.
MAX_MESSAGES = 20


# ----------------------------------------------------------------------------------------------
# Reports
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckReport:
    """Outcome of :func:`verify_allocation` (or :func:`verify_amounts`).

    Attributes
    ----------
    ok : bool
        True when ``violations`` is empty.
    violations : list of str
        Human-readable violations naming tenant, unit and resource with the amounts involved. Each
        category lists at most ``MAX_MESSAGES`` entries (worst first) followed by a count of the rest.
    tasks : ndarray, shape (tenants,)
        Recomputed task count per tenant (row sums; NaN/inf entries counted as 0).
    dominant_shares : ndarray, shape (tenants,)
        ``tasks * instance.dominant_demand``: global dominant share per tenant.
    weighted_shares : ndarray, shape (tenants,)
        ``dominant_shares / weights``.
    min_weighted_share : float
        Smallest weighted share over runnable tenants (``instance.runnable``); 0 if none is runnable,
        NaN when the allocation's shape is wrong.
    utilisation : ndarray, shape (resources,)
        Fraction of the cluster total of each resource in use (0 where the cluster has none).
    """

    ok: bool
    violations: list[str]
    tasks: FloatArray
    dominant_shares: FloatArray
    weighted_shares: FloatArray
    min_weighted_share: float
    utilisation: FloatArray

    def merged(self, other: CheckReport) -> CheckReport:
        """This report with ``other``'s violations appended (numbers kept from ``self``)."""
        violations = [*self.violations, *other.violations]
        return replace(self, ok=not violations, violations=violations)


@dataclass(frozen=True)
class PropertyCheck:
    """Outcome of one property check.

    Attributes
    ----------
    name : str
        Which property (``"envy_free"``, ``"pareto_optimal"``, ...).
    holds : bool
        Whether the property holds within the tolerance.
    detail : str
        One human-readable sentence: the worst offence, or why the property holds.
    worst : tuple of str
        Names of the worst offenders (e.g. ``(envious tenant, envied tenant)``, ``(tenant, unit)``);
        empty when nothing offends.
    excess : float
        The worst offending number, in tasks unless the check says otherwise; positive beyond the
        tolerance exactly when the property fails. When the property holds it is the worst margin
        found (zero or negative), so callers can see how close it came.
    """

    name: str
    holds: bool
    detail: str
    worst: tuple[str, ...] = ()
    excess: float = 0.0


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------


def _row_chunks(rows: int, width: int) -> Iterator[slice]:
    """Slices over ``rows`` so that each chunk has about ``_CHUNK_ELEMENTS`` elements of ``width``."""
    step = max(1, _CHUNK_ELEMENTS // max(1, width))
    for start in range(0, rows, step):
        yield slice(start, min(rows, start + step))


def _fmt(value: float) -> str:
    return f"{float(value):.6g}"


def _floor(values: FloatArray) -> FloatArray:
    """Whole tasks in a (non-negative) fractional task count, tolerant of rounding noise."""
    return np.floor(values + FIT_EPS * (1.0 + np.abs(values)))


def _task_slack(values: FloatArray | float, tol: float) -> FloatArray:
    """Tolerance for comparing task counts: ``tol`` relative, with 1 task as the smallest scale."""
    return np.asarray(tol * np.maximum(1.0, np.abs(values)))


def _limited(messages: list[tuple[float, str]], category: str) -> list[str]:
    """The worst ``MAX_MESSAGES`` messages of one category (by severity), then a count of the rest."""
    messages.sort(key=lambda item: -item[0])
    out = [text for _, text in messages[:MAX_MESSAGES]]
    if len(messages) > MAX_MESSAGES:
        out.append(f"... and {len(messages) - MAX_MESSAGES} more {category} violations")
    return out


def _as_allocation(value: Any) -> Allocation:
    """Accept an ``Allocation`` or anything carrying one in ``.allocation`` (e.g. ``Result``)."""
    if isinstance(value, Allocation):
        return value
    inner = getattr(value, "allocation", None)
    if isinstance(inner, Allocation):
        return inner
    raise TypeError(f"solve() must return an Allocation (or an object with .allocation), got {type(value).__name__}")


def _tenant_index(instance: Instance, tenant: int | str) -> int:
    if isinstance(tenant, str):
        for position, candidate in enumerate(instance.tenants):
            if candidate.name == tenant:
                return position
        raise KeyError(f"unknown tenant {tenant!r}")
    index = int(tenant)
    if not 0 <= index < len(instance.tenants):
        raise IndexError(f"tenant index {index} out of range for {len(instance.tenants)} tenants")
    return index


def _clean_tasks(allocation: Allocation) -> FloatArray:
    """Task matrix with NaN/inf replaced by 0 (only copies when needed)."""
    tasks = allocation.tasks
    if np.isfinite(tasks).all():
        return tasks
    return np.where(np.isfinite(tasks), tasks, 0.0)


def _per_unit_ratio(demand: FloatArray, capacity: FloatArray) -> FloatArray:
    """``q[i, u] = min over r with demand[i, r] > 0 of capacity[u, r] / demand[i, r]``.

    How many tasks of tenant ``i`` a bundle ``capacity[u]`` holds (fractionally). Shape
    (tenants, units); loops over resources only, so temporaries stay at (tenants, units).
    """
    ratio = np.full((demand.shape[0], capacity.shape[0]), np.inf)
    for r in range(demand.shape[1]):
        needs = demand[:, r] > 0
        if not needs.any():
            continue
        ratio[needs] = np.minimum(ratio[needs], capacity[None, :, r] / demand[needs, r][:, None])
    return ratio


def _shares(instance: Instance, totals: FloatArray) -> tuple[FloatArray, FloatArray, float]:
    dominant = np.asarray(totals * instance.dominant_demand)
    weighted = dominant / instance.weights
    # Same definition as models.metrics.min_weighted_share, computed independently: the smallest
    # weighted share of an unsatisfied tenant, or the largest cap level if everybody is satisfied.
    caps = instance.task_caps
    runnable = instance.runnable & (caps > 0)
    hungry = runnable & (totals < caps * (1 - 1e-6) - 1e-6)
    if hungry.any():
        minimum = float(weighted[hungry].min())
    elif runnable.any():
        minimum = float((caps * instance.dominant_demand / instance.weights)[runnable].max())
    else:
        minimum = 0.0
    return dominant, weighted, minimum


def _utilisation(instance: Instance, totals: FloatArray) -> FloatArray:
    used = totals @ instance.demand
    total = instance.total_capacity
    return np.divide(used, total, out=np.zeros_like(used), where=total > 0)


def _empty_report(instance: Instance, violations: list[str]) -> CheckReport:
    n, k = len(instance.tenants), len(instance.resources)
    return CheckReport(False, violations, np.zeros(n), np.zeros(n), np.zeros(n), math.nan, np.zeros(k))


# ----------------------------------------------------------------------------------------------
# Feasibility
# ----------------------------------------------------------------------------------------------


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
    dominant, weighted, minimum = _shares(instance, totals)
    report = CheckReport(
        ok=not violations,
        violations=violations,
        tasks=totals,
        dominant_shares=dominant,
        weighted_shares=weighted,
        min_weighted_share=minimum,
        utilisation=_utilisation(instance, totals),
    )
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


def _vector(resources: Sequence[str], values: FloatArray) -> str:
    return "{" + ", ".join(f"{r}: {_fmt(v)}" for r, v in zip(resources, values, strict=True)) + "}"


# ----------------------------------------------------------------------------------------------
# Envy-freeness
# ----------------------------------------------------------------------------------------------


def envy_free(instance: Instance, allocation: Allocation, tol: float = 1e-6) -> PropertyCheck:
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
    clean = np.maximum(_clean_tasks(allocation), 0.0)
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
    for rows in _row_chunks(n, n * demand.shape[1]):
        d_i = demand[rows]  # (c, R)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(d_i[:, None, :] > 0, demand[None, :, :] / d_i[:, None, :], np.inf)
        m = ratio.min(axis=2)  # (c, n): tasks of i per task of j's bundle
        scale = m * (weights[rows][:, None] / weights[None, :])
        if allocation.integral:
            value = np.zeros_like(scale)
            for j, (values, counts) in enumerate(groups):
                if values.size:
                    value[:, j] = _floor(scale[:, j, None] * values[None, :]) @ counts
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
    slack = float(_task_slack(totals[i], tol))
    holds = best_excess <= slack
    if holds:
        detail = (
            f"no tenant envies another; closest: {names[i]!r} could run {_fmt(best_value)} tasks with "
            f"{names[j]!r}'s weighted bundle and has {_fmt(totals[i])}"
        )
        return PropertyCheck("envy_free", True, detail, (), best_excess)
    detail = (
        f"tenant {names[i]!r} envies {names[j]!r}: with {names[j]!r}'s bundle scaled by "
        f"w={_fmt(weights[i])}/{_fmt(weights[j])} it could run {_fmt(best_value)} tasks, but has {_fmt(totals[i])}"
    )
    return PropertyCheck("envy_free", False, detail, (names[i], names[j]), best_excess)


# ----------------------------------------------------------------------------------------------
# Pareto optimality
# ----------------------------------------------------------------------------------------------


def pareto_optimal(instance: Instance, allocation: Allocation, tol: float = 1e-6) -> PropertyCheck:
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
    clean = np.maximum(_clean_tasks(allocation), 0.0)
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
    for rows in _row_chunks(eligible.size, n_units):
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
        f"tenant {names[i]!r} can run one more task on {unit!r} (has {_fmt(totals[i])}); "
        f"{len(growable)} tenant(s) can grow"
    )
    return PropertyCheck("pareto_optimal", False, detail, (names[i], unit), float(len(growable)))


def _pareto_divisible(instance: Instance, allocation: Allocation, tol: float) -> PropertyCheck:
    names = [t.name for t in instance.tenants]
    n = len(names)
    clean = np.maximum(_clean_tasks(allocation), 0.0)
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
            f"no tenant can grow without another shrinking: max total dominant share {_fmt(optimum)} "
            f"vs current {_fmt(current)}"
        )
        return PropertyCheck("pareto_optimal", True, detail, (), excess)
    gain = (grown - totals) * share
    i = int(np.argmax(gain))
    detail = (
        f"not Pareto optimal: tenant {names[i]!r} can run {_fmt(grown[i])} tasks instead of "
        f"{_fmt(totals[i])} without any tenant losing (total dominant share {_fmt(optimum)} vs {_fmt(current)})"
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
    for rows in _row_chunks(len(instance.tenants), capacity.shape[0]):
        per_unit = _per_unit_ratio(demand[rows], capacity) * share[rows][:, None]
        if integral:
            per_unit = _floor(per_unit)
        entitled[rows] = per_unit @ multiplicity
    return np.minimum(entitled, instance.task_caps)


def sharing_incentive(instance: Instance, allocation: Allocation, tol: float = 1e-6) -> PropertyCheck:
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
    totals = _clean_tasks(allocation).sum(axis=1)
    entitled = equal_split_tasks(instance, allocation.kind, allocation.integral)
    shortfall = entitled - totals
    i = int(np.argmax(shortfall - _task_slack(entitled, tol)))
    worst = float(shortfall[i])
    if worst <= float(_task_slack(entitled[i], tol)):
        detail = "every tenant runs at least its equal-split task count"
        return PropertyCheck("sharing_incentive", True, detail, (), float(shortfall.max()))
    detail = (
        f"tenant {names[i]!r} runs {_fmt(totals[i])} tasks, fewer than the {_fmt(entitled[i])} of its equal split "
        f"(share {_fmt(instance.weights[i] / instance.weights.sum())} of every unit)"
    )
    return PropertyCheck("sharing_incentive", False, detail, (names[i],), worst)


# ----------------------------------------------------------------------------------------------
# Truthfulness
# ----------------------------------------------------------------------------------------------


Solver = Callable[[Instance], Any]


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
        per_unit = _floor(per_unit)
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
    index = _tenant_index(instance, tenant)
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
    tol: float = 1e-6,
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
    index = _tenant_index(instance, tenant)
    name = instance.tenants[index].name
    truth = instance.demand[index]
    cap = float(instance.task_caps[index])
    base = truthful_allocation if truthful_allocation is not None else _as_allocation(solve(instance))
    honest = float(_clean_tasks(base)[index].sum())
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
        result = _as_allocation(solve(probe))
        row = _clean_tasks(result)[index]
        actual = min(cap, runnable_tasks(truth, vector, row, result.integral))
        gain = actual - honest
        if gain > best_gain:
            best_gain, best_claim, best_tasks = gain, vector, actual
    if best_claim is None:
        return PropertyCheck("truthful", True, "no misreports given", (), 0.0)
    claim_text = _vector(instance.resources, best_claim)
    if best_gain <= float(_task_slack(honest, tol)):
        detail = f"no misreport helps {name!r}: best runs {_fmt(best_tasks)} tasks vs {_fmt(honest)} when truthful"
        return PropertyCheck("truthful", True, detail, (), best_gain)
    detail = (
        f"tenant {name!r} gains by claiming {claim_text} instead of {_vector(instance.resources, truth)}: "
        f"it can run {_fmt(best_tasks)} tasks vs {_fmt(honest)} when truthful"
    )
    return PropertyCheck("truthful", False, detail, (name, claim_text), best_gain)


# ----------------------------------------------------------------------------------------------
# Population monotonicity
# ----------------------------------------------------------------------------------------------


def population_monotone(
    instance: Instance,
    solve: Solver,
    tol: float = 1e-6,
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
    full = base if base is not None else _as_allocation(solve(instance))
    before = _clean_tasks(full).sum(axis=1)
    chosen = range(len(names)) if tenants is None else [_tenant_index(instance, t) for t in tenants]
    best: tuple[float, float, int, int, float] | None = None  # (margin, drop, removed, loser, after)
    for k in chosen:
        if len(names) < 2:
            break
        after = _clean_tasks(_as_allocation(solve(instance.without_tenant(k)))).sum(axis=1)
        others = np.delete(np.arange(len(names)), k)
        drop = before[others] - after
        margin = drop - _task_slack(before[others], tol)
        j = int(np.argmax(margin))
        if best is None or margin[j] > best[0]:
            best = (float(margin[j]), float(drop[j]), k, int(others[j]), float(after[j]))
    if best is None:
        return PropertyCheck("population_monotone", True, "nothing to remove", (), 0.0)
    margin, drop, k, loser, after_count = best
    if margin <= 0:
        detail = "removing any probed tenant never lowers another tenant's task count"
        return PropertyCheck("population_monotone", True, detail, (), drop)
    detail = f"removing {names[k]!r} lowers {names[loser]!r} from {_fmt(before[loser])} to {_fmt(after_count)} tasks"
    return PropertyCheck("population_monotone", False, detail, (names[k], names[loser]), drop)
