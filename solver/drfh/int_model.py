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
from functools import cached_property

import numpy as np

from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray
from fairpack.solver.drfh.int_levels import LEVEL_RTOL
from fairpack.solver.lp import LinearProgram, LPBuilder


def _symmetry_load(tenants: IntArray, count: int) -> FloatArray:
    """Distinct generic weights per tenant; identical machines are ordered by this weighted load."""
    return np.asarray(1.0 + (tenants % 7) / 7.0 + tenants / (7.0 * count))


@dataclass(frozen=True)
class DrfhIntModel:
    """Fits and coefficients of the indivisible DRFH MILP for one instance.

    ``class_upper[i, c]`` is how many whole tasks of tenant ``i`` one machine of class ``c`` holds alone,
    capped by the tenant's task cap (0 where none fits). The per-machine pairs (``pair_tenant``,
    ``pair_machine``, ``pair_upper``) expand it over every machine of a class; they are built only when
    a per-machine model needs them: the Google cluster with 1,000 tenants has 12.6 million of them, and
    its level relaxations are solved per class instead (``build_level_relaxation``).
    """

    instance: Instance
    class_upper: FloatArray  # (tenants, classes)

    def __post_init__(self) -> None:
        expected = (len(self.instance.tenants), len(self.instance.servers))
        if self.class_upper.shape != expected:
            raise ValueError(f"class_upper has shape {self.class_upper.shape}, expected {expected}")

    @classmethod
    def build_pairs(cls, instance: Instance) -> DrfhIntModel:
        caps = np.floor(instance.task_caps + 1e-9)
        upper = np.broadcast_to(caps[:, None], (len(instance.tenants), len(instance.servers))).copy()
        for resource in range(len(instance.resources)):  # one (tenants, classes) slice at a time
            need = instance.demand[:, resource]
            positive = need > 0
            ratio = instance.capacity[None, :, resource] / np.where(positive, need, 1.0)[:, None]
            upper = np.where(positive[:, None], np.minimum(upper, np.floor(ratio + 1e-9)), upper)
        fits = instance.fits() & (instance.dominant_demand > 0)[:, None] & (upper >= 1)
        return cls(instance, np.where(fits, upper, 0.0))

    @cached_property
    def _pairs(self) -> tuple[IntArray, IntArray, FloatArray]:
        machine_class = self.instance.machine_class()
        tenants, machines = np.nonzero(self.class_upper[:, machine_class] >= 1)
        tenants, machines = tenants.astype(np.int64), machines.astype(np.int64)
        return tenants, machines, self.class_upper[tenants, machine_class[machines]]

    @property
    def pair_tenant(self) -> IntArray:
        return self._pairs[0]

    @property
    def pair_machine(self) -> IntArray:
        return self._pairs[1]

    @property
    def pair_upper(self) -> FloatArray:
        """Tasks of the tenant that fit on the machine alone, capped by its task cap."""
        return self._pairs[2]

    @property
    def num_pairs(self) -> int:
        """Per-machine pairs, counted without building them."""
        return int((self.class_upper >= 1).sum(axis=0) @ self.instance.counts)

    @property
    def num_class_pairs(self) -> int:
        """(tenant, machine class) pairs where a task fits: the columns of the by-class models."""
        return int((self.class_upper >= 1).sum())

    @property
    def num_machines(self) -> int:
        return int(self.instance.counts.sum())

    @cached_property
    def players(self) -> IntArray:
        """Tenants that can run at least one task: the ones leximin ranks."""
        return np.flatnonzero((self.class_upper >= 1).any(axis=1)).astype(np.int64)

    @cached_property
    def player_caps(self) -> FloatArray:
        """Whole-task cap of every player (inf when unbounded)."""
        return np.floor(self.instance.task_caps[self.players] + 1e-9)

    @cached_property
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
        """Tasks every player needs for ``f >= level``: enough to reach the level, or its whole cap.

        The round-off allowance is relative: an absolute one (``ceil(level / step - 1e-9)``) asked nothing
        of a player whose one task is worth a trillion levels (weight 1e-6 beside 1e6), so a level MILP
        "reached" f with that player at no task at all.
        """
        return np.asarray(np.minimum(self.player_caps, np.ceil(level / self.player_step * (1 - LEVEL_RTOL))))

    @cached_property
    def share_unit(self) -> float:
        """The leximin MILPs count weighted shares in this unit (the smallest player's step): HiGHS's absolute
        gap and feasibility tolerances (1e-6, 1e-7) would otherwise swallow whole tasks of a player whose
        step is 3e-8 (weight 1e6), and call an allocation that starves it optimal."""
        step = self.player_step
        return float(step.min()) if len(step) else 1.0

    @cached_property
    def rank_ceilings(self) -> FloatArray:
        """``R_k`` (in ``share_unit``s): no allocation's k-th smallest weighted share exceeds it.

        Every player's share is at most its step times the tasks it can hold (its cap, or what the
        cluster holds of its tasks), so the k-th smallest share is at most the k-th smallest of those.
        Leximin step k only needs shares up to its k-th smallest: a step above ``R_k`` counts as ``R_k``
        in its rows, which changes nothing there, and keeps a weight-1e-6 player's step (1e12 times the
        smallest) out of the rows of the steps that rank the small shares.
        """
        reach = self.class_upper[self.players] @ self.instance.counts.astype(np.float64)
        most = np.minimum(self.player_caps, reach)
        return np.asarray(np.sort(self.player_step * most) / self.share_unit)

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
        counts = tasks.sum(axis=1)[self.players]
        values = np.sort(self.shares(tasks)) / self.share_unit
        step = self.player_step / self.share_unit
        parts = [tasks[self.pair_tenant, self.pair_machine]]
        for k in range(1, steps + 1):
            ceiling, unit = self.rank_ceilings[k - 1], self._step_unit(k)
            r = min(values[k - 1], ceiling)
            parts.append(np.array([r / unit]))
            parts.append(np.maximum(r - np.minimum(step, ceiling) * counts, 0.0) / unit)
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

    def build_level_relaxation(self, required: FloatArray) -> LinearProgram:
        """The LP relaxation of ``build_level`` with each class's machines merged: feasible exactly when it is.

        One continuous count per (tenant, class) where a task fits, bounded by the class's machines times
        what one machine holds, against the class's total capacity. Splitting such counts evenly over the
        class's machines satisfies every per-machine row of the relaxation (capacities, pair bounds, and
        the symmetry rows with equal loads), and summing a per-machine solution gives one of these: so
        both are feasible for the same levels, and this one has classes x tenants columns, not machines
        x tenants (10,000 instead of 12.6 million on the Google cluster with 1,000 tenants).
        """
        instance = self.instance
        tenants, classes = np.nonzero(self.class_upper >= 1)
        counts = instance.counts.astype(np.float64)
        builder = self._packing_builder("drfh_int_level_lp", tenants.astype(np.int64), classes.astype(np.int64),
                                        self.class_upper[tenants, classes] * counts[classes],
                                        instance.capacity * counts[:, None], required, integer=False)  # fmt: skip
        return builder.build()

    def _base_builder(self, name: str, required: FloatArray | None = None) -> LPBuilder:
        """Pair variables, machine capacities and task caps (and minimum task counts), for every model."""
        instance = self.instance
        machine_cap = instance.capacity[instance.machine_class()]
        builder = self._packing_builder(name, self.pair_tenant, self.pair_machine, self.pair_upper, machine_cap,
                                        required, integer=True)  # fmt: skip
        pair_ids = np.arange(len(self.pair_tenant))
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

    def _packing_builder(self, name: str, tenants: IntArray, units: IntArray, upper: FloatArray, capacity: FloatArray,
                         required: FloatArray | None, integer: bool) -> LPBuilder:  # fmt: skip
        """Task counts per (tenant, unit) pair within unit capacities, task caps and minimum task counts."""
        instance = self.instance
        num_res = len(instance.resources)
        local = np.full(len(instance.tenants), -1)
        local[self.players] = np.arange(len(self.players))
        builder = LPBuilder(sense="max", name=name)
        x = builder.add_variables("x", (len(tenants),), lower=0.0, upper=upper, integer=integer)
        pair_ids = x.indices()
        demand = instance.demand[tenants]
        pair_idx, resource_idx = np.nonzero(demand)
        builder.add_rows("capacity", len(capacity) * num_res, units[pair_idx] * num_res + resource_idx,
                         pair_ids[pair_idx], demand[pair_idx, resource_idx], upper=capacity.reshape(-1))  # fmt: skip
        caps = self.player_caps
        builder.add_rows(
            "tasks", len(self.players), local[tenants], pair_ids, 1.0,
            lower=0.0 if required is None else required, upper=np.where(np.isfinite(caps), caps, math.inf),
        )  # fmt: skip
        return builder

    def _step_unit(self, k: int) -> float:
        """Step k's ``r`` and ``d`` are counted in this many ``share_unit``s, so that they stay below 1e6
        (HiGHS's absolute tolerances on rows worth 1e12 fail: "Solve error", "Unbounded") while the
        smallest coefficient, ``1 / unit``, stays far above the 1e-9 it drops as zero."""
        return max(1.0, float(self.rank_ceilings[k - 1]) / 1e6)

    def build(self, steps: int, achieved: FloatArray) -> LinearProgram:
        """The MILP of leximin step ``steps`` (1-based): maximise theta_steps, keep theta_j >= achieved[j-1].

        ``achieved`` is in weighted-share units; the MILP counts them in ``share_unit``s.
        """
        instance = self.instance
        players = self.players
        p = len(players)
        local = np.full(len(instance.tenants), -1)
        local[players] = np.arange(p)
        step = instance.dominant_demand / instance.weights / self.share_unit  # d y_i / d n_i
        builder = self._base_builder(f"drfh_int_step{steps}")
        pair_ids = np.arange(len(self.pair_tenant))
        for k in range(1, steps + 1):
            last = k == steps
            ceiling = float(self.rank_ceilings[k - 1])
            unit = self._step_unit(k)
            coefficient = np.minimum(step, ceiling) / unit  # exact while r_k <= R_k (``rank_ceilings``)
            r = builder.add_variables(f"r{k}", (1,), lower=-math.inf, upper=ceiling / unit,
                                      cost=float(k) if last else 0.0)  # fmt: skip
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
                target = float(achieved[k - 1]) / self.share_unit / unit
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

    def build_repair(self, required: FloatArray, tasks: FloatArray, free: IntArray,
                     tenants: BoolArray | None = None) -> tuple[LinearProgram, FloatArray]:  # fmt: skip
        """Large-neighbourhood repair MILP: re-pack the machines ``free``, every other machine kept as in ``tasks``.

        Each player ``i`` should reach ``required[i]`` tasks (aligned with ``players``); ``d_i >= 0`` is its
        shortfall, and the objective minimises the shortfall in weighted-share units, ``sum_i s_i d_i``, with a
        reward a thousand times smaller for every task placed (so capacity is not left idle). Task caps hold.
        Returns the MILP and a warm start: the free machines as they are in ``tasks``. With ``tenants``
        (a mask over all tenants) only those may hold tasks on the free machines: it must include every
        tenant that holds one there now (``repair_tenants``), so the warm start stays feasible.
        """
        instance = self.instance
        players = self.players
        local = np.full(len(instance.tenants), -1)
        local[players] = np.arange(len(players))
        num_res = len(instance.resources)
        tenant, machine, upper = self._pairs_on(free, tenants)
        slot = np.full(self.num_machines, -1)
        slot[free] = np.arange(len(free))
        counts = tasks.sum(axis=1)[players]
        kept = counts - tasks[players][:, free].sum(axis=1)  # tasks on the machines that stay
        caps = self.player_caps
        step = self.player_step
        unit = step / step.max()

        builder = LPBuilder(sense="min", name="drfh_int_repair")
        x = builder.add_variables("x", (len(tenant),), lower=0.0, upper=upper, cost=-1e-3 * unit[local[tenant]],
                                  integer=True)  # fmt: skip
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

    def apply_repair(self, tasks: FloatArray, free: IntArray, x: FloatArray,
                     tenants: BoolArray | None = None) -> FloatArray:  # fmt: skip
        """``tasks`` with the free machines replaced by the repair MILP's solution ``x`` (same ``tenants``)."""
        tenant, machine, _ = self._pairs_on(free, tenants)
        repaired = tasks.copy()
        repaired[:, free] = 0.0
        np.add.at(repaired, (tenant, machine), np.round(x[: len(tenant)]))
        return repaired

    def repair_tenants(self, required: FloatArray, tasks: FloatArray, free: IntArray) -> BoolArray:
        """The tenants worth a column in a repair of ``free``: those with tasks there, and the players short
        of ``required``. Any other tenant keeps what it has elsewhere, which is already enough: leaving it
        out only narrows the search, and on 1,000 tenants it shrinks the MILP from every tenant that fits
        to the few dozen that matter."""
        chosen = tasks[:, free].sum(axis=1) > 0
        short = np.zeros(len(self.instance.tenants), dtype=bool)
        short[self.players] = tasks.sum(axis=1)[self.players] < required
        return np.asarray(chosen | short)

    def _pairs_on(self, machines: IntArray, tenants: BoolArray | None = None) -> tuple[IntArray, IntArray, FloatArray]:
        """(tenant, machine, upper) of the pairs on the sorted ``machines`` (of ``tenants`` only, if given), in
        pair order (tenant, then machine): the repair MILP's column order. Read from the class fits."""
        classes = self.instance.machine_class()[machines]
        fits = self.class_upper[:, classes] >= 1
        if tenants is not None:
            fits &= tenants[:, None]
        rows, positions = np.nonzero(fits)
        return rows.astype(np.int64), machines[positions], self.class_upper[rows, classes[positions]]
