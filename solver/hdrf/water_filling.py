"""Static H-DRF computed exactly by event-driven water-filling over the org tree.

The allocation is the limit, as the step goes to zero, of the paper's progressive filling
(Bhattacharya et al., SoCC'13, Algorithm 1; ``solver.hdrf.reference`` is that ε-algorithm): descend
from the root to the demanding child with the lowest weighted dominant share, give the leaf reached a
sliver of dominant share, block every leaf that needs a saturated resource or holds its task cap.
A node's consumption is the sum of its leaves'; its dominant share the largest component over the
cluster total.

In the limit every leaf grows linearly between *events*, so we jump from event to event. At each
internal node the growing children at the lowest weighted share are *active*; the others wait.
Bottom-up, every growing node gets a growth mode:

- *rising*: growing it raises its dominant share; its rates are per unit of that share, and the
  active children of a rising parent grow at rates proportional to their weights, which keeps their
  weighted shares equal.
- *flat*: it can grow without raising its dominant share, because its largest component is frozen
  (left by a blocked leaf) and its growing leaves use other resources. In the ε-algorithm a flat
  child stays the minimum while it is served, so it is served alone: flat active children take
  priority over rising ones and their siblings wait. Several flat children are served round robin,
  i.e. at equal rates of leaf dominant share (a flat node's rates are normalised to one unit of
  leaf share per unit of time).

Events are the first of: a resource saturating, a leaf reaching its cap, a component of a node
overtaking its dominant share (its dominant resource changes, or a flat node starts rising), a
waiting child being caught up by its siblings' level. Each phase is a handful of numpy passes over
the tree's depth levels, so trees of 100,000 leaves are cheap.

On heterogeneous servers (``pooled=False``) the allocation must also be placeable: leaf shares are
global dominant shares as in DRFH and every phase asks an LP how far the growth can go with the
machines' capacities (``solver.drfh.model.DrfhModel``, identical machines merged). When the LP stops short
of the next event, the leaves that cannot grow at all with everybody else kept at their shares are
blocked, which is what saturation means on one pool; a probe LP per growing leaf decides that.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from models.hierarchy import Tree, tree_of
from models.result import Status, UnitKind
from models.types import BoolArray, FloatArray, Instance, IntArray
from solver.backends import Backend, get_backend
from solver.drfh.model import DrfhModel, UnitGrouping

_NONE, _RISING, _FLAT = 0, 1, 2
_TIE = 1e-10  # relative: weighted shares this close are tied
_EXACT = 1e-12  # absolute, on shares <= 1: components this close to a node's share are dominant
_GROW = 1e-9  # a probe that lets a leaf grow less than this (relative) means it is blocked


@dataclass
class HdrfFilling:
    """The static H-DRF allocation and how it was computed."""

    status: Status
    shares: FloatArray  # global dominant share of every leaf, per tenant
    tasks: FloatArray  # (tenants, units)
    kind: UnitKind
    phases: int
    lp_solves: int
    solve_s: float
    events: Counter[str] = field(default_factory=Counter)
    message: str = ""


class _Layout:
    """Index structures built once per tree so that every phase is a few vectorised passes.

    ``groups[d]`` holds the children at depth ``d + 1`` sorted by parent, so sums and minima over
    siblings are ``np.ufunc.reduceat`` over contiguous segments (``ufunc.at`` is an order of
    magnitude slower). ``subtree`` is the sparse node x leaf incidence: node totals are one
    sparse product.
    """

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.groups: list[tuple[IntArray, IntArray, IntArray, IntArray]] = []
        for children in tree.levels[1:]:
            children = children[np.argsort(tree.parent[children], kind="stable")]
            parents = tree.parent[children]
            starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])
            sizes = np.diff(np.r_[starts, len(children)])
            self.groups.append((children, starts, parents[starts], sizes))
        # All non-root nodes by parent at once, for sibling minima that need no bottom-up order.
        children = np.argsort(tree.parent[1:], kind="stable") + 1
        parents = tree.parent[children]
        starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])
        self.siblings = (children, starts, parents[starts], np.diff(np.r_[starts, len(children)]))
        rows, cols = [], []
        current = tree.leaf_nodes.copy()
        leaf = np.arange(len(current))
        while current.size:
            rows.append(current)
            cols.append(leaf)
            up = tree.parent[current]
            keep = up >= 0
            current, leaf = up[keep], leaf[keep]
        # Every leaf's ancestors (itself included), padded with a dummy node index ``num_nodes``.
        self.ancestors = np.full((len(tree.leaf_nodes), len(rows)), tree.num_nodes, dtype=np.int64)
        for position, (nodes, leaves) in enumerate(zip(rows, cols, strict=True)):
            self.ancestors[leaves, position] = nodes
        rows_all, cols_all = np.concatenate(rows), np.concatenate(cols)
        self.subtree = sp.csr_matrix(
            (np.ones(len(rows_all)), (rows_all, cols_all)), shape=(tree.num_nodes, len(tree.leaf_nodes))
        )


class _Growth:
    """Growth modes and rates of every node (see the module docstring), kept across phases.

    A node's mode and rates per unit of its own parameter depend only on its subtree: which leaves
    are blocked, which components are dominant and which children are at the level. Between events
    none of that changes, so after a phase only the nodes where it did change, and their ancestors,
    are recomputed (a cap event touches one root path, not the tree); the leaf rates, products of
    per-node scales along root paths, are then one top-down pass.
    """

    def __init__(self, water: _WaterFilling) -> None:
        self.layout = water.layout
        n = self.layout.tree.num_nodes
        m = water.directions.shape[1]
        self.mode = np.zeros(n, dtype=np.int64)
        self.rate = np.zeros((n, m), order="F")
        self.mass = np.zeros(n)
        self.factor = np.zeros(n)  # a child's rate per unit of its parent's rate, before the parent's divisor
        self.divisor = np.ones(n)
        self.growing = np.zeros(n, dtype=bool)
        self.active = np.zeros(n, dtype=bool)  # growing and at its siblings' level
        self.level = np.full(n, math.inf)  # weighted share of each node's active children
        self.dominant = np.zeros((n, m), dtype=bool, order="F")
        self.leaf_rate = np.zeros(len(water.shares))
        self.scale = np.zeros(n)  # rate of each node's own parameter per unit of time
        self._blocked: BoolArray | None = None
        self._live: FloatArray | None = None
        self.update(water, everything=True)

    def _levels(self, share: FloatArray) -> BoolArray:
        tree = self.layout.tree
        active = np.zeros(tree.num_nodes, dtype=bool)
        children, starts, parents, sizes = self.layout.siblings
        grows = self.growing[children]
        weighted = np.where(grows, share[children] / tree.weight[children], math.inf)
        level = np.minimum.reduceat(weighted, starts)
        self.level[parents] = level
        level_of_child = np.repeat(level, sizes)
        active[children] = grows & (weighted <= level_of_child + _TIE * np.maximum(level_of_child, 1e-300))
        return active

    def update(self, water: _WaterFilling, everything: bool = False) -> None:
        layout = self.layout
        tree = layout.tree
        consumption, share = water.node_consumption, water.node_share
        growing_leaf = ~water.blocked
        if self._live is None:
            self._live = np.append(layout.subtree @ growing_leaf.astype(np.float64), 0.0)
            self._blocked = water.blocked.copy()
        elif self._blocked is not None and not np.array_equal(self._blocked, water.blocked):
            # Count the unblocked leaves under every node down by the newly blocked ones' root paths.
            newly = np.flatnonzero(water.blocked & ~self._blocked)
            np.subtract.at(self._live, layout.ancestors[newly].ravel(), 1.0)
            self._blocked = water.blocked.copy()
        growing = self._live[:-1] > 0.5
        dominant = consumption >= share[:, None] - _EXACT
        previous_growing, previous_active = self.growing, self.active
        self.growing = growing
        active = self._levels(share)
        if everything:
            dirty = np.ones(tree.num_nodes, dtype=bool)
        else:
            # A component joining the dominant set, a subtree stopping, a child joining its level.
            dirty = (growing != previous_growing) | (dominant & ~self.dominant).any(axis=1)
            moved = np.flatnonzero(active != previous_active)
            dirty[tree.parent[moved[moved > 0]]] = True
            for children, starts, parents, _sizes in reversed(layout.groups):
                dirty[parents] |= np.logical_or.reduceat(dirty[children], starts)
        self.dominant, self.active = dominant, active
        leaves = tree.leaf_nodes
        changed = dirty[leaves]
        self.mode[leaves[changed]] = np.where(growing_leaf[changed], _RISING, _NONE)
        self.rate[leaves[changed]] = np.where(growing_leaf[changed, None], water.directions[changed], 0.0)
        self.mass[leaves[changed]] = growing_leaf[changed].astype(np.float64)
        for children, starts, parents, sizes in reversed(layout.groups):
            selected = dirty[parents]
            if not selected.any():
                continue
            if not selected.all():
                keep = np.repeat(selected, sizes)
                children, parents, sizes = children[keep], parents[selected], sizes[selected]
                starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
            self._recompute(children, starts, parents, sizes, consumption, share)
        scale = np.zeros(tree.num_nodes)
        scale[0] = 1.0 if growing[0] else 0.0
        for children, _starts, parents, sizes in layout.groups:
            scale[children] = self.factor[children] * np.repeat(scale[parents] / self.divisor[parents], sizes)
        self.scale = scale
        self.leaf_rate = np.where(growing_leaf, scale[leaves], 0.0)

    def node_rates(self) -> FloatArray:
        """Consumption rate of every node per unit of time: its own rates times its parameter's speed."""
        return np.multiply(self.rate, self.scale[:, None], order="F")

    def _recompute(
        self,
        children: IntArray,
        starts: IntArray,
        parents: IntArray,
        sizes: IntArray,
        consumption: FloatArray,
        share: FloatArray,
    ) -> None:
        """Modes and rates of ``parents`` from their children (segments of ``children``)."""
        mode, rate, mass = self.mode, self.rate, self.mass
        active = self.active[children]
        flat = active & (mode[children] == _FLAT)
        flat_count = np.repeat(np.add.reduceat(flat.astype(np.float64), starts), sizes)
        # Flat children go first, round robin (each carries one unit of leaf share per unit time).
        round_robin = np.where(flat, 1.0 / np.maximum(flat_count, 1), 0.0)
        factor = np.where(flat_count > 0, round_robin, active * self.layout.tree.weight[children])
        rate_up = np.add.reduceat(factor[:, None] * rate[children], starts, axis=0)
        mass_up = np.add.reduceat(factor * mass[children], starts)
        dominant = consumption[parents] >= share[parents, None] - _EXACT
        share_rate = np.where(dominant, rate_up, -math.inf).max(axis=1)
        rising = share_rate > 1e-12 * rate_up.max(axis=1)
        divisor = np.where(rising, share_rate, mass_up)
        divisor = np.where(divisor > 0, divisor, 1.0)
        mode[parents] = np.where(self.growing[parents], np.where(rising, _RISING, _FLAT), _NONE)
        rate[parents] = rate_up / divisor[:, None]
        mass[parents] = mass_up / divisor
        self.divisor[parents] = divisor
        self.factor[children] = factor


