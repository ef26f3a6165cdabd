"""Indivisible-task DRFH: the max-min objective by discrete levels, then exact leximin.

First the max-min objective ``f`` (the level every unsatisfied tenant reaches) is maximised and proven
by a search over the values it can take (see ``solver.drfh.int_model``); that is the number heuristics are
compared with. LPs bound it from above; a pattern search with identical machines aggregated
(``solver.drfh.patterns``) lifts the heuristic's f, and feasibility MILPs climb the levels left.
Then leximin refines it: step ``k`` maximises the sum of the ``k`` smallest weighted shares while
keeping the earlier sums, warm-started from the previous tasks. A leximin allocation also maximises
``f``. When the time limit cuts the refinement short, the answer is the best allocation found so far
by ``f`` (then by later step).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from models.result import Status
from models.types import Instance
from solver.backends import Backend
from solver.drfh.int_model import DrfhIntModel, FloatArray
from solver.lp import LinearProgram

PATTERN_SHARE = 0.5  # of the time left after the LP bisection, for the pattern search
PATTERN_BUDGET_S = 60.0  # its budget when there is no time limit
LNS_SHARE = 0.6  # of the time left after the pattern search, for the neighbourhood search
LNS_BUDGET_S = 60.0  # its budget when there is no time limit


@dataclass
class IntegerFilling:
    status: Status
    tasks: FloatArray  # (tenants, machines)
    steps: int
    milp_solves: int
    solve_s: float
    first_bound: float | None  # proven upper bound on f from the level search
    max_min_status: Status = "optimal"
    max_min_s: float = 0.0
    max_min_value: float | None = None
    message: str = ""


def solve_drfh_int(
    instance: Instance,
    backend: Backend,
    time_limit: float | None = None,
    level_bound: float | None = None,
    start: FloatArray | None = None,
    relative_gap: float = 0.0,
) -> IntegerFilling:
    """The integral max-min f by a search over its discrete levels, then leximin steps.

    ``level_bound`` is the divisible LP's f (the top of the search); ``start`` a feasible task matrix
    (tenants x machines), e.g. the best heuristic's, whose f is the bottom. With ``relative_gap`` > 0
    the search stops once f is within that fraction of its proven upper bound (no leximin refinement).
    """
    model = DrfhIntModel.build_pairs(instance)
    players = model.players
    tasks = np.zeros((len(instance.tenants), model.num_machines)) if start is None else model.canonical(start)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    caps = model.player_caps
    max_min_value = model.max_min_value

    def remaining() -> float | None:
        return None if deadline is None else max(deadline - time.perf_counter(), 0.01)

    started = time.perf_counter()
    max_min_tasks, max_min_status, solves, solve_s, bound = _max_min_by_levels(
        model, backend, tasks, level_bound, remaining, relative_gap
    )
    best_f = max_min_value(max_min_tasks)
    overall: Status = "time_limit" if max_min_status == "time_limit" else max_min_status
    result = IntegerFilling(
        overall, max_min_tasks, 0, solves, solve_s, bound,
        max_min_status, time.perf_counter() - started, best_f,
    )  # fmt: skip
    if max_min_status == "feasible":
        result.message = f"f within {relative_gap:.2%} of its proven bound {bound:.6g}; no leximin refinement"
        return result
    if max_min_status != "optimal":
        result.message = "max-min search stopped at the time limit; no leximin refinement"
        return result
    achieved: list[float] = []
    tasks = max_min_tasks
    for step in range(1, len(players) + 1):
        if np.all(tasks.sum(axis=1)[players] >= caps):
            break  # everybody holds its cap: the sorted vector is final
        outcome = backend.solve(model.build(step, np.array(achieved)), remaining(), warm_start=model.start(tasks, step))
        result.milp_solves += 1
        result.solve_s += outcome.solve_s
        if outcome.x is None or outcome.status != "optimal":
            result.status = "time_limit" if outcome.status in ("time_limit", "feasible") else outcome.status
            result.message = (
                f"leximin step {step} stopped ({outcome.message or outcome.status}); exact up to step {step - 1}"
            )
            if outcome.x is not None and max_min_value(model.tasks(outcome.x)) >= best_f * (1 - 1e-12):
                tasks = model.tasks(outcome.x)
            break
        tasks = model.tasks(outcome.x)
        achieved.append(float(np.sort(model.shares(tasks))[:step].sum()))
        result.steps = step
    # Leximin keeps f; guard against round-off in the incumbent handed back on a time limit.
    result.tasks = tasks if max_min_value(tasks) >= best_f * (1 - 1e-9) else max_min_tasks
    return result


def _max_min_by_levels(
    model: DrfhIntModel,
    backend: Backend,
    start: FloatArray,
    level_bound: float | None,
    remaining: Callable[[], float | None],
    relative_gap: float = 0.0,
) -> tuple[FloatArray, Status, int, float, float | None]:
    """Largest f over integral allocations, by binary search over the discrete candidate levels.

    Returns (tasks, status, solves, solve seconds, proven upper bound on f); status ``feasible``
    means f is within ``relative_gap`` of the proven bound and the search stopped there. Candidates lie strictly
    between the start's f and the LP's f; a level is infeasible if the LP relaxation with rounded-up
    task counts is (cheap, and usually decisive). Below the top level those LPs leave open, the
    pattern search raises the start (``PATTERN_SHARE`` of the time left), then feasibility MILPs settle
    the levels above it one by one; reaching the top level proves f.
    """
    instance = model.instance
    caps, step = model.player_caps, model.player_step
    value = model.max_min_value

    best, low = start, value(start)
    high = level_bound if level_bound is not None else 1.0 / float(instance.weights.min()) + 1.0
    candidates = []
    for c, cap in zip(step, caps, strict=True):
        if not math.isfinite(low) or c <= 0:
            break  # everybody is satisfied already: nothing to search
        first = math.floor(low / c) + 1
        last = min(math.floor(high * (1 + 1e-9) / c), cap - 1 if math.isfinite(cap) else math.inf)
        if last >= first:
            candidates.append(c * np.arange(first, last + 1))
    levels = np.unique(np.concatenate(candidates)) if candidates else np.zeros(0)
    levels = levels[levels > low * (1 + 1e-12)]
    solves, solve_s = 0, 0.0
    status: Status = "optimal"

    def level_model(level: float) -> LinearProgram:
        return model.build_level(model.required(level))

    # 1. Bisect on the LP relaxations (cheap): levels[above:] are infeasible even fractionally.
    below, above = 0, len(levels)
    while below < above:
        middle = (below + above) // 2
        lp = level_model(float(levels[middle]))
        relaxed = backend.solve(replace(lp, integrality=np.zeros_like(lp.integrality)), remaining())
        solves += 1
        solve_s += relaxed.solve_s
        if relaxed.status == "infeasible":
            above = middle
        elif relaxed.status == "optimal":
            below = middle + 1
        else:
            status = "time_limit"
            break

    # 3. Climb from the best f so far (after the pattern search of step 2) with feasibility MILPs,
    #    level by level: they prove the small instances; near the LP's top on large ones they are hard.
    def close_enough() -> bool:
        top = float(levels[above - 1]) if above > 0 else low
        return relative_gap > 0 and value(best) >= (1 - relative_gap) * top

    next_level = 0
    # 2. Pattern search (identical machines aggregated): lifts the heuristic's f (on the 100 x 20
    #    benchmark, half or more of the way to the LP's top level); reaching that level proves f.
    if (
        status == "optimal"
        and above > 0
        and value(best) < float(levels[above - 1]) * (1 - 1e-12)
        and not close_enough()
    ):
        from solver.drfh.patterns import search_patterns

        left = remaining()
        found = search_patterns(model, backend, best, float(levels[above - 1]), PATTERN_SHARE * left if left else
                                PATTERN_BUDGET_S)  # fmt: skip
        solves += found.solves
        solve_s += found.solve_s
        if found.value > value(best) * (1 + 1e-12):
            best = found.tasks
            next_level = int(np.searchsorted(levels, value(best), side="right"))
        # 2b. Neighbourhood search from there: level by level, a few machines re-packed at a time.
        if not close_enough() and value(best) < float(levels[above - 1]) * (1 - 1e-12):
            from solver.drfh.lns import search_neighbourhoods

            left = remaining()
            lifted = search_neighbourhoods(model, backend, best, levels[:above],
                                           LNS_SHARE * left if left else LNS_BUDGET_S)  # fmt: skip
            solves += lifted.repairs
            solve_s += lifted.solve_s
            if lifted.value > value(best) * (1 + 1e-12):
                best = model.canonical(lifted.tasks)
                next_level = int(np.searchsorted(levels, value(best), side="right"))
    while status == "optimal" and next_level < above:
        if close_enough():
            status = "feasible"
            break
        outcome = backend.solve(level_model(float(levels[next_level])), remaining())
        solves += 1
        solve_s += outcome.solve_s
        if outcome.status == "infeasible":
            above = next_level
        elif outcome.x is not None and outcome.status in ("optimal", "feasible"):
            best = model.tasks(outcome.x)
            next_level = max(next_level + 1, int(np.searchsorted(levels, value(best), side="right")))
        else:
            status = "time_limit"
    # Finished: f is proven. Stopped: f cannot reach levels[above], so the next level down bounds it.
    proven = value(best) if status == "optimal" else (float(levels[above - 1]) if above > 0 else value(best))
    return best, status, solves, solve_s, proven
