"""The DRFH linear program (Wang et al., heterogeneous servers) and its integer variant.

Variables ``g[i, u]`` are the global dominant share tenant ``i`` receives on placement unit ``u``;
``G[i] = sum_u g[i, u]`` is its global dominant share and ``t`` the common weighted level. One task of
``i`` is worth ``s_i`` of global dominant share (``Instance.dominant_demand``), so ``g / s_i`` tasks
run on ``u`` and consume ``g * demand_i / s_i``.

Row layout (fixed, so drivers can change bounds by index):
``define[i]``: ``G_i - sum_u g_iu = 0``; ``level[i]``: ``G_i - w_i t >= 0`` (switched off by setting the
lower bound to -inf once a tenant is frozen); ``capacity[u, r]``: ``sum_i g_iu d_ir / s_i <= C_ur``.
Column layout: ``G`` (tenants), ``t`` (1), then the ``g`` pair columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from fairpack.models.types import FloatArray, Instance, IntArray
from fairpack.solver.lp import LinearProgram, LPBuilder


@dataclass(frozen=True)
class UnitGrouping:
    """Placement units for divisible tasks: server classes with identical machines merged.

    ``unit_of_class[k]`` is the unit of server class ``k``; ``capacity[u]`` the unit's total capacity.
    Merging is exact for divisible tasks: any allocation of a merged unit splits over its machines in
    proportion to their count.
    """

    unit_of_class: IntArray
    capacity: FloatArray  # (units, resources), totals over the unit's machines
    machines: IntArray  # machines per unit

    @property
    def num_units(self) -> int:
        return int(self.capacity.shape[0])

    @classmethod
    def merge_identical(cls, instance: Instance) -> UnitGrouping:
        per_machine, unit_of_class = np.unique(instance.capacity, axis=0, return_inverse=True)
        unit_of_class = unit_of_class.reshape(-1).astype(np.int64)
        machines = np.bincount(unit_of_class, weights=instance.counts, minlength=len(per_machine)).astype(np.int64)
        return cls(unit_of_class, per_machine * machines[:, None], machines)

    def split_to_classes(self, instance: Instance, unit_tasks: FloatArray) -> FloatArray:
        """Spread each unit's tasks over its classes in proportion to machine counts: (tenants, classes)."""
        fraction = instance.counts / self.machines[self.unit_of_class]
        return np.asarray(unit_tasks[:, self.unit_of_class] * fraction[None, :])


@dataclass(frozen=True)
class DrfhModel:
    """Coefficients of the DRFH LP for an instance and a unit grouping; builds full or restricted LPs."""

    instance: Instance
    units: UnitGrouping

    @property
    def num_tenants(self) -> int:
        return len(self.instance.tenants)

    @property
    def share_per_task(self) -> FloatArray:
        return self.instance.dominant_demand

    @property
    def usable(self) -> npt.NDArray[np.bool_]:
        """Whether tenant i can run on unit u at all: every resource it needs exists there."""
        needs = self.instance.demand > 0
        present = self.units.capacity > 0
        # A tenant can use unit u iff it needs no resource that u lacks.
        lacks = needs.astype(np.int64) @ (~present).astype(np.int64).T
        usable = lacks == 0
        usable &= (self.share_per_task > 0)[:, None]
        return np.asarray(usable)

    def consumption(self) -> FloatArray:
        """Resource use per unit of global dominant share, d_ir / s_i, shape (tenants, resources)."""
        s = self.share_per_task
        return np.divide(
            self.instance.demand, s[:, None], out=np.zeros_like(self.instance.demand), where=s[:, None] > 0
        )

    def share_caps(self) -> FloatArray:
        """Upper bound on each tenant's global dominant share from its task cap (inf when unbounded)."""
        share = self.share_per_task
        # A tenant that can run nothing (share 0) gets cap 0, not inf * 0.
        return np.where(share > 0, self.instance.task_caps * np.where(share > 0, share, 1.0), 0.0)

    @property
    def capacity_rows(self) -> int:
        """Rows of the capacity constraints: units x resources."""
        return self.units.num_units * len(self.instance.resources)

    # Row indices of the fixed layout: the first num_tenants rows define each tenant's share.
    def level_rows(self) -> IntArray:
        return np.arange(self.num_tenants, 2 * self.num_tenants, dtype=np.int64)

    def capacity_row(self, unit: IntArray, resource: IntArray) -> IntArray:
        return 2 * self.num_tenants + unit * len(self.instance.resources) + resource

    def pair_columns(self, tenants: IntArray, units: IntArray) -> sp.csc_matrix:
        """CSC block of the ``g`` columns for the given (tenant, unit) pairs over all rows."""
        num_res = len(self.instance.resources)
        per_share = self.consumption()
        pairs = len(tenants)
        use = per_share[tenants]  # (pairs, resources)
        pair_idx, resource_idx = np.nonzero(use)
        rows = np.concatenate([tenants, self.capacity_row(units[pair_idx], resource_idx)])
        cols = np.concatenate([np.arange(pairs), pair_idx])
        vals = np.concatenate([-np.ones(pairs), use[pair_idx, resource_idx]])
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
        use = self.consumption()[tenants]
        pair_idx, resource_idx = np.nonzero(use)
        builder.add_rows(
            "capacity",
            self.units.num_units * num_res,
            units[pair_idx] * num_res + resource_idx,
            g.start + pair_idx,
            use[pair_idx, resource_idx],
            upper=self.units.capacity.reshape(-1),
        )
        return builder.build()

    def all_pairs(self) -> tuple[IntArray, IntArray]:
        tenants, units = np.nonzero(self.usable)
        return tenants.astype(np.int64), units.astype(np.int64)
