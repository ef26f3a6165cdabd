"""Indivisible-task DRFH: max-min MILP rounds with a lexicographic refinement.

Round by round: maximise the weighted level ``z`` of the growing tenants; the tenants that sit exactly
at ``z`` with their minimal task count are candidates; a second MILP lifts as many candidates as
possible by one task while everybody keeps their count; candidates that could not be lifted are
frozen. When nobody grows, no tenant can get another task without taking one from a tenant that
has less (or the same), which is the discrete counterpart of DRFH's leximin allocation.
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
    rounds: int
    milp_solves: int
    solve_s: float
    first_bound: float | None  # the first max-min MILP's proven bound on the level
    message: str = ""


def solve_drfh_int(instance: Instance, backend: Backend, time_limit: float | None = None) -> IntegerFilling:
    model = DrfhIntModel.build_pairs(instance)
    n = len(instance.tenants)
    share = instance.dominant_demand
    weights = instance.weights
    caps = instance.task_caps
    floor = np.zeros(n)
    can_run = np.bincount(model.pair_tenant, minlength=n) > 0
    growing = can_run & (caps >= 1)
    tasks = np.zeros((n, model.num_machines))
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    status: Status = "optimal"
    rounds = solves = 0
    solve_s = 0.0
    first_bound: float | None = None
    message = ""

    def remaining() -> float | None:
        return None if deadline is None else max(deadline - time.perf_counter(), 0.01)

    while growing.any():
        rounds += 1
        counts = tasks.sum(axis=1)
        level_now = float(np.min(share[growing] * counts[growing] / weights[growing]))
        outcome = backend.solve(
            model.build(floor, level_tenants=growing), remaining(), warm_start=model.start(tasks, level_now)
        )
        solves += 1
        solve_s += outcome.solve_s
        if first_bound is None and outcome.bound is not None:
            first_bound = outcome.bound
        if outcome.x is None:
            status, message = ("time_limit" if outcome.status == "time_limit" else "error"), outcome.message
            break
        tasks = model.tasks(outcome.x)
        if outcome.status != "optimal":
            status, message = "time_limit", f"level MILP stopped: {outcome.message}"
            break
        counts = tasks.sum(axis=1)
        level = float(np.min(share[growing] * counts[growing] / weights[growing]))
        needed = np.where(growing, np.ceil(level * weights / np.where(share > 0, share, 1.0) - 1e-9), 0.0)
        floor = np.maximum(floor, needed)
        candidates = growing & (share * floor / weights <= level * (1 + 1e-9) + 1e-15)
        liftable = candidates & (floor < caps)
        lifted = np.zeros(n, dtype=bool)
        if liftable.any():
            lift_ids = np.flatnonzero(liftable)
            start = model.start(tasks, level, len(lift_ids))
            start[-len(lift_ids) :] = (counts[lift_ids] >= floor[lift_ids] + 1).astype(float)
            lift = backend.solve(model.build(floor, lift_tenants=lift_ids), remaining(), warm_start=start)
            solves += 1
            solve_s += lift.solve_s
            if lift.x is not None:
                tasks = model.tasks(lift.x)
                lifted[lift_ids] = np.round(lift.x[-len(lift_ids) :]) >= 1
            if lift.status != "optimal":
                status, message = "time_limit", f"lift MILP stopped: {lift.message}"
                break
        floor[lifted] += 1
        growing &= ~(candidates & ~lifted)
        growing &= tasks.sum(axis=1) < caps
    return IntegerFilling(status, tasks, rounds, solves, solve_s, first_bound, message)


__all__ = ["IntegerFilling", "solve_drfh_int"]
