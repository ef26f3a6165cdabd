"""Metrics of allocations and schedules, recomputed from the instance and the answer alone.

Allocations: dominant and weighted shares, the max-min objective f, utilisation, the hierarchy
guarantee ratio. Schedules (DAG jobs):

* JCT of job ``k`` = ``C_k - r_k`` (``C_k`` the latest end of its tasks); :func:`avg_jct` is weighted by
  job weight, :func:`p95_jct` is the unweighted 95th percentile (numpy's linear interpolation).
* :func:`windowed_jain`: the timeline ``[0, makespan)`` is cut into windows of length ``window`` (the last
  one may be shorter). In each window every *active* job (``[r_k, C_k)`` overlaps the window) gets its
  dominant share of the resources it used, averaged over the window
  (``max_r sum_tasks overlap * demand_r / (window length * C_r)``), divided by its weight; Jain's index
  (:func:`fairpack.models.metrics.jain_index`) is taken over the active jobs of the window, and the mean over
  windows with at least one active job is reported.
* :func:`slowdown`: ``JCT / reference JCT`` per job against another schedule of the same instance
  (e.g. ``drf-dag``'s); 1 where both are 0, ``inf`` where only the reference is 0.
* :func:`late_jobs`: jobs with ``C_k - r_k > (1 + margin) (T_k - r_k)``, times compared by the one rule of
  ``models.tolerance`` (``settled(C_k)``): later than their fair completion time ``T_k`` by more than
  ``margin`` as a fraction of their fair JCT.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairpack.models.check.hierarchy import guaranteed_nodes
from fairpack.models.result import Allocation, Schedule, job_completion, task_demand
from fairpack.models.tolerance import CHECK_RTOL, settled_all
from fairpack.models.types import FloatArray, Instance


def dominant_shares(instance: Instance, allocation: Allocation) -> FloatArray:
    """Global dominant share of each tenant: max over resources of its consumption / cluster total."""
    return np.asarray(allocation.tenant_tasks * instance.dominant_demand)


def weighted_shares(instance: Instance, allocation: Allocation) -> FloatArray:
    return dominant_shares(instance, allocation) / instance.weights


def min_weighted_share(instance: Instance, allocation: Allocation, tol: float = CHECK_RTOL) -> float:
    """The max-min objective ``f``: the smallest weighted global dominant share of an unsatisfied tenant.

    ``f`` is the largest level ``t`` such that every tenant has at least ``min(t, its cap level)``, the
    quantity DRFH's first round maximises; so an exact method's ``f`` is never below a heuristic's.
    A tenant holding its whole cap (within ``tol``) is satisfied and does not pull ``f`` down. When
    every tenant is satisfied, ``f`` is the largest cap level (no allocation can do better).
    Tenants that can run nowhere are left out: for divisible tasks those no single server class has every
    needed resource of (pooled: the cluster), for whole tasks (machine-level or integral allocations)
    those whose task fits on no single machine.
    """
    shares = weighted_shares(instance, allocation)
    caps = instance.task_caps
    whole = allocation.kind == "machine" or allocation.integral
    can_run = instance.placeable if whole else instance.runnable if allocation.kind == "pool" else instance.usable
    runnable = can_run & (caps > 0)
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


def jain_index(values: FloatArray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2); 1 when all equal."""
    values = np.asarray(values, dtype=np.float64)
    denominator = len(values) * float(np.sum(values**2))
    return float(np.sum(values) ** 2 / denominator) if denominator > 0 else 1.0


def guarantee_ratio(instance: Instance, allocation: Allocation, tol: float = CHECK_RTOL) -> float:
    """Smallest ``dominant share / hierarchical guarantee`` over demanding, unsatisfied non-root nodes.

    At least 1 when every node gets its share guarantee (``models.check.share_guarantee`` is the
    pass/fail form). Satisfied nodes (every leaf at its task cap) are left out, as in
    :func:`min_weighted_share`; with none left it is ``inf``. H-DRF guarantees every node its share but does
    not maximise this ratio (another allocation may score higher), so the objective reported for hierarchies
    is :func:`guarantee_shortfall`, which H-DRF provably minimises; this ratio is reported beside it.
    """
    applies, share, guarantee = guaranteed_nodes(instance, allocation, tol)
    candidate = applies & (guarantee > 0)
    if not candidate.any():
        return float("inf")
    return float(np.min(share[candidate] / guarantee[candidate]))


#: The name of the hierarchy objective (``Result.objective`` of an allocation on a hierarchy).
SHORTFALL = "guarantee shortfall"


def guarantee_shortfall(instance: Instance, allocation: Allocation, tol: float = CHECK_RTOL) -> float:
    """The largest relative shortfall below a share guarantee, ``max(0, 1 - min share/guarantee)``, over the
    demanding, unsatisfied non-root nodes (:func:`guarantee_ratio`); in [0, 1], minimised.

    The objective reported for hierarchy instances. Static H-DRF meets every guarantee, so its shortfall is 0:
    the smallest possible, a proven optimum of this objective (where ``min share/guarantee`` would be no
    objective H-DRF optimises). A node starved of everything has shortfall 1. Shortfalls within ``tol`` (the
    checker's tolerance) are 0.
    """
    ratio = guarantee_ratio(instance, allocation, tol)
    shortfall = max(0.0, 1.0 - ratio) if math.isfinite(ratio) else 0.0
    return 0.0 if shortfall <= tol else shortfall


