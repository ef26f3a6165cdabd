"""Column generation for DRFH rounds on many distinct servers.

The round LP has one column per usable (tenant, unit) pair: 12.6 million on a Google-sized cluster of
distinct machines, while a basic optimum uses at most (units x resources + tenants) of them. We keep a
restricted master in one live HiGHS model, price every pair at once from the duals
(``rc[i, u] = y_define[i] - consumption[i] . y_capacity[u]``, a dense matrix product), append the
improving columns, and re-solve from the previous basis. No positive reduced cost left means the
restricted optimum is optimal for the full LP.

Initial columns come from the same problem on clustered servers (a few dozen pooled groups), whose
allocation is spread over each group's machines by a wrap-around rule, so the master starts close to
the optimum instead of from nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.drfh import DrfhModel, UnitGrouping
from solver.backends.highs import HighsSession
from solver.drfh import (
    FillingResult,
    FloatArray,
    IntArray,
    PlainRounds,
    RoundOutcome,
    _level_upper,
    _SessionRounds,
    progressive_filling,
)

_PRICE_TOL = 1e-9


def cluster_units(capacity: FloatArray, target: int) -> IntArray:
    """Group units whose capacities agree within a ratio on every resource (log-scale grid).

    The ratio grows until at most ``target`` groups remain. Zero capacities form their own bin, so a
    group never mixes machines that have a resource with machines that lack it.
    """
    positive = capacity > 0
    logs = np.log(np.where(positive, capacity, 1.0))
    ratio = 1.02
    while True:
        bins = np.where(positive, np.floor(logs / math.log(ratio)).astype(np.int64), np.iinfo(np.int64).min)
        _, labels = np.unique(bins, axis=0, return_inverse=True)
        labels = labels.reshape(-1)
        if labels.max() + 1 <= target or ratio > 1e6:
            return labels.astype(np.int64)
        ratio = ratio**1.5


def _wrap_around(group_share: FloatArray, unit_size: FloatArray) -> tuple[IntArray, IntArray]:
    """Pairs (tenant, unit-position) when tenants' shares are laid end to end over the units.

    Both vectors are normalised to sum to one; a unit gets every tenant whose interval overlaps its
    own, so most units see one or two tenants, like a basic solution.
    """
    tenants = np.flatnonzero(group_share > 0)
    if len(tenants) == 0 or len(unit_size) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    tenant_end = np.cumsum(group_share[tenants]) / group_share[tenants].sum()
    unit_end = np.cumsum(unit_size) / unit_size.sum()
    unit_start = np.concatenate([[0.0], unit_end[:-1]])
    first = np.searchsorted(tenant_end, unit_start, side="right")
    last = np.searchsorted(tenant_end, unit_end, side="left")
    first = np.minimum(first, len(tenants) - 1)
    last = np.clip(last, first, len(tenants) - 1)
    counts = last - first + 1
    unit_pos = np.repeat(np.arange(len(unit_size)), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return tenants[np.repeat(first, counts) + offsets], unit_pos


@dataclass(frozen=True)
class CoarseSolution:
    """Leximin allocation of the model with similar units pooled into groups (a relaxation)."""

    labels: IntArray  # group of every unit
    filled: FillingResult
    group_share: FloatArray  # (tenants, groups) global dominant share

    @property
    def shares(self) -> FloatArray:
        return np.asarray(self.group_share.sum(axis=1))


def coarse_solution(model: DrfhModel, target_groups: int = 64) -> CoarseSolution:
    """Solve the pooled-groups relaxation exactly (small: groups x tenants columns)."""
    units = model.units
    labels = cluster_units(units.capacity / units.machines[:, None], target_groups)
    num_groups = int(labels.max()) + 1
    group_capacity = np.zeros((num_groups, units.capacity.shape[1]))
    np.add.at(group_capacity, labels, units.capacity)
    group_machines = np.bincount(labels, weights=units.machines, minlength=num_groups).astype(np.int64)
    coarse = DrfhModel(model.instance, UnitGrouping(labels, group_capacity, group_machines))
    filled = progressive_filling(coarse, PlainRounds(coarse))
    share = np.zeros((model.num_tenants, num_groups))
    np.add.at(share, (filled.pair_tenants, filled.pair_units), filled.pair_shares)
    return CoarseSolution(labels, filled, share)


def initial_columns(model: DrfhModel, coarse: CoarseSolution) -> tuple[IntArray, IntArray]:
    """Spread the coarse allocation over each group's units by wrap-around; plus one unit per tenant."""
    units = model.units
    total = units.capacity.sum(axis=0)
    size = (units.capacity / np.where(total > 0, total, 1.0)).sum(axis=1)
    tenant_parts, unit_parts = [], []
    for group in range(coarse.group_share.shape[1]):
        members = np.flatnonzero(coarse.labels == group)
        tenants, positions = _wrap_around(coarse.group_share[:, group], size[members])
        tenant_parts.append(tenants)
        unit_parts.append(members[positions])
    tenants = np.concatenate(tenant_parts) if tenant_parts else np.zeros(0, dtype=np.int64)
    unit_ids = np.concatenate(unit_parts) if unit_parts else np.zeros(0, dtype=np.int64)
    usable = model.usable
    keep = usable[tenants, unit_ids]
    # Every tenant gets at least its largest usable unit, so each level row can move from the start.
    best_unit = np.argmax(np.where(usable, size[None, :], -1.0), axis=1)
    has_unit = usable.any(axis=1)
    tenants = np.concatenate([tenants[keep], np.flatnonzero(has_unit)])
    unit_ids = np.concatenate([unit_ids[keep], best_unit[has_unit]])
    pairs = np.unique(np.stack([tenants, unit_ids], axis=1), axis=0)
    return pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)


