"""The fairness and quality columns of a result row, recomputed from the instance and the solution alone.

Allocation families (``flat`` and ``hierarchy``)
    ``min_dominant_share``: smallest global dominant share of a runnable tenant with a positive task cap
    (unweighted; the weighted, unsatisfied-only version is the flat objective); ``util_<resource>``: the
    fraction of the cluster's total of each resource in use, one column per resource of the instance
    (columns of resources an instance lacks stay empty); ``below_cap``: how many runnable tenants hold
    fewer tasks than their cap. On the exact ``drfh`` row it says whether the instance is contended at
    all: with 0, every tenant gets all it asked for and ``f`` is only the largest cap level, the same for
    every method that satisfies everyone.
Hierarchies, in addition
    ``min_share_guarantee``: smallest dominant share / hierarchical share guarantee over demanding,
    unsatisfied non-root nodes (``models.metrics.guarantee_ratio``, the hierarchy objective);
    ``guarantee_violations``: how many of those nodes are below their guarantee. Simulated schedulers
    (``naive-hdrf``, ``dynamic-hdrf``, ``hslots``) report the placement at the horizon as their
    allocation; for them ``avg_min_share_guarantee`` and ``avg_guarantee_violations`` are the same two
    numbers for their time-averaged shares after warm-up (as a pooled allocation), and ``starving_time``
    is the total length of the starvation episodes of ``solver.hdrf.sim_metrics``.
DAG jobs
    ``avg_jct`` (weighted), ``p95_jct``, ``makespan``, ``jain`` (``models.metrics.windowed_jain``
    with one window per instance: 1/20 of a lower bound on its makespan, the larger of the longest
    release + critical path and the busiest resource's total work over capacity, so every method of an
    instance is measured on the same windows), ``late``: jobs finishing after their fair completion
    time ``T_k`` (the ``T_k`` the result carries, else ``solver.sim.fairshare.fair_completion_times``), ``jobs``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fairpack.models.dag import adjacency, topological_order
from fairpack.models.result import Allocation, Result
from fairpack.models.types import Instance

#: Jain windows per makespan lower bound.
JAIN_WINDOWS = 20
#: A tenant within this relative (and absolute) slack of its task cap counts as at its cap.
CAP_TOLERANCE = 1e-6


def allocation_metrics(instance: Instance, allocation: Allocation) -> dict[str, Any]:
    """``min_dominant_share`` and ``util_<resource>`` of an allocation (plus the hierarchy columns)."""
    from fairpack.models.metrics import dominant_shares, utilisation

    shares = dominant_shares(instance, allocation)
    eligible = instance.runnable & (instance.task_caps > 0)
    row: dict[str, Any] = {"min_dominant_share": float(shares[eligible].min()) if eligible.any() else math.nan}
    tasks = allocation.tenant_tasks
    # Relative slack: divisible LP answers sit at the cap up to the solver's tolerance.
    short = tasks < instance.task_caps * (1 - CAP_TOLERANCE) - CAP_TOLERANCE
    row["below_cap"] = int(np.sum(eligible & short))
    used = utilisation(instance, allocation)
    row.update({f"util_{name}": float(u) for name, u in zip(instance.resources, used, strict=True)})
    if instance.hierarchy is not None:
        row["min_share_guarantee"], row["guarantee_violations"] = guarantee_numbers(instance, allocation)
    return row


def guarantee_numbers(instance: Instance, allocation: Allocation, tol: float = 1e-6) -> tuple[float, int]:
    """(smallest share/guarantee, nodes below their guarantee) over demanding, unsatisfied non-root nodes."""
    from fairpack.models.check.hierarchy import guaranteed_nodes
    from fairpack.models.metrics import guarantee_ratio

    applies, share, guarantee = guaranteed_nodes(instance, allocation, tol)
    return guarantee_ratio(instance, allocation, tol), int(np.sum(applies & (share < guarantee - tol)))


def simulation_metrics(instance: Instance, result: Result) -> dict[str, Any]:
    """Time-averaged guarantee numbers and starvation of a simulated hierarchical scheduler."""
    averaged = result.extra.get("time_averaged_shares")
    if not isinstance(averaged, dict):
        return {}
    shares = np.array([float(averaged[t.name]) for t in instance.tenants])
    dominant = instance.dominant_demand
    tasks = np.divide(shares, dominant, out=np.zeros_like(shares), where=dominant > 0)
    ratio, below = guarantee_numbers(instance, Allocation(tasks[:, None], "pool"))
    starving = sum(float(e.get("duration", 0.0)) for e in result.extra.get("starvation", []) or [])
    return {"avg_min_share_guarantee": ratio, "avg_guarantee_violations": below, "starving_time": starving}


def makespan_lower_bound(instance: Instance) -> float:
    """``max(max_k r_k + critical path_k, max_r total work_r / capacity_r)``: no schedule ends earlier."""
    capacity = instance.total_capacity
    longest, work = 0.0, np.zeros(len(instance.resources))
    for job in instance.jobs:
        parents, children = adjacency(len(job.stages), [(p, s) for s, st in enumerate(job.stages) for p in st.after])
        finish = [0.0] * len(job.stages)
        for s in topological_order(parents, children):
            finish[s] = job.stages[s].duration + max((finish[p] for p in parents[s]), default=0.0)
            work += job.stages[s].tasks * job.stages[s].duration * job.stages[s].demand
        longest = max(longest, job.release + max(finish))
    ratio = np.divide(work, capacity, out=np.zeros_like(work), where=capacity > 0)
    return max(longest, float(ratio.max(initial=0.0)))


def _fair_completion(instance: Instance, result: Result) -> np.ndarray:
    assert result.schedule is not None
    if result.schedule.fair_completion is not None:
        return np.asarray(result.schedule.fair_completion, dtype=np.float64)
    carried = result.extra.get("fair_completion")
    if isinstance(carried, dict):
        return np.array([math.inf if carried.get(j.name) is None else float(carried[j.name]) for j in instance.jobs])
    from fairpack.solver.sim.fairshare import fair_completion_times

    placement = str(result.extra.get("placement", "pooled"))
    return np.asarray(fair_completion_times(instance, placement).completion, dtype=np.float64)


def schedule_metrics(instance: Instance, result: Result, time_limit: float | None = None) -> dict[str, Any]:
    """``avg_jct``, ``p95_jct``, ``makespan``, ``jain``, ``late``, ``jobs`` of a schedule result."""
    from fairpack.models.metrics import schedule_metrics as measure

    assert result.schedule is not None
    window = max(makespan_lower_bound(instance) / JAIN_WINDOWS, 1e-9)
    fair = _fair_completion(instance, result)
    data = measure(instance, result.schedule, window=window, fair=fair)
    return {"avg_jct": data["avg_jct"], "p95_jct": data["p95_jct"], "makespan": data["makespan"],
            "jain": data["jain"], "late": int(data["late"]), "jobs": len(instance.jobs)}  # fmt: skip


def row_metrics(instance: Instance, result: Result, time_limit: float | None = None) -> dict[str, Any]:
    """Every metric column that applies to ``result`` (none when it has no solution)."""
    if result.schedule is not None:
        return schedule_metrics(instance, result, time_limit)
    if result.allocation is None:
        return {}
    return {**allocation_metrics(instance, result.allocation), **simulation_metrics(instance, result)}