def _releases(instance: Instance) -> FloatArray:
    return np.array([job.release for job in instance.jobs], dtype=np.float64)


def _weights(instance: Instance) -> FloatArray:
    return np.array([job.weight for job in instance.jobs], dtype=np.float64)


def jct(instance: Instance, schedule: Schedule) -> FloatArray:
    """Job completion time minus release, per job."""
    return job_completion(instance, schedule) - _releases(instance)


def avg_jct(instance: Instance, schedule: Schedule) -> float:
    weights = _weights(instance)
    return float(weights @ jct(instance, schedule) / weights.sum())


def p95_jct(instance: Instance, schedule: Schedule) -> float:
    return float(np.percentile(jct(instance, schedule), 95))


def makespan(instance: Instance, schedule: Schedule) -> float:
    return float(job_completion(instance, schedule).max())


def windowed_jain(instance: Instance, schedule: Schedule, window: float) -> float:
    """Mean over windows of Jain's index of the active jobs' weighted, window-averaged dominant shares."""
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")
    completion = job_completion(instance, schedule)
    end_time = float(completion.max())
    if end_time <= 0 or len(schedule) == 0:
        return 1.0
    edges = np.arange(0.0, end_time, window)
    lo, hi = edges, np.minimum(edges + window, end_time)
    capacity = instance.total_capacity
    normalised = np.divide(task_demand(instance, schedule), capacity, out=np.zeros((len(schedule), capacity.size)),
                           where=capacity > 0)  # fmt: skip
    # overlap[t, w] = time task t runs inside window w
    overlap = np.clip(np.minimum(schedule.end[:, None], hi[None, :]) - np.maximum(schedule.start[:, None], lo[None, :]),
                      0.0, None)  # fmt: skip
    n_jobs = len(instance.jobs)
    used = np.zeros((n_jobs, edges.size, capacity.size))
    np.add.at(used, schedule.job, overlap[:, :, None] * normalised[:, None, :])
    dominant = used.max(axis=2) / (hi - lo)[None, :] / _weights(instance)[:, None]
    release = _releases(instance)
    active = (release[:, None] < hi[None, :]) & (completion[:, None] > lo[None, :])
    values = [jain_index(dominant[active[:, w], w]) for w in range(edges.size) if np.any(active[:, w])]
    return float(np.mean(values)) if values else 1.0


def slowdown(instance: Instance, schedule: Schedule, reference: Schedule) -> FloatArray:
    """Per job ``JCT / reference JCT``."""
    mine, theirs = jct(instance, schedule), jct(instance, reference)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = mine / theirs
    ratio[(theirs <= 0) & (mine <= 0)] = 1.0
    ratio[(theirs <= 0) & (mine > 0)] = np.inf
    return ratio


def late_jobs(
    instance: Instance, schedule: Schedule, fair: Sequence[float] | FloatArray, margin: float = 0.0
) -> list[int]:
    """Indices of jobs later than ``T_k`` by more than ``margin`` times their fair JCT (``inf`` never late)."""
    fair = np.asarray(fair, dtype=np.float64)
    release = _releases(instance)
    finite = np.isfinite(fair)
    limit = np.where(finite, release + (1 + margin) * (np.where(finite, fair, 0.0) - release), np.inf)
    return [int(k) for k in np.flatnonzero(settled_all(job_completion(instance, schedule)) > limit)]


def schedule_metrics(
    instance: Instance,
    schedule: Schedule,
    window: float | None = None,
    reference: Schedule | None = None,
    fair: Sequence[float] | FloatArray | None = None,
    margin: float = 0.0,
) -> dict[str, Any]:
    """All metrics at once: ``avg_jct``, ``p95_jct``, ``makespan``, ``jain`` (``window`` default: makespan
    / 20), and when given ``slowdown`` (per job name, vs ``reference``) and ``late`` / ``late_jobs`` /
    ``fair_margin`` (vs ``fair`` T_k)."""
    span = makespan(instance, schedule)
    window = window if window is not None else max(span / 20, 1e-9)
    data: dict[str, Any] = {
        "avg_jct": avg_jct(instance, schedule),
        "p95_jct": p95_jct(instance, schedule),
        "makespan": span,
        "jain": windowed_jain(instance, schedule, window),
        "jain_window": window,
    }
    names = [job.name for job in instance.jobs]
    if reference is not None:
        data["slowdown"] = dict(zip(names, slowdown(instance, schedule, reference).tolist(), strict=True))
    if fair is not None:
        late = late_jobs(instance, schedule, fair, margin)
        data.update({"late": len(late), "late_jobs": [names[k] for k in late], "fair_margin": margin})
    return data
