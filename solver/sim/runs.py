"""Running a DAG-job policy on an instance's jobs, as ``solve --method P`` does: schedule, ``T_k``, late jobs."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fairpack.models.metrics import late_jobs
from fairpack.models.result import Result, Schedule
from fairpack.models.types import Instance
from fairpack.solver import interrupt
from fairpack.solver.sim.engine import Observer, Simulation
from fairpack.solver.sim.fairshare import FairShare, fair_completion_times, given_completion_times
from fairpack.solver.sim.policies.dag import Carbyne, make_policy
from fairpack.solver.sim.policies.options import duration, fair_times, flag
from fairpack.solver.sim.workload import Workload


def run_policy(instance: Instance, name: str, extra: dict[str, Any] | None = None, jobs: Workload | None = None,
               placement: str = "pooled", observers: Sequence[Observer] = (),
               deadline: float | None = None) -> tuple[Schedule, dict[str, Any]]:  # fmt: skip
    """Simulate DAG policy ``name``; returns the schedule (without fair completion times) and statistics.

    ``observers`` watch the run (one may stop it by raising, e.g. at a time limit)."""
    jobs = jobs or Workload.of_jobs(instance, placement)
    jobs.refuse_gangs(instance, name)
    policy = make_policy(name, jobs, dict(extra or {}))
    sim = Simulation(instance, jobs, policy, placement, observers=observers, deadline=deadline).run()
    info: dict[str, Any] = dict(sim.counters())
    if sim.stopped_at is not None:
        info["stopped_at"] = sim.stopped_at
        info["unfinished_jobs"] = [instance.jobs[k].name for k in sim.unfinished().tolist()]
    if isinstance(policy, Carbyne):
        info["plans"] = policy.plans
        info["reverse_plans_reused"] = policy.reverse_hits
    return sim.schedule(), info


def run_heuristic(instance: Instance, name: str, extra: dict[str, Any] | None = None, placement: str = "pooled",
                  fair: FairShare | None = None, deadline: float | None = None) -> Result:  # fmt: skip
    """Run DAG policy ``name`` and package a ``Result`` with the schedule and the fair completion times.

    ``extra``: ``altruism``, ``reverse_order``, ``seed`` (carbyne); ``fair_completion``: computed (the
    default), ``False`` skips ``T_k``, a mapping job name -> time gives them (:func:`fair_times`);
    ``fair_margin``; ``attach_fair`` (default True: ``T_k`` goes on ``Schedule.fair_completion``, the JSON
    ``jobs.*.fair_completion``). ``solver.api`` verifies heuristic schedules without treating ``T_k`` as a
    deadline; late jobs are listed.
    """
    extra = dict(extra or {})
    # Typed up front, so that a bad value is refused (OptionError) before any work, whichever path uses it.
    wanted, attach_fair = fair_times(extra), flag(extra, "attach_fair", True)
    margin = duration(extra, "fair_margin", 0.0) or 0.0
    started = time.perf_counter()
    jobs = Workload.of_jobs(instance, placement)
    given = given_completion_times(instance, wanted) if isinstance(wanted, dict) else None
    if fair is None and wanted is True:
        fair = fair_completion_times(instance, placement, jobs, deadline=deadline)
    fair_s = time.perf_counter() - started
    schedule, info = run_policy(instance, name, extra, jobs, placement, deadline=deadline)
    solve_s = time.perf_counter() - started - fair_s
    info["fair_s"] = fair_s
    completion = given if given is not None else None if fair is None else fair.completion
    if completion is not None:
        names = [job.name for job in instance.jobs]
        info["fair_completion"] = {n: (float(v) if math.isfinite(v) else None)
                                   for n, v in zip(names, completion, strict=True)}  # fmt: skip
        if given is not None:
            info["fair_method"] = dict.fromkeys(names, "given")
        elif fair is not None:
            info["fair_method"] = dict(zip(names, fair.method, strict=True))
            info["fair_share"] = {n: [float(x) for x in row] for n, row in zip(names, fair.share, strict=True)}
        late = late_jobs(instance, schedule, completion, margin)
        info["fair_margin"] = margin
        info["late_jobs"] = [names[k] for k in late]
        if attach_fair:
            schedule = replace(schedule, fair_completion=completion)
    info["objective_name"] = "avg-jct" if len(instance.jobs) > 1 else "makespan"
    info["placement"] = placement
    if "stopped_at" in info:  # the time limit (or Ctrl-C): the tasks launched so far, a valid partial schedule
        return Result("time_limit", name, "none", build_s=fair_s, solve_s=solve_s, schedule=schedule, extra=info,
                      message=f"{interrupt.stop_reason()} at simulated time {info['stopped_at']:.6g}: the tasks "
                              "launched so far")  # fmt: skip
    return Result("feasible", name, "none", build_s=fair_s, solve_s=solve_s, schedule=schedule, extra=info)
