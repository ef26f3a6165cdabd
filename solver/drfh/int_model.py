"""DRFH with indivisible tasks: max-min by discrete levels, then leximin as a sequence of MILPs.

Variables ``x[p]`` count the tasks of pair ``p = (tenant, machine)``, created only where one task fits
on the machine (machines of a class are expanded: a whole task must fit on one machine). Tenant ``i``
gets the weighted share ``y_i = s_i n_i / w_i`` with ``n_i = sum_m x[i, m]`` and ``s_i`` the global
dominant share of one task.

The max-min objective f (smallest weighted share of an unsatisfied tenant) only takes the values
``k s_i / w_i``; ``f >= L`` holds iff every tenant runs ``min(cap_i, ceil(L w_i / s_i))`` tasks, a
feasibility problem whose LP relaxation, with those rounded-up counts, is tighter than a continuous
level variable (``build_level``).

Leximin is then computed exactly with ordered cumulative sums (Ogryczak and Sliwinski): the sum of the
``k`` smallest shares is ``theta_k(y) = max_r k r - sum_i max(r - y_i, 0)``, which is linear with one
free variable ``r_k`` and ``d_ik >= r_k - y_i, d_ik >= 0``. Maximising ``theta_1, theta_2, ...`` in
turn, each step keeping the optimum of the earlier ones, maximises the sorted share vector
lexicographically; so no tenant can get another task without lowering one that has less.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from models.types import FloatArray, Instance, IntArray
from solver.lp import LinearProgram, LPBuilder


def _symmetry_load(tenants: IntArray, count: int) -> FloatArray:
    """Distinct generic weights per tenant; identical machines are ordered by this weighted load."""
    return np.asarray(1.0 + (tenants % 7) / 7.0 + tenants / (7.0 * count))


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
        fits_class = instance.fits() & (instance.dominant_demand > 0)[:, None]
        tenants, machines = np.nonzero(fits_class[:, instance.machine_class()])
        need = instance.demand[tenants]
        room = machine_cap[machines]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(need > 0, room / np.where(need > 0, need, 1.0), np.inf).min(axis=1)
        upper = np.minimum(np.floor(ratio + 1e-9), np.floor(instance.task_caps[tenants] + 1e-9))
        keep = upper >= 1
        return cls(instance, tenants[keep].astype(np.int64), machines[keep].astype(np.int64), upper[keep])

    @property
    def num_machines(self) -> int:
        return int(self.instance.counts.sum())

    @property
    def players(self) -> IntArray:
        """Tenants that can run at least one task: the ones leximin ranks."""
        return np.unique(self.pair_tenant)

    @property
    def player_caps(self) -> FloatArray:
        """Whole-task cap of every player (inf when unbounded)."""
        return np.floor(self.instance.task_caps[self.players] + 1e-9)

    @property
    def player_step(self) -> FloatArray:
        """Weighted dominant share of one task of every player: f only takes multiples of these."""
        instance = self.instance
        return np.asarray(instance.dominant_demand[self.players] / instance.weights[self.players])

    def max_min_value(self, tasks: FloatArray) -> float:
        """f of a task matrix: the smallest weighted share of a player below its cap (inf if none is)."""
        counts = tasks.sum(axis=1)[self.players]
        hungry = counts < self.player_caps
        return float((counts * self.player_step)[hungry].min()) if hungry.any() else math.inf

    def required(self, level: float) -> FloatArray:
        """Tasks every player needs for ``f >= level``: enough to reach the level, or its whole cap."""
        return np.asarray(np.minimum(self.player_caps, np.ceil(level / self.player_step - 1e-9)))

    def tasks(self, x: FloatArray) -> FloatArray:
        """Task matrix (tenants, machines) from the pair block of a solution vector."""
        counts = np.zeros((len(self.instance.tenants), self.num_machines))
        np.add.at(counts, (self.pair_tenant, self.pair_machine), np.round(x[: len(self.pair_tenant)]))
        return counts

    def shares(self, tasks: FloatArray) -> FloatArray:
        """Weighted dominant share of every player for a task matrix."""
        instance = self.instance
        players = self.players
        return np.asarray(tasks.sum(axis=1)[players] * instance.dominant_demand[players] / instance.weights[players])

    def start(self, tasks: FloatArray, steps: int) -> FloatArray:
        """A feasible solution vector for warm-starting step ``steps`` from a task matrix."""
        values = np.sort(self.shares(tasks))
        parts = [tasks[self.pair_tenant, self.pair_machine]]
        y = self.shares(tasks)
        for k in range(1, steps + 1):
            r = values[k - 1]
            parts.append(np.array([r]))
            parts.append(np.maximum(r - y, 0.0))
        return np.concatenate(parts)

    def canonical(self, tasks: FloatArray) -> FloatArray:
        """The same allocation with each class's machines sorted by the symmetry-breaking load."""
        n = len(self.instance.tenants)
        load = _symmetry_load(np.arange(n), n) @ tasks
        machine_class = self.instance.machine_class()
        order = np.lexsort((-load, machine_class))
        return np.asarray(tasks[:, order])

    def build_level(self, required: FloatArray) -> LinearProgram:
        """Feasibility MILP: every player runs at least ``required`` tasks (aligned with ``players``)."""
        return self._base_builder("drfh_int_level", required).build()

    def _base_builder(self, name: str, required: FloatArray | None = None) -> LPBuilder:
        """Pair variables, machine capacities and task caps (and minimum task counts), for every model."""
        instance = self.instance
        num_res = len(instance.resources)
        machine_cap = instance.capacity[instance.machine_class()]
        players = self.players
        local = np.full(len(instance.tenants), -1)
        local[players] = np.arange(len(players))
        builder = LPBuilder(sense="max", name=name)
        x = builder.add_variables("x", (len(self.pair_tenant),), lower=0.0, upper=self.pair_upper, integer=True)
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
        caps = np.floor(instance.task_caps[players] + 1e-9)
        builder.add_rows(
            "tasks", len(players), local[self.pair_tenant], pair_ids, 1.0,
            lower=0.0 if required is None else required, upper=np.where(np.isfinite(caps), caps, math.inf),
        )  # fmt: skip
        # Identical machines of one class are interchangeable: order them by load (a weighted task
        # count with distinct generic weights), which removes permutations without losing any optimum.
        machine_class = instance.machine_class()
        follows = np.flatnonzero(machine_class[1:] == machine_class[:-1])  # machine m+1 in m's class
        if len(follows):
            load = _symmetry_load(self.pair_tenant, len(instance.tenants))
            by_machine = np.full(self.num_machines, -1)
            by_machine[follows] = np.arange(len(follows))
            first = by_machine[self.pair_machine]  # pair on the leading machine of a couple
            second = np.full(self.num_machines, -1)
            second[follows + 1] = np.arange(len(follows))
            then = second[self.pair_machine]  # pair on the following machine
            lead, trail = first >= 0, then >= 0
            builder.add_rows(
                "symmetry",
                len(follows),
                np.concatenate([first[lead], then[trail]]),
                np.concatenate([pair_ids[lead], pair_ids[trail]]),
                np.concatenate([load[lead], -load[trail]]),
                lower=0.0,
            )
        return builder

    def build(self, steps: int, achieved: FloatArray) -> LinearProgram:
        """The MILP of leximin step ``steps`` (1-based): maximise theta_steps, keep theta_j >= achieved[j-1]."""
        instance = self.instance
        players = self.players
        p = len(players)
        local = np.full(len(instance.tenants), -1)
        local[players] = np.arange(p)
        coefficient = instance.dominant_demand / instance.weights  # d y_i / d n_i
        builder = self._base_builder(f"drfh_int_step{steps}")
        pair_ids = np.arange(len(self.pair_tenant))
        for k in range(1, steps + 1):
            last = k == steps
            r = builder.add_variables(f"r{k}", (1,), lower=-math.inf, cost=float(k) if last else 0.0)
            d = builder.add_variables(f"d{k}", (p,), lower=0.0, cost=-1.0 if last else 0.0)
            # d_ik - r_k + y_i >= 0 with y_i = coefficient_i * sum of the tenant's pair variables.
            builder.add_rows(
                f"below{k}",
                p,
                np.concatenate([np.arange(p), np.arange(p), local[self.pair_tenant]]),
                np.concatenate([d.indices(), np.full(p, r.start), pair_ids]),
                np.concatenate([np.ones(p), -np.ones(p), coefficient[self.pair_tenant]]),
                lower=0.0,
            )
            if not last:
                target = float(achieved[k - 1])
                slack = 1e-9 * max(abs(target), 1e-12)  # the earlier optimum, up to round-off
                builder.add_rows(
                    f"keep{k}",
                    1,
                    np.zeros(p + 1, dtype=np.int64),
                    np.concatenate([[r.start], d.indices()]),
                    np.concatenate([[float(k)], -np.ones(p)]),
                    lower=target - slack,
                )
        return builder.build()

    def build_repair(self, required: FloatArray, tasks: FloatArray, free: IntArray) -> tuple[LinearProgram, FloatArray]:
        """Large-neighbourhood repair MILP: re-pack the machines ``free``, every other machine kept as in ``tasks``.

        Each player ``i`` should reach ``required[i]`` tasks (aligned with ``players``); ``d_i >= 0`` is its
        shortfall, and the objective minimises the shortfall in weighted-share units, ``sum_i s_i d_i``, with a
        reward a thousand times smaller for every task placed (so capacity is not left idle). Task caps hold.
        Returns the MILP and a warm start: the free machines as they are in ``tasks``.
        """
        instance = self.instance
        players = self.players
        local = np.full(len(instance.tenants), -1)
        local[players] = np.arange(len(players))
        num_res = len(instance.resources)
        pairs = self._pairs_on(free)
        tenant, machine = self.pair_tenant[pairs], self.pair_machine[pairs]
        slot = np.full(self.num_machines, -1)
        slot[free] = np.arange(len(free))
        counts = tasks.sum(axis=1)[players]
        kept = counts - tasks[players][:, free].sum(axis=1)  # tasks on the machines that stay
        caps = self.player_caps
        step = self.player_step
        unit = step / step.max()

        builder = LPBuilder(sense="min", name="drfh_int_repair")
        x = builder.add_variables("x", (len(pairs),), lower=0.0, upper=self.pair_upper[pairs],
                                  cost=-1e-3 * unit[local[tenant]], integer=True)  # fmt: skip
        d = builder.add_variables("shortfall", (len(players),), lower=0.0, cost=unit)
        demand = instance.demand[tenant]
        pair_idx, resource_idx = np.nonzero(demand)
        machine_cap = instance.capacity[instance.machine_class()][free]
        builder.add_rows(
            "capacity", len(free) * num_res, slot[machine[pair_idx]] * num_res + resource_idx,
            x.indices()[pair_idx], demand[pair_idx, resource_idx], upper=machine_cap.reshape(-1),
        )  # fmt: skip
        builder.add_rows(
            "reach", len(players), np.concatenate([local[tenant], np.arange(len(players))]),
            np.concatenate([x.indices(), d.indices()]), 1.0, lower=required - kept,
        )  # fmt: skip
        builder.add_rows("caps", len(players), local[tenant], x.indices(), 1.0,
                         upper=np.where(np.isfinite(caps), caps - kept, math.inf))  # fmt: skip
        start_x = tasks[tenant, machine]
        placed = kept + np.bincount(local[tenant], weights=start_x, minlength=len(players))
        start = np.concatenate([start_x, np.maximum(required - placed, 0.0)])
        return builder.build(), start

    def apply_repair(self, tasks: FloatArray, free: IntArray, x: FloatArray) -> FloatArray:
        """``tasks`` with the free machines replaced by the repair MILP's solution ``x``."""
        pairs = self._pairs_on(free)
        repaired = tasks.copy()
        repaired[:, free] = 0.0
        np.add.at(repaired, (self.pair_tenant[pairs], self.pair_machine[pairs]), np.round(x[: len(pairs)]))
        return repaired

    def _pairs_on(self, machines: IntArray) -> IntArray:
        """Indices of the pairs on ``machines``, in pair order (the repair MILP's column order)."""
        chosen = np.zeros(self.num_machines, dtype=bool)
        chosen[machines] = True
        return np.flatnonzero(chosen[self.pair_machine])
