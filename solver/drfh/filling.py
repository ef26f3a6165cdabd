"""Exact DRFH by progressive filling over LP rounds, with plain or column-generation round solvers.

Each round maximises the common weighted level ``t`` of the tenants still growing. Task caps make the
level a piecewise problem: tenant ``i`` needs ``min(w_i t, cap_i)``. Instead of one round per cap we
binary-search the interval between consecutive cap breakpoints ``B`` that holds the optimum, then
freeze (a) tenants at their cap and (b) tenants whose level row has a non-zero dual: by complementary
slackness that row is tight in *every* optimal solution, so they cannot grow without lowering the
level. Rounds continue until nobody can grow; the result is leximin-optimal.

Every LP solved is feasible by construction, which column generation needs (an infeasible restricted
master says nothing about the full LP). The probe "can the level reach ``B[k]``?" gives the tenants
capped at or below ``B[k]`` the level row ``G_i >= (cap_i / B[k]) t`` instead of a fixed share: this is
weaker than ``min(w_i t, cap_i)`` below ``B[k]`` and equal at ``B[k]``, and ``t = 0`` is always feasible,
so the probe reaches ``B[k]`` exactly when the true requirement at ``B[k]`` is feasible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from fairpack.models.result import Status
from fairpack.models.tolerance import CHECK_RTOL
from fairpack.models.types import FloatArray, IntArray
from fairpack.solver.backends import Backend
from fairpack.solver.backends.base import Session, SolveOutcome
from fairpack.solver.budget import Budget
from fairpack.solver.drfh.model import DrfhModel
from fairpack.solver.drfh.tolerance import ShareRepair, repair_pairs

_REL = 1e-9  # relative tolerance for level comparisons
_DUAL = 1e-9  # a level-row dual above this (times the tenant's weight) freezes the tenant
#: From this many (tenant, unit) columns the all-columns LP's first solve is HiGHS's interior point, re-solves its
#: simplex. Measured (one solve, CPU): Gavel's LP as DRFH, 1,000 tenants x 10 units, 0.07 s against 0.17 s;
#: the Google table without caps, 1,000 tenants x 10 classes, 0.18 s against 0.28 s, 10,000 tenants 17 s against 52 s
#: (and certified, where the simplex stopped 0.36% short).
INTERIOR_FROM_PAIRS = 5_000
#: A round's level counts as certified optimal when its price bound lies at most this far above it (relative); a
#: wider gap on HiGHS sends the round to its interior point method once more. The result stays ``optimal`` up to
#: the checker's own precision (``CHECK_RTOL``); other backends' duals carry their tolerances (CBC: 1e-8).
CERTIFY_GAP = 1e-9


@dataclass
class RoundOutcome:
    status: Status
    level: float = 0.0
    shares: FloatArray | None = None  # G per tenant
    level_duals: FloatArray | None = None  # |dual| of each level row
    solve_s: float = 0.0
    message: str = ""
    gap: float = 0.0  # how far a price bound lies above the level, relative (0: certified by construction)


class RoundSolver(Protocol):
    """Solves the round LP for given tenant states; implementations differ in how they hold columns."""

    lp_solves: int

    def solve_round(self, coefficient: FloatArray, lower: FloatArray, upper: FloatArray) -> RoundOutcome:
        """Max t s.t. G_i >= coefficient_i t (rows with coefficient 0 are off), lower <= G <= upper."""
        ...

    def pair_shares(self) -> tuple[IntArray, IntArray, FloatArray]:
        """(tenant, unit, g) of the last solution."""
        ...


def interior_first(model: DrfhModel, backend: Backend) -> bool:
    """Whether an all-columns model should be solved first by HiGHS's interior point (``SessionRounds.all_columns``):
    on HiGHS with no algorithm asked for, from ``INTERIOR_FROM_PAIRS`` columns, and without task caps. With caps the
    filling probes breakpoints, several solves from one basis, and a simplex basis served them better (the Google
    table's distinct machines with caps, 40-100 tenants x 60-200 machines, 6-8 solves: 0.09-0.16 s by the simplex
    throughout, 0.14-0.19 s with the interior point first)."""
    if backend.name != "highs" or backend.algorithm is not None or np.isfinite(model.instance.task_caps).any():
        return False
    return int(model.usable.sum()) >= INTERIOR_FROM_PAIRS


def level_upper_bound(model: DrfhModel) -> float:
    # A global dominant share never exceeds 1, so the weighted level never exceeds 1 / min weight.
    return 2.0 / float(model.instance.weights.min()) + 1.0


class _Rounds:
    """What every round solver shares: its pair columns and turning a solve into a ``RoundOutcome``."""

    def __init__(self, model: DrfhModel, tenants: IntArray, units: IntArray) -> None:
        self.model = model
        self.tenants = tenants
        self.units = units
        self.lp_solves = 0
        self._x: FloatArray | None = None

    def _outcome(self, outcome: SolveOutcome) -> RoundOutcome:
        self.lp_solves += 1
        if outcome.x is None or outcome.status != "optimal":
            return RoundOutcome(outcome.status, solve_s=outcome.solve_s, message=outcome.message)
        n = self.model.num_tenants
        self._x = outcome.x
        duals = np.abs(outcome.row_duals[self.model.level_rows()]) if outcome.row_duals is not None else None
        return RoundOutcome("optimal", float(outcome.x[n]), outcome.x[:n].copy(), duals, outcome.solve_s)

    def pair_shares(self) -> tuple[IntArray, IntArray, FloatArray]:
        assert self._x is not None
        n = self.model.num_tenants
        return self.tenants, self.units, np.maximum(self._x[n + 1 :], 0.0)


class SessionRounds(_Rounds):
    """A round solver on a backend session: bounds and coefficients change in place between rounds.

    On HiGHS the session keeps its basis, so a round is a warm re-solve; other backends rebuild and
    solve the LP afresh each round (``solver.backends.base.RebuildSession``).

    Every optimal round is checked against the price bound of its capacity duals (``DrfhModel.level_bound``):
    HiGHS's tolerances are absolute, and where the shares are small (10,000 tenants on the Google table without
    caps: shares near 1e-4) its simplex has called a level 0.36% below the optimum optimal, its duals bounding
    the level 6% above it. A round the bound does not certify is solved again by the interior point method when
    ``retry`` allows (that same LP: certified, gap 2e-13), and is reported uncertified if it still is not.
    """

    def __init__(self, model: DrfhModel, session: Session, tenants: IntArray, units: IntArray,
                 first: str | None = None, then: str | None = None, retry: bool = False) -> None:  # fmt: skip
        super().__init__(model, tenants, units)
        self.session = session
        self._coefficient = model.instance.weights.copy()
        self._resolving = False
        self._algorithm = first  # what the next solve runs (None: the backend's choice)
        self._then = then  # the algorithm of the re-solves, when the first solve's differs (None: no switch)
        self._retry = retry
        self._round: tuple[FloatArray, FloatArray, float] = (np.zeros(0), np.zeros(0), 0.0)

    @classmethod
    def all_columns(cls, model: DrfhModel, backend: Backend, budget: Budget, algorithm: str | None = None,
                    interior_first: bool = False) -> SessionRounds:  # fmt: skip
        """Every usable (tenant, unit) column in one model.

        ``interior_first`` solves the first round by the interior point method (with crossover, so a basis and
        basic duals come out) and re-solves from that basis by the simplex: on one large max-min LP the
        interior point is several times faster (Gavel's LP as DRFH, 1,000 tenants x 10 units: 0.07 s against
        0.17 s), while later rounds change a few bounds and a warm simplex beats any cold start.
        """
        tenants, units = model.all_pairs()
        lp = model.build(tenants, units, level_upper_bound(model))
        first = "ipm" if interior_first else algorithm or backend.algorithm
        session = backend.session(lp, budget.remaining(), first)
        # The retry needs an interior point method that can take over the session's basis: HiGHS's, off PDLP.
        retry = backend.name == "highs" and first != "pdlp"
        return cls(model, session, tenants, units, first, "simplex" if interior_first else None, retry)

    def _apply(self, coefficient: FloatArray, lower: FloatArray, upper: FloatArray) -> None:
        n = self.model.num_tenants
        self.session.set_column_bounds(np.arange(n), lower, upper)
        rows = self.model.level_rows()
        on = coefficient > 0
        self.session.set_row_bounds(rows, np.where(on, 0.0, -math.inf), np.full(n, math.inf))
        changed = np.flatnonzero(on & (coefficient != self._coefficient))
        for i in changed:
            self.session.set_coefficient(int(rows[i]), n, -float(coefficient[i]))
        self._coefficient[changed] = coefficient[changed]
        # With no tenant tied to the level, t is free; pin it so the LP stays bounded and trivial.
        t_upper = level_upper_bound(self.model) if on.any() else 0.0
        self.session.set_column_bounds(np.array([n]), np.array([0.0]), np.array([t_upper]))
        # The level's own caps: t <= upper_i / coefficient_i for a growing tenant.
        t_upper = float(np.min(upper[on] / coefficient[on], initial=t_upper))
        self._round = (np.where(on, coefficient, 0.0), np.where(on, 0.0, lower), t_upper)

    def solve_round(self, coefficient: FloatArray, lower: FloatArray, upper: FloatArray) -> RoundOutcome:
        self._apply(coefficient, lower, upper)
        return self._certified(self._solve())

    def _certified(self, outcome: SolveOutcome) -> RoundOutcome:
        """The round's outcome with its price-bound gap; retried by the interior point method if it is too wide."""
        result = self._outcome(outcome)
        gap = self._gap(outcome, result)
        if gap > CERTIFY_GAP and self._retry and self._algorithm != "ipm":
            regular = self._algorithm
            self.session.use_algorithm("ipm")
            retried = self.session.solve()
            self.session.use_algorithm(regular)
            again = self._outcome(retried)
            again.solve_s += result.solve_s
            result, gap = again, self._gap(retried, again)
        result.gap = gap
        return result

    def _gap(self, outcome: SolveOutcome, result: RoundOutcome) -> float:
        """How far the price bound of the solve's capacity duals lies above its level, relative to the bound."""
        if result.status != "optimal" or outcome.row_duals is None:
            return 0.0
        model = self.model
        prices = np.abs(outcome.row_duals[2 * model.num_tenants :]).reshape(model.units.capacity.shape)
        coefficient, lower, t_upper = self._round
        bound = model.level_bound(prices, coefficient, lower, t_upper)
        return max(bound - result.level, 0.0) / bound if bound > 0 else 0.0

    def _solve(self) -> SolveOutcome:
        """Solve the session; the first solve starts from scratch, later ones from the last basis.

        Between rounds only bounds and level coefficients change, and the max-min LP is degenerate: from
        the previous basis the primal simplex takes a few hundred iterations where the dual simplex took
        over twenty thousand (24 groups x 1,000 tenants with caps), so re-solves use the primal one.
        """
        outcome = self.session.solve()
        if not self._resolving:
            if self._then is not None:
                self.session.use_algorithm(self._then)
                self._algorithm = self._then
            self.session.prefer_primal()
            self._resolving = True
        return outcome


