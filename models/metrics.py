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


def min_weighted_share(instance: Instance, allocation: Allocation) -> float:
    """The max-min objective: the smallest weighted global dominant share among runnable tenants."""
    shares = weighted_shares(instance, allocation)
    mask = instance.runnable
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
