"""The DRFH linear program (Wang et al., heterogeneous servers) and its integer variant.

Variables ``g[i, u]`` are the global dominant share tenant ``i`` receives on placement unit ``u``;
``G[i] = sum_u g[i, u]`` is its global dominant share and ``t`` the common weighted level. One task of
``i`` is worth ``s_i`` of global dominant share (``Instance.dominant_demand``), so ``g / s_i`` tasks
run on ``u`` and consume ``g * demand_i / s_i``.

Row layout (fixed, so drivers can change bounds by index):
``define[i]``: ``G_i - sum_u g_iu = 0``; ``level[i]``: ``G_i - w_i t >= 0`` (switched off by setting the
lower bound to -inf once a tenant is frozen); ``capacity[u, r]``: ``sum_i g_iu d_ir / s_i <= C_ur``.
Column layout: ``G`` (tenants), ``t`` (1), then the ``g`` pair columns.

A capacity row that another row of the same unit implies (``implied_capacity``) may be left empty: it keeps its
index and bound, so the layout does not move, but carries no coefficient, and the LP is that much smaller (on
Gavel's LP written as DRFH, 100 classes x 10 resources with one binding resource each, nine rows in ten).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray
from fairpack.solver.lp import LinearProgram, LPBuilder


@dataclass(frozen=True)
class UnitGrouping:
    """Placement units for divisible tasks: server classes with identical (or proportional) machines merged.

    ``unit_of_class[k]`` is the unit of server class ``k``; ``capacity[u]`` the unit's total capacity.
    Merging is exact for divisible tasks: any allocation of a merged unit splits over its classes in
    proportion to the capacity each holds (``class_fraction``; None: in proportion to machine counts, the
    classes being identical), and each machine then uses that fraction of what the unit uses.
    """

    unit_of_class: IntArray
    capacity: FloatArray  # (units, resources), totals over the unit's machines
    machines: IntArray  # machines per unit
    class_fraction: FloatArray | None = None  # (classes,) share of its unit's capacity a class holds

    @property
    def num_units(self) -> int:
        return int(self.capacity.shape[0])

    @classmethod
    def merge_identical(cls, instance: Instance) -> UnitGrouping:
        per_machine, unit_of_class = np.unique(instance.capacity, axis=0, return_inverse=True)
        unit_of_class = unit_of_class.reshape(-1).astype(np.int64)
        machines = np.bincount(unit_of_class, weights=instance.counts, minlength=len(per_machine)).astype(np.int64)
        return cls(unit_of_class, per_machine * machines[:, None], machines)

    @classmethod
    def merge_proportional(cls, instance: Instance) -> UnitGrouping:
        """Identical machines merged (``merge_identical``), then units that are scaled copies of each other pooled.

        A pooled unit holds ``s_k`` of its shape per class ``k`` (the class's machines times its scale, its largest
        resource). Its capacity is the pooled size times the smallest member shape, resource by resource: the
        shapes agree to 12 digits, and taking the smallest keeps every class's fraction of the unit within its own
        capacity exactly. Without scaled copies this is ``merge_identical`` itself, unit for unit. On Gavel's LP
        written as DRFH every accelerator type of a family is a scaled copy of the others (100 classes, 10 units).
        """
        identical = cls.merge_identical(instance)
        per_machine = identical.capacity / identical.machines[:, None]
        scale = per_machine.max(axis=1, initial=0.0)
        shape = np.divide(per_machine, scale[:, None], out=np.zeros_like(per_machine), where=scale[:, None] > 0)
        # The zero pattern is part of the key, so rounding never merges a machine that lacks a resource.
        key = np.concatenate([np.round(shape, 12), (shape > 0).astype(np.float64)], axis=1)
        _, pool = np.unique(key, axis=0, return_inverse=True)
        pool = pool.reshape(-1).astype(np.int64)
        num_units = int(pool.max(initial=-1)) + 1
        if num_units == identical.num_units:
            return identical
        unit_of_class = pool[identical.unit_of_class]
        size = instance.counts * scale[identical.unit_of_class]
        unit_size = np.bincount(unit_of_class, weights=size, minlength=num_units)
        smallest = np.full((num_units, per_machine.shape[1]), np.inf)
        np.minimum.at(smallest, pool, shape)
        machines = np.bincount(unit_of_class, weights=instance.counts, minlength=num_units).astype(np.int64)
        # A class of empty machines holds nothing; its unit (all empty) splits by machine count.
        fraction = np.divide(size, unit_size[unit_of_class], out=instance.counts / machines[unit_of_class],
                             where=unit_size[unit_of_class] > 0)  # fmt: skip
        return cls(unit_of_class, smallest * unit_size[:, None], machines, fraction)

    def split_to_classes(self, instance: Instance, unit_tasks: FloatArray) -> FloatArray:
        """Spread each unit's tasks over its classes in proportion to their capacity: (tenants, classes)."""
        if self.class_fraction is None:
            fraction = instance.counts / self.machines[self.unit_of_class]
        else:
            fraction = self.class_fraction
        return np.asarray(unit_tasks[:, self.unit_of_class] * fraction[None, :])


