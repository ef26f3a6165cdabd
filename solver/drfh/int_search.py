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
from dataclasses import dataclass, replace

import numpy as np

from models.result import Status
from models.types import FloatArray, Instance
from solver.backends import Backend
from solver.budget import Budget
from solver.drfh.int_model import DrfhIntModel
from solver.lp import LinearProgram

PATTERN_SHARE = 0.5  # of the time left after the LP bisection, for the pattern search
PATTERN_BUDGET_S = 60.0  # its budget when there is no time limit
LNS_SHARE = 0.6  # of the time left after the pattern search, for the neighbourhood search
LNS_BUDGET_S = 60.0  # its budget when there is no time limit


@dataclass(frozen=True)
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
    budget: Budget | None = None,
    level_bound: float | None = None,
    start: FloatArray | None = None,
    relative_gap: float = 0.0,
) -> IntegerFilling:
    """The integral max-min f by a search over its discrete levels, then leximin steps.

    ``level_bound`` is the divisible LP's f (the top of the search); ``start`` a feasible task matrix
    (tenants x machines), e.g. the best heuristic's, whose f is the bottom. With ``relative_gap`` > 0
    the search stops once f is within that fraction of its proven upper bound (no leximin refinement).
    """
    budget = budget or Budget()
    model = DrfhIntModel.build_pairs(instance)
    tasks = np.zeros((len(instance.tenants), model.num_machines)) if start is None else model.canonical(start)
    started = time.perf_counter()
    search = LevelSearch(model, backend, budget, tasks, level_bound, relative_gap)
    search.run()
    best_f = model.max_min_value(search.best)
    result = IntegerFilling(
        search.status, search.best, 0, search.solves, search.solve_s, search.proven_bound(),
        search.status, time.perf_counter() - started, best_f,
    )  # fmt: skip
    if search.status == "feasible":
        bound = result.first_bound
        return replace(result, message=f"f within {relative_gap:.2%} of its proven bound {bound:.6g}; "
                                       "no leximin refinement")  # fmt: skip
    if search.status != "optimal":
        return replace(result, message="max-min search stopped at the time limit; no leximin refinement")
    return _leximin(model, backend, budget, result)


def _leximin(model: DrfhIntModel, backend: Backend, budget: Budget, result: IntegerFilling) -> IntegerFilling:
    """Leximin steps from the max-min optimum: step k maximises the sum of the k smallest weighted shares."""
    players, caps, max_min_value = model.players, model.player_caps, model.max_min_value
    best_f = max_min_value(result.tasks)
    achieved: list[float] = []
    tasks = result.tasks
    for step in range(1, len(players) + 1):
        if np.all(tasks.sum(axis=1)[players] >= caps):
            break  # everybody holds its cap: the sorted vector is final
        outcome = backend.solve(model.build(step, np.array(achieved)), budget.remaining(),
                                warm_start=model.start(tasks, step))  # fmt: skip
        result = replace(result, milp_solves=result.milp_solves + 1, solve_s=result.solve_s + outcome.solve_s)
        if outcome.x is None or outcome.status != "optimal":
            status: Status = "time_limit" if outcome.status in ("time_limit", "feasible") else outcome.status
            result = replace(result, status=status, message=f"leximin step {step} stopped "
                             f"({outcome.message or outcome.status}); exact up to step {step - 1}")  # fmt: skip
            if outcome.x is not None and max_min_value(model.tasks(outcome.x)) >= best_f * (1 - 1e-12):
                tasks = model.tasks(outcome.x)
            break
        tasks = model.tasks(outcome.x)
        achieved.append(float(np.sort(model.shares(tasks))[:step].sum()))
        result = replace(result, steps=step)
    # Leximin keeps f; guard against round-off in the incumbent handed back on a time limit.
    return replace(result, tasks=tasks if max_min_value(tasks) >= best_f * (1 - 1e-9) else result.tasks)