@dataclass
class FillingResult:
    status: Status
    shares: FloatArray  # G per tenant
    levels: FloatArray  # weighted level at which each tenant froze
    first_level: float  # the max-min level of round one (the LP bound on the minimum)
    rounds: int
    lp_solves: int
    solve_s: float
    pair_tenants: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pair_units: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pair_shares: FloatArray = field(default_factory=lambda: np.zeros(0))
    message: str = ""
    repair: ShareRepair | None = None  # what bringing the LP's answer inside the tolerance cost (None: nothing)
    gap: float = 0.0  # the widest price-bound gap of a round's level, relative (see SessionRounds)
    strategy: str = ""  # how the rounds were solved (``solver.drfh.methods.solve_drfh``'s choice)


def progressive_filling(model: DrfhModel, rounds: RoundSolver) -> FillingResult:
    """Leximin-optimal global dominant shares by progressive filling (see module docstring)."""
    n = model.num_tenants
    weights = model.instance.weights
    caps = model.share_caps()
    can_run = model.usable.any(axis=1) & (caps > 0)
    active = can_run.copy()
    lower = np.zeros(n)
    upper = np.where(can_run, caps, 0.0)
    levels = np.zeros(n)
    cap_level = caps / weights
    first_level = math.nan
    round_count = 0
    solve_s = 0.0
    last: RoundOutcome | None = None

    widest_gap = 0.0  # the widest price-bound gap of a solve (above CERTIFY_GAP: not proven optimal)

    def run(coefficient: FloatArray, trial_lower: FloatArray) -> RoundOutcome:
        nonlocal solve_s, widest_gap
        outcome = rounds.solve_round(coefficient, trial_lower, upper)
        solve_s += outcome.solve_s
        widest_gap = max(widest_gap, outcome.gap)
        return outcome

    def reaches(breakpoint: float) -> RoundOutcome:
        """Probe whether the level can reach ``breakpoint`` (always-feasible LP, see module doc)."""
        capped = active & (cap_level <= breakpoint)
        coefficient = np.where(capped, caps / breakpoint, np.where(active, weights, 0.0))
        return run(coefficient, lower)

    while active.any():
        round_count += 1
        breakpoints = np.unique(cap_level[active & np.isfinite(cap_level)])
        # Largest k such that the level reaches breakpoints[k-1] (k = 0: nothing is known yet).
        low, high = 0, len(breakpoints)
        while low < high:
            middle = (low + high + 1) // 2
            probe = reaches(float(breakpoints[middle - 1]))
            if probe.status != "optimal":
                return _partial(probe, lower, levels, first_level, round_count, rounds, solve_s)
            if probe.level >= breakpoints[middle - 1] * (1 - _REL):
                low = middle
            else:
                high = middle - 1
        reached = float(breakpoints[low - 1]) if low > 0 else -math.inf
        capped = active & (cap_level <= reached)
        trial_lower = lower.copy()
        trial_lower[capped] = caps[capped] * (1 - 1e-10)
        outcome = run(np.where(active & ~capped, weights, 0.0), trial_lower)
        if outcome.status != "optimal":
            return _partial(outcome, lower, levels, first_level, round_count, rounds, solve_s)
        last = outcome
        assert outcome.shares is not None
        uncapped = active & ~capped
        # Tenants whose cap level the level reached are capped too (it stopped at their breakpoint).
        # A vertex may hand a tenant its whole cap above the level; that alone does not satisfy it.
        at_cap = uncapped & (cap_level <= outcome.level * (1 + _REL))
        capped |= at_cap
        uncapped &= ~at_cap
        level = outcome.level if uncapped.any() else max(reached, float(np.max(cap_level[capped], initial=0.0)))
        if math.isnan(first_level):
            first_level = level
        levels[capped] = cap_level[capped]
        lower[capped] = caps[capped] * (1 - 1e-10)
        active &= ~capped
        if uncapped.any():
            duals = outcome.level_duals
            if duals is None:
                raise RuntimeError("progressive filling needs row duals from the backend")
            scaled = duals * weights
            blocked = uncapped & (scaled > _DUAL * max(1.0, float(np.max(scaled))))
            if not blocked.any() and not at_cap.any():
                # Something must freeze for the rounds to progress. When a tenant reached its cap this
                # round, that is progress already: the level may have stopped at its cap (an approximate
                # LP such as PDLP can land a hair below the breakpoint), and the others can still grow.
                blocked = uncapped & (scaled >= np.max(scaled[uncapped]))
            levels[blocked] = level
            # A hair below the attained value keeps later rounds feasible despite round-off.
            lower[blocked] = np.minimum(weights[blocked] * level, outcome.shares[blocked]) * (1 - 1e-10)
            active &= ~blocked
    if last is None:  # nobody can run anything
        return FillingResult("optimal", np.zeros(n), levels, 0.0, 0, 0, 0.0)
    # The last round's solution satisfies every frozen lower bound, so it is the final allocation.
    tenants, units, g = rounds.pair_shares()
    shares = np.bincount(tenants, weights=g, minlength=n).astype(np.float64)
    keep = g > 0
    # An LP answer whose price bound lies further above it than the checker's own precision is feasible (the
    # checker says so), not proven leximin: the policy a tolerance repair follows too.
    certified = widest_gap <= CHECK_RTOL
    message = "" if certified else (f"a round's level is not certified optimal: its duals' price bound lies "
                                    f"{widest_gap:.2g} above it (relative)")  # fmt: skip
    return FillingResult(
        "optimal" if certified else "feasible", shares, levels, 0.0 if math.isnan(first_level) else first_level,
        round_count, rounds.lp_solves, solve_s, tenants[keep], units[keep], g[keep], message, gap=widest_gap,
    )  # fmt: skip


