"""``fairpack simulate``: run an online policy on an instance's arrivals (its jobs, a trace) or its tenants.

The workload is the instance's DAG jobs plus the trace's (``--trace``), each released at its arrival; an
instance with tenants and no jobs gives every tenant an endless backlog instead (durations exponential with
mean ``mean``, at most its ``tasks`` running at once), simulated to ``horizon``. Every machine is tracked
(``placement='servers'``, the default; ``pooled`` runs on the cluster as one machine).

A run over jobs returns their schedule (verified by ``models.check`` like any schedule: capacity of every
machine at every instant, arrivals, durations, precedence) with the timeline of ``models.timeline``
recomputed from it; a run over backlogs returns the placement at the horizon and its share meters.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from fairpack.models.result import Result
from fairpack.models.timeline import job_table, timeline_summary, utilisation_series
from fairpack.models.traces import TraceData
from fairpack.models.types import FloatArray, Instance, InstanceError
from fairpack.solver import interrupt
from fairpack.solver.budget import Budget
from fairpack.solver.registry import OptionError, SolveOptions, get_policy
from fairpack.solver.sim.backlog import SimOptions, backlog_result
from fairpack.solver.sim.build import build, policy_settings, refuse_workload
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.policies.flat import Fifo
from fairpack.solver.sim.workload import Workload

if TYPE_CHECKING:
    from fairpack.solver.sim.compiled_loop import CompiledRun

#: Where only numba's kernel is there (the loop's C extension was not built), tasks from which a FIFO run in the
#: compiled loop's domain runs there: below, importing numba costs more than the engine's whole run. The C kernel
#: loads in a millisecond and is the faster one at every size (warm, CPU: 10 tasks 0.10 ms against the engine's
#: 0.36 ms, 100 0.12 against 3.1, 1,000 0.50 against 36), so with it every such run is compiled.
COMPILED_MIN_TASKS = 5_000
#: Time bins of the shares series and of Jain's index and the time below fair share.
TIMELINE_BINS = 100


def build_policy(name: str, jobs: Workload, options: SolveOptions, instance: Instance | None = None) -> BasePolicy:
    """The policy object for ``name``, made by its registry factory (its settings from ``options``); what its
    record declares it cannot run is refused (``solver.sim.build``)."""
    policy = get_policy(name)
    return build(policy, jobs, instance, policy_settings(policy, options))


def run_simulation(instance: Instance, policy: str, options: SolveOptions, budget: Budget,
                   trace: TraceData | None = None, timeline: bool = True) -> Result:  # fmt: skip
    """Simulate ``policy`` on ``instance`` (the trace's jobs already in it); the driver of ``solver.api.simulate``.
    ``timeline=False`` leaves out the shares and utilisation over time (an answer only compared)."""
    placement = "pooled" if options.placement == "pooled" else "servers"
    left = budget.remaining()
    deadline = None if left is None else time.perf_counter() + left
    if not instance.jobs:
        return _backlog(instance, policy, options, deadline)
    refuse_workload(get_policy(policy), "jobs")
    if instance.has_options and placement == "pooled":
        raise OptionError("the instance's placement options select machines by label: the pooled cluster has none; "
                          "use placement servers (the default)", "placement")  # fmt: skip
    started = time.perf_counter()
    jobs = Workload.of_jobs(instance, placement)
    scheduler = build_policy(policy, jobs, options, instance)
    horizon = options.extra.get("horizon")
    stop = None if horizon is None else float(horizon)
    sim: Simulation | CompiledRun = (
        _compiled(instance, jobs, scheduler, placement, stop, deadline)
        or Simulation(instance, jobs, scheduler, placement, horizon=stop, seed=options.seed or 0,
                      deadline=deadline).run())  # fmt: skip
    solve_s = time.perf_counter() - started
    schedule = sim.schedule()
    counters = scheduler.counters()
    extra: dict[str, Any] = {"policy": policy, "placement": placement, **sim.counters(),
                             "objective_name": "avg-jct" if len(instance.jobs) > 1 else "makespan",
                             **counters, "policy_counters": list(counters)}  # fmt: skip
    unfinished = sim.unfinished()
    if unfinished.size:
        extra["unfinished_jobs"] = [instance.jobs[k].name for k in unfinished.tolist()]
    if timeline:
        extra.update(_timeline(instance, schedule, trace, unfinished))
    if sim.stopped_at is not None:  # the tasks launched so far: a valid schedule, not the whole run
        extra["stopped_at"] = sim.stopped_at
        message = (f"{interrupt.stop_reason()} at simulated time {sim.stopped_at:.6g}: the tasks launched so far; "
                   f"{unfinished.size} jobs not finished")
        return Result("time_limit", policy, "none", solve_s=solve_s, schedule=schedule, extra=extra, message=message)
    message = f"{unfinished.size} jobs never finished (their tasks could not be placed)" if unfinished.size else ""
    return Result("feasible", policy, "none", solve_s=solve_s, schedule=schedule, extra=extra, message=message)


def _compiled(instance: Instance, jobs: Workload, scheduler: BasePolicy, placement: str, horizon: float | None,
              deadline: float | None) -> CompiledRun | None:  # fmt: skip
    """The run by ``solver.sim.compiled_loop`` when the policy is FIFO and the workload in its domain (and, with only
    numba's kernel, large enough to pay for importing numba: ``COMPILED_MIN_TASKS``); None for the engine to run
    it."""
    if type(scheduler) is not Fifo:
        return None
    from fairpack.solver.sim.compiled_loop import CompiledRun, c_built, in_domain

    if not c_built() and float(jobs.count.sum()) < COMPILED_MIN_TASKS:
        return None

    if not in_domain(instance, jobs, placement):
        return None
    return CompiledRun(instance, jobs, placement, horizon, deadline).run()


def _timeline(instance: Instance, schedule: Any, trace: TraceData | None, unfinished: Any) -> dict[str, Any]:
    summary = timeline_summary(instance, schedule, TIMELINE_BINS, unfinished)
    data: dict[str, Any] = {"utilisation_series": utilisation_series(instance, schedule),
                            "shares": summary.pop("bins"), "summary": summary}  # fmt: skip
    if trace is not None:
        table = job_table(instance, schedule)
        rows: Any = np.arange(len(instance.jobs) - len(trace.jobs), len(instance.jobs))
        if instance.jobs is not trace.jobs and not (len(trace.jobs) and instance.jobs[rows[0]] is trace.jobs[0]
                                                    and instance.jobs[-1] is trace.jobs[-1]):  # fmt: skip
            names = {job.name: k for k, job in enumerate(instance.jobs)}  # not TraceData.on's order: by name
            rows = np.array([names[job.name] for job in trace.jobs], dtype=np.int64)
        observed = trace.observed_delay
        known = observed == observed  # not nan
        data["trace"] = {
            "source": trace.source,
            "jobs": len(trace.jobs),
            "skipped": trace.skipped,
            "censored": int(trace.censored.sum()),
            "notes": list(trace.notes),
            "observed_mean_delay": float(observed[known].mean()) if known.any() else None,
            "simulated_mean_delay": float(np.nanmean(table["queueing_delay"][rows])) if rows.size else None,
        }
    return data


def _backlog(instance: Instance, policy: str, options: SolveOptions, deadline: float | None = None) -> Result:
    if not instance.tenants:
        raise InstanceError("nothing to simulate: the instance has neither jobs nor tenants (give --trace)", "jobs")
    refuse_workload(get_policy(policy), "backlogs")
    extra = dict(options.extra)
    if options.seed is not None:
        extra["seed"] = options.seed
    settings = SimOptions.from_extra(extra, options.slots)
    return backlog_result(instance, policy, settings, _reference(extra, len(instance.tenants)), deadline)


def _reference(extra: dict[str, Any], tenants: int) -> FloatArray | None:
    """``extra['reference']``: the static shares (one per tenant) the run's shares are compared with; a library
    option, so a scalar from ``--option`` is refused by name."""
    value = extra.get("reference")
    if value is None:
        return None
    try:
        shares = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        shares = np.empty(0)
    if shares.shape != (tenants,) or not np.all(np.isfinite(shares)):
        raise OptionError(f"must be {tenants} static shares, one per tenant (a library option: "
                          f"extra={{'reference': [...]}}), got {value!r}", "reference")  # fmt: skip
    return shares
