"""DRFH rounds by Dantzig-Wolfe decomposition: a master LP over the capacity rows only.

The round LP of ``solver.drfh.filling`` has a row per tenant and a column per (tenant, unit) pair, so its
simplex cost grows faster than the tenants (30 s for one solve at 10,000 tenants on the Google table).
Yet it couples tenants through the ``units x resources`` capacity rows alone: with every tenant's demand
fixed (``lower_i`` for a frozen tenant, ``coefficient_i t`` for a growing one; giving a tenant more than
its demand never helps the level), the set of placements of one group of tenants is a product of
simplices, whose extreme points are *maps* (each tenant's whole demand on one unit). The master holds a
few maps per group and their capacity use; it has ``units x resources + 2`` rows whatever the tenants:

    max  sum_k mu_k
    s.t. sum_k lambda_k F_k + sum_k mu_k A_k <= C    (prices p)
         sum_k lambda_k = 1                          (frozen tenants: a mix of their placements)
         sum_k mu_k <= t_max                         (the level's cap from task caps)

where ``A_k`` is the use of the growing tenants at level 1 under map ``k`` (so ``mu_k`` is the level carried
by that map). Pricing is one dense product: tenant ``i``'s cheapest unit at prices ``p`` costs
``m_i(p) = min_u p_u . c_i`` and that argmin is the improving map of each group. The same ``m`` gives a
certificate: any feasible level satisfies ``sum_frozen lower_i m_i + t sum_growing coef_i m_i <= p . C``, so

    t <= T(p) = (p . C - sum_frozen lower_i m_i) / sum_growing coef_i m_i,

and the loop stops when the master's level is within ``_GAP`` of ``T(p)``: the level is the round LP's
optimum and ``p`` an optimal dual. The level-row duals filling needs are then ``m_i(p)``: a tenant whose
cheapest unit has priced resources cannot grow without lowering the level (complementary slackness).

Frozen tenants must fit before anything grows. The previous solve's placement of each tenant is kept
(``split``) and seeds the frozen group; when it does not fit (a tenant frozen at its cap after a probe
below it), a first phase maximises the fraction of the frozen demands placed, the same loop with the
frozen tenants growing up to 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fairpack.models.result import Status
from fairpack.models.types import BoolArray, FloatArray, IntArray
from fairpack.solver.backends import Backend
from fairpack.solver.backends.base import Session
from fairpack.solver.budget import Budget
from fairpack.solver.drfh.filling import RoundOutcome, RoundSolver, level_upper_bound
from fairpack.solver.drfh.model import DrfhModel
from fairpack.solver.lp import LPBuilder

#: The master's level counts as optimal within this relative gap to the price certificate ``T(p)``.
_GAP = 1e-10
#: When the master stalls (its improving map is in it already: round-off in HiGHS's reduced costs), the level is
#: still taken as optimal within this relative gap to ``T(p)``; beyond it the round is not certified and is
#: solved by the plain LP instead (a stalled master once reported a level 26 times too low as optimal).
_STALL_GAP = 1e-7
#: The message of a round the decomposition could not certify (it goes to the plain LP).
UNCERTIFIED = "the master stalled short of its price certificate"
#: Master solves per round before giving up (each adds at least one new map; a few dozen is typical).
_MAX_ITERATIONS = 2000


@dataclass(frozen=True)
class _Column:
    """A placement of every tenant: a map (``unit[i]``) or a dense split (``split[i, u]``, rows sum to 1)."""

    unit: IntArray | None = None
    split: FloatArray | None = None

    def __post_init__(self) -> None:
        if (self.unit is None) == (self.split is None):
            raise ValueError("a column is either a map or a split")

    def use(self, demand: FloatArray, consumption: FloatArray, units: int) -> FloatArray:
        """Capacity use (units, resources) of ``demand`` placed by this column."""
        if self.unit is not None:
            return np.stack([np.bincount(self.unit, weights=demand * consumption[:, r], minlength=units)
                             for r in range(consumption.shape[1])], axis=1)  # fmt: skip
        assert self.split is not None
        return np.asarray((self.split * demand[:, None]).T @ consumption)

    def add_to(self, split: FloatArray, rows: BoolArray, weight: float) -> None:
        """``split[rows] += weight * (this placement)[rows]``."""
        if self.unit is not None:
            index = np.flatnonzero(rows)
            split[index, self.unit[index]] += weight
        else:
            assert self.split is not None
            split[rows] += weight * self.split[rows]


@dataclass(frozen=True)
class _Group:
    """One side of the master: tenants with a fixed demand (``grows`` False) or a demand per level unit."""

    demand: FloatArray  # per tenant, zero outside the group
    grows: bool


class DecomposedRounds:
    """A ``RoundSolver`` whose LP size does not depend on the tenants (see module docstring)."""

    def __init__(self, model: DrfhModel, backend: Backend, budget: Budget) -> None:
        self.model = model
        self.backend = backend
        self.budget = budget
        self.lp_solves = 0
        self.consumption = model.consumption()
        self.capacity = model.units.capacity
        self.num_units, self.num_res = self.capacity.shape
        self.split: FloatArray | None = None  # the last solve's placement, (tenants, units)
        self.shares: FloatArray | None = None  # the last solve's demands
        self.maps: list[IntArray] = []  # maps with weight in the last solve, reused as starting columns
        self.plain: RoundSolver | None = None  # the plain LP, once a round could not be certified here

    # -- pricing -----------------------------------------------------------------------------------------------
    def _price(self, prices: FloatArray) -> tuple[FloatArray, IntArray]:
        """(m_i(p), argmin unit) over usable units; prices is (units, resources)."""
        return self.model.cheapest_units(prices)

    def _start_maps(self) -> list[IntArray]:
        """Maps to start from: the kept ones, or the cheapest unit at prices 1 / capacity."""
        if self.maps:
            return list(self.maps)
        relative = np.divide(1.0, self.capacity, out=np.zeros_like(self.capacity), where=self.capacity > 0)
        return [self._price(relative)[1]]

    # -- the decomposition loop ------------------------------------------------------------------------------
    def _master(self, fixed: _Group | None, growing: _Group, t_max: float, columns: list[_Column],
                seeds: list[_Column]) -> tuple[Session, list[tuple[bool, _Column]], list[float]]:  # fmt: skip
        """A live master holding the maps ``columns`` in both groups and ``seeds`` in the frozen one.

        Rows: capacity (as fractions of each unit's capacity), convexity of the frozen group, the level's cap
        (as a fraction of ``t_max``); every column is scaled to a largest entry of 1, so the master is well
        scaled whatever the capacities and levels (a level of 0.004 against capacities in the thousands once
        left HiGHS with an "optimal" point outside its own tolerances). Also returns each column's scale.
        """
        entries: list[tuple[bool, _Column]] = [(False, c) for c in columns + seeds] * (fixed is not None)
        entries += [(True, c) for c in columns]
        cost, matrix, scales = self._columns(fixed, growing, t_max, entries)
        builder = LPBuilder(sense="max", name="drfh-master")
        x = builder.add_variables("x", (len(entries),), lower=0.0, cost=cost)
        rows, cols = np.nonzero(matrix)
        convexity = 1.0 if fixed is not None else 0.0
        capacity = np.where(self.capacity > 0, 1.0, 0.0).reshape(-1)
        builder.add_rows("master", matrix.shape[0], rows, x.start + cols, matrix[rows, cols],
                         lower=np.concatenate([np.full(matrix.shape[0] - 2, -math.inf), [convexity, -math.inf]]),
                         upper=np.concatenate([capacity, [convexity, 1.0]]))  # fmt: skip
        return self.backend.session(builder.build(), self.budget.remaining()), entries, scales

    def _columns(self, fixed: _Group | None, growing: _Group, t_max: float, entries: list[tuple[bool, _Column]]
                 ) -> tuple[FloatArray, FloatArray, list[float]]:  # fmt: skip
        """Objective, dense (rows, columns) coefficients and scale of master columns (see ``_master``).

        A column's variable is its weight (the frozen group's fraction, or the level a growing map carries)
        divided by its scale.
        """
        row_scale = np.where(self.capacity > 0, self.capacity, 1.0).reshape(-1)
        level_scale = t_max if t_max > 0 else 1.0
        blocks, scales = [], []
        for grows, column in entries:
            group = growing if grows else fixed
            assert group is not None
            use = column.use(group.demand, self.consumption, self.num_units).reshape(-1) / row_scale
            block = np.concatenate([use, [0.0 if grows else 1.0, 1.0 / level_scale if grows else 0.0]])
            scale = 1.0 / float(np.max(block)) if np.max(block) > 0 else 1.0
            blocks.append(block * scale)
            scales.append(scale)
        matrix = np.array(blocks).T
        # The objective is the level as a fraction of t_max, the level row's own coefficients: of the order of
        # 1, where the level itself (0.0003 on the Google table) would sit below HiGHS's optimality tolerance.
        cost = np.array([matrix[-1, k] if grows else 0.0 for k, (grows, _) in enumerate(entries)])
        return cost, matrix, scales

    def _add(self, session: Session, fixed: _Group | None, growing: _Group, t_max: float,
             entries: list[tuple[bool, _Column]]) -> list[float]:  # fmt: skip
        cost, matrix, scales = self._columns(fixed, growing, t_max, entries)
        session.add_columns(cost, np.zeros(len(entries)), np.full(len(entries), math.inf), sp.csc_matrix(matrix))
        return scales

    def _decompose(self, fixed: _Group | None, growing: _Group, t_max: float, columns: list[_Column],
                   seeds: list[_Column]) -> RoundOutcome:  # fmt: skip
        """Run the master to optimality; the outcome's level duals are the certifying prices' costs ``m_i``."""
        session, entries, scales = self._master(fixed, growing, t_max, columns, seeds)
        known = {column.unit.tobytes() for _, column in entries if column.unit is not None}
        solve_s = 0.0
        rows = self.num_units * self.num_res
        row_scale = np.where(self.capacity > 0, self.capacity, 1.0)
        for _ in range(_MAX_ITERATIONS):
            outcome = session.solve()
            self.lp_solves += 1
            solve_s += outcome.solve_s
            if outcome.status != "optimal" or outcome.x is None or outcome.row_duals is None:
                message = outcome.message if outcome.status != "optimal" else "the master LP gave no point or duals"
                return RoundOutcome("error" if outcome.status == "optimal" else outcome.status, solve_s=solve_s,
                                    message=message)  # fmt: skip
            weights = np.maximum(outcome.x, 0.0) * np.array(scales)
            level = float(weights[[grows for grows, _ in entries]].sum())
            # A row scaled by 1 / C has its dual scaled by C: back to prices per unit of resource.
            prices = np.abs(outcome.row_duals[:rows]).reshape(self.num_units, self.num_res) / row_scale
            cost, unit = self._price(prices)
            frozen_cost = float(fixed.demand @ cost) if fixed is not None else 0.0
            growth_cost = float(growing.demand @ cost)
            budget = float((prices * self.capacity).sum()) - frozen_cost
            certificate = t_max if growth_cost <= 0 else min(t_max, budget / growth_cost)
            if certificate - level <= _GAP * max(certificate, 0.0) + 1e-300 or self.budget.expired():
                break
            key = unit.tobytes()
            if key in known:  # the improving map is in the master already: round-off, or a stalled master
                if certificate - level > _STALL_GAP * max(certificate, 0.0) + 1e-300:
                    return RoundOutcome("error", solve_s=solve_s, message=UNCERTIFIED)
                break
            known.add(key)
            new = [(grows, _Column(unit=unit)) for grows in ((False, True) if fixed is not None else (True,))]
            scales += self._add(session, fixed, growing, t_max, new)
            entries += new
        else:
            return RoundOutcome("error", solve_s=solve_s, message="decomposition did not converge")
        self._keep(fixed, growing, entries, weights, level, unit)
        unfinished = self.budget.expired() and certificate - level > _GAP * certificate
        status: Status = "time_limit" if unfinished else "optimal"
        shares = growing.demand * level + (fixed.demand if fixed is not None else 0.0)
        return RoundOutcome(status, level, shares, cost, solve_s)

    def _keep(self, fixed: _Group | None, growing: _Group, entries: list[tuple[bool, _Column]], weights: FloatArray,
              level: float, fallback: IntArray) -> None:  # fmt: skip
        """Record each tenant's placement (the master's mix) and the maps in use for the next solve."""
        n = self.model.num_tenants
        split = np.zeros((n, self.num_units))
        rows_growing = growing.demand > 0
        rows_fixed = fixed.demand > 0 if fixed is not None else np.zeros(n, dtype=bool)
        maps: dict[bytes, IntArray] = {}
        for (grows, column), weight in zip(entries, weights, strict=True):
            if weight <= 0:
                continue
            rows = rows_growing if grows else rows_fixed
            column.add_to(split, rows, weight / level if grows else weight)
            if column.unit is not None:
                maps[column.unit.tobytes()] = column.unit
        if level <= 0:  # nothing grew: the growing tenants sit on their cheapest unit at zero demand
            split[np.flatnonzero(rows_growing), fallback[rows_growing]] = 1.0
        totals = split.sum(axis=1, keepdims=True)
        self.split = np.divide(split, totals, out=np.zeros_like(split), where=totals > 0)
        self.maps = list(maps.values()) or [fallback]

    # -- the RoundSolver protocol ---------------------------------------------------------------------------------
    def solve_round(self, coefficient: FloatArray, lower: FloatArray, upper: FloatArray) -> RoundOutcome:
        """Max t s.t. G_i >= coefficient_i t, lower <= G <= upper (see module docstring). A round whose level the
        price certificate does not prove (a stalled master) is solved by the plain LP, and so is every later
        round: an answer here is optimal only when proven."""
        if self.plain is None:
            outcome = self._solve_round(coefficient, lower, upper)
            if not (outcome.status == "error" and outcome.message == UNCERTIFIED):
                return outcome
            from fairpack.solver.drfh.filling import SessionRounds, interior_first

            self.plain = SessionRounds.all_columns(self.model, self.backend, self.budget,
                                                   interior_first=interior_first(self.model, self.backend))  # fmt: skip
        outcome = self.plain.solve_round(coefficient, lower, upper)
        self.lp_solves += 1
        return outcome

    def _solve_round(self, coefficient: FloatArray, lower: FloatArray, upper: FloatArray) -> RoundOutcome:
        grows = coefficient > 0
        if np.any(lower[grows] > 0):
            raise ValueError("a growing tenant with a lower bound: the decomposition fixes frozen tenants only")
        t_max = float(np.min(upper[grows] / coefficient[grows], initial=level_upper_bound(self.model)))
        growing = _Group(np.where(grows, coefficient, 0.0), True)
        fixed_demand = np.where(grows, 0.0, lower)
        fixed = _Group(fixed_demand, False) if np.any(fixed_demand > 0) else None
        columns = [_Column(unit=unit) for unit in self._start_maps()]
        seeds = [_Column(split=self._seeded(fixed))] if fixed is not None and self.split is not None else []
        outcome = self._decompose(fixed, growing, t_max, columns, seeds)
        if outcome.status == "infeasible" and fixed is not None:
            outcome = self._fit_frozen_first(fixed, growing, t_max)
        if outcome.status == "optimal":
            self.shares = outcome.shares
        return outcome

    def _seeded(self, fixed: _Group) -> FloatArray:
        """The last placement, with any tenant it did not place on its cheapest unit at relative prices."""
        assert self.split is not None
        split = self.split.copy()
        empty = (split.sum(axis=1) == 0) & (fixed.demand > 0)
        if empty.any():
            unit = self._start_maps()[0]
            split[np.flatnonzero(empty), unit[empty]] = 1.0
        return split

    def _fit_frozen_first(self, fixed: _Group, growing: _Group, t_max: float) -> RoundOutcome:
        """Phase one: place as much of the frozen demand as fits; all of it fits when the round is feasible."""
        as_growing = _Group(fixed.demand, True)
        columns = [_Column(unit=unit) for unit in self._start_maps()]
        placed = self._decompose(None, as_growing, 1.0, columns, [])
        if placed.status != "optimal":
            return placed
        if placed.level < 1 - 1e-9:
            return RoundOutcome("infeasible", solve_s=placed.solve_s,
                                message=f"frozen tenants fit only {placed.level:.9f} of their shares")  # fmt: skip
        return self._decompose(fixed, growing, t_max, columns, [_Column(split=self._seeded(fixed))])

    def pair_shares(self) -> tuple[IntArray, IntArray, FloatArray]:
        """(tenant, unit, g) of the last solution."""
        if self.plain is not None:
            return self.plain.pair_shares()
        assert self.split is not None and self.shares is not None
        g = self.split * self.shares[:, None]
        tenants, units = np.nonzero(g > 0)
        return tenants.astype(np.int64), units.astype(np.int64), g[tenants, units]