class _WaterFilling:
    """The state of the filling: leaf shares, blocked leaves, and the node consumptions they imply."""

    def __init__(self, instance: Instance, tree: Tree) -> None:
        self.instance = instance
        self.layout = _Layout(tree)
        total = instance.total_capacity
        demand = instance.demand
        fraction = np.divide(demand, total, out=np.zeros_like(demand), where=total > 0)
        dominant = fraction.max(axis=1)
        # A leaf needing a resource the cluster lacks, or with no tasks allowed, never grows.
        lacks = ((demand > 0) & (total <= 0)).any(axis=1)
        self.runnable = ~lacks & (instance.task_caps > 0) & (dominant > 0)
        self.directions = np.divide(
            fraction, dominant[:, None], out=np.zeros_like(fraction), where=dominant[:, None] > 0
        )
        self.share_cap = np.where(self.runnable, instance.task_caps * np.where(self.runnable, dominant, 1.0), 0.0)
        self.dominant = dominant
        self.finite_cap = np.isfinite(self.share_cap)
        self.shares = np.zeros(len(instance.tenants))
        self.blocked = ~self.runnable
        self.events: Counter[str] = Counter()
        self.refresh()

    def refresh(self) -> None:
        self._since_refresh = 0
        self.node_rate: FloatArray | None = None
        # Column-major: reductions across the few resources of many nodes are ~30x faster that way.
        self.node_consumption = np.asfortranarray(self.layout.subtree @ (self.shares[:, None] * self.directions))
        self.node_share = self.node_consumption.max(axis=1)

    def next_event(self, growth: _Growth) -> tuple[float, str]:
        """Time to the first event at the current rates, and its kind."""
        layout = self.layout
        tree = layout.tree
        rate = growth.leaf_rate
        node_rate = growth.node_rates()
        candidates: list[tuple[float, str]] = []
        root_rate, root_use = node_rate[0], self.node_consumption[0]
        up = root_rate > 0
        if up.any():
            candidates.append((float(np.min((1.0 - root_use[up]) / root_rate[up])), "saturation"))
        capped = (rate > 0) & self.finite_cap
        if capped.any():
            to_cap = np.divide(self.share_cap - self.shares, rate, out=np.full_like(rate, math.inf), where=capped)
            candidates.append((float(to_cap.min()), "cap"))
        self.node_rate = node_rate
        consumption, share = self.node_consumption, self.node_share
        dominant = growth.dominant  # computed from this very state
        share_rate = np.where(dominant, node_rate, -math.inf).max(axis=1)
        # Column by column: each is contiguous (column-major) and the resources are few.
        overtake = math.inf
        for r in range(node_rate.shape[1]):
            column = node_rate[:, r]
            passing = np.flatnonzero((column > share_rate) & ~dominant[:, r])
            if passing.size:
                gap = share[passing] - consumption[passing, r]
                overtake = min(overtake, float(np.min(gap / (column[passing] - share_rate[passing]))))
        if math.isfinite(overtake):
            candidates.append((overtake, "dominant"))
        # A waiting child is caught up when its parent's level reaches its weighted share.
        child_speed = np.where(growth.active, np.maximum(share_rate, 0.0) / tree.weight, 0.0)
        waiting = growth.growing & ~growth.active
        waiting[0] = False
        catch_up = math.inf
        if waiting.any():
            children, starts, parents, sizes = layout.siblings
            speed = np.repeat(np.maximum.reduceat(child_speed[children], starts), sizes)
            closing = waiting[children] & (speed > 0)
            if closing.any():
                level = np.repeat(growth.level[parents], sizes)
                gap = share[children] / tree.weight[children] - level
                catch_up = float(np.min(gap[closing] / speed[closing]))
        if math.isfinite(catch_up):
            candidates.append((catch_up, "catch-up"))
        if not candidates:
            return math.inf, "none"
        step, kind = min(candidates)
        return max(step, 0.0), kind

    def advance(self, rate: FloatArray, step: float) -> None:
        self.shares = np.minimum(self.shares + step * rate, self.share_cap)
        self._since_refresh += 1
        if self.node_rate is None or self._since_refresh >= 32:
            self.refresh()
        else:
            # Node totals move linearly too; a full recount now and then keeps round-off from piling up.
            self.node_consumption += step * self.node_rate
            self.node_share = self.node_consumption.max(axis=1)

    def block_saturated(self) -> None:
        full = self.node_consumption[0] >= 1.0 - _EXACT
        if full.any():
            needs_full = (self.directions[:, full] > 0).any(axis=1)
            self.events["blocked by saturation"] += int((needs_full & ~self.blocked).sum())
            self.blocked |= needs_full

    def block_capped(self) -> None:
        at_cap = ~self.blocked & (self.shares >= self.share_cap * (1 - 1e-12))
        # The clamp moves shares by round-off only; the periodic recount in ``advance`` absorbs it.
        self.shares[at_cap] = self.share_cap[at_cap]
        self.events["capped"] += int(at_cap.sum())
        self.blocked |= at_cap


