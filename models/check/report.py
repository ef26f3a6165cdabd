"""Reports and the helpers every check shares.

:class:`CheckReport` is the outcome of the feasibility checks (:mod:`fairpack.models.check.verify`),
:class:`PropertyCheck` the outcome of one property check (:mod:`fairpack.models.check.properties`,
:mod:`fairpack.models.check.probes`, :mod:`fairpack.models.check.hierarchy`). The helpers are vectorised over tenants
and units and process (tenants x units) matrices in row chunks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fairpack.models.result import Allocation
from fairpack.models.tolerance import CHECK_ATOL, FIT_EPS
from fairpack.models.types import FloatArray, Instance

#: ``Instance -> Allocation`` (or an object with ``.allocation``, such as ``Result``).
Solver = Callable[[Instance], Any]

#: Absolute tolerance on resource amounts, used where a capacity is zero (``models.tolerance``).
ABS_TOL = CHECK_ATOL
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


def row_chunks(rows: int, width: int) -> Iterator[slice]:
    """Slices over ``rows`` so that each chunk has about ``_CHUNK_ELEMENTS`` elements of ``width``."""
    step = max(1, _CHUNK_ELEMENTS // max(1, width))
    for start in range(0, rows, step):
        yield slice(start, min(rows, start + step))


def fmt(value: float) -> str:
    return f"{float(value):.6g}"


def floor_tasks(values: FloatArray) -> FloatArray:
    """Whole tasks in a (non-negative) fractional task count, tolerant of rounding noise."""
    return np.floor(values + FIT_EPS * (1.0 + np.abs(values)))


def task_slack(values: FloatArray | float, tol: float) -> FloatArray:
    """Tolerance for comparing task counts: ``tol`` relative, with 1 task as the smallest scale."""
    return np.asarray(tol * np.maximum(1.0, np.abs(values)))


def limited(messages: list[tuple[float, str]], category: str) -> list[str]:
    """The worst ``MAX_MESSAGES`` messages of one category (by severity), then a count of the rest."""
    messages.sort(key=lambda item: -item[0])
    return truncate(category, [text for _, text in messages])


def truncate(category: str, texts: list[str]) -> list[str]:
    """The first ``MAX_MESSAGES`` messages of one category, then a count of the rest."""
    if len(texts) <= MAX_MESSAGES:
        return texts
    return [*texts[:MAX_MESSAGES], f"... and {len(texts) - MAX_MESSAGES} more {category} violations"]


def as_allocation(value: Any) -> Allocation:
    """Accept an ``Allocation`` or anything carrying one in ``.allocation`` (e.g. ``Result``)."""
    if isinstance(value, Allocation):
        return value
    inner = getattr(value, "allocation", None)
    if isinstance(inner, Allocation):
        return inner
    raise TypeError(f"solve() must return an Allocation (or an object with .allocation), got {type(value).__name__}")


def tenant_index(instance: Instance, tenant: int | str) -> int:
    if isinstance(tenant, str):
        for position, candidate in enumerate(instance.tenants):
            if candidate.name == tenant:
                return position
        raise KeyError(f"unknown tenant {tenant!r}")
    index = int(tenant)
    if not 0 <= index < len(instance.tenants):
        raise IndexError(f"tenant index {index} out of range for {len(instance.tenants)} tenants")
    return index


def clean_tasks(allocation: Allocation) -> FloatArray:
    """Task matrix with NaN/inf replaced by 0 (only copies when needed)."""
    tasks = allocation.tasks
    if np.isfinite(tasks).all():
        return tasks
    return np.where(np.isfinite(tasks), tasks, 0.0)


def per_unit_ratio(demand: FloatArray, capacity: FloatArray) -> FloatArray:
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


def shares_of(instance: Instance, totals: FloatArray, kind: str = "class",
              whole: bool = False) -> tuple[FloatArray, FloatArray, float]:  # fmt: skip
    dominant = np.asarray(totals * instance.dominant_demand)
    weighted = dominant / instance.weights
    # Same definition as models.metrics.min_weighted_share, computed independently: the smallest
    # weighted share of an unsatisfied tenant, or the largest cap level if everybody is satisfied.
    caps = instance.task_caps
    # A tenant that cannot run at all does not count: whole tasks need a machine the task fits on, divisible
    # ones a server class (pooled: the cluster) with every resource they need.
    demand, capacity = instance.demand[:, None, :], instance.capacity[None]
    if whole:
        can_run = np.all(demand <= capacity * (1 + 1e-12), axis=2).any(axis=1)
    elif kind == "pool":
        can_run = ~np.any((instance.demand > 0) & (instance.total_capacity <= 0), axis=1)
    else:
        can_run = np.all((capacity > 0) | (demand <= 0), axis=2).any(axis=1)
    runnable = can_run & (caps > 0)
    hungry = runnable & (totals < caps * (1 - 1e-6) - 1e-6)
    if hungry.any():
        minimum = float(weighted[hungry].min())
    elif runnable.any():
        minimum = float((caps * instance.dominant_demand / instance.weights)[runnable].max())
    else:
        minimum = 0.0
    return dominant, weighted, minimum


def utilisation_of(instance: Instance, totals: FloatArray) -> FloatArray:
    used = totals @ instance.demand
    total = instance.total_capacity
    return np.divide(used, total, out=np.zeros_like(used), where=total > 0)


def empty_report(instance: Instance, violations: list[str]) -> CheckReport:
    n, k = len(instance.tenants), len(instance.resources)
    return CheckReport(False, violations, np.zeros(n), np.zeros(n), np.zeros(n), math.nan, np.zeros(k))


def vector_text(resources: Sequence[str], values: FloatArray) -> str:
    return "{" + ", ".join(f"{r}: {fmt(v)}" for r, v in zip(resources, values, strict=True)) + "}"
