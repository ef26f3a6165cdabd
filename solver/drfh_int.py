"""Indivisible-task DRFH: exact leximin by ordered cumulative sums (see ``models.drfh_int``).

Step ``k`` maximises the sum of the ``k`` smallest weighted shares while keeping the earlier sums; each
step is warm-started from the previous step's tasks, which are feasible for it. Steps stop early once
every remaining player is at its task cap (no later sum can change).
"""

from __future__ import annotations

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
    first_bound: float | None  # the max-min MILP's proven bound on the smallest weighted share
    message: str = ""


def solve_drfh_int(instance: Instance, backend: Backend, time_limit: float | None = None) -> IntegerFilling:
    model = DrfhIntModel.build_pairs(instance)
    players = model.players
    tasks = np.zeros((len(instance.tenants), model.num_machines))
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    achieved: list[float] = []
    status: Status = "optimal"
    solve_s = 0.0
    first_bound: float | None = None
    message = ""
    caps = np.floor(instance.task_caps[players] + 1e-9)
    for step in range(1, len(players) + 1):
        if np.all(tasks.sum(axis=1)[players] >= caps):
            break  # everybody holds its cap: the sorted vector is final
        remaining = None if deadline is None else max(deadline - time.perf_counter(), 0.01)
        lp = model.build(step, np.array(achieved))
        outcome = backend.solve(lp, remaining, warm_start=model.start(tasks, step))
        solve_s += outcome.solve_s
        if step == 1 and outcome.bound is not None:
            first_bound = outcome.bound
        if outcome.x is None:
            status = "time_limit" if outcome.status == "time_limit" else "error"
            message = f"step {step}: {outcome.message or outcome.status}"
            break
        tasks = model.tasks(outcome.x)
        values = np.sort(model.shares(tasks))
        achieved.append(float(values[:step].sum()))
        if outcome.status != "optimal":
            status = "time_limit" if outcome.status in ("time_limit", "feasible") else outcome.status
            message = f"step {step} stopped ({outcome.message or outcome.status}); leximin exact up to step {step - 1}"
            break
    return IntegerFilling(status, tasks, len(achieved), len(achieved), solve_s, first_bound, message)
