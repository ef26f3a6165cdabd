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
import scipy.sparse as sp

from fairpack.models.types import BoolArray, FloatArray, IntArray
from fairpack.solver.backends import Backend
from fairpack.solver.budget import Budget
from fairpack.solver.drfh.filling import (
    FillingResult,
    RoundOutcome,
    SessionRounds,
    level_upper_bound,
    progressive_filling,
)
from fairpack.solver.drfh.model import DrfhModel, UnitGrouping
from fairpack.solver.lp import LPBuilder

_PRICE_TOL = 1e-9
#: The certifying LP's level counts as 1 from here up (its feasibility tolerance, not a loss).
_CERTIFIED = 1e-9


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

    The walk is sequential (each unit takes what the previous ones left), so it runs on Python floats:
    numpy's per-call overhead on 2-vectors made it the slowest step on 12,583 distinct machines.
    """
    total = usage.sum(axis=0)
    room = capacity.sum(axis=0)
    scale = np.divide(total, room, out=np.zeros(2), where=room > 0)
    targets = (capacity * scale[None, :]).tolist()
    angle = np.arctan2(usage[:, 1], usage[:, 0])
    reference = math.atan2(total[1], total[0])
    lists = [np.flatnonzero(angle <= reference), np.flatnonzero(angle > reference)]
    lists = [order[np.argsort(angle[order], kind="stable")].tolist() for order in lists]
    left = usage.tolist()  # what each tenant still has to place, per resource
    pointer = [0, 0]
    pair_tenants: list[int] = []
    pair_units: list[int] = []
    for unit, (target_0, target_1) in enumerate(targets):
        need_0, need_1 = target_0, target_1
        done = 1e-12 * max(1.0, target_0, target_1)
        for _ in range(64):  # a unit rarely spans more than a few tenants
            if max(need_0, need_1) <= done:
                break
            current = [lst[p] if p < len(lst) else -1 for lst, p in zip(lists, pointer, strict=True)]
            live = [c for c in current if c >= 0]
            if not live:
                break
            pair_tenants.extend(live)
            pair_units.extend([unit] * len(live))
            if len(live) == 2:
                (a_0, a_1), (b_0, b_1) = left[live[0]], left[live[1]]
                # Cramer's rule for [a b] f = need; a singular system takes the one-tenant branch.
                determinant = a_0 * b_1 - b_0 * a_1
                if determinant != 0.0:
                    f_a = (need_0 * b_1 - b_0 * need_1) / determinant
                    f_b = (a_0 * need_1 - need_0 * a_1) / determinant
                    if f_a >= 0 and f_b >= 0:
                        # Scale both down together if either tenant runs out first.
                        ratio = min(1.0, 1.0 / f_a if f_a > 1.0 else 1.0, 1.0 / f_b if f_b > 1.0 else 1.0)
                        f_a, f_b = f_a * ratio, f_b * ratio
                        need_0 -= f_a * a_0 + f_b * b_0
                        need_1 -= f_a * a_1 + f_b * b_1
                        left[live[0]] = [a_0 * (1 - f_a), a_1 * (1 - f_a)]
                        left[live[1]] = [b_0 * (1 - f_b), b_1 * (1 - f_b)]
                        for side, f in enumerate((f_a, f_b)):
                            if f >= 1 - 1e-12:
                                pointer[side] += 1
                        continue
            # One tenant alone (or directions that do not bracket): take what fits of the first.
            c = live[0]
            side = 0 if current[0] == c else 1
            c_0, c_1 = left[c]
            fits = min(need_0 / c_0 if c_0 > 0 else math.inf, need_1 / c_1 if c_1 > 0 else math.inf)
            f = min(max(fits, 0.0), 1.0)
            need_0, need_1 = max(need_0 - f * c_0, 0.0), max(need_1 - f * c_1, 0.0)
            left[c] = [c_0 * (1 - f), c_1 * (1 - f)]
            if f >= 1 - 1e-12:
                pointer[side] += 1
            else:
                break
    return np.array(pair_tenants, dtype=np.int64), np.array(pair_units, dtype=np.int64)


def _group_pairs(usage: FloatArray, capacity: FloatArray) -> tuple[IntArray, IntArray]:
    """Pairs (tenant position, unit position) that spread one group's usage over its units.

    ``usage[j]`` is what tenant j consumes in the group and ``capacity[l]`` unit l's capacity. A unit
    needs a blend of tenants whose mix matches its own shape, not one tenant. With two resources the
    blend is built directly (``_paired_pieces``); otherwise the tenants are split into one stream per
    resource (the one each uses most, relative to the group's capacity), and each stream is laid end
    to end over the units in proportion to their capacity of that resource. Every unit then sees a few
    tenants of every kind, as a basic optimal solution does (at most units x resources + tenants pairs).
    """
    if capacity.shape[1] == 2:
        return _paired_pieces(usage, capacity)
    group_capacity = capacity.sum(axis=0)
    relative = usage / np.where(group_capacity > 0, group_capacity, np.inf)[None, :]
    stream = np.argmax(relative, axis=1)
    tenant_parts, unit_parts = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for resource in range(capacity.shape[1]):
        in_stream = np.where(stream == resource, usage[:, resource], 0.0)
        sizes = capacity[:, resource]
        if not in_stream.any() or sizes.sum() <= 0:
            continue
        tenants, positions = _wrap_around(in_stream, sizes)
        tenant_parts.append(tenants)
        unit_parts.append(positions)
    return np.concatenate(tenant_parts), np.concatenate(unit_parts)


def _largest_unit(capacity: FloatArray, usable: BoolArray) -> IntArray:
    """Per tenant (row of ``usable``), its largest usable unit by capacity relative to the total."""
    total = capacity.sum(axis=0)
    size = (capacity / np.where(total > 0, total, 1.0)).sum(axis=1)
    return np.asarray(np.argmax(np.where(usable, size[None, :], -1.0), axis=1), dtype=np.int64)


def initial_columns(model: DrfhModel, coarse: CoarseSolution) -> tuple[IntArray, IntArray]:
    """Spread the coarse allocation over each group's units (``_group_pairs``); plus one unit per tenant."""
    units = model.units
    consumption = model.consumption()  # resource per unit of share
    tenant_parts, unit_parts = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for group in range(coarse.group_share.shape[1]):
        members = np.flatnonzero(coarse.labels == group)
        share = coarse.group_share[:, group]
        present = np.flatnonzero(share > 0)
        positions, unit_positions = _group_pairs(share[present, None] * consumption[present], units.capacity[members])
        tenant_parts.append(present[positions])
        unit_parts.append(members[unit_positions])
    tenants, unit_ids = np.concatenate(tenant_parts), np.concatenate(unit_parts)
    usable = model.usable
    keep = usable[tenants, unit_ids]
    # Every tenant gets at least its largest usable unit, so each level row can move from the start.
    has_unit = usable.any(axis=1)
    best_unit = _largest_unit(units.capacity, usable)
    tenants = np.concatenate([tenants[keep], np.flatnonzero(has_unit)])
    unit_ids = np.concatenate([unit_ids[keep], best_unit[has_unit]])
    return _unique_pairs(tenants, unit_ids)


def _unique_pairs(tenants: IntArray, units: IntArray) -> tuple[IntArray, IntArray]:
    pairs = np.unique(np.stack([tenants, units], axis=1), axis=0)
    return pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)


