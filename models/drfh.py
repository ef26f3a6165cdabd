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

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from models.lp import LinearProgram, LPBuilder
from models.types import Instance

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


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
        return np.divide(self.instance.demand, s[:, None], out=np.zeros_like(self.instance.demand), where=s[:, None] > 0)

    def share_caps(self) -> FloatArray:
        """Upper bound on each tenant's global dominant share from its task cap (inf when unbounded)."""
        caps = self.instance.task_caps * self.share_per_task
        return np.where(np.isnan(caps), 0.0, caps)

    # Row indices of the fixed layout.
    def define_rows(self) -> IntArray:
        return np.arange(self.num_tenants, dtype=np.int64)

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


def build_drfh_int(
    instance: Instance,
    lower_tasks: FloatArray,
    active: npt.NDArray[np.bool_],
    objective: str = "level",
) -> LinearProgram:
    """The indivisible-task MILP on individual machines.

    ``x[i, m]`` integer tasks of tenant ``i`` on machine ``m``; ``z`` the weighted level. Frozen tenants
    (``~active``) keep at least ``lower_tasks``; active ones must reach ``w_i z`` in dominant share and
    at least ``lower_tasks`` too. With ``objective='level'`` it maximises ``z``; with ``'tasks'`` it
    fixes nothing more and maximises the active tenants' total dominant share (used to probe growth).
    """
    demand = instance.demand
    share = instance.dominant_demand
    machine_cap = instance.capacity[instance.machine_class()]
    n, machines = len(instance.tenants), machine_cap.shape[0]
    fits = np.all(demand[:, None, :] <= machine_cap[None, :, :] * (1 + 1e-12), axis=2) & (share > 0)[:, None]
    # A task cap bounds each per-machine count too; so does how many tasks fit on the machine alone.
    with np.errstate(divide="ignore", invalid="ignore"):
        per_machine = np.where(demand[:, None, :] > 0, machine_cap[None, :, :] / demand[:, None, :], np.inf).min(axis=2)
    upper = np.where(fits, np.minimum(np.floor(per_machine + 1e-9), instance.task_caps[:, None]), 0.0)
    builder = LPBuilder(sense="max", name="drfh_int")
    x = builder.add_variables("x", (n, machines), lower=0.0, upper=upper, integer=True)
    level_cost = 1.0 if objective == "level" else 0.0
    z_upper = 1.0 / float(instance.weights.min()) + 1.0
    z = builder.add_variables("z", (1,), lower=0.0, upper=z_upper, cost=level_cost)
    if objective == "tasks":
        builder._objective[0] = (np.where(active, share, 0.0)[:, None] * np.ones((1, machines))).reshape(-1)
    xi = x.indices()
    # Capacity of every machine and resource.
    num_res = len(instance.resources)
    rows = np.repeat(np.arange(machines * num_res).reshape(machines, num_res)[None, :, :], n, axis=0)
    cols = np.repeat(xi[:, :, None], num_res, axis=2)
    vals = np.repeat(demand[:, None, :], machines, axis=1)
    keep = vals != 0
    builder.add_rows("capacity", machines * num_res, rows[keep], cols[keep], vals[keep], upper=machine_cap.reshape(-1))
    # Task caps over all machines.
    caps = instance.task_caps
    finite = np.isfinite(caps)
    builder.add_rows(
        "cap",
        n,
        np.repeat(np.arange(n), machines),
        xi.reshape(-1),
        1.0,
        upper=np.where(finite, caps, math.inf),
    )
    # Keep earlier levels: total tasks >= lower_tasks.
    builder.add_rows("keep", n, np.repeat(np.arange(n), machines), xi.reshape(-1), 1.0, lower=lower_tasks)
    if objective == "level":
        act = np.flatnonzero(active)
        k = len(act)
        rows_level = np.concatenate([np.repeat(np.arange(k), machines), np.arange(k)])
        cols_level = np.concatenate([xi[act].reshape(-1), np.full(k, z.start)])
        vals_level = np.concatenate([np.repeat(share[act], machines), -instance.weights[act]])
        builder.add_rows("level", k, rows_level, cols_level, vals_level, lower=0.0)
    return builder.build()
