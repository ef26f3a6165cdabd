"""The DAG-job family's drivers: the exact space-time models and the list-scheduling heuristics."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from fairpack.models.result import Result
from fairpack.models.types import Instance, InstanceError
from fairpack.solver.budget import Budget
from fairpack.solver.registry import OptionError, SolveOptions
from fairpack.solver.sim.policies.options import choice, fair_times, yes_no


def job_placement(options: SolveOptions, instance: Instance | None = None) -> str:
    """DAG jobs: the pooled cluster by default (``auto``), or ``servers`` (each task on one machine).

    Placement options select machines by their labels, so an instance with them is placed on machines
    (``auto``), and ``pooled`` is refused."""
    if options.placement not in ("auto", "pooled", "servers"):
        raise OptionError(f"must be auto, pooled or servers, not {options.placement!r}", "placement")
    if instance is not None and instance.has_options:
        if options.placement == "pooled":
            raise OptionError("the instance's placement options select machines by label: the pooled cluster has "
                              "none; use placement servers (the default for such instances)", "placement")  # fmt: skip
        return "servers"
    return "servers" if options.placement == "servers" else "pooled"


def decompose_option(options: SolveOptions) -> str | bool:
    """``extra['decompose']``: ``auto`` (by size, the default), or true/false to force it either way."""
    value = options.extra.get("decompose", "auto")
    answer = yes_no(value)  # "true"/"false" as every other yes/no setting
    value = value if answer is None else answer
    if value not in ("auto", True, False):
        raise OptionError(f"must be auto, true or false, not {value!r}", "decompose")
    return value


def given_fair_times(options: SolveOptions) -> dict[str, float] | None:
    """The ``fair_completion`` setting as the exact methods take it: ``None`` to compute ``T_k`` (the default),
    the given times, or no times at all (``fair_completion=false``: an empty mapping, so no job is capped and
    no fair-share schedule is computed)."""
    fair = fair_times(options.extra)
    if fair is True:
        return None
    return {} if fair is False else fair


def refuse_queue_caps(instance: Instance, method: str) -> None:
    """Refuse (``InstanceError`` naming the tenant's ``tasks``) a queue whose running-task cap can hold it back:
    the exact models pack every job's tasks on the cluster alone, without the queues' caps, so their schedules
    would break the cap the checker counts. A cap of at least the queue's tasks changes nothing and passes."""
    queues = instance.queues()
    binding = np.flatnonzero(queues.binding(instance.jobs))
    if binding.size == 0:
        return
    q = int(binding[0])
    raise InstanceError(f"{method} does not model queues' running-task caps, and queue {queues.names[q]!r} may run "
                        f"{queues.cap[q]:g} of its {queues.totals(instance.jobs)[q]:g} tasks at once; drop the cap, "
                        "or use a method that honours it: the simulated heuristics (carbyne, drf-dag, drf-strict, "
                        "tetris, sjf) or fairpack simulate", queues.cap_field(q, instance.tenants))  # fmt: skip


def run_spacetime_cp(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
    """CP-SAT space-time packing, every job capped at its fair completion time ``T_k`` unless ``--no-fair-cap``
    (then ``T_k`` is only reported); ``extra['fair_completion']`` (job name -> T_k) sets explicit deadlines
    (``False``: none at all, :func:`given_fair_times`),
    ``extra['decompose']`` (``auto``, true, false) whether large pooled instances are searched by parts."""
    from fairpack.solver.spacetime.choice_model import uses_choices
    from fairpack.solver.spacetime.cp import solve_spacetime_cp
    from fairpack.solver.spacetime.fair import fair_mode

    placement = job_placement(options, instance)
    refuse_queue_caps(instance, "spacetime-cp")
    decompose = decompose_option(options)  # validated either way; the choice model below has no decomposition
    if uses_choices(instance, options.objective, placement):
        from fairpack.solver.spacetime.choice_cp import solve_choice_cp

        return solve_choice_cp(instance, options.objective, budget.remaining(), options.alpha,
                               given_fair_times(options), options.workers or 2, options.seed or 0,
                               placement, fair_mode(options.fair_cap), options.verbose)  # fmt: skip
    return solve_spacetime_cp(
        instance,
        objective=options.objective,
        time_limit=budget.remaining(),
        alpha=options.alpha,
        fair_completion=given_fair_times(options),
        workers=options.workers or 2,
        seed=options.seed or 0,
        placement=placement,
        fair=fair_mode(options.fair_cap),
        verbose=options.verbose,
        decompose=decompose,
    )


def run_locality_cp(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
    """The data-locality yardstick: CP-SAT, every task on a machine for its duration times the locality factor
    there (``solver.spacetime.locality_cp``); avg JCT or makespan, no fair caps (``T_k`` reported)."""
    from fairpack.solver.spacetime.locality_cp import solve_locality_cp

    refuse_queue_caps(instance, "locality-cp")
    objective = options.objective or ("makespan" if len(instance.jobs) == 1 else "avg-jct")
    if objective not in ("avg-jct", "makespan"):
        raise OptionError(f"locality-cp minimises avg-jct or makespan, not {objective}; use spacetime-cp "
                          "--placement servers, which models locality too", "objective")  # fmt: skip
    for k, job in enumerate(instance.jobs):
        for i, stage in enumerate(job.stages):
            if stage.options:
                # Its model has one duration per (task, machine) from locality alone: it would drop the stage's
                # options (selectors, gangs, their durations) and its schedule would fail the checker.
                raise InstanceError("locality-cp does not model placement options; use spacetime-cp --placement "
                                    "servers, which chooses an option per task", f"jobs[{k}].stages[{i}].options")
    return solve_locality_cp(instance, objective, budget.remaining(), options.workers or 1, options.seed or 0)


def run_spacetime(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
    """Time-indexed MILP; ``extra`` may carry ``fair_completion`` and ``servers_model``
    (``auto``/``class``/``machine``, with ``placement='servers'``)."""
    from fairpack.solver.spacetime.milp import solve_spacetime

    refuse_queue_caps(instance, "spacetime")
    return solve_spacetime(
        instance,
        backend=options.backend or "highs",
        objective=options.objective,
        time_limit=budget.remaining(),
        alpha=options.alpha,
        fair_completion=given_fair_times(options),
        fair_cap=options.fair_cap,
        placement=job_placement(options, instance),
        algorithm=options.algorithm,
        servers_model=choice(options.extra, "servers_model", "auto", ("auto", "class", "machine")),
        settings=options.solver_settings(),
    )


def _dag_heuristic(name: str) -> Callable[[Instance, SolveOptions, Budget], Result]:
    """A DAG-job policy run in the one simulator (``solver.sim``) on the instance's jobs and releases.

    ``extra``: ``altruism``, ``reverse_order`` (carbyne), ``fair_completion`` (False skips T_k, a mapping
    gives them), ``fair_margin``, ``attach_fair`` (default True: T_k goes on the
    schedule and into ``jobs.*.fair_completion``; late jobs are listed in ``extra``, not treated as infeasible).
    """

    def run(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
        from fairpack.solver.sim.runs import run_heuristic

        extra = dict(options.extra)
        if options.seed is not None:
            extra["seed"] = options.seed
        left = budget.remaining()
        deadline = None if left is None else time.perf_counter() + left
        result = run_heuristic(instance, name, extra, placement=job_placement(options, instance), deadline=deadline)
        if options.objective is None:
            return result
        return replace(result, extra={**result.extra, "objective_name": options.objective, "alpha": options.alpha})

    return run


run_carbyne = _dag_heuristic("carbyne")
run_drf_dag = _dag_heuristic("drf-dag")
run_drf_strict = _dag_heuristic("drf-strict")
run_tetris = _dag_heuristic("tetris")
run_sjf = _dag_heuristic("sjf")