def _best_pairs(reduced: FloatArray, improving: BoolArray, per_column: int, per_row: int, most: int
                ) -> tuple[IntArray, IntArray]:  # fmt: skip
    """Improving (row, column) entries of a reduced-cost matrix worth adding to a master.

    The best ``per_column`` rows of every column and the best ``per_row`` columns of every row, at most
    ``most`` of them (the largest reduced costs first).
    """
    num_rows, num_columns = reduced.shape
    per_column, per_row = min(per_column, num_rows), min(per_row, num_columns)
    top_rows = np.argpartition(-reduced, per_column - 1, axis=0)[:per_column, :]
    top_columns = np.argpartition(-reduced, per_row - 1, axis=1)[:, :per_row]
    rows = np.concatenate([top_rows.reshape(-1), np.repeat(np.arange(num_rows), per_row)])
    cols = np.concatenate([np.tile(np.arange(num_columns), per_column), top_columns.reshape(-1)])
    ok = improving[rows, cols]
    chosen_rows, chosen_cols = _unique_pairs(rows[ok], cols[ok])
    if len(chosen_rows) > most:
        order = np.argsort(-reduced[chosen_rows, chosen_cols])[:most]
        chosen_rows, chosen_cols = chosen_rows[order], chosen_cols[order]
    return chosen_rows, chosen_cols


