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

from fairpack.models.result import Status
from fairpack.models.types import FloatArray, Instance
from fairpack.solver import interrupt, progress
from fairpack.solver.backends import Backend
from fairpack.solver.budget import Budget, available_memory
from fairpack.solver.drfh.int_levels import CandidateLevels
from fairpack.solver.drfh.int_model import DrfhIntModel
from fairpack.solver.lp import LinearProgram

CLASS_SHARE = 0.5  # of the time left after the LP bisection, for the by-class construction
CLASS_BUDGET_S = 30.0  # its budget when there is no time limit
PATTERN_SHARE = 0.5  # of the time left after the by-class construction, for the pattern search
PATTERN_BUDGET_S = 60.0  # its budget when there is no time limit
LNS_SHARE = 0.6  # of the time left after the pattern search, for the neighbourhood search
LNS_BUDGET_S = 60.0  # its budget when there is no time limit
#: Per-machine MILPs (the climb's level MILPs, leximin steps) are only built up to this many tenant x
#: machine pairs: beyond it HiGHS neither solves nor even holds them usefully (the Google cluster with
#: 1,000 tenants has 12.6 million pairs, and one such LP took 25 s to pass and 9.9 GB).
PER_MACHINE_PAIRS = 2_000_000
#: Seconds one tenant x machine pair costs the LP relaxation of a level, built and passed to HiGHS (measured on
#: the Google table with 1,000 tenants, 12.6 million pairs: 10.8 s to build and 5.1 s to pass, 1.3 us a pair at
#: load 3-4; a loaded machine takes longer). With a time limit, a relaxation that would not be ready in the time
#: left is not started.
LEVEL_RELAXATION_S_PER_PAIR = 1.5e-6
#: Bytes per pair of address space the relaxation's build and HiGHS take at their peak: 6.7 GB resident for the
#: 12.6 million pairs of the Google table's 12,583 distinct machines x 1,000 tenants (1.8 GB with its machines
#: merged), more in address space. Under an 8 GiB address-space limit that build died in HiGHS (SIGSEGV); a
#: relaxation that needs more than is available is not built.
LEVEL_RELAXATION_BYTES_PER_PAIR = 800


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
    setup_s: float = 0.0  # building the model and the start, before the level search


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
    entered = time.perf_counter()
    model = DrfhIntModel.build_pairs(instance)
    tasks = np.zeros((len(instance.tenants), model.num_machines)) if start is None else model.canonical(start)
    search = LevelSearch(model, backend, budget, tasks, level_bound, relative_gap)
    started = time.perf_counter()
    search.run()
    best_f = model.max_min_value(search.best)
    result = IntegerFilling(
        search.status, search.best, 0, search.solves, search.solve_s, search.proven_bound(),
        search.status, time.perf_counter() - started, best_f, setup_s=started - entered,
    )  # fmt: skip
    if search.status != "optimal":
        return replace(result, message=_unproven(search, best_f, relative_gap))
    if model.num_pairs > PER_MACHINE_PAIRS:
        pairs = f"{model.num_pairs:,} tenant x machine pairs (limit {PER_MACHINE_PAIRS:,})"
        return replace(result, status="feasible",
                       message=f"f = {best_f:.6g} is proven optimal; the leximin steps were not tried: {pairs}")
    return _leximin(model, backend, budget, result)


