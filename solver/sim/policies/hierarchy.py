"""Hierarchical scheduling policies (naive and dynamic H-DRF, hierarchical slots) on the one simulator.

A policy answers one question, many thousands of times per run: given how many tasks every leaf
runs and which leaves could launch a task right now, which leaf launches next? All three policies
descend the tree from the root and, at every internal node, follow the *non-blocked* child (some
leaf under it can launch) with the smallest key; they differ only in the key:

- ``naive-hdrf``: the child's weighted dominant share, an internal node consuming the raw sum of its
  subtree's running tasks (what a hierarchical DRF without rescaling does).
- ``dynamic-hdrf``: Bhattacharya et al. (SoCC'13), Algorithms 2-4. An internal node's consumption is
  the sum of its *non-blocked* children's consumption vectors, each rescaled so that its weighted
  dominant share equals the smallest one among them; blocked children are ignored.
- ``hslots``: the number of slots (running tasks) in the child's subtree per unit of weight.

Keys are computed for every node at once, bottom-up one depth level at a time, with children of
each level stored contiguously by parent so that every per-parent aggregate is one ``reduceat``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairpack.models.hierarchy import Tree, tree_of
from fairpack.models.tolerance import FIT_RTOL
from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.workload import Workload

POLICIES: tuple[str, ...] = ("naive-hdrf", "dynamic-hdrf", "hslots")

#: Keys closer than this (relative) are ties, broken by node order: float sums of the same shares
#: computed in different orders must not decide who goes next.
TIE_TOL = 1e-12


class _Level:
    """The children at one depth, grouped by parent: ``nodes[starts[k]:starts[k+1]]`` are children of
    ``parents[k]``."""

    def __init__(self, nodes: IntArray, parent: IntArray, weight: FloatArray) -> None:
        order = np.argsort(parent[nodes], kind="stable")
        self.nodes = nodes[order]
        grouped = parent[self.nodes]
        self.starts = np.flatnonzero(np.concatenate(([True], grouped[1:] != grouped[:-1])))
        self.parents = grouped[self.starts]
        self.segment = np.cumsum(np.concatenate(([False], grouped[1:] != grouped[:-1])))  # parent slot per child
        self.weight = weight[self.nodes]


class HierarchicalPolicy:
    """Picks the next leaf to launch a task under one of the ``POLICIES``.

    Parameters
    ----------
    tree : Tree
        The organisation tree; its leaves are the instance's tenants.
    policy : {"naive-hdrf", "dynamic-hdrf", "hslots"}
        Which key ranks siblings (see the module docstring).
    demand : ndarray, shape (tenants, resources)
        Per-task demand of every tenant.
    total : ndarray, shape (resources,)
        Cluster capacity; dominant shares are taken over it (resources it lacks are left out).
    """

    def __init__(self, tree: Tree, policy: str, demand: FloatArray, total: FloatArray) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")
        self.tree = tree
        self.policy = policy
        self.demand = np.asarray(demand, dtype=np.float64)
        self.inverse_total = np.divide(1.0, total, out=np.zeros_like(total, dtype=np.float64), where=total > 0)
        self.weight = np.asarray(tree.weight, dtype=np.float64)
        self.leaf_nodes = tree.leaf_nodes
        self.num_nodes = tree.num_nodes
        # Deepest level first: a node's own aggregate is final before it feeds its parent's.
        self.levels = [_Level(nodes, tree.parent, self.weight) for nodes in reversed(tree.levels[1:]) if len(nodes)]
        children_order = np.argsort(tree.parent[1:], kind="stable") + 1
        pointer = np.searchsorted(tree.parent[children_order], np.arange(self.num_nodes + 1))
        self.children: list[IntArray] = [children_order[pointer[n] : pointer[n + 1]] for n in range(self.num_nodes)]
        self.node_tenant = tree.tenant

    # ------------------------------------------------------------------------------------------
    # Keys
    # ------------------------------------------------------------------------------------------

    def open_nodes(self, launchable: BoolArray) -> BoolArray:
        """Per node: some leaf of its subtree can launch a task now (the node is not blocked)."""
        open_ = np.zeros(self.num_nodes, dtype=bool)
        open_[self.leaf_nodes] = launchable
        for level in self.levels:
            open_[level.parents] = np.logical_or.reduceat(open_[level.nodes], level.starts)
        return open_

    def keys(self, running: FloatArray, open_: BoolArray) -> FloatArray:
        """Per node, the key siblings are ranked by (lower goes first).

        Parameters
        ----------
        running : ndarray, shape (tenants,)
            Tasks every tenant runs now.
        open_ : ndarray of bool, shape (nodes,)
            ``open_nodes`` of the current launchable leaves (used by ``dynamic-hdrf`` only).
        """
        if self.policy == "hslots":
            count = np.zeros(self.num_nodes)
            count[self.leaf_nodes] = running
            for level in self.levels:
                count[level.parents] = np.add.reduceat(count[level.nodes], level.starts)
            return count / self.weight
        consumption = np.zeros((self.num_nodes, self.demand.shape[1]))
        consumption[self.leaf_nodes] = running[:, None] * self.demand
        if self.policy == "naive-hdrf":
            for level in self.levels:
                consumption[level.parents] = np.add.reduceat(consumption[level.nodes], level.starts, axis=0)
            return (consumption * self.inverse_total).max(axis=1) / self.weight
        return self._dynamic_keys(consumption, open_)

    def _dynamic_keys(self, consumption: FloatArray, open_: BoolArray) -> FloatArray:
        """Algorithm 2 of the paper, for every node at once.

        At a parent ``p`` with non-blocked children ``A(p)``: ``m = min_{c in A(p)} s_c / w_c`` and
        ``C_p = sum_{c in A(p)} C_c * m * w_c / s_c``, so every counted child is scaled to the same
        weighted dominant share ``m``. A child with ``s_c = 0`` makes ``m = 0`` and adds nothing.
        Blocked children neither set ``m`` nor add consumption: counting them is what would give
        n3,2 two thirds of the GPUs in the paper's Fig. 5.
        """
        share = np.zeros(self.num_nodes)
        for level in self.levels:
            nodes = level.nodes
            block = consumption[nodes]
            s = (block * self.inverse_total).max(axis=1)
            share[nodes] = s
            active = open_[nodes]
            key = np.where(active, s / level.weight, np.inf)
            lowest = np.minimum.reduceat(key, level.starts)[level.segment]
            # Counted children get lowest * w / s; blocked or empty ones get 0 (and never inf * 0).
            scaling = np.divide(lowest * level.weight, s, out=np.zeros(len(nodes)), where=active & (s > 0))
            consumption[level.parents] = np.add.reduceat(block * scaling[:, None], level.starts, axis=0)
        share[0] = float((consumption[0] * self.inverse_total).max())
        return share / self.weight

    # ------------------------------------------------------------------------------------------
    # Descent
    # ------------------------------------------------------------------------------------------

    def pick(self, running: FloatArray, launchable: BoolArray) -> int:
        """The tenant that launches next, or -1 when no leaf can launch.

        Descends from the root, at every node following the non-blocked child with the smallest key;
        ties (within ``TIE_TOL``) go to the child listed first in the tree.
        """
        candidates = np.flatnonzero(launchable)
        if len(candidates) <= 1:  # the descent can only end there: skip the keys
            return int(candidates[0]) if len(candidates) else -1
        open_ = self.open_nodes(launchable)
        keys = self.keys(running, open_)
        node = 0
        while True:
            children = self.children[node]
            if not len(children):
                return int(self.node_tenant[node])
            open_children = children[open_[children]]
            values = keys[open_children]
            best = values.min()
            node = int(open_children[np.flatnonzero(values <= best + TIE_TOL * max(1.0, abs(best)))[0]])


class HierarchicalScheduler(BasePolicy):
    """One of ``POLICIES`` on a backlog workload (one endless group per leaf, see ``solver.sim.workload``).

    Which demand next: the leaf :meth:`HierarchicalPolicy.pick` descends to among the leaves that can
    launch now (below their running-task cap, one task fits some machine -- for ``hslots``: admitted to a
    slot and a slot is free). Which machine: the first that fits (``hslots``: the first with a free slot).
    """

    def __init__(self, tree: Tree, policy: str, instance: Instance, slots: int | None = None) -> None:
        self.name = policy
        self.chooser = HierarchicalPolicy(tree, policy, instance.demand, instance.total_capacity)
        self.slots = slots if policy == "hslots" else None
        self.demand = np.asarray(instance.demand, dtype=np.float64)
        # Zero demands never block a fit, whatever the machine lacks.
        self.need = np.where(self.demand > 0, self.demand, -np.inf)
        self.admitted = np.ones(len(instance.tenants), dtype=bool)
        self.per_machine = np.zeros(0, dtype=np.int64)

    def start(self, sim: Simulation) -> None:
        if self.slots is None:
            return
        capacity, instance = sim.cluster.capacity, sim.instance
        # Componentwise largest machine / slots, as in the flat slot scheduler.
        slot = instance.capacity.max(axis=0) / self.slots
        used = slot > 0
        self.per_machine = np.floor((capacity[:, used] / slot[used]).min(axis=1) * (1 + 1e-12)).astype(np.int64)
        self.admitted = np.all(self.demand <= slot * (1 + FIT_RTOL), axis=1) & instance.runnable

    def _free_slots(self, sim: Simulation) -> IntArray:
        assert sim.placed is not None
        return self.per_machine - sim.placed.sum(axis=0).astype(np.int64)

    def launchable(self, sim: Simulation) -> BoolArray:
        below_cap = sim.tenant_running < sim.jobs.tenant_cap
        if self.slots is not None:
            return below_cap & self.admitted & bool((self._free_slots(sim) > 0).any())
        room = sim.cluster.free + sim.cluster.slack
        return below_cap & np.any(np.all(self.need[:, None, :] <= room[None, :, :], axis=2), axis=1)

    def next(self, sim: Simulation) -> tuple[int, int] | None:
        tenant = self.chooser.pick(sim.tenant_running, self.launchable(sim))
        return None if tenant < 0 else (tenant, 1)

    def place(self, sim: Simulation, group: int, most: int) -> list[tuple[int, int]]:
        if self.slots is not None:
            return [(int(np.argmax(self._free_slots(sim) > 0)), 1)]
        room = sim.cluster.free + sim.cluster.slack
        return [(int(np.argmax(np.all(self.need[group] <= room, axis=1))), 1)]


def make_hierarchy_policy(name: str, jobs: Workload, instance: Instance, settings: dict[str, Any]) -> BasePolicy:
    """The registry's factory: ``name`` over the instance's tree (``slots``, default 10, for ``hslots``)."""
    return HierarchicalScheduler(tree_of(instance), name, instance, settings.get("slots", 10))
