"""drfh-int over packing patterns: identical machines aggregated, one integer per (class, pattern).

A pattern of machine class ``c`` is an integer task vector ``a`` (one entry per player) that fits on
one machine of the class. Any allocation is a choice of one pattern per machine, so with ``z[p]`` the
number of class-``c`` machines that use pattern ``p`` the allocation is described by
``n = sum_p z[p] a_p`` and ``sum_{p of c} z[p] <= count_c``; machines of one class are no longer told
apart, which removes their symmetry entirely. Over a restricted pool of patterns this is a small
MILP whose every solution is a real allocation (``expand``); its LP relaxation over all patterns (the
configuration LP) is solved by column generation, pricing a new pattern with one small knapsack per
class (``build_pricing``).

The master maximises a level ``t``: a player whose cap lies at or below ``low`` (the level already
reached) must hold its cap; one whose cap level lies in ``(low, top]`` must reach ``t`` or its cap (a
binary picks which; in the LP relaxation it must hold its cap); every other player must reach ``t``.
Patterns may hold more tasks than a cap: ``expand`` drops the excess, which leaves that player at
its cap, so the level is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fairpack.models.types import BoolArray, FloatArray, IntArray
from fairpack.solver.drfh.int_model import DrfhIntModel
from fairpack.solver.lp import LinearProgram, LPBuilder


@dataclass(frozen=True)
class PatternModel:
    """Players, per-class fits and capacities of the aggregated (pattern) form of one instance."""

    base: DrfhIntModel
    players: IntArray
    caps: FloatArray  # task cap per player (inf when unbounded)
    step: FloatArray  # weighted dominant share of one task per player
    demand: FloatArray  # (players, resources)
    upper: FloatArray  # (players, classes): tasks that fit on one machine of the class alone, capped

    @classmethod
    def from_model(cls, base: DrfhIntModel) -> PatternModel:
        instance = base.instance
        players = base.players
        caps, step = base.player_caps, base.player_step
        demand = instance.demand[players]
        capacity = instance.capacity
        positive = demand[:, None, :] > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(positive, capacity[None, :, :] / np.where(positive, demand[:, None, :], 1.0), np.inf)
        upper = np.minimum(np.floor(ratio.min(axis=2) + 1e-9), caps[:, None])
        return cls(base, players, caps, step, demand, np.where(instance.fits()[players], upper, 0.0))

    @property
    def counts(self) -> IntArray:
        return self.base.instance.counts

    def machine_patterns(self, tasks: FloatArray) -> tuple[FloatArray, IntArray]:
        """The distinct patterns (rows over players) and their classes used by a task matrix."""
        columns = np.round(tasks[self.players]).T  # (machines, players)
        keyed = np.column_stack([self.base.instance.machine_class().astype(np.float64), columns])
        unique = np.unique(keyed, axis=0)
        return unique[:, 1:], unique[:, 0].astype(np.int64)

    def pattern_counts(self, tasks: FloatArray, patterns: FloatArray, pattern_class: IntArray) -> FloatArray:
        """How many machines of a task matrix use each pool pattern (all its machines must be in the pool)."""
        columns = np.round(tasks[self.players]).T
        keyed = np.column_stack([self.base.instance.machine_class().astype(np.float64), columns])
        pool = np.column_stack([pattern_class.astype(np.float64), patterns])
        # Rows are matched through one sort of both tables (not a machines x patterns x players
        # comparison, which is 148 GiB on the Google cluster with 1,000 tenants).
        _, label = np.unique(np.vstack([pool, keyed]), axis=0, return_inverse=True)
        label = label.reshape(-1)
        per_label = np.bincount(label[len(pool) :], minlength=int(label.max(initial=-1)) + 1)
        return np.asarray(per_label[label[: len(pool)]], dtype=np.float64)

    def roles(self, low: float, top: float) -> tuple[BoolArray, BoolArray]:
        """(forced, crossing): players that must hold their cap, and those whose cap level is in (low, top]."""
        cap_level = self.caps * self.step
        forced = cap_level <= low * (1 + 1e-12)
        crossing = ~forced & (cap_level <= top * (1 + 1e-12))
        return forced, crossing

    def build_master(
        self, patterns: FloatArray, pattern_class: IntArray, low: float, top: float, integer: bool
    ) -> LinearProgram:
        """Maximise the level ``t`` over pattern counts (columns: z, t, then the crossing binaries).

        Rows: one ``cover`` row per player (``n_i - t / step_i >= 0``, or ``n_i >= cap_i``), then one
        ``count`` row per class; with ``integer`` also ``at_cap`` rows for the crossing players.
        """
        n = len(self.players)
        forced, crossing = self.roles(low, top)
        integer_crossing = integer and bool(crossing.any())
        with_level = ~forced & ~crossing | (crossing & integer_crossing)  # rows that hold t
        builder = LPBuilder(sense="max", name="drfh_int_patterns")
        z = builder.add_variables("z", (len(patterns),), upper=self.counts[pattern_class].astype(np.float64),
                                  integer=integer)  # fmt: skip
        t = builder.add_variables("t", (1,), lower=0.0, upper=top * (1 + 1e-9) if integer else math.inf, cost=1.0)
        pattern_idx, player_idx = np.nonzero(patterns)
        rows = [player_idx]
        cols = [z.indices()[pattern_idx]]
        vals = [patterns[pattern_idx, player_idx]]
        lower = np.zeros(n)
        level_rows = np.flatnonzero(with_level)
        rows.append(level_rows)
        cols.append(np.full(len(level_rows), t.start))
        vals.append(-1.0 / self.step[level_rows])
        at_cap = ~with_level
        lower[at_cap] = self.caps[at_cap]
        cross = np.flatnonzero(crossing) if integer_crossing else np.zeros(0, dtype=np.int64)
        if len(cross):
            b = builder.add_variables("b", (len(cross),), upper=1.0, integer=True)
            rows.append(cross)  # n_i - t / step_i + (top / step_i) b_i >= 0: b_i = 1 lifts the level row
            cols.append(b.indices())
            vals.append(top / self.step[cross])
        builder.add_rows("cover", n, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), lower=lower)
        builder.add_rows("count", len(self.counts), pattern_class, z.indices(), 1.0,
                         upper=self.counts.astype(np.float64))  # fmt: skip
        if len(cross):
            local = np.full(n, -1)
            local[cross] = np.arange(len(cross))
            on = local[player_idx] >= 0
            builder.add_rows(  # n_i >= cap_i b_i
                "at_cap",
                len(cross),
                np.concatenate([local[player_idx[on]], np.arange(len(cross))]),
                np.concatenate([z.indices()[pattern_idx[on]], b.indices()]),
                np.concatenate([patterns[pattern_idx[on], player_idx[on]], -self.caps[cross]]),
                lower=0.0,
            )
        return builder.build()

    def master_start(
        self, counts: FloatArray, patterns: FloatArray, pattern_class: IntArray, low: float, top: float
    ) -> FloatArray:
        """A feasible point of the integer master from pattern counts (their level, the binaries)."""
        n_tasks = counts @ patterns
        _, crossing = self.roles(low, top)
        hungry = n_tasks < self.caps
        level = float((n_tasks * self.step)[hungry].min()) if hungry.any() else top
        level = min(level, top)
        b = (n_tasks[crossing] >= self.caps[crossing]).astype(np.float64)
        return np.concatenate([counts, [level], b])

    def build_pricing(self, class_index: int, values: FloatArray) -> LinearProgram:
        """Knapsack: the pattern of ``class_index`` with the largest total value (``values`` per task)."""
        capacity = self.base.instance.capacity[class_index]
        builder = LPBuilder(sense="max", name=f"drfh_int_pricing{class_index}")
        a = builder.add_variables("a", (len(self.players),), upper=self.upper[:, class_index], cost=values,
                                  integer=True)  # fmt: skip
        resource_idx, player_idx = np.nonzero(self.demand.T)
        builder.add_rows("capacity", len(capacity), resource_idx, a.indices()[player_idx],
                         self.demand.T[resource_idx, player_idx], upper=capacity)  # fmt: skip
        return builder.build()

    def expand(self, patterns: FloatArray, pattern_class: IntArray, counts: FloatArray) -> FloatArray:
        """Task matrix (tenants, machines) placing ``counts[p]`` machines on pattern ``p``, excess over caps dropped."""
        instance = self.base.instance
        machine_class = instance.machine_class()
        whole = np.round(counts).astype(np.int64)
        order = np.argsort(pattern_class, kind="stable")
        chosen = np.repeat(order, whole[order])  # patterns, grouped by class in class order
        per_class = np.bincount(pattern_class[chosen], minlength=len(instance.servers))
        starts = np.concatenate([[0], np.cumsum(instance.counts)[:-1]])
        machines = starts[pattern_class[chosen]] + (
            np.arange(len(chosen)) - np.concatenate([[0], np.cumsum(per_class)[:-1]])[pattern_class[chosen]]
        )
        if np.any(per_class > instance.counts) or np.any(machine_class[machines] != pattern_class[chosen]):
            raise ValueError("pattern counts exceed a class's machines")
        tasks = np.zeros((len(instance.tenants), len(machine_class)))
        tasks[np.ix_(self.players, machines)] = patterns[chosen].T
        excess = tasks[self.players].sum(axis=1) - self.caps
        for row in np.flatnonzero(excess > 0):  # one short pass per over-cap player
            held = tasks[self.players[row]]
            after = np.cumsum(held[::-1])[::-1] - held  # tasks on later machines
            tasks[self.players[row]] = held - np.clip(excess[row] - after, 0.0, held)
        return tasks
