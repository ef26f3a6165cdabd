"""Metrics of allocations, recomputed from the instance and the task counts alone."""

from __future__ import annotations

import numpy as np

from models.result import Allocation, FloatArray
from models.types import Instance


def dominant_shares(instance: Instance, allocation: Allocation) -> FloatArray:
    """Global dominant share of each tenant: max over resources of its consumption / cluster total."""
    return np.asarray(allocation.tenant_tasks * instance.dominant_demand)


def weighted_shares(instance: Instance, allocation: Allocation) -> FloatArray:
    return dominant_shares(instance, allocation) / instance.weights


def min_weighted_share(instance: Instance, allocation: Allocation, tol: float = 1e-6) -> float:
    """The max-min objective ``f``: the smallest weighted global dominant share of an unsatisfied tenant.

    ``f`` is the largest level ``t`` such that every tenant has at least ``min(t, its cap level)``, the
    quantity DRFH's first round maximises; so an exact method's ``f`` is never below a heuristic's.
    A tenant holding its whole cap (within ``tol``) is satisfied and does not pull ``f`` down. When
    every tenant is satisfied, ``f`` is the largest cap level (no allocation can do better).
    Tenants that can run nowhere are left out.
    """
    shares = weighted_shares(instance, allocation)
    caps = instance.task_caps
    runnable = instance.runnable & (caps > 0)
    if not runnable.any():
        return 0.0
    satisfied = allocation.tenant_tasks >= caps * (1 - tol) - tol
    hungry = runnable & ~satisfied
    if hungry.any():
        return float(shares[hungry].min())
    cap_levels = caps * instance.dominant_demand / instance.weights
    return float(cap_levels[runnable].max())


def utilisation(instance: Instance, allocation: Allocation) -> FloatArray:
    """Fraction of each resource in use across the cluster (0 for resources the cluster lacks)."""
    used = allocation.tenant_tasks @ instance.demand
    total = instance.total_capacity
    return np.divide(used, total, out=np.zeros_like(used), where=total > 0)


def unit_usage(instance: Instance, allocation: Allocation) -> FloatArray:
    """Resources used on every unit, shape (units, resources)."""
    return np.asarray(allocation.tasks.T @ instance.demand)


def jain_index(values: FloatArray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2); 1 when all equal."""
    values = np.asarray(values, dtype=np.float64)
    denominator = len(values) * float(np.sum(values**2))
    return float(np.sum(values) ** 2 / denominator) if denominator > 0 else 1.0


def guarantee_ratio(instance: Instance, allocation: Allocation, tol: float = 1e-6) -> float:
    """Smallest ``dominant share / hierarchical guarantee`` over demanding, unsatisfied non-root nodes.

    The objective reported for hierarchy instances: at least 1 when every node gets its share
    guarantee (``models.check.share_guarantee`` is the pass/fail form). Satisfied nodes (every leaf
    at its task cap) are left out, as in :func:`min_weighted_share`; with none left it is ``inf``.
    """
    from models.check.hierarchy import guaranteed_nodes

    applies, share, guarantee = guaranteed_nodes(instance, allocation, tol)
    candidate = applies & (guarantee > 0)
    if not candidate.any():
        return float("inf")
    return float(np.min(share[candidate] / guarantee[candidate]))
