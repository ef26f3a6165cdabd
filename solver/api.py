"""The ``solve()`` entry point: one call for every method, every answer verified from the instance.

``solve`` looks the method up in the registry (``solver.registry``), refuses up front what it cannot honour
(``OptionError``), starts one time budget for the whole call, runs the method's driver, and then builds the
final ``Result``: ``models.check`` re-verifies the allocation or schedule from the instance alone and
recomputes the objective; the solver's own number is reported beside it as ``solver_objective``, never
instead of it.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from fairpack.models.result import (
    MAXIMISED_OBJECTIVES,
    SOLUTION_STATUSES,
    Result,
    relative_gap,
    schedule_objectives,
)
from fairpack.models.stages import stage_table
from fairpack.models.types import Instance, InstanceError
from fairpack.solver import interrupt
from fairpack.solver.budget import Budget, available_memory

if TYPE_CHECKING:
    from fairpack.models.traces import TraceData
    from fairpack.solver.lp import (
        LinearProgram,  # its scipy.sparse (0.2-0.4 s to import) only when a method builds an LP
    )
from fairpack.solver.registry import FAMILY_NEEDS, Method, OptionError, SolveOptions, check_request, get_method, methods

__all__ = ["METHODS", "Method", "OptionError", "SolveOptions", "export_model", "preflight", "simulate", "solve"]

#: Every registered method by name (the registry's view, kept under its old name).
METHODS: Mapping[str, Method] = methods()

_OPTION_NAMES = {f.name for f in fields(SolveOptions)}


def solve(
    instance: Instance,
    method: str = "drfh",
    backend: str | None = None,
    time_limit: float | None = None,
    **options: Any,
) -> Result:
    """Solve ``instance`` with ``method`` and verify the answer independently.

    Parameters
    ----------
    instance
        A validated instance; flat methods need ``tenants`` (hierarchy leaves count as tenants),
        DAG-job methods need ``jobs``.
    method
        A registered method (``fairpack methods`` lists them).
    backend
        Solver backend (``highs``, ``ortools``, ``cbc``, ``cpsat``); None: the method's default.
    time_limit
        Seconds for the whole call: model building, solving and verification. Exact methods return
        their best answer so far with status ``time_limit`` when it runs out.
    **options
        Fields of ``SolveOptions`` (``algorithm``, ``strategy``, ``slots``, ``gap``, ``placement``,
        ``objective``, ``alpha``, ``fair_cap``, ``workers``, ``seed``, ``extra``).

    Returns
    -------
    Result
        ``verified`` is True only if ``models.check`` accepts the answer; ``objective`` is recomputed
        from it; ``gap`` compares it with ``bound`` (the best proven bound).

        Ctrl-C (SIGINT) while the call runs in the main thread stops the search: the call returns the best
        answer found by then, verified, with status ``interrupted`` (a second Ctrl-C raises
        ``KeyboardInterrupt``). See :mod:`fairpack.solver.interrupt`.

    Raises
    ------
    OptionError
        For a backend, algorithm or option the method cannot honour (before any solving).
    InstanceError
        When the instance lacks what the method needs.
    """
    started = time.perf_counter()
    spec = get_method(method)
    unknown = sorted(set(options) - _OPTION_NAMES)
    if unknown:
        raise OptionError(f"unknown options {unknown}; choose from {sorted(_OPTION_NAMES)}")
    settings = SolveOptions(backend=backend, time_limit=time_limit, **options)
    backend_name, algorithm = check_request(spec, settings)
    _check_instance(instance, spec)
    settings = replace(settings, backend=None if backend_name == "none" else backend_name, algorithm=algorithm)
    budget = Budget.of(time_limit)
    run = spec.runner()
    with interrupt.handling() as call:
        try:
            raw = run(instance, settings, budget)
        except MemoryError:
            # Sizes a method knows it cannot handle are refused up front (InstanceError); anything that still
            # exhausts memory is a failed solve, reported as one, never an answer.
            raw = Result("error", spec.name, settings.backend or "none",
                         message=f"out of memory: the instance is too large for {spec.name} here; try a "
                         "heuristic, a smaller instance or more memory")  # fmt: skip
        raw = replace(raw, warnings=(*preflight(instance, spec), *raw.warnings))
        return recorded(finish(instance, spec, raw, started, call.interrupted), "solve", settings)


def recorded(result: Result, command: str, settings: SolveOptions) -> Result:
    """``result`` with how it was run: ``command`` (``solve`` or ``simulate``) and ``options``, the options given
    (``SolveOptions.given()`` and ``extra``; the backend and time limit are reported elsewhere). ``fairpack
    check`` derives the rules it verifies a saved result by from the method and these options, and applies an
    option that loosens a rule (``--no-fair-cap``, ``--horizon``, ...) only when its own caller gives it too."""
    options = {name: value for name, value in settings.given().items() if name not in ("verbose", "time_limit")}
    if settings.extra:
        options["extra"] = dict(settings.extra)
    return replace(result, extra={**result.extra, "command": command, "options": options})


def preflight(instance: Instance, spec: Method | None = None) -> list[str]:
    """Warnings about ``instance`` for ``spec``'s family (every warning when no method is given)."""
    from fairpack.models.diagnose import instance_warnings, job_warnings, tenant_warnings

    if spec is None:
        return instance_warnings(instance)
    return job_warnings(instance) if spec.family == "jobs" else tenant_warnings(instance)