class _Placement:
    """The heterogeneous-server LP: can the leaf shares grow along a direction and still be placed?

    Columns and rows are DRFH's (``DrfhModel``): ``G`` per leaf, the step ``t``, and ``g`` per
    (leaf, merged server class). Row ``level[k]`` becomes ``G_k - rate_k t = share_k`` for a phase;
    a probe for leaf ``k`` makes it ``G_k - t >= share_k`` and every other ``G_j >= share_j``.
    """

    def __init__(self, instance: Instance, backend: Backend, time_limit: float | None) -> None:
        self.model = DrfhModel(instance, UnitGrouping.merge_identical(instance))
        tenants, units = self.model.all_pairs()
        self.pair_tenants, self.pair_units = tenants, units
        self.base = self.model.build(tenants, units, 1.0)
        self.backend = backend
        self.session = backend.session(self.base, time_limit)
        n = self.model.num_tenants
        self.coefficient = -instance.weights.copy()
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit
        self.lp_solves = 0
        self.solve_s = 0.0
        self.x: FloatArray | None = None
        self._n = n

    def maximise_step(
        self, rate: FloatArray, lower: FloatArray, upper: FloatArray, step_upper: float
    ) -> tuple[Status, float]:
        """Largest ``t <= step_upper`` with ``lower_k <= G_k - rate_k t <= upper_k`` placeable."""
        n = self._n
        rows = self.model.level_rows()
        coefficient = -rate
        self.session.set_column_bounds(np.array([n]), np.array([0.0]), np.array([step_upper]))
        self.session.set_row_bounds(rows, lower, upper)
        for k in np.flatnonzero(coefficient != self.coefficient):
            self.session.set_coefficient(int(rows[k]), n, float(coefficient[k]))
        self.coefficient = coefficient
        outcome = self.session.solve()
        self.lp_solves += 1
        self.solve_s += outcome.solve_s
        if outcome.status != "optimal" or outcome.x is None:
            return outcome.status, 0.0
        self.x = outcome.x
        return "optimal", float(outcome.x[n])

    def unit_tasks(self) -> FloatArray:
        """Tasks per (leaf, merged unit) of the last solution."""
        assert self.x is not None
        n = self._n
        g = np.maximum(self.x[n + 1 :], 0.0)
        tasks = np.zeros((n, self.model.units.num_units))
        share = self.model.share_per_task
        np.add.at(tasks, (self.pair_tenants, self.pair_units), g / share[self.pair_tenants])
        return tasks


