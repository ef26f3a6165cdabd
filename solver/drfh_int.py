"""Indivisible-task DRFH: the max-min MILP, then exact leximin by ordered cumulative sums.

First the max-min objective ``f`` (the level every unsatisfied tenant reaches) is maximised and proven
in one MILP; that is the number heuristics are compared with. Then leximin refines it: step ``k``
maximises the sum of the ``k`` smallest weighted shares while keeping the earlier sums, warm-started
from the previous tasks. A leximin allocation also maximises ``f``. When the time limit cuts the
refinement short, the answer is the best allocation found so far by ``f`` (then by later step).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from models.drfh_int import DrfhIntModel, FloatArray
from models.solution import Status
from models.types import Instance
from solver.backends import Backend


@dataclass
class IntegerFilling:
    status: Status
    tasks: FloatArray  # (tenants, machines)
    steps: int
    milp_solves: int
    solve_s: float
    first_bound: float | None  # the max-min MILP's proven bound on f
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
) -> IntegerFilling:
    """Max-min MILP then leximin steps.

    ``level_bound`` is the divisible LP's f (it tightens the MILP); ``start`` a feasible task matrix
    (tenants x machines), e.g. the best heuristic's, to warm-start from.
    """
    model = DrfhIntModel.build_pairs(instance)
    players = model.players
    tasks = np.zeros((len(instance.tenants), model.num_machines)) if start is None else model.canonical(start)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    caps = np.floor(instance.task_caps[players] + 1e-9)

    def remaining() -> float | None:
        return None if deadline is None else max(deadline - time.perf_counter(), 0.01)

    def max_min_value(candidate: FloatArray) -> float:
        counts = candidate.sum(axis=1)[players]
        hungry = counts < caps
        return float(model.shares(candidate)[hungry].min()) if hungry.any() else math.inf

    first = backend.solve(model.build_max_min(level_bound), remaining(), warm_start=model.max_min_start(tasks))
    solve_s = first.solve_s
    if first.x is None:
        status: Status = "time_limit" if first.status == "time_limit" else "error"
        return IntegerFilling(status, tasks, 0, 1, solve_s, first.bound, first.status, first.solve_s, None,
                              f"max-min MILP: {first.message or first.status}")  # fmt: skip
    max_min_tasks = model.tasks(first.x)
    best_f = max_min_value(max_min_tasks)
    result = IntegerFilling(
        "optimal" if first.status == "optimal" else "time_limit", max_min_tasks, 0, 1, solve_s, first.bound,
        first.status, first.solve_s, best_f,
    )  # fmt: skip
    if first.status != "optimal":
        result.message = f"max-min MILP stopped ({first.message}); no leximin refinement"
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