def export_model(instance: Instance, method: str) -> LinearProgram:
    """The LP/MILP ``method`` solves first on ``instance`` (for an external solver); OptionError if none."""
    spec = get_method(method)
    if spec.exporter is None:
        exporting = ", ".join(name for name, m in methods().items() if m.exporter is not None)
        raise OptionError(f"{method} has no single LP/MILP model to export; export supports {exporting}", "method")
    _check_instance(instance, spec)
    module, _, function = spec.exporter.partition(":")
    build: Any = getattr(importlib.import_module(module), function)
    lp: LinearProgram = build(instance)
    return lp


def simulate(
    instance: Instance,
    policy: str,
    trace: TraceData | None = None,
    time_limit: float | None = None,
    **options: Any,
) -> Result:
    """Run online ``policy`` on ``instance``'s arrivals (its jobs and ``trace``'s) or its tenants' backlogs.

    Options are ``SolveOptions`` fields the policy honours (``placement``, ``seed``, ``slots``) and ``extra``
    for the policy's own settings (``fairpack methods`` lists them). The answer is verified as ``solve``'s are;
    Ctrl-C stops the run as it stops a solve (status ``interrupted``, ``extra['stopped_at']`` the simulated time
    it got to).
    """
    return simulate_answer(instance, policy, trace, time_limit, **options)


def simulate_answer(instance: Instance, policy: str, trace: TraceData | None = None, time_limit: float | None = None,
                    *, answer_only: bool = False, **options: Any) -> Result:  # fmt: skip
    """:func:`simulate`; with ``answer_only``, the policy's answer alone: not verified, without the timeline of
    shares and utilisation (``fairpack check`` re-runs a policy only to compare its answer with a saved one it
    has verified and whose timeline it has recomputed: at a million tasks these cost a second)."""
    from fairpack.solver.registry import get_policy

    started = time.perf_counter()
    spec = get_policy(policy)
    unknown = sorted(set(options) - _OPTION_NAMES)
    if unknown:
        raise OptionError(f"unknown options {unknown}; choose from {sorted(_OPTION_NAMES)}")
    settings = SolveOptions(time_limit=time_limit, **options)
    check_request(spec, settings)
    workload = instance if trace is None else trace.on(instance)
    from fairpack.solver.sim.run import run_simulation

    with interrupt.handling() as call:
        try:
            check_schedule_memory(workload, policy)
            raw = run_simulation(workload, policy, settings, Budget.of(time_limit), trace, timeline=not answer_only)
        except InstanceError as error:  # about a job of the trace: named by its file, row and column
            raise error if trace is None else trace.locate(error, len(instance.jobs)) from None
        if answer_only:  # what finish() says of the status, without verifying
            if call.interrupted:
                return _interrupted(raw)
            return raw if raw.has_answer or raw.status not in SOLUTION_STATUSES else replace(raw, status="error")
        raw = replace(raw, warnings=(*preflight(workload), *raw.warnings))
        # Recorded before the verification, which reads the options (a run cut at its horizon may leave work).
        return finish(workload, spec, recorded(raw, "simulate", settings), started, call.interrupted)


#: Bytes a schedule method needs per task, at the least: the schedule's eight per-task arrays and the
#: verifier's temporaries over them. A workload that cannot fit in the memory available is refused up front.
SCHEDULE_BYTES_PER_TASK = 160


def check_schedule_memory(instance: Instance, name: str) -> None:
    """Refuse (``InstanceError`` naming the largest stage's ``tasks``) a workload whose per-task schedule
    alone would not fit in the memory available, before any array is allocated."""
    if not instance.jobs:
        return
    total = int(stage_table(instance).tasks.sum())
    available = available_memory()
    if available is None or total * SCHEDULE_BYTES_PER_TASK <= available:
        return
    k, s = max(((k, s) for k, job in enumerate(instance.jobs) for s in range(len(job.stages))),
               key=lambda ks: instance.jobs[ks[0]].stages[ks[1]].tasks)  # fmt: skip
    job, stage = instance.jobs[k], instance.jobs[k].stages[s]
    raise InstanceError(f"{total:,} tasks in all: {name} keeps a start and an end for every task, at least "
                        f"{total * SCHEDULE_BYTES_PER_TASK / 2**30:,.1f} GiB, and {available / 2**30:,.1f} GiB are "
                        f"available; this stage has {stage.tasks:,}", f"jobs[{job.name}].stages[{stage.name}].tasks")