class ColumnGenerationRounds(_SessionRounds):
    """Round solver that prices all pairs but keeps only the useful ones in the HiGHS model."""

    def __init__(
        self,
        model: DrfhModel,
        time_limit: float | None = None,
        algorithm: str | None = None,
        max_new_columns: int | None = None,
        coarse: CoarseSolution | None = None,
    ) -> None:
        tenants, units = initial_columns(model, coarse or coarse_solution(model))
        lp = model.build(tenants, units, _level_upper(model))
        super().__init__(model, HighsSession(lp, time_limit, algorithm), tenants, units)
        self._usable = model.usable
        self._in_master = np.zeros_like(self._usable)
        self._in_master[tenants, units] = True
        self._consumption = model.consumption()
        self._num_res = len(model.instance.resources)
        self.max_new_columns = max_new_columns or max(2000, model.num_tenants + model.units.num_units)
        self.per_unit = 1
        self.per_tenant = 3
        self.pricing_iterations = 0
        self.columns_added = 0

    def solve_round(self, coefficient: FloatArray, lower: FloatArray, upper: FloatArray) -> RoundOutcome:
        self._apply(coefficient, lower, upper)
        total_s = 0.0
        while True:
            outcome = self.session.solve()
            total_s += outcome.solve_s
            if outcome.status != "optimal" or outcome.row_duals is None:
                break
            new_tenants, new_units = self._price(outcome.row_duals)
            if len(new_tenants) == 0:
                break
            self._add(new_tenants, new_units)
        outcome.solve_s = total_s
        return self._outcome(outcome)

    def _price(self, duals: FloatArray) -> tuple[IntArray, IntArray]:
        """Pairs with a positive reduced cost, best per unit and per tenant, at most max_new_columns."""
        self.pricing_iterations += 1
        n = self.model.num_tenants
        y_define = duals[:n]
        y_capacity = duals[2 * n :].reshape(-1, self._num_res)
        reduced = y_define[:, None] - self._consumption @ y_capacity.T
        scale = max(1.0, float(np.abs(duals).max()))
        reduced[~self._usable | self._in_master] = -np.inf
        improving = reduced > _PRICE_TOL * scale
        if not improving.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        # The best few tenants for every unit and the best few units for every tenant.
        n_units = reduced.shape[1]
        per_unit = min(self.per_unit, n)
        top_tenants = np.argpartition(-reduced, per_unit - 1, axis=0)[:per_unit, :]
        rows = top_tenants.reshape(-1)
        cols = np.tile(np.arange(n_units), per_unit)
        ok = improving[rows, cols]
        chosen = [np.stack([rows[ok], cols[ok]], axis=1)]
        per_tenant = min(self.per_tenant, n_units)
        top_units = np.argpartition(-reduced, per_tenant - 1, axis=1)[:, :per_tenant]
        rows = np.repeat(np.arange(n), per_tenant)
        cols = top_units.reshape(-1)
        ok = improving[rows, cols]
        chosen.append(np.stack([rows[ok], cols[ok]], axis=1))
        pairs = np.unique(np.concatenate(chosen), axis=0)
        if len(pairs) > self.max_new_columns:
            order = np.argsort(-reduced[pairs[:, 0], pairs[:, 1]])[: self.max_new_columns]
            pairs = pairs[order]
        return pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)

    def _add(self, tenants: IntArray, units: IntArray) -> None:
        block = self.model.pair_columns(tenants, units)
        count = len(tenants)
        self.session.add_columns(np.zeros(count), np.zeros(count), np.full(count, math.inf), block)
        self._in_master[tenants, units] = True
        self.tenants = np.concatenate([self.tenants, tenants])
        self.units = np.concatenate([self.units, units])
        self.columns_added += count