class GroupCertificate:
    """Can one group's units carry what the pooled relaxation gave the group? One small LP.

    Variables ``h[j, l]`` are the fraction of tenant j's group usage placed on unit l, so the LP is
    scaled by the data (fractions near 1; usages and capacities of one size) rather than in global
    shares, whose capacity coefficients run into the thousands and turn a 1e-9 round-off in a share
    into a visible excess of capacity. ``max t <= 1`` s.t. every tenant places at least ``t`` of its
    usage (``serve`` rows) and no unit exceeds its capacity; the columns are generated, pricing every
    (tenant, unit) pair of the group at once from the duals.
    """

    def __init__(self, usage: FloatArray, capacity: FloatArray, backend: Backend, budget: Budget,
                 algorithm: str | None = None) -> None:  # fmt: skip
        self.usage, self.capacity = usage, capacity
        tenants, units = _group_pairs(usage, capacity)
        everyone = np.arange(len(usage))
        largest = _largest_unit(capacity, np.ones((len(usage), len(capacity)), dtype=bool))
        self.tenants, self.units = _unique_pairs(np.concatenate([tenants, everyone]),
                                                 np.concatenate([units, largest]))  # fmt: skip
        self._in_master = np.zeros((len(usage), len(capacity)), dtype=bool)
        self._in_master[self.tenants, self.units] = True
        builder = LPBuilder(sense="max", name="drfh_group_certificate")
        level = builder.add_variables("t", (1,), lower=0.0, upper=1.0, cost=1.0)
        share = builder.add_variables("h", (len(self.tenants),), lower=0.0)
        rows, cols, values = self._entries(self.tenants, self.units)
        num_rows = len(usage) + capacity.size
        builder.add_rows("rows", num_rows, np.concatenate([everyone, rows]),
                         np.concatenate([np.full(len(usage), level.start), share.start + cols]),
                         np.concatenate([np.full(len(usage), -1.0), values]),
                         lower=np.concatenate([np.zeros(len(usage)), np.full(capacity.size, -math.inf)]),
                         upper=np.concatenate([np.full(len(usage), math.inf), capacity.reshape(-1)]))  # fmt: skip
        self.session = backend.session(builder.build(), budget.remaining(), algorithm)
        self.budget = budget
        self.solves, self.solve_s = 0, 0.0
        self._x: FloatArray | None = None

    def _entries(self, tenants: IntArray, units: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
        """COO triplets (row, pair position, value) of pair columns: 1 in the serve row, usage in capacity rows."""
        num_res = self.capacity.shape[1]
        use = self.usage[tenants]
        pair_idx, resource_idx = np.nonzero(use)
        rows = np.concatenate([tenants, len(self.usage) + units[pair_idx] * num_res + resource_idx])
        cols = np.concatenate([np.arange(len(tenants)), pair_idx])
        return rows, cols, np.concatenate([np.ones(len(tenants)), use[pair_idx, resource_idx]])

    def solve(self) -> float | None:
        """The largest fraction t of every tenant's usage the units carry (None if an LP fails)."""
        num_tenants, num_res = len(self.usage), self.capacity.shape[1]
        while True:
            outcome = self.session.solve()
            self.session.prefer_primal()  # new columns keep the basis primal feasible
            self.solves += 1
            self.solve_s += outcome.solve_s
            if outcome.status != "optimal" or outcome.x is None:
                return None
            self._x = outcome.x
            level = float(outcome.x[0])
            if level >= 1 - _CERTIFIED or outcome.row_duals is None:
                return level
            duals = outcome.row_duals
            # Reduced cost c - A'y of h[j, l], in the backend's convention (positive improves a maximum).
            reduced = -(duals[:num_tenants, None] + self.usage @ duals[num_tenants:].reshape(-1, num_res).T)
            scale = max(1.0, float(np.abs(duals).max()))
            reduced[self._in_master] = -np.inf
            improving = reduced > _PRICE_TOL * scale
            if not improving.any():
                return level
            tenants, units = _best_pairs(reduced, improving, 1, 3, max(500, num_tenants + len(self.capacity)))
            rows, cols, values = self._entries(tenants, units)
            block = sp.csc_matrix((values, (rows, cols)), shape=(num_tenants + self.capacity.size, len(tenants)))
            count = len(tenants)
            self.session.add_columns(np.zeros(count), np.zeros(count), np.full(count, math.inf), block)
            self._in_master[tenants, units] = True
            self.tenants = np.concatenate([self.tenants, tenants])
            self.units = np.concatenate([self.units, units])

    def fractions(self) -> FloatArray:
        """h of the last solution, each tenant's total trimmed to at most 1 (never more than its share)."""
        assert self._x is not None
        h = np.maximum(self._x[1:], 0.0)
        placed = np.bincount(self.tenants, weights=h, minlength=len(self.usage))
        return np.asarray(h / np.maximum(placed, 1.0)[self.tenants])


PairShares = tuple[IntArray, IntArray, FloatArray, int, float]  # tenant, unit, g, LP solves, seconds


def certify_by_groups(model: DrfhModel, coarse: CoarseSolution, backend: Backend, budget: Budget,
                      algorithm: str | None = None) -> PairShares | None:  # fmt: skip
    """The relaxation's shares on the real units, group by group, or None if a group cannot carry its part.

    Each group's part of the relaxation (``coarse.group_share``) is checked on the group's own units by a
    ``GroupCertificate``: the groups are independent once each keeps its part, so a few dozen LPs the
    size of one group replace one LP over every unit. Returns (tenant, unit, g) pairs with their LP
    solves and seconds.
    """
    consumption = model.consumption()
    parts: list[tuple[IntArray, IntArray, FloatArray]] = []
    solves, seconds = 0, 0.0
    for group in range(coarse.group_share.shape[1]):
        share = coarse.group_share[:, group]
        present = np.flatnonzero(share > 0)
        if len(present) == 0:
            continue
        members = np.flatnonzero(coarse.labels == group)
        certificate = GroupCertificate(share[present, None] * consumption[present], model.units.capacity[members],
                                       backend, budget, algorithm)  # fmt: skip
        level = certificate.solve()
        solves, seconds = solves + certificate.solves, seconds + certificate.solve_s
        if level is None or level < 1 - _CERTIFIED:
            return None
        tenants = present[certificate.tenants]
        parts.append((tenants, members[certificate.units], certificate.fractions() * share[tenants]))
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), solves, seconds
    tenants, units, g = (np.concatenate(column) for column in zip(*parts, strict=True))
    return tenants, units, g, solves, seconds


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
            outcome = self._solve()
            total_s += outcome.solve_s
            if outcome.status != "optimal" or outcome.row_duals is None:
                break
            new_tenants, new_units = self._price(outcome.row_duals)
            if len(new_tenants) == 0:
                break
            self._add(new_tenants, new_units)
        return self._certified(replace(outcome, solve_s=total_s))

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
        return _best_pairs(reduced, improving, self.per_unit, self.per_tenant, self.max_new_columns)

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
    allocation of the real units: if the real units can carry ``G*``, it is leximin-optimal for the real
    problem too (nothing feasible can beat what beats everything feasible). First every group is
    asked to carry its own part of ``G*`` on its own units (``certify_by_groups``, small independent
    LPs). If one cannot, one column-generation LP over every unit, ``max t`` s.t. ``G_i >= t G*_i``,
    lets the parts move between groups; if ``t`` still stays below 1 we fall back to progressive
    filling with column generation, keeping the columns found so far.
    """
    coarse = coarse_solution(model, backend, budget)
    if coarse.filled.status != "optimal":
        return coarse.filled
    grouped = certify_by_groups(model, coarse, backend, budget, algorithm)
    if grouped is not None:
        tenants, units, g, solves, seconds = grouped
        return _certified(model, coarse, tenants, units, g, solves, seconds, "relaxation certified group by group")
    rounds = ColumnGenerationRounds(model, backend, budget, algorithm, coarse=coarse)
    target = coarse.shares
    caps = model.share_caps()
    coefficient = np.where(target > 0, target, 0.0)
    upper = np.where(model.usable.any(axis=1), caps, 0.0)
    outcome = rounds.solve_round(coefficient, np.zeros(model.num_tenants), upper)
    if outcome.status == "optimal" and outcome.level >= 1 - _CERTIFIED:
        tenants, units, g = rounds.pair_shares()
        return _certified(model, coarse, tenants, units, g, rounds.lp_solves, outcome.solve_s,
                          "relaxation certified feasible")  # fmt: skip
    if outcome.status not in ("optimal",):
        return FillingResult(outcome.status, np.zeros(model.num_tenants), np.zeros(model.num_tenants), 0.0, 0,
                             rounds.lp_solves, outcome.solve_s, message=outcome.message)  # fmt: skip
    result = progressive_filling(model, rounds)
    message = f"relaxation not attainable (t = {outcome.level:.9f}); filled with column generation"
    return replace(result, message=message)


def _certified(model: DrfhModel, coarse: CoarseSolution, tenants: IntArray, units: IntArray, g: FloatArray,
               solves: int, seconds: float, message: str) -> FillingResult:  # fmt: skip
    """The relaxation's levels with the certified pair shares on the real units."""
    keep = g > 0
    shares = np.bincount(tenants, weights=g, minlength=model.num_tenants).astype(np.float64)
    filled = coarse.filled
    return FillingResult(
        "optimal", shares, filled.levels, filled.first_level, filled.rounds, solves + filled.lp_solves,
        filled.solve_s + seconds, tenants[keep], units[keep], g[keep], message,
    )  # fmt: skip