def _check_instance(instance: Instance, spec: Method) -> None:
    need = FAMILY_NEEDS[spec.family]
    if need == "jobs" and not instance.jobs:
        raise InstanceError(f"{spec.name} schedules DAG jobs, and this instance has none", "jobs")
    if spec.kind == "schedule":
        check_schedule_memory(instance, spec.name)
    if need in ("tenants", "hierarchy") and not instance.tenants:
        raise InstanceError(f"{spec.name} needs tenants (or a hierarchy whose leaves are tenants)", "tenants")


def finish(instance: Instance, spec: Method, raw: Result, started: float, interrupted: bool = False) -> Result:
    """The final result: ``raw`` re-verified, its objective recomputed, its gap and wall time set; status
    ``interrupted`` when Ctrl-C came during the call (``interrupted=True``)."""
    if interrupted and raw.status == "error":
        # What a failed method grew before it failed is no answer, interrupted or not (an all-zero allocation
        # passes every capacity check); the interrupt is most likely what stopped it.
        raw = replace(raw, allocation=None, schedule=None)
    if raw.schedule is not None:
        result = _verified_schedule(instance, raw, spec, interrupted)
    elif raw.allocation is not None:
        result = _verified_allocation(instance, raw, spec.exact)
    else:
        result = raw
    if interrupted:
        result = _interrupted(result)
    elif result.status in SOLUTION_STATUSES and not result.has_answer:
        result = replace(result, status="error", message=result.message or "the method returned no answer")
    if result.status == "error" or not result.has_answer:
        # Verified means "here is an answer and it is right": never for no answer, nor for what a failed
        # method grew before it failed (an all-zero allocation passes every capacity check).
        result = replace(result, verified=False)
    return replace(result, wall_s=time.perf_counter() - started, instance=instance)


def _interrupted(result: Result) -> Result:
    """``result`` of a call Ctrl-C stopped: status ``interrupted``; the message says so first, and what the method
    had proven by then (its answer is verified like any other, its gap is to the bound proven by then)."""
    said = [] if result.message.startswith("interrupted") else [
        "interrupted (Ctrl-C): the best answer found by then" if result.has_answer
        else "interrupted (Ctrl-C) before any answer was found"]  # fmt: skip
    if result.status == "optimal":
        said.append("it had been proven optimal")
    elif result.status in ("infeasible", "unbounded"):
        said.append(f"the method had found the instance {result.status}")
    message = "; ".join([*said, *([result.message] if result.message else [])])
    return replace(result, status="interrupted", message=message)


def _notes(result: Result, *notes: str) -> dict[str, Any]:
    if not notes:
        return result.extra
    return {**result.extra, "notes": [*result.extra.get("notes", []), *notes]}


def _verified_allocation(instance: Instance, result: Result, exact: bool) -> Result:
    from fairpack.models.check import verify_allocation

    assert result.allocation is not None
    report = verify_allocation(instance, result.allocation)
    if instance.hierarchy is not None:
        return _verified_hierarchy(instance, result, exact, report)
    objective = report.min_weighted_share
    extra = result.extra
    bound = result.bound
    if exact and bound is None and result.status == "optimal":
        bound = objective
    gap = None
    if bound is not None and objective is not None and bound > 0 and math.isfinite(bound):
        gap = max(0.0, (bound - objective) / bound)
    notes = []
    if (
        result.solver_objective is not None
        and result.status == "optimal"
        and not np.isclose(result.solver_objective, objective, rtol=1e-6, atol=1e-9)
    ):
        notes.append("solver's level differs from the recomputed minimum (satisfied tenants are excluded from it)")
    result = replace(result, extra=extra)
    return replace(result, verified=report.ok, violations=tuple(report.violations), objective=objective,
                   bound=bound, gap=gap, extra=_notes(result, *notes))  # fmt: skip


