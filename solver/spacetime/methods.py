"""The DAG-job family's drivers: the exact space-time models and the list-scheduling heuristics."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from models.result import Result
from models.types import Instance
from solver.budget import Budget
from solver.registry import OptionError, SolveOptions


def job_placement(options: SolveOptions) -> str:
    """DAG jobs: the pooled cluster by default (``auto``), or ``servers`` (each task on one machine)."""
    if options.placement not in ("auto", "pooled", "servers"):
        raise OptionError(f"must be auto, pooled or servers, not {options.placement!r}", "placement")
    return "servers" if options.placement == "servers" else "pooled"


def decompose_option(options: SolveOptions) -> str | bool:
    """``extra['decompose']``: ``auto`` (by size, the default), or true/false to force it either way."""
    value = options.extra.get("decompose", "auto")
    if value not in ("auto", True, False):
        raise OptionError(f"must be auto, true or false, not {value!r}", "decompose")
    return value


def run_spacetime_cp(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
    """CP-SAT space-time packing, every job capped at its fair completion time ``T_k`` unless ``--no-fair-cap``
    (then ``T_k`` is only reported); ``extra['fair_completion']`` (job name -> T_k) sets explicit deadlines,
    ``extra['decompose']`` (``auto``, true, false) whether large pooled instances are searched by parts."""
    from solver.spacetime.cp import solve_spacetime_cp
    from solver.spacetime.fair import fair_mode

    return solve_spacetime_cp(
        instance,
        objective=options.objective,
        time_limit=budget.remaining(),
        alpha=options.alpha,
        fair_completion=options.extra.get("fair_completion"),
        workers=options.workers or 2,
        seed=options.seed or 0,
        placement=job_placement(options),
        fair=fair_mode(options.fair_cap),
        verbose=options.verbose,
        decompose=decompose_option(options),
    )


def run_spacetime(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
    """Time-indexed MILP; ``extra`` may carry ``fair_completion`` and ``servers_model``
    (``auto``/``class``/``machine``, with ``placement='servers'``)."""
    from solver.spacetime.milp import solve_spacetime

    return solve_spacetime(
        instance,
        backend=options.backend or "highs",
        objective=options.objective,
        time_limit=budget.remaining(),
        alpha=options.alpha,
        fair_completion=options.extra.get("fair_completion"),
        fair_cap=options.fair_cap,
        placement=job_placement(options),
        algorithm=options.algorithm,
        servers_model=str(options.extra.get("servers_model", "auto")),
        settings=options.solver_settings(),
    )


def _dag_heuristic(name: str) -> Callable[[Instance, SolveOptions, Budget], Result]:
    """A DAG-job policy run in the one simulator (``solver.sim``) on the instance's jobs and releases.

    ``extra``: ``altruism``, ``reverse_order`` (carbyne), ``fair_completion=False`` (skip T_k),
    ``fair_margin``, ``attach_fair`` (default True: T_k goes on the
    schedule and into ``jobs.*.fair_completion``; late jobs are listed in ``extra``, not treated as infeasible).
    """

    def run(instance: Instance, options: SolveOptions, budget: Budget) -> Result:
        from solver.sim.runs import run_heuristic

        extra = dict(options.extra)
        if options.seed is not None:
            extra["seed"] = options.seed
        left = budget.remaining()
        deadline = None if left is None else time.perf_counter() + left
        result = run_heuristic(instance, name, extra, placement=job_placement(options), deadline=deadline)
        if options.objective is None:
            return result
        return replace(result, extra={**result.extra, "objective_name": options.objective, "alpha": options.alpha})

    return run


run_carbyne = _dag_heuristic("carbyne")
run_drf_dag = _dag_heuristic("drf-dag")
run_drf_strict = _dag_heuristic("drf-strict")
run_tetris = _dag_heuristic("tetris")
run_sjf = _dag_heuristic("sjf")
