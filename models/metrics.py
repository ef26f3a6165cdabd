"""Metrics of allocations, recomputed from the instance and the task counts alone."""

from __future__ import annotations

import numpy as np

from models.solution import Allocation, FloatArray
from models.types import Instance


def dominant_shares(instance: Instance, allocation: Allocation) -> FloatArray:
    """Global dominant share of each tenant: max over resources of its consumption / cluster total."""
    return np.asarray(allocation.tenant_tasks * instance.dominant_demand)


def weighted_shares(instance: Instance, allocation: Allocation) -> FloatArray:
    return dominant_shares(instance, allocation) / instance.weights


def min_weighted_share(instance: Instance, allocation: Allocation, tol: float = 1e-9) -> float:
    """The max-min objective: the smallest weighted global dominant share among unsatisfied tenants.

    A tenant that holds all the tasks it asked for (its cap) is satisfied: its share is small by its
    own choice, so it does not measure unfairness. Tenants that can run nowhere are left out too.
    With every tenant satisfied, the minimum over all runnable tenants is returned.
    """
    shares = weighted_shares(instance, allocation)
    runnable = instance.runnable & (instance.task_caps > 0)
    hungry = runnable & (allocation.tenant_tasks < instance.task_caps * (1 - tol) - tol)
    mask = hungry if hungry.any() else runnable
    return float(shares[mask].min()) if mask.any() else 0.0


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