def implied_capacity(consumption: FloatArray, capacity: FloatArray) -> BoolArray:
    """Capacity rows (units x resources) that another row of the same unit implies for every allocation.

    Every tenant uses at most ``rho[f, r] = max_i c_ir / c_if`` of resource ``r`` per unit of resource ``f``
    (``c`` the ``consumption``; infinite when a tenant needs ``r`` but not ``f``), so on a unit whose row
    ``f`` holds, ``sum_i c_ir g_iu <= rho[f, r] sum_i c_if g_iu <= rho[f, r] C_uf``: row ``(u, r)`` can never
    bind when ``rho[f, r] C_uf <= C_ur``. This needs only ``g >= 0``, so a row implied here stays implied
    under any bounds on the shares, in every round. Each unit keeps one anchor row, the one that implies most
    of its others, and drops the rows the anchor implies (never the anchor itself, so two rows that imply
    each other do not both go).
    """
    num_units, num_res = capacity.shape
    implied = np.zeros((num_units, num_res), dtype=bool)
    if num_res < 2 or len(consumption) == 0:
        return implied
    # rho[f, r], a max over tenants of ratios, in blocks so a wide instance never holds tenants x R x R at once.
    rho = np.zeros((num_res, num_res))
    block = max(1, 2_000_000 // (num_res * num_res))
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, len(consumption), block):
            part = consumption[start : start + block]
            ratio = part[:, None, :] / part[:, :, None]  # (tenants, f, r)
            ratio[np.isnan(ratio)] = 0.0  # needs neither resource
            np.maximum(rho, ratio.max(axis=0), out=rho)
        # (units, f, r): the most of r a unit can use under its row f (inf x 0 is nan, which implies nothing).
        bound = rho[None, :, :] * capacity[:, :, None]
        implies = (bound <= capacity[:, None, :]) & (capacity[:, :, None] > 0)
    implies[:, np.arange(num_res), np.arange(num_res)] = False
    anchor = np.argmax(implies.sum(axis=2), axis=1)
    implied = implies[np.arange(num_units), anchor]
    return np.asarray(implied)


