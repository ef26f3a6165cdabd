"""DRFH with indivisible tasks: a MILP with integer task counts per tenant and machine.

Variables ``x[p]`` count the tasks of pair ``p = (tenant, machine)``, created only where one task fits
on the machine; ``z`` is the weighted level. Machines of a class are expanded, because whole tasks
must fit on one machine. Two models are built from the same rows:

* ``level``: maximise ``z`` s.t. ``s_i n_i >= w_i z`` for the tenants still growing, where
  ``n_i = sum_m x[i, m]`` and ``s_i`` is the global dominant share of one task;
* ``lift``: maximise how many of the given tenants get one task more than ``floor_tasks`` while
  everybody keeps ``floor_tasks`` (binary ``y_i``: ``n_i >= floor_i + y_i``).

Both keep ``n_i >= floor_tasks_i`` for every tenant, so earlier rounds' levels are never lost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.lp import LinearProgram, LPBuilder
from models.types import Instance

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class DrfhIntModel:
    """Pairs and coefficients of the indivisible DRFH MILP for one instance."""

    instance: Instance
    pair_tenant: IntArray
    pair_machine: IntArray
    pair_upper: FloatArray  # tasks of the tenant that fit on the machine alone, capped by its task cap

    @classmethod
    def build_pairs(cls, instance: Instance) -> DrfhIntModel:
        machine_cap = instance.capacity[instance.machine_class()]
        demand = instance.demand
        fits_class = instance.fits() & (instance.dominant_demand > 0)[:, None]
        fits = fits_class[:, instance.machine_class()]
        tenants, machines = np.nonzero(fits)
        need = demand[tenants]
        room = machine_cap[machines]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(need > 0, room / np.where(need > 0, need, 1.0), np.inf).min(axis=1)
        upper = np.minimum(np.floor(ratio + 1e-9), instance.task_caps[tenants])
        keep = upper >= 1
        return cls(instance, tenants[keep].astype(np.int64), machines[keep].astype(np.int64), upper[keep])

    @property
    def num_machines(self) -> int:
        return int(self.instance.counts.sum())

    def tasks(self, x: FloatArray) -> FloatArray:
        """Task matrix (tenants, machines) from the pair block of a solution vector."""
        counts = np.zeros((len(self.instance.tenants), self.num_machines))
        np.add.at(counts, (self.pair_tenant, self.pair_machine), np.round(x[: len(self.pair_tenant)]))
        return counts

    def start(self, tasks: FloatArray, level: float, lift: int = 0) -> FloatArray:
        """A solution vector (pairs, z, and ``lift`` zero binaries) for warm-starting from a task matrix."""
        return np.concatenate([tasks[self.pair_tenant, self.pair_machine], [level], np.zeros(lift)])

    def build(
        self,
        floor_tasks: FloatArray,
        level_tenants: BoolArray | None = None,
        lift_tenants: IntArray | None = None,
    ) -> LinearProgram:
        """The ``level`` model (``level_tenants`` given) or the ``lift`` model (``lift_tenants`` given)."""
        instance = self.instance
        n = len(instance.tenants)
        num_res = len(instance.resources)
        machine_cap = instance.capacity[instance.machine_class()]
        share = instance.dominant_demand
        pairs = len(self.pair_tenant)
        builder = LPBuilder(sense="max", name="drfh_int")
        x = builder.add_variables("x", (pairs,), lower=0.0, upper=self.pair_upper, integer=True)
        z_cost = 1.0 if level_tenants is not None else 0.0
        z = builder.add_variables("z", (1,), lower=0.0, upper=1.0 / float(instance.weights.min()) + 1.0, cost=z_cost)
        pair_ids = x.indices()
        demand = instance.demand[self.pair_tenant]
        pair_idx, resource_idx = np.nonzero(demand)
        builder.add_rows(
            "capacity",
            self.num_machines * num_res,
            self.pair_machine[pair_idx] * num_res + resource_idx,
            pair_ids[pair_idx],
            demand[pair_idx, resource_idx],
            upper=machine_cap.reshape(-1),
        )
        builder.add_rows(
            "tasks",
            n,
            self.pair_tenant,
            pair_ids,
            1.0,
            lower=floor_tasks,
            upper=np.minimum(instance.task_caps, 1e30),
        )
        if level_tenants is not None:
            growing = np.flatnonzero(level_tenants)
            local = np.full(n, -1)
            local[growing] = np.arange(len(growing))
            on = local[self.pair_tenant] >= 0
            builder.add_rows(
                "level",
                len(growing),
                np.concatenate([local[self.pair_tenant[on]], np.arange(len(growing))]),
                np.concatenate([pair_ids[on], np.full(len(growing), z.start)]),
                np.concatenate([share[self.pair_tenant[on]], -instance.weights[growing]]),
                lower=0.0,
            )
        if lift_tenants is not None:
            k = len(lift_tenants)
            y = builder.add_variables("lift", (k,), lower=0.0, upper=1.0, cost=1.0, integer=True)
            local = np.full(n, -1)
            local[lift_tenants] = np.arange(k)
            on = local[self.pair_tenant] >= 0
            builder.add_rows(
                "lifted",
                k,
                np.concatenate([local[self.pair_tenant[on]], np.arange(k)]),
                np.concatenate([pair_ids[on], y.indices()]),
                np.concatenate([np.ones(int(on.sum())), -np.ones(k)]),
                lower=floor_tasks[lift_tenants],
            )
        return builder.build()
