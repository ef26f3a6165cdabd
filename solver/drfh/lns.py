"""drfh-int's neighbourhood search: raise f one discrete level at a time by re-packing a few machines.

The max-min objective only moves when every tenant below the next level gains a task at once, and
near the LP's top the machines are packed to within a hair of capacity, so a single move rarely helps
and the full level MILP is too large to settle. A large-neighbourhood search works between the two:
target the lowest level above f, free a handful of machines (a repair MILP of ``solver.drfh.int_model``
re-packs them with every other machine kept), and minimise the target's total shortfall. A
neighbourhood that lowers the shortfall is kept; once it reaches zero the target is met and the next
level becomes the target. Machines with free room in the resources the short tenants need are drawn
more often, the rest at random; the neighbourhood grows while nothing improves, and the search stops
when the largest ones stop helping too, or when the whole cluster re-packed exactly still falls short
(then the target is out of reach). Like the pattern search, it proves nothing: it only hands the level
search a better allocation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fairpack.models.types import FloatArray
from fairpack.solver.backends import Backend
from fairpack.solver.budget import Budget
from fairpack.solver.drfh.int_model import DrfhIntModel

SMALLEST, LARGEST = 8, 32  # machines freed per neighbourhood
REPAIR_LIMIT_S = 2.0  # per repair MILP
PATIENCE = 6  # repairs without progress before the neighbourhood grows (or, at the largest, the search stops)


@dataclass
class NeighbourhoodSearch:
    tasks: FloatArray  # best allocation found (tenants, machines); the start if nothing beat it
    value: float  # its f
    repairs: int
    solve_s: float
    levels_gained: int


def search_neighbourhoods(
    model: DrfhIntModel,
    backend: Backend,
    start: FloatArray,
    next_level: Callable[[float], float | None],
    budget: Budget,
    seed: int = 0,
) -> NeighbourhoodSearch:
    """Best allocation found within ``budget`` (a limited one).

    ``next_level(v)`` is the lowest of f's candidate values above ``v`` still worth a try (None: none is).
    """
    instance = model.instance
    players = model.players
    step = model.player_step
    value, required = model.max_min_value, model.required
    capacity = instance.capacity[instance.machine_class()]  # (machines, resources)
    demand = instance.demand[players]
    rng = np.random.default_rng(seed)

    def shortfall(tasks: FloatArray, need: FloatArray) -> float:
        return float(step @ np.maximum(need - tasks.sum(axis=1)[players], 0.0))

    # ``work`` is the allocation being repaired: a repair may trade one short tenant's task for another's,
    # which lowers the shortfall but can dip f, so the best allocation by f is kept apart.
    best = work = start
    target = next_level(value(start))
    repairs, solve_s, gained, stale, size = 0, 0.0, 0, 0, SMALLEST
    while target is not None and not budget.expired():
        need = required(target)
        current = shortfall(work, need)
        if current <= 0:
            target = next_level(value(work))
            gained += 1
            continue
        # Draw half the machines by what they could offer the short tenants, in the resources those use:
        # free room, plus what the tasks above the target there would release; the other half at random.
        counts = work.sum(axis=1)[players]
        short = need - counts > 0
        surplus = np.clip(counts - need, 0.0, None) / np.maximum(counts, 1.0)  # fraction of each one's tasks
        used = work.T @ instance.demand  # (machines, resources)
        releasable = (work[players] * surplus[:, None]).T @ demand
        offer = (np.clip(capacity - used, 0.0, None) + releasable) / np.maximum(capacity, 1e-12)
        wanted = demand[short].sum(axis=0)
        weight = 1e-3 + offer @ (wanted / max(float(wanted.sum()), 1e-12))
        count = min(size, model.num_machines)
        drawn = rng.choice(model.num_machines, size=count // 2, replace=False, p=weight / weight.sum())
        rest = np.setdiff1d(np.arange(model.num_machines), drawn)
        free = np.sort(np.concatenate([drawn, rng.choice(rest, size=count - count // 2, replace=False)]))
        left = budget.left()
        if left <= 0.05:
            break
        tenants = model.repair_tenants(need, work, free)
        lp, warm = model.build_repair(need, work, free, tenants)
        outcome = backend.solve(lp, min(REPAIR_LIMIT_S, left), warm)
        repairs += 1
        solve_s += outcome.solve_s
        candidate = work if outcome.x is None else model.apply_repair(work, free, outcome.x, tenants)
        after = shortfall(candidate, need)
        if count == model.num_machines and outcome.status == "optimal" and after > 0:
            break  # the whole cluster re-packed exactly still falls short: no allocation reaches the target
        if after <= current + 1e-12:
            work = candidate  # equal shortfall too: a sideways move to a different packing
        stale = 0 if after < current - 1e-12 else stale + 1
        if value(work) > value(best) * (1 + 1e-12):
            best = work
        if stale >= PATIENCE:
            if count >= min(LARGEST, model.num_machines):
                break  # the largest neighbourhoods stopped helping too
            size, stale = min(2 * size, LARGEST), 0
    return NeighbourhoodSearch(best, value(best), repairs, solve_s, gained)