def solve_hdrf(
    instance: Instance,
    backend: Backend | None = None,
    pooled: bool = True,
    time_limit: float | None = None,
    max_phases: int | None = None,
    incremental: bool = True,
) -> HdrfFilling:
    """Static H-DRF of an instance's hierarchy (a flat instance is a one-level tree).

    Parameters
    ----------
    instance : Instance
        Leaves are its tenants.
    backend : Backend, optional
        LP backend for heterogeneous servers (HiGHS by default); unused when ``pooled``.
    pooled : bool
        True: one pooled server with the cluster's total capacity (the paper's setting). False: the
        allocation must be placeable on the instance's servers, phase by phase.
    time_limit : float, optional
        Seconds for the LPs of the heterogeneous setting.
    max_phases : int, optional
        Safety stop; the default is generous (proportional to the tree size).
    incremental : bool
        Recompute growth modes only where an event changed them (default); False recomputes every
        node in every phase (the tests compare the two).

    Returns
    -------
    HdrfFilling
        Leaf shares and tasks: per tenant on one pool, or per (tenant, server class).
    """
    started = time.perf_counter()
    tree = tree_of(instance)
    target = instance.pooled() if pooled else instance
    water = _WaterFilling(target, tree)
    placement = None if pooled else _Placement(instance, backend or get_backend(), time_limit)
    limit = max_phases if max_phases is not None else 20 * tree.num_nodes * max(1, len(instance.resources)) + 100
    phases = 0
    growth: _Growth | None = None
    status: Status = "optimal"
    message = ""
    while not water.blocked.all():
        phases += 1
        if phases > limit:
            status, message = "error", f"no convergence after {limit} phases"
            break
        growth = _Growth(water) if growth is None else growth
        growth.update(water, everything=not incremental)
        step, kind = water.next_event(growth)
        if placement is not None:
            outcome, reached = _placeable_step(placement, water, growth.leaf_rate, step)
            if outcome != "optimal":
                status, message = outcome, f"placement LP: {outcome}"
                break
            if reached < step * (1 - 1e-9):
                water.advance(growth.leaf_rate, reached)
                water.events["placement"] += 1
                _block_unplaceable(placement, water)
                water.block_capped()
                continue
        if not math.isfinite(step):
            status, message = "error", "growing leaves but no event ahead"
            break
        water.events[kind] += 1
        water.advance(growth.leaf_rate, step)
        water.block_saturated()
        water.block_capped()
    if placement is None:
        tasks = np.divide(water.shares, water.dominant, out=np.zeros_like(water.shares), where=water.dominant > 0)
        tasks_matrix, kind_name = tasks[:, None], "pool"
    else:
        outcome, _ = _placeable_step(placement, water, np.zeros_like(water.shares), 0.0)
        if outcome != "optimal" and status == "optimal":
            status, message = outcome, f"final placement LP: {outcome}"
        tasks_matrix = (
            placement.model.units.split_to_classes(instance, placement.unit_tasks())
            if placement.x is not None
            else np.zeros((len(instance.tenants), len(instance.servers)))
        )
        kind_name = "class"
    return HdrfFilling(
        status,
        water.shares.copy(),
        tasks_matrix,
        kind_name,  # type: ignore[arg-type]
        phases,
        0 if placement is None else placement.lp_solves,
        time.perf_counter() - started,
        water.events,
        message,
    )


