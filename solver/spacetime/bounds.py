"""Proven lower bounds on the space-time objectives that need no search (the clairvoyant yardstick's floor).

Every bound relaxes the cluster to one pool per resource (capacity ``C_r``, the machines' sum) and lets tasks
be split at will. In that relaxation job ``k`` is a piece of work ``p_kr = sum_s tasks_s * duration_s *
demand_sr / C_r`` on each resource's single "machine", released at ``r_k``, and it also needs its critical
path ``L_k`` of wall time:

* per job: ``C_k >= r_k + max(L_k, max_r p_kr)`` (alone on the cluster);
* jointly, for equal job weights: on each resource, ``sum_k C_k`` is at least what shortest remaining
  processing time (SRPT) achieves for the pieces ``p_kr`` with releases ``r_k`` -- SRPT is optimal for
  ``1 | r_j, pmtn | sum C_j`` (Schrage 1968);
* makespan: at least every job's own bound, and at least the time a work-conserving single machine needs
  for all the work of a resource.

All quantities are in the caller's units (the CP model passes ticks); the caller floors the result.
"""

from __future__ import annotations

import heapq

import numpy as np

from fairpack.models.types import FloatArray, IntArray


def srpt_completions(release: FloatArray, work: FloatArray) -> FloatArray:
    """Completion times of single-machine preemptive SRPT (jobs in input order)."""
    order = np.argsort(release, kind="stable")
    done = np.zeros(release.size)
    pending: list[tuple[float, int]] = []  # (remaining work, job)
    t = 0.0
    position = 0
    while position < order.size or pending:
        if not pending:
            t = max(t, float(release[order[position]]))
        while position < order.size and release[order[position]] <= t:
            k = int(order[position])
            heapq.heappush(pending, (float(work[k]), k))
            position += 1
        remaining, k = heapq.heappop(pending)
        next_release = float(release[order[position]]) if position < order.size else np.inf
        if t + remaining <= next_release:
            t += remaining
            done[k] = t
        else:  # run until the next release, then choose again
            heapq.heappush(pending, (remaining - (next_release - t), k))
            t = next_release
    return done


def job_lower_bounds(release: FloatArray, critical: FloatArray, work: FloatArray) -> FloatArray:
    """Per job: ``r_k + max(L_k, max_r p_kr)`` (``work`` is ``(jobs, resources)`` already divided by ``C_r``)."""
    alone = work.max(axis=1, initial=0.0) if work.size else np.zeros(release.size)
    return np.asarray(release + np.maximum(critical, alone))


def objective_lower_bound(release: FloatArray, critical: FloatArray, work: FloatArray, job_coef: FloatArray,
                          makespan_coef: float) -> float:  # fmt: skip
    """A lower bound on ``job_coef @ C + makespan_coef * max C`` (see the module docstring).

    Parameters
    ----------
    release, critical : (jobs,)
    work : (jobs, resources)
        Every job's work on every resource divided by the resource's pooled capacity (time units).
    job_coef : (jobs,)
        Non-negative completion weights.
    makespan_coef
        Weight of the makespan.
    """
    if release.size == 0:
        return 0.0
    own = job_lower_bounds(release, critical, work)
    jobs_part = float(job_coef @ own)
    makespan = float(own.max())
    for r in range(work.shape[1]):
        done = srpt_completions(release, work[:, r])
        makespan = max(makespan, float(done.max()))
        if np.all(job_coef == job_coef[0]):  # SRPT is optimal only for equal weights
            jobs_part = max(jobs_part, float(job_coef[0] * done.sum()))
    return jobs_part + makespan_coef * makespan


def stage_work(stage_job: IntArray, jobs: int, tasks: FloatArray, duration: FloatArray, demand: FloatArray,
               capacity: FloatArray) -> FloatArray:  # fmt: skip
    """``(jobs, resources)``: every job's resource-time divided by the pooled capacity (0 where it is 0)."""
    per_stage = (tasks * duration)[:, None] * demand
    work = np.zeros((jobs, demand.shape[1]))
    np.add.at(work, stage_job, per_stage)
    return np.asarray(np.divide(work, capacity[None, :], out=np.zeros_like(work), where=capacity[None, :] > 0))
