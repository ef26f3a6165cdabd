"""Feasibility: re-verify an allocation and its reported amounts from the instance alone."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fairpack.models.check.report import (
    ABS_TOL,
    CheckReport,
    clean_tasks,
    empty_report,
    fmt,
    limited,
    row_chunks,
    shares_of,
    task_slack,
    utilisation_of,
    vector_text,
)
from fairpack.models.result import Allocation, unit_capacity, unit_names
from fairpack.models.tolerance import CHECK_RTOL
from fairpack.models.types import BoolArray, FloatArray, Instance


def verify_allocation(
    instance: Instance,
    allocation: Allocation,
    *,
    tol: float = CHECK_RTOL,
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
    if allocation.kind not in ("class", "machine", "pool"):
        return empty_report(instance, [f"unknown unit kind {allocation.kind!r}"])
    capacity = unit_capacity(instance, allocation.kind)
    expected = (len(instance.tenants), capacity.shape[0])
    if len(allocation.shape) != 2 or allocation.shape != expected:
        return empty_report(
            instance,
            [f"allocation has shape {allocation.shape}, expected {expected} (tenants x {allocation.kind} units)"],
        )
    audit = _Audit(instance, allocation, capacity, tol)
    violations = [message for category, check in ALLOCATION_CHECKS for message in limited(check(audit), category)]
    report = _report(instance, audit.totals(), violations, allocation)
    if amounts is not None:
        report = report.merged(verify_amounts(instance, allocation, amounts, tol=tol))
    return report


Findings = list[tuple[float, str]]  # (severity, message): the most severe are reported first


@dataclass
class _Audit:
    """What every allocation check reads: the instance, the allocation, unit capacities and clean counts."""

    instance: Instance
    allocation: Allocation
    capacity: FloatArray  # (units, resources)
    tol: float
    _names: list[str] | None = None
    _entries: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray] | None = None
    _dense: bool = False  # a quarter or more of the cells are non-zero: the checks read the whole matrix
    _clean: FloatArray | None = None
    _totals: FloatArray | None = None

    def unit(self, u: int) -> str:
        if self._names is None:
            self._names = unit_names(self.instance, self.allocation.kind)
        return self._names[u]

    def tenant(self, i: int) -> str:
        return self.instance.tenants[i].name

    def entries(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray] | None:
        """(tenant, unit, count) of every non-zero cell (NaN included), row-major; None when a quarter or more
        of the cells are non-zero (three arrays of that length would outweigh the matrix).

        An allocation per machine is mostly zeros (1,000 tenants x 12,583 machines: 1% of cells), and a zero
        passes every per-cell check, so the checks read these (``Allocation.cells``) instead of the whole matrix.
        An allocation given as its cells (``Allocation.from_cells``) is read as such: its table is never built.
        """
        if self._entries is None and not self._dense:
            tasks = None if self.allocation.sparse else self.allocation.tasks
            if tasks is None or 4 * np.count_nonzero(tasks) < tasks.size:  # NaN counts as non-zero
                self._entries = self.allocation.cells()
            else:
                self._dense = True
        return self._entries

    @property
    def clean(self) -> FloatArray:
        """The task matrix with non-finite entries as 0 (the matrix itself when all are finite)."""
        if self._clean is None:
            entries = self.entries()
            finite = entries is not None and bool(np.isfinite(entries[2]).all())  # a non-finite cell is non-zero
            self._clean = self.allocation.tasks if finite else clean_tasks(self.allocation)
        return self._clean

    def totals(self) -> FloatArray:
        """Tasks per tenant, from the clean matrix (summed once for every check that reads them); from the
        cells of an allocation given as cells."""
        if self._totals is None:
            self._totals = _clean_totals(self.allocation) if self.allocation.sparse else np.asarray(
                self.clean.sum(axis=1))
        return self._totals

    def clean_entries(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray] | None:
        """``entries()`` with non-finite counts as 0 (what the clean matrix holds there)."""
        entries = self.entries()
        if entries is None:
            return None
        tenants, units, values = entries
        return tenants, units, np.where(np.isfinite(values), values, 0.0)

    def cells(self, flags_of: Callable[[FloatArray], BoolArray]) -> Iterator[tuple[int, int, float]]:
        """(tenant, unit, count) for every cell ``flags_of`` marks: an elementwise test that passes 0."""
        entries = self.entries()
        if entries is not None:
            tenants, units, values = entries
            for k in np.flatnonzero(flags_of(values)).tolist():
                yield int(tenants[k]), int(units[k]), float(values[k])
            return
        tasks = self.allocation.tasks
        for rows in row_chunks(tasks.shape[0], tasks.shape[1]):
            block = tasks[rows]
            for i, u in zip(*np.nonzero(flags_of(block)), strict=True):
                yield rows.start + int(i), int(u), float(block[i, u])


def _clean_totals(allocation: Allocation) -> FloatArray:
    """Tasks per tenant with non-finite counts as 0: from the cells of an allocation given as cells, else from its
    clean table."""
    if not allocation.sparse:
        return np.asarray(clean_tasks(allocation).sum(axis=1))
    tenants, _, values = allocation.cells()
    clean = np.where(np.isfinite(values), values, 0.0)
    return np.bincount(tenants, weights=clean, minlength=allocation.shape[0]).astype(np.float64)


def _nonfinite(audit: _Audit) -> Findings:
    return [(1.0, f"tenant {audit.tenant(i)!r} on {audit.unit(u)!r}: task count {value}")
            for i, u, value in audit.cells(lambda block: ~np.isfinite(block))]  # fmt: skip


def _negative(audit: _Audit) -> Findings:
    def flags(block: FloatArray) -> BoolArray:
        return np.where(np.isfinite(block), block, 0.0) < -audit.tol

    return [(-float(value), f"tenant {audit.tenant(i)!r} on {audit.unit(u)!r}: negative task count {fmt(value)}")
            for i, u, value in audit.cells(flags)]  # fmt: skip


def _fractional(audit: _Audit) -> Findings:
    """Whole tasks: an integral allocation, or any on machines (an indivisible task cannot be split over them)."""
    allocation = audit.allocation
    if not (allocation.integral or allocation.kind == "machine"):
        return []
    why = "integral allocation" if allocation.integral else "indivisible tasks cannot be split over machines"

    def flags(block: FloatArray) -> BoolArray:
        safe = np.where(np.isfinite(block), block, 0.0)
        return np.abs(safe - np.rint(safe)) > task_slack(safe, audit.tol)

    return [(float(abs(value - np.rint(value))),
             f"tenant {audit.tenant(i)!r} on {audit.unit(u)!r}: {fmt(value)} tasks is not a whole number ({why})")
            for i, u, value in audit.cells(flags)]  # fmt: skip


def _over_capacity(audit: _Audit) -> Findings:
    """Per unit and resource: use may exceed capacity C by at most ``max(tol * C, ABS_TOL)``."""
    capacity = audit.capacity
    entries = audit.entries()
    if entries is not None:  # mostly zeros (per machine): sum over the non-zero cells only
        tenants, units, values = entries
        values = np.where(np.isfinite(values), values, 0.0)
        demand = audit.instance.demand
        usage = np.stack([np.bincount(units, weights=values * demand[tenants, r], minlength=capacity.shape[0])
                          for r in range(demand.shape[1])], axis=1).reshape(capacity.shape)  # fmt: skip
    else:
        usage = np.asarray(audit.clean.T @ audit.instance.demand)  # (units, resources)
    over_u, over_r = np.nonzero(usage > capacity + np.maximum(audit.tol * capacity, ABS_TOL))
    findings = []
    for u, r in zip(over_u.tolist(), over_r.tolist(), strict=True):
        cap, excess = capacity[u, r], usage[u, r] - capacity[u, r]
        findings.append((excess / cap if cap > 0 else math.inf,
                         f"unit {audit.unit(u)!r} resource {audit.instance.resources[r]!r}: uses {fmt(usage[u, r])} "
                         f"of capacity {fmt(cap)} (over by {fmt(excess)})"))  # fmt: skip
    return findings


def _over_task_cap(audit: _Audit) -> Findings:
    caps = audit.instance.task_caps
    totals = audit.totals()
    finite = np.isfinite(caps)
    bounded = np.where(finite, caps, 0.0)
    over = finite & (totals > bounded + task_slack(bounded, audit.tol))
    return [(float(totals[i] - caps[i]), f"tenant {audit.tenant(i)!r}: {fmt(totals[i])} tasks exceed its cap of "
             f"{fmt(caps[i])}") for i in np.flatnonzero(over).tolist()]  # fmt: skip


def _missing_resource(audit: _Audit) -> Findings:
    """Tasks on units that have none of a resource they need."""
    instance, demand = audit.instance, audit.instance.demand
    entries = audit.clean_entries()
    findings = []
    for res in range(len(instance.resources)):
        zero_units = np.flatnonzero(audit.capacity[:, res] <= 0)
        needers = np.flatnonzero(demand[:, res] > 0)
        if zero_units.size == 0 or needers.size == 0:
            continue
        for tenant, unit, count, amount in _missing_cells(audit, entries, res, needers, zero_units):
            findings.append((amount, f"tenant {audit.tenant(tenant)!r} has {fmt(count)} tasks on "
                             f"{audit.unit(unit)!r}, which has no {instance.resources[res]!r} (needs {fmt(amount)})"))
    return findings


def _missing_cells(audit: _Audit, entries: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray] | None,
                   res: int, needers: npt.NDArray[np.int64],
                   zero_units: npt.NDArray[np.int64]) -> Iterator[tuple[int, int, float, float]]:  # fmt: skip
    """(tenant, unit, tasks, amount of ``res``) where a tenant needing ``res`` has more than ``ABS_TOL`` of it on a
    unit without it, row-major."""
    demand = audit.instance.demand[:, res]
    if entries is not None:
        tenants, units, values = entries
        amount = values * demand[tenants]
        flagged = (audit.capacity[units, res] <= 0) & (demand[tenants] > 0) & (amount > ABS_TOL)
        for k in np.flatnonzero(flagged).tolist():
            yield int(tenants[k]), int(units[k]), float(values[k]), float(amount[k])
        return
    clean = audit.clean
    for rows in row_chunks(needers.size, zero_units.size):
        who = needers[rows]
        amounts = clean[np.ix_(who, zero_units)] * demand[who][:, None]
        for i, u in zip(*np.nonzero(amounts > ABS_TOL), strict=True):
            tenant, unit = int(who[i]), int(zero_units[u])
            yield tenant, unit, float(clean[tenant, unit]), float(amounts[i, u])


def _oversized(audit: _Audit) -> Findings:
    """Whole tasks of an integral class allocation must each fit on one machine of the class."""
    if not (audit.allocation.integral and audit.allocation.kind == "class"):
        return []
    fits = audit.instance.fits()
    entries = audit.clean_entries()
    if entries is None:
        tenants, units = np.nonzero((audit.clean > audit.tol) & ~fits)
        values = audit.clean[tenants, units]
    else:
        tenants, units, values = entries
        placed = (values > audit.tol) & ~fits[tenants, units]
        tenants, units, values = tenants[placed], units[placed], values[placed]
    return [(float(value), f"tenant {audit.tenant(i)!r} has {fmt(value)} whole tasks on class {audit.unit(u)!r}, "
             "but one task does not fit on a single machine of it")
            for i, u, value in zip(tenants.tolist(), units.tolist(), values.tolist(), strict=True)]  # fmt: skip


#: The named checks of :func:`verify_allocation`, in report order, as (category, check).
ALLOCATION_CHECKS: tuple[tuple[str, Callable[[_Audit], Findings]], ...] = (
    ("non-finite", _nonfinite),
    ("negative", _negative),
    ("integrality", _fractional),
    ("capacity", _over_capacity),
    ("task cap", _over_task_cap),
    ("missing-resource", _missing_resource),
    ("oversized-task", _oversized),
)


def verify_amounts(
    instance: Instance,
    allocation: Allocation,
    amounts: Mapping[str, Any],
    *,
    tol: float = CHECK_RTOL,
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
    if len(allocation.shape) != 2 or allocation.shape[0] != len(tenant_names):
        return empty_report(instance, [f"allocation has shape {allocation.shape}: cannot compare amounts"])
    totals = _clean_totals(allocation)
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
                violations.append(f"tenant {name!r}: no amounts reported, expected {vector_text(resources, want)}")
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
                    f"tenant {name!r} resource {resources[r]!r}: reported {fmt(got[r])}, but "
                    f"{fmt(totals[i])} tasks x {fmt(instance.demand[i, r])} = {fmt(want[r])}",
                )
            )
    violations += limited(mismatches, "amount")
    return _report(instance, totals, violations, allocation)


def _report(instance: Instance, totals: FloatArray, violations: list[str], allocation: Allocation) -> CheckReport:
    """The report both checks return: violations plus the shares recomputed from the task totals."""
    whole = allocation.kind == "machine" or allocation.integral
    dominant, weighted, minimum = shares_of(instance, totals, allocation.kind, whole)
    return CheckReport(
        ok=not violations,
        violations=violations,
        tasks=totals,
        dominant_shares=dominant,
        weighted_shares=weighted,
        min_weighted_share=minimum,
        utilisation=utilisation_of(instance, totals),
    )
