"""A schedule over time, recomputed from the instance and the schedule alone (the metrics of simulated runs).

Nothing here trusts a simulator's own bookkeeping: utilisation, shares and delays are derived from the
tasks' start and end times, so they mean the same for any method's schedule.

* :func:`utilisation_series` -- the fraction of every resource in use, exactly, at every task start or end
  (a step function; downsampled to at most ``points`` steps for output, never for the integrals);
* :func:`binned_usage` -- every tenant's (or job's) time-averaged use of every resource in equal time bins,
  computed exactly with sorted cumulative sums: ``integral of usage up to x = sum over tasks started before x
  of d (x - start) - sum over tasks ended before x of d (x - end)``;
* :func:`job_table` -- per job: arrival, first start, completion, queueing delay (first start minus arrival)
  and slowdown (JCT over the job's critical path, its time alone on an endless cluster);
* :func:`timeline_summary` -- mean and p95 JCT and queueing delay, makespan, time-averaged utilisation (from
  the first arrival to the makespan, and over the busy periods only: :func:`busy_utilisation`), Jain's
  index of the tenants' dominant shares over the bins, and every tenant's time below its fair share.

Time below fair share (per tenant): the time, at the bins' resolution, during which the tenant had work in
the system (arrived, unfinished) and its time-averaged dominant share was below its fair share: weighted
max-min of the cluster (dominant share 1) over the tenants with work then, each capped at the dominant share
of all the work it had then (running or waiting).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fairpack.models.dag import longest_paths
from fairpack.models.metrics import jain_index
from fairpack.models.result import Schedule, job_completion, task_demand
from fairpack.models.stages import job_tenants as stage_job_tenants
from fairpack.models.stages import stage_table
from fairpack.models.tolerance import settled_all
from fairpack.models.types import FloatArray, Instance, IntArray


def job_tenants(instance: Instance) -> tuple[list[str], IntArray]:
    """Tenant names (a job is its own tenant when it names none) and the tenant of every job."""
    return stage_job_tenants(instance)


def utilisation_series(instance: Instance, schedule: Schedule, points: int = 2000) -> dict[str, Any]:
    """Fraction of every resource in use after every task start or end (at most ``points`` steps kept).

    Ends follow the one time rule (:mod:`fairpack.models.tolerance`), as the checker counts them: an ended
    task's capacity is free by ``settled(end)``, and at one instant ends come before starts. A task the
    simulator started within the time resolution of another's end (up to 5e-7 before it at t = 500) is then
    never counted on top of it, so the series never exceeds the capacity the checker verified.
    """
    if schedule.start.size == 0:  # nothing ran: the series is empty
        return {"time": [], **{r: [] for r in instance.resources}}
    demand = task_demand(instance, schedule)
    ends = np.maximum(settled_all(schedule.end), schedule.start)  # never before its own start
    times = np.concatenate([schedule.start, ends])
    deltas = np.concatenate([demand, -demand])
    kind = np.concatenate([np.ones(schedule.start.size), np.zeros(schedule.start.size)])  # ends (0) first
    order = np.lexsort((kind, times))
    times, deltas = times[order], deltas[order]
    level = np.cumsum(deltas, axis=0)
    last = np.flatnonzero(np.append(times[1:] != times[:-1], True))  # the state after every distinct time
    times, level = times[last], level[last]
    total = instance.total_capacity
    fraction = np.divide(level, total, out=np.zeros_like(level), where=total > 0)
    fraction[np.abs(fraction) < 1e-12] = 0.0
    if times.size > points:
        keep = np.unique(np.linspace(0, times.size - 1, points).astype(np.int64))
        times, fraction = times[keep], fraction[keep]
    return {"time": times.tolist(), **{r: fraction[:, k].tolist() for k, r in enumerate(instance.resources)}}


def _integral(starts: FloatArray, ends: FloatArray, amount: FloatArray, edges: FloatArray) -> FloatArray:
    """Integral over [0, edge] of the summed step functions ``amount`` on ``[start, end)``, at every edge."""
    result = np.zeros((edges.size, amount.shape[1]))
    for times, sign in ((starts, 1.0), (ends, -1.0)):
        order = np.argsort(times, kind="stable")
        t, a = times[order], amount[order]
        count = np.searchsorted(t, edges, side="left")  # tasks with time < edge
        weight = np.vstack([np.zeros((1, a.shape[1])), np.cumsum(a, axis=0)])
        moment = np.vstack([np.zeros((1, a.shape[1])), np.cumsum(a * t[:, None], axis=0)])
        result += sign * (edges[:, None] * weight[count] - moment[count])
    return result


def _level(times: FloatArray, amount: FloatArray, at: FloatArray, side: str) -> FloatArray:
    """Sum of ``amount`` over the entries with ``time <= at`` (``side='right'``) at every point of ``at``."""
    order = np.argsort(times, kind="stable")
    cumulative = np.vstack([np.zeros((1, amount.shape[1])), np.cumsum(amount[order], axis=0)])
    return cumulative[np.searchsorted(times[order], at, side=side)]  # type: ignore[call-overload]


def binned_usage(instance: Instance, schedule: Schedule, edges: FloatArray, by: IntArray, groups: int) -> FloatArray:
    """Time-averaged use of every resource by every group (tasks grouped by ``by``) in every bin.

    Returns an array (groups, bins, resources): the integral of the group's usage over the bin divided by
    the bin's width.
    """
    demand = task_demand(instance, schedule)
    width = np.diff(edges)
    out = np.zeros((groups, width.size, demand.shape[1]))
    for g in np.unique(by).tolist():
        mine = by == g
        cumulative = _integral(schedule.start[mine], schedule.end[mine], demand[mine], edges)
        out[g] = np.diff(cumulative, axis=0) / np.where(width > 0, width, 1.0)[:, None]
    out[np.abs(out) < 1e-12] = 0.0
    return out


def job_table(instance: Instance, schedule: Schedule) -> dict[str, FloatArray]:
    """Per job: arrival, first start, completion, queueing delay, JCT, critical path and slowdown."""
    stages = stage_table(instance)
    release = stages.release.copy()
    start = np.full(len(instance.jobs), np.inf)
    np.minimum.at(start, schedule.job, schedule.start)
    start = np.where(np.isfinite(start), start, release)
    completion = job_completion(instance, schedule)
    # A one-stage job (the common case of a long trace) has no graph to walk: its stage's duration.
    single = np.diff(stages.offset) == 1
    critical = np.where(single, stages.duration[stages.offset[:-1].clip(max=max(stages.stages - 1, 0))], 0.0)
    for k in np.flatnonzero(~single).tolist():
        job = instance.jobs[k]
        parents = [stage.after for stage in job.stages]
        children: list[list[int]] = [[] for _ in job.stages]
        for child, ps in enumerate(parents):
            for p in ps:
                children[p].append(child)
        _, tail = longest_paths(parents, children, [stage.duration for stage in job.stages])
        critical[k] = float(tail.max()) if tail.size else 0.0
    jct = completion - release
    slowdown = np.divide(jct, critical, out=np.ones_like(jct), where=critical > 0)
    return {"arrival": release, "start": start, "completion": completion, "queueing_delay": start - release,
            "jct": jct, "critical_path": critical, "slowdown": slowdown}  # fmt: skip


def _stats(table: dict[str, FloatArray], done: np.ndarray) -> dict[str, float | None]:
    if not done.any():
        return {key: None for key in ("mean_jct", "p95_jct", "mean_queueing_delay", "p95_queueing_delay",
                                      "mean_slowdown")}  # fmt: skip
    return {"mean_jct": float(np.mean(table["jct"][done])), "p95_jct": float(np.percentile(table["jct"][done], 95)),
            "mean_queueing_delay": float(np.mean(table["queueing_delay"][done])),
            "p95_queueing_delay": float(np.percentile(table["queueing_delay"][done], 95)),
            "mean_slowdown": float(np.mean(table["slowdown"][done]))}  # fmt: skip


def _water_fill(need: FloatArray, weight: FloatArray) -> FloatArray:
    """Weighted max-min split of 1 among tenants each capped at ``need`` (their dominant shares)."""
    share = np.zeros_like(need)
    active = need > 0
    left = 1.0
    while active.any() and left > 1e-12:
        level = left / weight[active].sum()
        capped = active & (need <= level * weight + 1e-15)
        if not capped.any():
            share[active] = level * weight[active]
            break
        share[capped] = need[capped]
        left -= float(need[capped].sum())
        active &= ~capped
    return share


def busy_time(begin: FloatArray, end: FloatArray) -> float:
    """Length of the union of the intervals ``[begin, end)``."""
    keep = end > begin
    begin, end = begin[keep], end[keep]
    if begin.size == 0:
        return 0.0
    order = np.argsort(begin, kind="stable")
    begin, end = begin[order], np.maximum.accumulate(end[order])
    # A new busy period starts where an interval begins after everything before it has ended.
    starts = np.concatenate([[True], begin[1:] > end[:-1]])
    period = np.cumsum(starts) - 1
    first = begin[starts]
    last = np.zeros(first.size)
    np.maximum.at(last, period, end)
    return float((last - first).sum())


def busy_utilisation(instance: Instance, schedule: Schedule, table: dict[str, FloatArray]) -> dict[str, float]:
    """Mean use of every resource over the time some job is in the system (arrived, not completed).

    ``utilisation`` averages from the first arrival to the makespan, which reads near zero on a long trace
    whose jobs come sparsely; this one leaves out the idle gaps between busy periods, so it says how full the
    cluster was while there was work. Exact: task demand times duration, over the length of the union of the
    jobs' [arrival, completion) intervals."""
    total = instance.total_capacity
    work = (task_demand(instance, schedule) * (schedule.end - schedule.start)[:, None]).sum(axis=0)
    completion = np.asarray(table["completion"], dtype=np.float64)
    last = float(np.max(schedule.end[np.isfinite(schedule.end)], initial=0.0))
    # A job left unfinished is in the system until the run's last event.
    completion = np.where(np.isnan(completion), np.maximum(last, table["arrival"]), completion)
    busy = busy_time(np.asarray(table["arrival"], dtype=np.float64), completion)
    used = np.divide(work, total * busy, out=np.zeros_like(work), where=(total > 0) & (busy > 0))
    return {r: float(u) for r, u in zip(instance.resources, used, strict=True)}