def _partial(
    outcome: RoundOutcome,
    lower: FloatArray,
    levels: FloatArray,
    first_level: float,
    round_count: int,
    rounds: RoundSolver,
    solve_s: float,
) -> FillingResult:
    status: Status = "time_limit" if outcome.status == "time_limit" else "error"
    try:
        tenants, units, g = rounds.pair_shares()
    except AssertionError:
        tenants, units, g = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    shares = (
        np.bincount(tenants, weights=g, minlength=len(lower)).astype(np.float64) if len(g) else np.zeros(len(lower))
    )
    return FillingResult(
        status, shares, levels, 0.0 if math.isnan(first_level) else first_level, round_count,
        rounds.lp_solves, solve_s, tenants, units, g, outcome.message or outcome.status,
    )  # fmt: skip


def unit_tasks(model: DrfhModel, result: FillingResult) -> FloatArray:
    """Tasks per (tenant, unit) from the pair shares: g / s_i."""
    tasks = np.zeros((model.num_tenants, model.units.num_units))
    share = model.share_per_task
    np.add.at(tasks, (result.pair_tenants, result.pair_units), result.pair_shares / share[result.pair_tenants])
    return tasks


def repair_shares(model: DrfhModel, filled: FillingResult) -> FillingResult:
    """``filled`` with its pair shares brought inside the tolerance policy (``solver.drfh.tolerance``).

    A repair that changed something is recorded in ``repair`` and the message; one that cost a tenant
    more than ``CHECK_RTOL`` of its share turns an ``optimal`` answer into a ``feasible`` one.
    """
    g, repair = repair_pairs(model, filled.pair_tenants, filled.pair_units, filled.pair_shares)
    if not repair.changed:
        return filled
    keep = g > 0
    tenants, units = filled.pair_tenants[keep], filled.pair_units[keep]
    shares = np.bincount(tenants, weights=g[keep], minlength=model.num_tenants).astype(np.float64)
    status: Status = "feasible" if filled.status == "optimal" and not repair.within_tolerance else filled.status
    message = "; ".join(part for part in (filled.message, repair.describe()) if part)
    return replace(filled, status=status, shares=shares, pair_tenants=tenants, pair_units=units,
                   pair_shares=g[keep], message=message, repair=repair)  # fmt: skip