class LevelSearch:
    """The largest f over integral allocations, by a search over its discrete candidate levels.

    Candidates lie strictly between the start's f and the LP's f. The phases share one budget:

    1. :meth:`bisect_relaxations` -- a level is infeasible if the LP relaxation with rounded-up task counts
       is (cheap, and usually decisive): ``levels[above:]`` are out even fractionally;
    2. :meth:`lift_by_patterns` -- the pattern search (identical machines aggregated) raises the start
       (``PATTERN_SHARE`` of the time left);
    3. :meth:`lift_by_neighbourhoods` -- re-packs a few machines at a time (``LNS_SHARE`` of what is left);
    4. :meth:`climb` -- feasibility MILPs settle the levels left one by one; reaching the top proves f.

    ``status`` ends ``optimal`` (f proven), ``feasible`` (within ``relative_gap`` of the proven bound, stopped
    there) or ``time_limit``.
    """

    def __init__(self, model: DrfhIntModel, backend: Backend, budget: Budget, start: FloatArray,
                 level_bound: float | None, relative_gap: float = 0.0) -> None:  # fmt: skip
        self.model, self.backend, self.budget, self.relative_gap = model, backend, budget, relative_gap
        self.value = model.max_min_value
        self.best = start
        self.low = self.value(start)
        self.levels = self._candidates(level_bound)
        self.above = len(self.levels)  # levels[above:] are proven infeasible
        self.next_level = 0  # levels below next_level are reached by best
        self.solves, self.solve_s = 0, 0.0
        self.status: Status = "optimal"

    def _candidates(self, level_bound: float | None) -> FloatArray:
        instance, low = self.model.instance, self.low
        high = level_bound if level_bound is not None else 1.0 / float(instance.weights.min()) + 1.0
        candidates = []
        for c, cap in zip(self.model.player_step, self.model.player_caps, strict=True):
            if not math.isfinite(low) or c <= 0:
                break  # everybody is satisfied already: nothing to search
            first = math.floor(low / c) + 1
            last = min(math.floor(high * (1 + 1e-9) / c), cap - 1 if math.isfinite(cap) else math.inf)
            if last >= first:
                candidates.append(c * np.arange(first, last + 1))
        levels = np.unique(np.concatenate(candidates)) if candidates else np.zeros(0)
        return levels[levels > low * (1 + 1e-12)]

    def run(self) -> None:
        self.bisect_relaxations()
        if self._open():
            self.lift_by_patterns()
        if self._open():
            self.lift_by_neighbourhoods()
        self.climb()

    def _count(self, seconds: float, solves: int = 1) -> None:
        self.solves += solves
        self.solve_s += seconds

    def _level_model(self, level: float) -> LinearProgram:
        return self.model.build_level(self.model.required(level))

    def _top(self) -> float:
        return float(self.levels[self.above - 1]) if self.above > 0 else self.low

    def _close_enough(self) -> bool:
        return self.relative_gap > 0 and self.value(self.best) >= (1 - self.relative_gap) * self._top()

    def _open(self) -> bool:
        """Whether levels above the best f may still be reachable and worth a search."""
        return (self.status == "optimal" and self.above > 0 and not self._close_enough()
                and self.value(self.best) < self._top() * (1 - 1e-12))  # fmt: skip

    def _adopt(self, tasks: FloatArray) -> None:
        if self.value(tasks) > self.value(self.best) * (1 + 1e-12):
            self.best = tasks
            self.next_level = int(np.searchsorted(self.levels, self.value(tasks), side="right"))

    def bisect_relaxations(self) -> None:
        below = 0
        while below < self.above:
            middle = (below + self.above) // 2
            lp = self._level_model(float(self.levels[middle]))
            relaxed = self.backend.solve(replace(lp, integrality=np.zeros_like(lp.integrality)),
                                         self.budget.remaining())  # fmt: skip
            self._count(relaxed.solve_s)
            if relaxed.status == "infeasible":
                self.above = middle
            elif relaxed.status == "optimal":
                below = middle + 1
            else:
                self.status = "time_limit"
                return

    def lift_by_patterns(self) -> None:
        """On the 100 x 20 benchmark this lifts the heuristic's f half or more of the way to the LP's top."""
        from solver.drfh.patterns import search_patterns

        part = self.budget.part(PATTERN_SHARE) if self.budget.limited else Budget.of(PATTERN_BUDGET_S)
        found = search_patterns(self.model, self.backend, self.best, self._top(), part)
        self._count(found.solve_s, found.solves)
        self._adopt(found.tasks)

    def lift_by_neighbourhoods(self) -> None:
        from solver.drfh.lns import search_neighbourhoods

        part = self.budget.part(LNS_SHARE) if self.budget.limited else Budget.of(LNS_BUDGET_S)
        lifted = search_neighbourhoods(self.model, self.backend, self.best, self.levels[: self.above], part)
        self._count(lifted.solve_s, lifted.repairs)
        self._adopt(self.model.canonical(lifted.tasks))

    def climb(self) -> None:
        """Feasibility MILPs level by level: they prove small instances; near the LP's top on large ones they
        are hard."""
        while self.status == "optimal" and self.next_level < self.above:
            if self._close_enough():
                self.status = "feasible"
                return
            outcome = self.backend.solve(self._level_model(float(self.levels[self.next_level])),
                                         self.budget.remaining())  # fmt: skip
            self._count(outcome.solve_s)
            if outcome.status == "infeasible":
                self.above = self.next_level
            elif outcome.x is not None and outcome.status in ("optimal", "feasible"):
                self.best = self.model.tasks(outcome.x)
                reached = int(np.searchsorted(self.levels, self.value(self.best), side="right"))
                self.next_level = max(self.next_level + 1, reached)
            else:
                self.status = "time_limit"

    def proven_bound(self) -> float:
        """Finished: f itself. Stopped: f cannot reach ``levels[above]``, so the next level down bounds it."""
        if self.status == "optimal":
            return self.value(self.best)
        return float(self.levels[self.above - 1]) if self.above > 0 else self.value(self.best)
