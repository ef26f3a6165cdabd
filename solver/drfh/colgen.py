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
from dataclasses import dataclass, replace

import numpy as np

from models.types import FloatArray, IntArray
from solver.backends import Backend
from solver.budget import Budget
from solver.drfh.filling import FillingResult, RoundOutcome, SessionRounds, level_upper_bound, progressive_filling
from solver.drfh.model import DrfhModel, UnitGrouping

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


def coarse_solution(model: DrfhModel, backend: Backend, budget: Budget, target_groups: int = 64) -> CoarseSolution:
    """Solve the pooled-groups relaxation exactly (small: groups x tenants columns)."""
    units = model.units
    labels = cluster_units(units.capacity / units.machines[:, None], target_groups)
    num_groups = int(labels.max()) + 1
    group_capacity = np.zeros((num_groups, units.capacity.shape[1]))
    np.add.at(group_capacity, labels, units.capacity)
    group_machines = np.bincount(labels, weights=units.machines, minlength=num_groups).astype(np.int64)
    coarse = DrfhModel(model.instance, UnitGrouping(labels, group_capacity, group_machines))
    filled = progressive_filling(coarse, SessionRounds.all_columns(coarse, backend, budget))
    share = np.zeros((model.num_tenants, num_groups))
    np.add.at(share, (filled.pair_tenants, filled.pair_units), filled.pair_shares)
    return CoarseSolution(labels, filled, share)


def _paired_pieces(usage: FloatArray, capacity: FloatArray) -> tuple[IntArray, IntArray]:
    """Two-resource disaggregation: fill units one by one with a blend of two tenants that matches.

    ``usage[j]`` is what tenant j consumes in the group (2 resources) and ``capacity[l]`` each unit's
    capacity. Tenants richer in resource 0 than the group's total usage form list A, the others list
    B; every unit's target (its capacity scaled to the group's usage) is met by solving a 2x2 system
    with the current tenants of A and B, moving on to the next tenant whenever one is used up. Where
    the two directions do not bracket the target the unit simply takes what fits; the LP corrects it.
    Returns (tenant position, unit position) pairs touched.
    """
    total = usage.sum(axis=0)
    scale = np.divide(total, capacity.sum(axis=0), out=np.zeros(2), where=capacity.sum(axis=0) > 0)
    target = capacity * scale[None, :]
    angle = np.arctan2(usage[:, 1], usage[:, 0])
    reference = math.atan2(total[1], total[0])
    lists = [np.flatnonzero(angle <= reference), np.flatnonzero(angle > reference)]
    lists = [order[np.argsort(angle[order])] for order in lists]
    left = usage.copy()
    pointer = [0, 0]
    pairs: list[tuple[int, int]] = []
    for unit in range(len(capacity)):
        need = target[unit].copy()
        for _ in range(64):  # a unit rarely spans more than a few tenants
            if need.max() <= 1e-12 * max(1.0, float(target[unit].max())):
                break
            current = [lst[p] if p < len(lst) else -1 for lst, p in zip(lists, pointer, strict=True)]
            live = [c for c in current if c >= 0]
            if not live:
                break
            for c in live:
                pairs.append((c, unit))
            if len(live) == 2:
                matrix = np.stack([left[live[0]], left[live[1]]], axis=1)
                try:
                    fractions = np.linalg.solve(matrix, need)
                except np.linalg.LinAlgError:
                    fractions = np.array([-1.0, -1.0])
                if np.all(fractions >= 0):
                    # Scale both down together if either tenant runs out first.
                    ratio = min([1.0, *(1.0 / f for f in fractions if f > 1.0)])
                    taken = fractions * ratio
                    for c, f in zip(live, taken, strict=True):
                        need -= f * left[c]
                        left[c] *= 1 - f
                    for side, f in enumerate(taken):
                        if f >= 1 - 1e-12 and current[side] >= 0:
                            pointer[side] += 1
                    continue
            # One tenant alone (or directions that do not bracket): take what fits of the first.
            c = live[0]
            side = 0 if current[0] == c else 1
            with np.errstate(divide="ignore", invalid="ignore"):
                room = np.where(left[c] > 0, need / left[c], np.inf).min()
            f = float(min(max(room, 0.0), 1.0))
            need = np.maximum(need - f * left[c], 0.0)
            left[c] *= 1 - f
            if f >= 1 - 1e-12:
                pointer[side] += 1
            else:
                break
    if not pairs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    array = np.array(pairs, dtype=np.int64)
    return array[:, 0], array[:, 1]