def _placeable_step(placement: _Placement, water: _WaterFilling, rate: FloatArray, step: float) -> tuple[Status, float]:
    bound = step if math.isfinite(step) else 2.0
    # A hair of slack below the current shares keeps the LP feasible despite round-off.
    lower = water.shares * (1 - 1e-10)
    upper = water.shares * (1 + 1e-10) + 1e-12
    return placement.maximise_step(rate, lower, upper, bound)


def _block_unplaceable(placement: _Placement, water: _WaterFilling) -> None:
    """Block every growing leaf that cannot grow at all with everyone else kept at their shares."""
    n = len(water.shares)
    growing = np.flatnonzero(~water.blocked)
    room = np.zeros(len(growing))
    for position, leaf in enumerate(growing):
        rate = np.zeros(n)
        rate[leaf] = 1.0
        upper = np.full(n, math.inf)
        status, room[position] = placement.maximise_step(rate, water.shares * (1 - 1e-10), upper, 1.0)
        if status != "optimal":
            room[position] = 0.0
    stuck = room <= _GROW
    if not stuck.any() and growing.size:
        # Every leaf can grow alone although the joint step could not: only round-off separates the
        # two answers, so the leaf with the least room is the one the step LP ran into.
        stuck = room <= room.min()
    water.blocked[growing[stuck]] = True
    newly = int(stuck.sum())
    water.events["blocked by placement"] += newly


def hdrf_shares(instance: Instance) -> FloatArray:
    """Pooled static H-DRF global dominant share of every leaf (per tenant)."""
    return solve_hdrf(instance, pooled=True).shares