@dataclass(frozen=True)
class DrfhModel:
    """Coefficients of the DRFH LP for an instance and a unit grouping; builds full or restricted LPs.

    ``live`` (units x resources, None: every row) says which capacity rows get coefficients; the others stay in
    the layout as empty rows (see ``without_implied_rows``).
    """

    instance: Instance
    units: UnitGrouping
    live: BoolArray | None = None

    def without_implied_rows(self) -> DrfhModel:
        """This model with the capacity rows another row implies left empty (``implied_capacity``)."""
        implied = implied_capacity(self.consumption(), self.units.capacity)
        return replace(self, live=None if not implied.any() else ~implied)

    def capacity_entries(self, tenants: IntArray, units: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
        """Nonzero capacity coefficients of the pair columns ``(tenants, units)``: (pair, resource, value).

        Only the unit's live rows are looked at (every row when ``live`` is None), so a wide instance whose rows
        are mostly implied never holds pairs x resources: 100,000 pairs x 100 resources took 1 s to build.
        """
        num_res = len(self.instance.resources)
        live = np.ones((self.units.num_units, num_res), dtype=bool) if self.live is None else self.live
        per_unit = live.sum(axis=1)
        live_resources = np.nonzero(live)[1]  # grouped by unit, in unit order
        first = np.concatenate([[0], np.cumsum(per_unit)[:-1]])
        counts = per_unit[units]
        pair_idx = np.repeat(np.arange(len(tenants)), counts)
        offsets = np.arange(len(pair_idx)) - np.repeat(np.cumsum(counts) - counts, counts)
        resource_idx = live_resources[np.repeat(first[units], counts) + offsets]
        values = self.consumption()[tenants[pair_idx], resource_idx]
        keep = values != 0
        return pair_idx[keep], resource_idx[keep], values[keep]

    @property
    def num_tenants(self) -> int:
        return len(self.instance.tenants)

    @property
    def share_per_task(self) -> FloatArray:
        return self.instance.dominant_demand

    @cached_property
    def usable(self) -> npt.NDArray[np.bool_]:
        """Whether tenant i can run on unit u at all: every resource it needs exists there (read-only, cached)."""
        needs = self.instance.demand > 0
        present = self.units.capacity > 0
        # A tenant can use unit u iff it needs no resource that u lacks (a count, exact in floats; numpy's
        # integer matrix product has no BLAS behind it).
        lacks = needs.astype(np.float64) @ (~present).astype(np.float64).T
        usable = lacks == 0
        usable &= (self.share_per_task > 0)[:, None]
        usable.setflags(write=False)
        return np.asarray(usable)

    @cached_property
    def _everywhere(self) -> bool:
        """Whether every tenant can use every unit (nothing to mask when pricing)."""
        return bool(self.usable.all())

    def consumption(self) -> FloatArray:
        """Resource use per unit of global dominant share, d_ir / s_i, shape (tenants, resources) (read-only)."""
        return self._consumption

    @cached_property
    def _consumption(self) -> FloatArray:
        s = self.share_per_task
        per_share = np.divide(self.instance.demand, s[:, None], out=np.zeros_like(self.instance.demand),
                              where=s[:, None] > 0)  # fmt: skip
        per_share.setflags(write=False)
        return per_share

    def share_caps(self) -> FloatArray:
        """Upper bound on each tenant's global dominant share from its task cap (inf when unbounded)."""
        share = self.share_per_task
        # A tenant that can run nothing (share 0) gets cap 0, not inf * 0.
        return np.where(share > 0, self.instance.task_caps * np.where(share > 0, share, 1.0), 0.0)

    @property
    def capacity_rows(self) -> int:
        """Capacity rows with coefficients: units x resources, less the implied rows left empty."""
        return self.units.num_units * len(self.instance.resources) if self.live is None else int(self.live.sum())

    # Row indices of the fixed layout: the first num_tenants rows define each tenant's share.
    def level_rows(self) -> IntArray:
        return np.arange(self.num_tenants, 2 * self.num_tenants, dtype=np.int64)

    def capacity_row(self, unit: IntArray, resource: IntArray) -> IntArray:
        return 2 * self.num_tenants + unit * len(self.instance.resources) + resource

    def pair_columns(self, tenants: IntArray, units: IntArray) -> sp.csc_matrix:
        """CSC block of the ``g`` columns for the given (tenant, unit) pairs over all rows."""
        num_res = len(self.instance.resources)
        pairs = len(tenants)
        pair_idx, resource_idx, values = self.capacity_entries(tenants, units)
        rows = np.concatenate([tenants, self.capacity_row(units[pair_idx], resource_idx)])
        cols = np.concatenate([np.arange(pairs), pair_idx])
        vals = np.concatenate([-np.ones(pairs), values])
        num_rows = 2 * self.num_tenants + self.units.num_units * num_res
        return sp.csc_matrix((vals, (rows, cols)), shape=(num_rows, pairs))

    def build(self, tenants: IntArray, units: IntArray, t_upper: float) -> LinearProgram:
        """The round LP (max t) restricted to the given pair columns, all tenants active, G in [0, cap]."""
        n = self.num_tenants
        num_res = len(self.instance.resources)
        tenants = np.asarray(tenants, dtype=np.int64)
        units = np.asarray(units, dtype=np.int64)
        builder = LPBuilder(sense="max", name="drfh")
        share = builder.add_variables("G", (n,), lower=0.0, upper=self.share_caps())
        level = builder.add_variables("t", (1,), lower=0.0, upper=t_upper, cost=1.0)
        g = builder.add_variables("g", (len(tenants),), lower=0.0)
        pairs = np.arange(len(tenants))
        builder.add_rows(
            "define",
            n,
            np.concatenate([np.arange(n), tenants]),
            np.concatenate([share.indices(), g.start + pairs]),
            np.concatenate([np.ones(n), -np.ones(len(tenants))]),
            lower=0.0,
            upper=0.0,
        )
        builder.add_rows(
            "level",
            n,
            np.concatenate([np.arange(n), np.arange(n)]),
            np.concatenate([share.indices(), np.full(n, level.start)]),
            np.concatenate([np.ones(n), -self.instance.weights]),
            lower=0.0,
        )
        pair_idx, resource_idx, values = self.capacity_entries(tenants, units)
        builder.add_rows(
            "capacity",
            self.units.num_units * num_res,
            units[pair_idx] * num_res + resource_idx,
            g.start + pair_idx,
            values,
            upper=self.units.capacity.reshape(-1),
        )
        return builder.build()

    def cheapest_units(self, prices: FloatArray) -> tuple[FloatArray, IntArray]:
        """Each tenant's cheapest usable unit at ``prices`` (units x resources) per unit of global dominant share.

        Returns ``m_i = min_u c_i . p_u`` (0 for a tenant with no usable unit) and that unit. A sum of outer
        products over the priced resources (a matrix product with an inner dimension of 2 or 3 is several times
        slower), in blocks of tenants so that a wide cluster never holds tenants x units at once.
        """
        consumption, usable = self.consumption(), self.usable
        restricted = not self._everywhere
        n, num_units = len(consumption), self.units.num_units
        priced = np.flatnonzero(np.any(prices != 0, axis=0))
        cheapest, unit = np.zeros(n), np.zeros(n, dtype=np.int64)
        block = max(1, 4_000_000 // max(num_units, 1))
        for start in range(0, n, block):
            stop = min(n, start + block)
            costs = np.zeros((stop - start, num_units))
            for r in priced:
                costs += consumption[start:stop, r, None] * prices[None, :, r]
            if restricted:
                costs[~usable[start:stop]] = np.inf
            unit[start:stop] = np.argmin(costs, axis=1)
            best = costs[np.arange(stop - start), unit[start:stop]]
            cheapest[start:stop] = np.where(np.isfinite(best), best, 0.0)
        return cheapest, unit

    def level_bound(self, prices: FloatArray, coefficient: FloatArray, lower: FloatArray, t_upper: float) -> float:
        """An upper bound on a round's level (max t s.t. G_i >= coefficient_i t, G >= lower) from any prices.

        Placing a unit of tenant ``i``'s share anywhere costs at least ``m_i`` at prices ``p >= 0`` on the capacity
        rows (``cheapest_units``), and everything placed costs at most ``p . C``; so every feasible level has
        ``t sum_growing coefficient_i m_i + sum_others lower_i m_i <= p . C``. At the LP's optimal duals the bound
        is the optimum itself, so it certifies a solver's answer independently of the solver's tolerances.
        """
        cheapest, _ = self.cheapest_units(prices)
        grows = coefficient > 0
        growth = float(coefficient[grows] @ cheapest[grows])
        budget = float((prices * self.units.capacity).sum()) - float(lower[~grows] @ cheapest[~grows])
        return t_upper if growth <= 0 else min(t_upper, budget / growth)

    def all_pairs(self) -> tuple[IntArray, IntArray]:
        tenants, units = np.nonzero(self.usable)
        return tenants.astype(np.int64), units.astype(np.int64)