def initial_columns(model: DrfhModel, coarse: CoarseSolution) -> tuple[IntArray, IntArray]:
    """Spread the coarse allocation over each group's units; plus one unit per tenant.

    A unit needs a blend of tenants whose mix matches its own shape, not one tenant. So the group's
    tenants are split into one stream per resource (the resource each one uses most, relative to the
    group's capacity), and each stream is laid end to end over the group's units in proportion to
    their capacity of that resource. Every unit then sees a few tenants of every kind, as a basic
    optimal solution does (at most units x resources + tenants pairs in all).
    """
    units = model.units
    consumption = model.consumption()  # resource per unit of share
    tenant_parts, unit_parts = [], []
    for group in range(coarse.group_share.shape[1]):
        members = np.flatnonzero(coarse.labels == group)
        share = coarse.group_share[:, group]
        capacity = units.capacity[members]
        group_capacity = capacity.sum(axis=0)
        if capacity.shape[1] == 2:
            present = np.flatnonzero(share > 0)
            positions, unit_positions = _paired_pieces(share[present, None] * consumption[present], capacity)
            tenant_parts.append(present[positions])
            unit_parts.append(members[unit_positions])
            continue
        relative = consumption / np.where(group_capacity > 0, group_capacity, np.inf)[None, :]
        stream = np.argmax(relative, axis=1)
        for resource in range(capacity.shape[1]):
            in_stream = np.where(stream == resource, share, 0.0)
            sizes = capacity[:, resource]
            if not in_stream.any() or sizes.sum() <= 0:
                continue
            tenants, positions = _wrap_around(in_stream, sizes)
            tenant_parts.append(tenants)
            unit_parts.append(members[positions])
    tenants = np.concatenate(tenant_parts) if tenant_parts else np.zeros(0, dtype=np.int64)
    unit_ids = np.concatenate(unit_parts) if unit_parts else np.zeros(0, dtype=np.int64)
    usable = model.usable
    keep = usable[tenants, unit_ids]
    # Every tenant gets at least its largest usable unit, so each level row can move from the start.
    total = units.capacity.sum(axis=0)
    size = (units.capacity / np.where(total > 0, total, 1.0)).sum(axis=1)
    best_unit = np.argmax(np.where(usable, size[None, :], -1.0), axis=1)
    has_unit = usable.any(axis=1)
    tenants = np.concatenate([tenants[keep], np.flatnonzero(has_unit)])
    unit_ids = np.concatenate([unit_ids[keep], best_unit[has_unit]])
    pairs = np.unique(np.stack([tenants, unit_ids], axis=1), axis=0)
    return pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)


class ColumnGenerationRounds(SessionRounds):
    """Round solver that prices all pairs but keeps only the useful ones in the HiGHS model."""

    def __init__(
        self,
        model: DrfhModel,
        backend: Backend,
        budget: Budget,
        algorithm: str | None = None,
        max_new_columns: int | None = None,
        coarse: CoarseSolution | None = None,
    ) -> None:
        tenants, units = initial_columns(model, coarse or coarse_solution(model, backend, budget))
        lp = model.build(tenants, units, level_upper_bound(model))
        super().__init__(model, backend.session(lp, budget.remaining(), algorithm), tenants, units)
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
        return self._outcome(replace(outcome, solve_s=total_s))

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
    model: DrfhModel, backend: Backend, budget: Budget, algorithm: str | None = None
) -> FillingResult:
    """Exact DRFH on many distinct units: solve the pooled-groups relaxation, then certify it.

    Pooling units relaxes capacities, so the relaxation's leximin shares ``G*`` dominate every feasible
    allocation of the real units. One column-generation LP, ``max t`` s.t. ``G_i >= t G*_i``, checks
    whether the real units can carry ``G*``: if ``t`` reaches 1, ``G*`` is feasible and therefore
    leximin-optimal for the real problem too (nothing feasible can beat what beats everything
    feasible). Otherwise we fall back to progressive filling with column generation, keeping the
    columns found so far.
    """
    coarse = coarse_solution(model, backend, budget)
    rounds = ColumnGenerationRounds(model, backend, budget, algorithm, coarse=coarse)
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
    message = f"relaxation not attainable (t = {outcome.level:.9f}); filled with column generation"
    return replace(result, message=message)