def _unproven(search: LevelSearch, f: float, relative_gap: float) -> str:
    """Why the max-min search stopped before proving f, with f, its proven bound and the gap between them."""
    bound = search.proven_bound()
    gap = (bound - f) / bound if bound > 0 else 0.0
    numbers = f"f = {f:.6g}, proven bound {bound:.6g} (gap {gap:.3%}); no leximin refinement"
    if search.status == "feasible" and not search.skipped:
        return f"f within the requested {relative_gap:.2%} of its proven bound: {numbers}"
    why = search.skipped or ("max-min search interrupted" if interrupt.requested()
                             else "max-min search stopped at the time limit")  # fmt: skip
    missed = f"; the requested gap {relative_gap:.2%} was not reached" if gap > relative_gap > 0 else ""
    return f"{why}: {numbers}{missed}"


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
            # f is proven and the incumbent verified whatever stopped the step: out of time, or a
            # solver failure (which is not the allocation's status), it is a feasible answer, not an error.
            status: Status = "time_limit" if outcome.status in ("time_limit", "feasible") else "feasible"
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
       is (cheap, and usually decisive): the levels from ``ceiling`` up are out even fractionally;
    2. :meth:`lift_by_classes` -- the by-class construction (``solver.drfh.class_pack``) packs the tasks of
       a target level class by class, bisecting the level below the proven top (``CLASS_SHARE`` of the
       time left);
    3. :meth:`lift_by_patterns` -- the pattern search (identical machines aggregated) raises the start
       (``PATTERN_SHARE`` of the time left);
    4. :meth:`lift_by_neighbourhoods` -- re-packs a few machines at a time (``LNS_SHARE`` of what is left);
    5. :meth:`climb` -- feasibility MILPs settle the levels left one by one; reaching the top proves f.

    ``status`` ends ``optimal`` (f proven), ``feasible`` (within ``relative_gap`` of the proven bound, stopped
    there) or ``time_limit``.
    """

    def __init__(self, model: DrfhIntModel, backend: Backend, budget: Budget, start: FloatArray,
                 level_bound: float | None, relative_gap: float = 0.0) -> None:  # fmt: skip
        self.model, self.backend, self.budget, self.relative_gap = model, backend, budget, relative_gap
        self.value = model.max_min_value
        self.best = start
        # What the pattern and neighbourhood searches continue from: the start, lifted by their own finds
        # but not by the by-class construction's allocation (kept in ``best`` all the same). From a packing
        # that fills each class to the brim they ended lower on two of three 100 x 20 instances (99.16% and
        # 99.22% of the LP's f against 99.54% and 99.34% from Best-Fit's start, 60 s each).
        self.lifted = start
        self.low = self.value(start)
        self.levels = self._candidates(level_bound)
        self.ceiling = math.inf  # the smallest level proven out of reach: every level from it up is
        self.tried = self.low  # the highest level the climb has reached
        self.solves, self.solve_s = 0, 0.0
        self.status: Status = "optimal"
        self.skipped = ""  # why the search stopped short of a proof without running out of time

    def _candidates(self, level_bound: float | None) -> CandidateLevels:
        """The levels above the start's f and up to the LP's f (ranges per player, never listed).

        Player ``j`` is hungry at level ``k c_j`` only with ``k`` below its cap and within what the cluster
        holds of its tasks, so ``k`` stops there; without an LP bound, the top of those is the bound.
        """
        model = self.model
        reach = model.class_upper[model.players] @ model.instance.counts.astype(np.float64)
        most = np.minimum(reach, model.player_caps - 1)
        step = model.player_step
        if level_bound is None:
            level_bound = float((most * step).max(initial=0.0))
        if not math.isfinite(self.low) or not len(step):
            most = np.zeros(len(step))  # everybody is satisfied already: nothing to search
        return CandidateLevels.between(step, most, self.low, level_bound * (1 + 1e-9))

    def run(self) -> None:
        self._tell("start")
        self.bisect_relaxations()
        if self._open():
            self.lift_by_classes()
        if self._open():
            self.lift_by_patterns()
        if self._open():
            self.lift_by_neighbourhoods()
        self.climb()
        self._tell(f"max-min search {self.status}")

    def _count(self, seconds: float, solves: int = 1) -> None:
        self.solves += solves
        self.solve_s += seconds

    def _tell(self, step: str) -> None:
        """The search so far, for ``--verbose`` (every step) and the progress lines (every few seconds)."""
        f, top = self.value(self.best), self._top()
        progress.log("drfh-int", f"{step}: f = {f:.6g}, levels up to {top:.6g} still possible")
        progress.report("drfh-int", f, top, step)

    def _level_model(self, level: float) -> LinearProgram:
        return self.model.build_level(self.model.required(level))

    def _level_relaxation(self, level: float) -> LinearProgram:
        return self.model.build_level_relaxation(self.model.required(level))

    def _top(self) -> float:
        """The highest level not proven out of reach (the start's f if there is none)."""
        top = self.levels.below(self.ceiling, self.low)
        return self.low if top is None else top

    def _next(self, value: float) -> float | None:
        """The lowest level above ``value`` not proven out of reach."""
        return self.levels.above(value, self.ceiling)

    def _close_enough(self) -> bool:
        return self.relative_gap > 0 and self.value(self.best) >= (1 - self.relative_gap) * self._top()

    def _open(self) -> bool:
        """Whether levels above the best f may still be reachable and worth a search."""
        return (self.status == "optimal" and not self._close_enough()
                and self.value(self.best) < self._top() * (1 - 1e-12))  # fmt: skip

    def _adopt(self, tasks: FloatArray) -> None:
        if self.value(tasks) > self.value(self.best) * (1 + 1e-12):
            self.best = tasks

    def bisect_relaxations(self) -> None:
        """Bisect by rank over the levels above the start: the relaxation is monotone in the level."""
        below = self.low
        while (count := self.levels.count(below, self.ceiling)) > 0:
            remaining = self.budget.remaining()
            ready = self.model.num_pairs * LEVEL_RELAXATION_S_PER_PAIR
            need, room = self.model.num_pairs * LEVEL_RELAXATION_BYTES_PER_PAIR, available_memory()
            if room is not None and need > room:
                self.status = "feasible"
                self.skipped = (f"the LP relaxations that bound the levels were not built: {self.model.num_pairs:,} "
                                f"tenant x machine pairs need about {need / 2**30:.1f} GiB, "
                                f"{room / 2**30:.1f} GiB are available")  # fmt: skip
                return
            if remaining is not None and 2 * ready > remaining:  # built, and then solved at least once
                self.status = "time_limit"
                self.skipped = (f"the LP relaxations that bound the levels were not started: "
                                f"{self.model.num_pairs:,} tenant x machine pairs, about {ready:.0f} s to build and "
                                f"as long to solve, more than the {remaining:.1f} s left")  # fmt: skip
                return
            middle = self.levels.at_rank(below, self.ceiling, int(count) // 2)
            relaxed = self.backend.solve(self._level_relaxation(middle), self.budget.remaining())
            self._count(relaxed.solve_s)
            if relaxed.status == "infeasible":
                self.ceiling = middle
            elif relaxed.status == "optimal":
                below = middle
            else:
                self.status = "time_limit"
                return
            self._tell(f"LP relaxation at level {middle:.6g} {relaxed.status}")

    def lift_by_classes(self) -> None:
        """On the Google table with 1,000 tenants this reaches 99% of the LP's f in well under a second,
        where the pattern and neighbourhood searches stopped 3% below it after a minute."""
        from fairpack.solver.drfh.class_pack import CLASS_PAIRS, search_by_class

        if self.model.num_class_pairs > CLASS_PAIRS:
            return  # machines nearly all distinct: the split LP would be as large as the per-machine model
        part = self.budget.part(CLASS_SHARE) if self.budget.limited else Budget.of(CLASS_BUDGET_S)
        found = search_by_class(self.model, self.backend, self.best, self._top(), part, self.relative_gap)
        self._count(found.solve_s, found.solves)
        self._adopt(self.model.canonical(found.tasks))
        self._tell("by-class construction")

    def lift_by_patterns(self) -> None:
        """On the 100 x 20 benchmark this lifts the heuristic's f half or more of the way to the LP's top."""
        from fairpack.solver.drfh.patterns import search_patterns

        part = self.budget.part(PATTERN_SHARE) if self.budget.limited else Budget.of(PATTERN_BUDGET_S)
        found = search_patterns(self.model, self.backend, self.lifted, self._top(), part)
        self._count(found.solve_s, found.solves)
        self.lifted = found.tasks
        self._adopt(found.tasks)
        self._tell("pattern search")

    def lift_by_neighbourhoods(self) -> None:
        from fairpack.solver.drfh.lns import search_neighbourhoods

        part = self.budget.part(LNS_SHARE) if self.budget.limited else Budget.of(LNS_BUDGET_S)
        lifted = search_neighbourhoods(self.model, self.backend, self.lifted, self._next, part,
                                       seed=self.backend.settings.seed or 0)  # fmt: skip
        self._count(lifted.solve_s, lifted.repairs)
        self.lifted = self.model.canonical(lifted.tasks)
        self._adopt(self.lifted)
        self._tell("neighbourhood search")

    def climb(self) -> None:
        """Feasibility MILPs level by level: they prove small instances; near the LP's top on large ones they
        are hard, and above ``PER_MACHINE_PAIRS`` pairs they are not tried (the search ends ``feasible``)."""
        while self.status == "optimal":
            level = self._next(max(self.value(self.best), self.tried))
            if level is None:
                return  # every level above f is out of reach: f is proven
            if self._close_enough():
                self.status = "feasible"
                return
            if self.model.num_pairs > PER_MACHINE_PAIRS:
                self.status = "feasible"
                self.skipped = (f"the level MILPs that would prove f were not tried: {self.model.num_pairs:,} "
                                f"tenant x machine pairs (limit {PER_MACHINE_PAIRS:,})")  # fmt: skip
                return
            outcome = self.backend.solve(self._level_model(level), self.budget.remaining())
            self._count(outcome.solve_s)
            if outcome.status == "infeasible":
                self.ceiling = level
            elif outcome.x is not None and outcome.status in ("optimal", "feasible"):
                self.best = self.model.tasks(outcome.x)
                self.tried = level
            else:
                self.status = "time_limit"
            self._tell(f"MILP at level {level:.6g} {outcome.status}")

    def proven_bound(self) -> float:
        """Finished: f itself. Stopped: f cannot reach ``ceiling``, so the highest level below it bounds f."""
        if self.status == "optimal":
            return self.value(self.best)
        return max(self._top(), self.value(self.best))