def _verified_hierarchy(instance: Instance, result: Result, exact: bool, report: Any) -> Result:
    """An allocation on a hierarchy: its objective is the guarantee shortfall (minimised; static H-DRF's is 0,
    the smallest there is, so an exact method's proven bound is 0 and it is optimal only if it meets every
    guarantee); ``min share/guarantee`` and the smallest weighted leaf share are reported beside it."""
    from fairpack.models.metrics import guarantee_ratio, guarantee_shortfall

    assert result.allocation is not None
    objective = guarantee_shortfall(instance, result.allocation)
    ratio = guarantee_ratio(instance, result.allocation)
    extra = {**result.extra, "objective_name": "guarantee shortfall",
             "min_share_guarantee": ratio if math.isfinite(ratio) else None,
             "min_weighted_leaf_share": report.min_weighted_share}  # fmt: skip
    status, bound, notes = result.status, result.bound, []
    if exact and result.status == "optimal":
        bound = 0.0  # a shortfall is never negative, and H-DRF's meets every guarantee
        if objective > 0:
            status = "feasible"
            notes.append(f"the allocation falls short of a share guarantee by {objective:.3g}: not H-DRF's optimum")
    gap = None if bound is None else relative_gap(objective, bound, maximised=False)
    result = replace(result, status=status, extra=extra)
    return replace(result, verified=report.ok, violations=tuple(report.violations), objective=objective,
                   bound=bound, gap=gap, extra=_notes(result, *notes))  # fmt: skip


def _verified_schedule(instance: Instance, result: Result, spec: Method, interrupted: bool = False) -> Result:
    """Re-verify a schedule and recompute its objective (minimised, so the gap is (objective - bound) / objective).

    The jobs an online policy leaves unfinished in a run that was not cut short (no horizon, no time limit, no
    Ctrl-C) must be jobs that could never run under it, as ``fairpack check`` asks of a saved answer: a policy that
    stalls with runnable work is not verified.
    """
    from fairpack.models.check import verify_schedule

    assert result.schedule is not None
    exact = spec.exact
    # For an exact method C_k <= T_k is a constraint it promised to meet (unless --no-fair-cap); for a
    # heuristic T_k is only reported (Carbyne's promise can fail), so its schedule is checked for feasibility alone.
    capped = exact and result.extra.get("fair_cap", True) is not False
    deadlines = None if capped else np.full(len(instance.jobs), np.inf)
    placed = result.extra.get("placement") == "servers"
    called = result.extra.get("unfinished_jobs", ())
    names = {job.name: k for k, job in enumerate(instance.jobs)} if called else {}
    unfinished = [names[name] for name in called]
    report = verify_schedule(instance, result.schedule, fair_completion=deadlines, require_placement=placed,
                             unfinished=unfinished)  # fmt: skip
    stalled = _stalled(instance, result, spec, unfinished, interrupted) if unfinished else []
    name = str(result.extra.get("objective_name", "makespan"))
    value = report.objective(name, float(result.extra.get("alpha", 0.5)))
    unfinished_notes: tuple[str, ...] = ()
    if math.isnan(value):  # jobs left unfinished: no objective, and the finished jobs' mean named as such
        done = int(np.sum(~np.isnan(report.completion)))
        finished = schedule_objectives(instance, report.completion)["avg_jct_finished"]
        result = replace(result, extra={**result.extra, "finished_jobs": done,
                                        "avg_jct_finished": None if math.isnan(finished) else finished})  # fmt: skip
        unfinished_notes = (f"{len(instance.jobs) - done} of {len(instance.jobs)} jobs unfinished: no {name} "
                            "(the finished jobs alone could beat any complete schedule); avg_jct_finished is "
                            "the finished jobs' mean",)  # fmt: skip
    objective = None if math.isnan(value) else value
    bound = result.bound
    if exact and bound is None and result.status == "optimal":
        bound = objective
    gap = None
    if bound is not None and objective is not None:
        raw_gap = relative_gap(objective, bound, name in MAXIMISED_OBJECTIVES)
        gap = raw_gap if raw_gap > 1e-12 else 0.0  # rounding noise of the tick scaling is no gap
    notes = []
    if result.solver_objective is not None and objective is not None and not np.isclose(
            result.solver_objective, objective, rtol=1e-6, atol=1e-9):  # fmt: skip
        notes.append(f"solver objective {result.solver_objective:.9g} differs from the recomputed {objective:.9g}")
    return replace(result, verified=report.ok and not stalled, violations=(*report.violations, *stalled),
                   objective=objective, bound=bound, gap=gap,
                   extra=_notes(result, *unfinished_notes, *notes))  # fmt: skip


def _stalled(instance: Instance, result: Result, spec: Method, unfinished: list[int], interrupted: bool) -> list[str]:
    """The unfinished jobs of a policy's uncut run that could have run (``models.check``'s rule for saved answers)."""
    from fairpack.models.check.claims import RULE_DEFAULTS
    from fairpack.models.check.saved_schedule import STOPPED, runnable_unfinished

    options = result.extra.get("options") or {}
    cut = interrupted or result.status in STOPPED or "horizon" in (options.get("extra") or {})
    if not spec.is_policy or cut:
        return []
    slots = options.get("slots") or RULE_DEFAULTS["slots"]
    placement = str(result.extra.get("placement", "servers"))
    assert result.schedule is not None
    return runnable_unfinished(instance, result.schedule, unfinished, placement, spec.saved_rules(), int(slots))