def solve_by_aggregation(
    model: DrfhModel, time_limit: float | None = None, algorithm: str | None = None
) -> FillingResult:
    """Exact DRFH on many distinct units: solve the pooled-groups relaxation, then certify it.

    Pooling units relaxes capacities, so the relaxation's leximin shares ``G*`` dominate every feasible
    allocation of the real units. One column-generation LP, ``max t`` s.t. ``G_i >= t G*_i``, checks
    whether the real units can carry ``G*``: if ``t`` reaches 1, ``G*`` is feasible and therefore
    leximin-optimal for the real problem too (nothing feasible can beat what beats everything
    feasible). Otherwise we fall back to progressive filling with column generation, keeping the
    columns found so far.
    """
    coarse = coarse_solution(model)
    rounds = ColumnGenerationRounds(model, time_limit, algorithm, coarse=coarse)
    target = coarse.shares
    caps = model.share_caps()
    coefficient = np.where(target > 0, target, 0.0)
    upper = np.where(model.usable.any(axis=1), caps, 0.0)
    outcome = rounds.solve_round(coefficient, np.zeros(model.num_tenants), upper)
    if outcome.status == "optimal" and outcome.level >= 1 - 1e-9:
        tenants, units, g = rounds.pair_shares()
        keep = g > 0
        shares = np.bincount(tenants, weights=g, minlength=model.num_tenants).astype(np.float64)
        return FillingResult(
            "optimal", shares, coarse.filled.levels, coarse.filled.first_level, coarse.filled.rounds,
            rounds.lp_solves + coarse.filled.lp_solves, coarse.filled.solve_s + outcome.solve_s,
            tenants[keep], units[keep], g[keep], "relaxation certified feasible",
        )  # fmt: skip
    if outcome.status not in ("optimal",):
        return FillingResult(outcome.status, np.zeros(model.num_tenants), np.zeros(model.num_tenants), 0.0, 0,
                             rounds.lp_solves, outcome.solve_s, message=outcome.message)  # fmt: skip
    result = progressive_filling(model, rounds)
    result.message = f"relaxation not attainable (t = {outcome.level:.9f}); filled with column generation"
    return result