def timeline_summary(instance: Instance, schedule: Schedule, bins: int = 100,
                     unfinished: Sequence[int] | IntArray = ()) -> dict[str, Any]:  # fmt: skip
    """Summary metrics and per-tenant binned shares of a schedule (module docstring).

    ``unfinished`` jobs (never completed) are left out of the JCT and delay statistics and counted.
    """
    table = job_table(instance, schedule)
    done = np.ones(len(instance.jobs), dtype=bool)
    done[np.asarray(list(unfinished), dtype=np.int64)] = False
    tenants, tenant_of_job = job_tenants(instance)
    first = float(table["arrival"].min()) if table["arrival"].size else 0.0
    # The run's span: to its last event, the last finished job or the last task that ended (a job left
    # unfinished has no completion).
    finished = table["completion"][~np.isnan(table["completion"])]
    ends = np.concatenate([finished, schedule.end[np.isfinite(schedule.end)]])
    span = float(ends.max()) if ends.size else first
    edges = np.linspace(first, max(span, first + 1e-9), bins + 1)
    usage = binned_usage(instance, schedule, edges, tenant_of_job[schedule.job], len(tenants))
    total = instance.total_capacity
    inverse = np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)
    shares = (usage * inverse).max(axis=2)  # (tenants, bins)
    # Work in the system per tenant in every bin (at the bin's middle): tasks arrived and not yet ended.
    middle = (edges[:-1] + edges[1:]) / 2
    release = table["arrival"][schedule.job]
    demand = task_demand(instance, schedule) * inverse
    need = np.zeros((len(tenants), middle.size))
    tenant = tenant_of_job[schedule.job]
    for t in np.unique(tenant).tolist():
        mine = tenant == t
        need[t] = (_level(release[mine], demand[mine], middle, "right")
                   - _level(schedule.end[mine], demand[mine], middle, "right")).max(axis=1)  # fmt: skip
    weights = np.ones(len(tenants))
    fair = np.stack([_water_fill(need[:, b], weights) for b in range(middle.size)], axis=1)
    below = (need > 0) & (shares < fair * (1 - 1e-6) - 1e-12)
    width = np.diff(edges)
    jains = [jain_index(shares[need[:, b] > 0, b]) for b in range(middle.size) if np.any(need[:, b] > 0)]
    whole = edges[-1] - edges[0]
    utilisation = (usage.sum(axis=0) * width[:, None]).sum(axis=0) / whole if whole > 0 else np.zeros(total.size)
    utilisation = np.divide(utilisation, total, out=np.zeros_like(utilisation), where=total > 0)
    return {
        "jobs": len(instance.jobs),
        "unfinished": int((~done).sum()),
        **_stats(table, done),
        "makespan": span,
        "utilisation": {r: float(u) for r, u in zip(instance.resources, utilisation, strict=True)},
        "utilisation_busy": busy_utilisation(instance, schedule, table),
        "jain": float(np.mean(jains)) if jains else 1.0,
        "time_below_fair_share": {name: float((below[t] * width).sum()) for t, name in enumerate(tenants)},
        "bins": {"edges": edges.tolist(),
                 "shares": {name: shares[t].tolist() for t, name in enumerate(tenants)}},
    }  # fmt: skip
