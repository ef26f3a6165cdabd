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
waiting child being caught up by its siblings' level.

Two engines compute the same phases:

- ``_Clocks`` (the default) works per phase on the root paths an event touched only. Every node
  keeps a *clock*, its own growth parameter, affine in its parent's (``clock = anchor + factor *
  drive``); the factor is the child's weight among the active siblings and changes only when the
  set of active children does, so an event that changes the rates along one path updates each node
  on it from its own values and the one child that changed. Every node also keeps the first event
  of its subtree as a value of its clock, so the next event is read at the root and the nodes where
  it happens are found by descending only into the subtrees whose event is due. A phase costs a few
  numpy calls per node of the touched paths, whatever the fan-out: 100,000 leaves in seconds.
- ``_Reference`` recomputes every node in every phase with whole-tree numpy passes. It is the
  straightforward form of the same rules and the tests hold the fast engine to it.

Sibling weights enter only as ratios, so ``_Clocks`` divides them by the largest sibling weight:
weights that differ by many orders of magnitude neither overflow the rates nor lose the tie tests.
Far apart (beyond about 1e12), an event can take less time than the clocks resolve (a light child
caught up, a component with a rate 1e9 times the dominant one overtaking it, a resource filling
up): an event that is due by the clock then happens even if the consumptions cannot show it.
A filling that stops moving (neither time nor blocked leaves for ``_STALL`` phases) ends with an
error instead of running to the phase limit.

On heterogeneous servers (``pooled=False``) the allocation must also be placeable: leaf shares are
global dominant shares as in DRFH and every phase asks an LP how far the growth can go with the
machines' capacities (``solver.drfh.model.DrfhModel``, identical machines merged). When the LP stops short
of the next event, the leaves that cannot grow at all with everybody else kept at their shares are
blocked, which is what saturation means on one pool; a probe LP per growing leaf decides that.

A time limit bounds the whole call: the filling stops between phases (or between probe LPs) and
returns the allocation reached so far with status ``time_limit``. Every phase only grows shares up
to a feasible point, so a partial filling is a feasible allocation (not yet Pareto-efficient).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from fairpack.models.hierarchy import Tree, tree_of
from fairpack.models.result import Status, UnitKind
from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray
from fairpack.solver import interrupt

if TYPE_CHECKING:
    from fairpack.solver.backends import Backend

_NONE, _RISING, _FLAT = 0, 1, 2
_TIE = 1e-10  # relative: weighted shares this close are tied
_EXACT = 1e-12  # absolute, on shares <= 1: components this close to a node's share are dominant
_GROW = 1e-9  # a probe that lets a leaf grow less than this (relative) means it is blocked
_CAP_TIE = 1e-12  # relative: a leaf this close to its share cap holds it
_SLACK = 1e-9  # relative: clock round-off allowed when descending to the subtrees whose event is due
_SMALLEST_WEIGHT = 1e-300  # floor of a weight over its largest sibling's (keeps ratios finite)
_STALL = 1000  # consecutive phases without progress that mean the filling cannot go on
# Event kinds, in the order ties between simultaneous events are reported.
_KINDS = ("none", "cap", "catch-up", "dominant", "saturation")
_CAP, _CATCH_UP, _DOMINANT, _SATURATION = 1, 2, 3, 4
_NO_NODES = np.zeros(0, dtype=np.int64)


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


@dataclass(frozen=True)
class _Leaves:
    """Per-tenant inputs of the filling: growth direction, share cap, whether it can run at all."""

    directions: FloatArray  # (tenants, resources): consumption per unit of dominant share, max 1
    dominant: FloatArray  # dominant share of one task
    share_cap: FloatArray  # dominant share at the task cap (inf when unbounded)
    runnable: BoolArray

    @classmethod
    def of(cls, instance: Instance) -> _Leaves:
        total = instance.total_capacity
        demand = instance.demand
        fraction = np.divide(demand, total, out=np.zeros_like(demand), where=total > 0)
        dominant = fraction.max(axis=1) if demand.size else np.zeros(len(demand))
        # A leaf needing a resource the cluster lacks, or with no tasks allowed, never grows.
        lacks = ((demand > 0) & (total <= 0)).any(axis=1)
        runnable = ~lacks & (instance.task_caps > 0) & (dominant > 0)
        directions = np.divide(fraction, dominant[:, None], out=np.zeros_like(fraction), where=dominant[:, None] > 0)
        share_cap = np.where(runnable, instance.task_caps * np.where(runnable, dominant, 1.0), 0.0)
        return cls(directions, dominant, share_cap, runnable)


class _Engine(Protocol):
    """What the phase loop of ``solve_hdrf`` needs from an engine."""

    blocked: BoolArray
    events: Counter[str]

    def unblocked(self) -> int: ...

    def next_event(self) -> tuple[float, str]: ...

    def leaf_rate(self) -> FloatArray: ...

    def shares(self) -> FloatArray: ...

    def advance(self, step: float) -> None: ...

    def block_saturated(self) -> None: ...

    def block_capped(self) -> None: ...

    def block(self, tenants: IntArray, reason: str) -> None: ...


class _Siblings:
    """The children of several parents, one contiguous segment per parent, as one index array.

    Per-parent reductions are ``reduceat`` over the segments; ``spread`` repeats a per-parent value
    over its children.
    """

    __slots__ = ("index", "offsets", "sizes")

    def __init__(self, starts: IntArray, sizes: IntArray) -> None:
        self.offsets = np.cumsum(sizes) - sizes
        self.sizes = sizes
        self.index = np.arange(int(sizes.sum())) + np.repeat(starts - self.offsets, sizes)

    def min(self, values: FloatArray) -> FloatArray:
        return np.minimum.reduceat(values, self.offsets, axis=0)

    def max(self, values: FloatArray) -> FloatArray:
        return np.maximum.reduceat(values, self.offsets, axis=0)

    def sum(self, values: FloatArray) -> FloatArray:
        return np.add.reduceat(values, self.offsets, axis=0)

    def spread(self, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return np.repeat(values, self.sizes, axis=0)


class _Clocks:
    """The fast engine: node clocks, and per phase work along the root paths an event touched.

    Nodes are renumbered breadth first with siblings contiguous, so a node's children are one index
    range and a depth level is another. Every node has two parameters that only grow:

    - its *clock* ``π`` (the share-like parameter its parent sees): ``π = anchor + factor * U`` of
      its parent, where ``factor`` is the parent's weight for the child (0 for a child that waits);
      the root's clock is the time, a leaf's clock its dominant share (while it grows);
    - its *drive* ``U = (π - clock0) / divisor``, which its children's clocks follow, counted from
      the node's last recompute (``clock0``). ``divisor`` normalises the node's rates (per unit of
      dominant share for a rising node, of leaf share for a flat one) and changes whenever the rates
      below change. At a recompute the drive restarts from 0, so the children's anchors take up the
      drive so far (``anchor += factor * U``, which keeps magnitudes, hence round-off, small), but
      their factors stay as they are.

    A child's relation to its parent changes only when its factor does (a child joining or leaving
    its siblings' level, or turning flat). So when an event changes the rates along one root path,
    each node on it is updated from its own values and one child's (``_recompute_light``); every
    child is looked at (``_recompute_full``, vectorised over many parents) only when the set of
    active children may change. Per node (``N`` nodes, ``m`` resources):

    - ``consumption0``, ``clock0``, ``rate`` (per unit of clock), ``share0`` (a leaf's): the
      consumption is ``consumption0 + rate * (π - clock0)``;
    - ``mode``, ``mass``, ``share_rate``: growth mode, leaf-share and dominant-share rates per unit of
      clock (``share_rate`` is 1 for a rising node);
    - ``due_*``: the first event in the node's subtree (its own included), as a value of its clock
      (``event``: when it happens; ``mark``: when the tolerance tests that detect it, the same as
      ``_Reference`` applies, start to hold, which is never later; ``kind``: what happens);
    - ``up_*``: the same converted to the parent's drive (``up_mark`` less a round-off allowance, so
      a descent from the root never misses it), with per parent the smallest and which child holds
      it (``first_*``, ``*_child``).

    Divisions by zero rates are masked out afterwards, and event times too far away overflow to inf:
    call the methods under ``np.errstate(divide="ignore", invalid="ignore", over="ignore")``.
    """

    def __init__(self, instance: Instance, tree: Tree) -> None:
        leaves = _Leaves.of(instance)
        self.events: Counter[str] = Counter()
        num_nodes = tree.num_nodes
        # Breadth-first order, children grouped by their parent's position.
        position = np.zeros(num_nodes, dtype=np.int64)
        pieces, count = [np.zeros(1, dtype=np.int64)], 1
        for level in tree.levels[1:]:
            level = level[np.lexsort((level, position[tree.parent[level]]))]
            position[level] = np.arange(count, count + len(level))
            count += len(level)
            pieces.append(level)
        order = np.concatenate(pieces)
        self.bounds = np.cumsum([0] + [len(piece) for piece in pieces])
        parent = np.full(num_nodes, -1, dtype=np.int64)
        parent[1:] = position[tree.parent[order[1:]]]
        self.parent = parent
        self.num_children = np.bincount(parent[1:], minlength=num_nodes).astype(np.int64)
        self.child_start = np.searchsorted(parent[1:], np.arange(num_nodes)).astype(np.int64) + 1
        self.leaf_node = position[tree.leaf_nodes]  # per tenant
        self.tenant = np.full(num_nodes, -1, dtype=np.int64)
        self.tenant[self.leaf_node] = np.arange(len(self.leaf_node))
        # Weights over the largest sibling weight: only ratios between siblings matter.
        weight = tree.weight[order].astype(np.float64)
        largest = np.zeros(num_nodes)
        np.maximum.at(largest, parent[1:], weight[1:])
        self.weight = np.ones(num_nodes)
        self.weight[1:] = np.maximum(weight[1:] / largest[parent[1:]], _SMALLEST_WEIGHT)
        # Every leaf's ancestors (itself included), padded with a dummy node ``num_nodes``.
        self.ancestors = np.full((len(self.leaf_node), len(pieces)), num_nodes, dtype=np.int64)
        current = self.leaf_node.copy()
        for column in range(len(pieces)):
            self.ancestors[:, column] = np.where(current >= 0, current, num_nodes)
            current = np.where(current >= 0, parent[np.maximum(current, 0)], -1)
        m = leaves.directions.shape[1]
        self.direction = np.zeros((num_nodes, m))
        self.direction[self.leaf_node] = leaves.directions
        self.share_cap = np.full(num_nodes, math.inf)
        self.share_cap[self.leaf_node] = leaves.share_cap
        self.needs = leaves.directions > 0
        self.blocked = ~leaves.runnable
        self.node_blocked = np.zeros(num_nodes, dtype=bool)
        self.node_blocked[self.leaf_node] = self.blocked
        self.live = np.zeros(num_nodes + 1)  # unblocked leaves under each node (+ the dummy)
        np.add.at(self.live, self.ancestors[~self.blocked].ravel(), 1.0)
        self.saturated = np.zeros(m, dtype=bool)
        self.saturation_mark = np.full(m, math.inf)  # when each resource fills up (a time)
        self.time = 0.0
        # The state described in the class docstring.
        self.anchor = np.zeros(num_nodes)
        self.factor = np.zeros(num_nodes)
        self.divisor = np.ones(num_nodes)
        self.consumption0 = np.zeros((num_nodes, m))
        self.clock0 = np.zeros(num_nodes)
        self.rate = np.zeros((num_nodes, m))
        self.share0 = np.zeros(num_nodes)
        self.mode = np.zeros(num_nodes, dtype=np.int64)
        self.was_flat = np.zeros(num_nodes, dtype=bool)  # the mode before the node's last recompute
        self.mass = np.zeros(num_nodes)
        self.share_rate = np.zeros(num_nodes)
        self.due_event = np.full(num_nodes, math.inf)
        self.due_mark = np.full(num_nodes, math.inf)
        self.due_kind = np.zeros(num_nodes, dtype=np.int64)
        # When each component of a node's consumption reaches its dominant share (a mark).
        self.overtake = np.full((num_nodes, m), math.inf)
        self.up_event = np.full(num_nodes, math.inf)
        self.up_mark = np.full(num_nodes, math.inf)
        self.first_event = np.full(num_nodes, math.inf)
        self.first_mark = np.full(num_nodes, math.inf)
        self.event_child = np.zeros(num_nodes, dtype=np.int64)
        self.mark_child = np.zeros(num_nodes, dtype=np.int64)
        # Among a node's children: the growing ones not at the level, active flat ones, and the next
        # catch-up (its mark as a clock value, and the weighted share it reaches).
        self.waiting = np.zeros(num_nodes, dtype=np.int64)
        self.flat_count = np.zeros(num_nodes, dtype=np.int64)
        self.catch_mark = np.full(num_nodes, math.inf)
        self.catch_level = np.full(num_nodes, math.inf)
        # Scratch: clocks and drives of the nodes the last descent visited (of all, after _all_clocks).
        self.clock = np.zeros(num_nodes)
        self.drive = np.zeros(num_nodes)
        # Per depth, the nodes the last descent visited: leaves and internal nodes.
        self._visited: list[tuple[IntArray, IntArray]] = []
        self._bulk: list[IntArray] = []  # blocked tenants whose paths the last descent did not visit
        self._recompute(self._levels(np.ones(num_nodes, dtype=bool)), bulk=True)

    # -- the engine interface -------------------------------------------------------------------

    def unblocked(self) -> int:
        return int(self.live[0])  # the unblocked leaves under the root

    def next_event(self) -> tuple[float, str]:
        self._settle()
        step = float(self.due_event[0]) - self.time
        if not math.isfinite(step):
            return math.inf, "none"
        return max(step, 0.0), _KINDS[int(self.due_kind[0])]

    def leaf_rate(self) -> FloatArray:
        """Share growth of every leaf per unit of time."""
        self._settle()
        speed = np.zeros(len(self.parent))  # of every node's clock
        speed[0] = 1.0 if self.live[0] > 0 else 0.0
        for a, b in zip(self.bounds[1:-1], self.bounds[2:], strict=True):
            up = self.parent[a:b]
            speed[a:b] = self.factor[a:b] * speed[up] / self.divisor[up]
        return np.where(self.blocked, 0.0, speed[self.leaf_node])

    def shares(self) -> FloatArray:
        self._all_clocks()
        return self._leaf_shares(self.leaf_node)

    def advance(self, step: float) -> None:
        """Move the time on and visit the subtrees whose event is now due."""
        self.time += step
        self.clock[0] = self.time
        self.drive[0] = (self.time - self.clock0[0]) / self.divisor[0]
        if self.due_mark[0] > self.time * (1 + _SLACK):
            return
        frontier = np.zeros(1, dtype=np.int64)
        while frontier.size:
            if len(frontier) == 1:  # the usual case: one node, whose children are a slice
                node = int(frontier[0])
                if not self.num_children[node]:
                    self._visited.append((frontier, _NO_NODES))
                    return
                self._visited.append((_NO_NODES, frontier))
                drive = float(self.drive[node])
                if self.first_mark[node] > drive:
                    return
                a = int(self.child_start[node])
                frontier = (self.up_mark[a : a + int(self.num_children[node])] <= drive).nonzero()[0] + a
                if len(frontier) == 1:
                    child = int(frontier[0])
                    now = float(self.anchor[child]) + float(self.factor[child]) * drive
                    self.clock[child] = now
                    self.drive[child] = (now - float(self.clock0[child])) / float(self.divisor[child])
                    continue
                clock = self.anchor[frontier] + self.factor[frontier] * drive
            else:
                internal = self.num_children[frontier] > 0
                parents = frontier[internal]
                self._visited.append((frontier[~internal], parents))
                parents = parents[self.first_mark[parents] <= self.drive[parents]]
                if not parents.size:
                    return
                children = _Siblings(self.child_start[parents], self.num_children[parents])
                drives = children.spread(self.drive[parents])
                due = self.up_mark[children.index] <= drives
                frontier = children.index[due]
                clock = self.anchor[frontier] + self.factor[frontier] * drives[due]
            self.clock[frontier] = clock
            self.drive[frontier] = (clock - self.clock0[frontier]) / self.divisor[frontier]

    def block_saturated(self) -> None:
        due = self.saturation_mark <= self.time * (1 + _SLACK)
        if not self._visited or not due.any():
            return
        use = self.consumption0[0] + self.rate[0] * (self.time - self.clock0[0])
        # Full by the clock too: a resource can fill up in less time than the clock resolves.
        full = ((use >= 1.0 - _EXACT) | due) & ~self.saturated
        if full.any():
            self.saturated |= full
            newly = np.flatnonzero(self.needs[:, full].any(axis=1) & ~self.blocked)
            self.block(newly, "blocked by saturation")

    def block_capped(self) -> None:
        for leaves, _ in self._visited:
            if leaves.size:
                share = self._leaf_shares(leaves)
                at_cap = leaves[share >= self.share_cap[leaves] * (1 - _CAP_TIE)]
                if at_cap.size:
                    self.block(self.tenant[at_cap], "capped")

    def block(self, tenants: IntArray, reason: str) -> None:
        tenants = tenants[~self.blocked[tenants]]
        self.events[reason] += len(tenants)
        if not tenants.size:
            return
        self.blocked[tenants] = True
        self.node_blocked[self.leaf_node[tenants]] = True
        np.subtract.at(self.live, self.ancestors[tenants].ravel(), 1.0)
        if reason != "capped":  # a capped leaf's path was visited by the descent that found it
            self._bulk.append(tenants)

    # -- phases ---------------------------------------------------------------------------------

    def _levels(self, touched: BoolArray) -> list[tuple[IntArray, IntArray]]:
        """The touched nodes of every depth, split as a descent splits them."""
        levels = []
        for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True):
            nodes = np.flatnonzero(touched[a:b]) + a
            internal = self.num_children[nodes] > 0
            levels.append((nodes[~internal], nodes[internal]))
        return levels

    def _all_clocks(self) -> None:
        self.clock[0] = self.time
        self.drive[0] = (self.time - self.clock0[0]) / self.divisor[0]
        for a, b in zip(self.bounds[1:-1], self.bounds[2:], strict=True):
            self.clock[a:b] = self.anchor[a:b] + self.factor[a:b] * self.drive[self.parent[a:b]]
            self.drive[a:b] = (self.clock[a:b] - self.clock0[a:b]) / self.divisor[a:b]

    def _leaf_shares(self, nodes: IntArray) -> FloatArray:
        grown = np.where(self.mode[nodes] == _RISING, self.clock[nodes] - self.clock0[nodes], 0.0)
        return np.minimum(self.share0[nodes] + grown, self.share_cap[nodes])

    def _settle(self) -> None:
        """Recompute the nodes the last advance and blocks touched, deepest first."""
        if not self._visited and not self._bulk:
            return
        bulk = bool(self._bulk)
        if bulk:
            touched = np.zeros(len(self.parent) + 1, dtype=bool)
            touched[self.ancestors[np.concatenate(self._bulk)].ravel()] = True
            for leaves, parents in self._visited:
                touched[leaves] = touched[parents] = True
            self._all_clocks()
            levels = self._levels(touched[:-1])
        else:
            levels = self._visited
        self._visited, self._bulk = [], []
        self._recompute(levels, bulk)

    def _recompute(self, levels: list[tuple[IntArray, IntArray]], bulk: bool = False) -> None:
        below: IntArray = _NO_NODES  # the nodes recomputed one depth further down
        for depth in range(len(levels) - 1, -1, -1):
            leaves, parents = levels[depth]
            if leaves.size:
                self._recompute_leaves(leaves)
            if len(parents) == 1 and not bulk and len(below) <= 1:
                node = int(parents[0])
                child = int(below[0]) if len(below) else -1
                if child < 0 or self.parent[child] == node:
                    self._recompute_light(node, child)
                else:
                    self._recompute_full(parents)
            elif parents.size:
                self._recompute_full(parents)
            below = np.concatenate((leaves, parents))

    def _recompute_leaves(self, nodes: IntArray) -> None:
        """State and cap events of leaves (the root of a one-node tree is alone at its depth)."""
        if len(nodes) == 1:
            self._recompute_leaf(int(nodes[0]))
            return
        cap = self.share_cap[nodes]
        share = self._leaf_shares(nodes)
        clock = self.clock[nodes]
        growing = ~self.node_blocked[nodes]
        direction = self.direction[nodes]
        self.share0[nodes] = share
        self.clock0[nodes] = clock
        self.consumption0[nodes] = share[:, None] * direction
        self.rate[nodes] = direction * growing[:, None]
        self.mass[nodes] = self.share_rate[nodes] = growing
        self.mode[nodes] = np.where(growing, _RISING, _NONE)
        capped = growing & (cap < math.inf)
        self.due_event[nodes] = np.where(capped, clock + cap - share, math.inf)
        self.due_mark[nodes] = np.where(capped, clock + cap * (1 - _CAP_TIE) - share, math.inf)
        self.due_kind[nodes] = _CAP

    def _recompute_leaf(self, node: int) -> None:
        """``_recompute_leaves`` for one leaf, with scalars (a phase mostly caps one leaf)."""
        cap = float(self.share_cap[node])
        clock = float(self.clock[node])
        grown = clock - float(self.clock0[node]) if self.mode[node] == _RISING else 0.0
        share = min(float(self.share0[node]) + grown, cap)
        growing = not self.node_blocked[node]
        direction = self.direction[node]
        self.share0[node], self.clock0[node] = share, clock
        self.consumption0[node] = share * direction
        self.rate[node] = direction if growing else 0.0
        self.mass[node] = self.share_rate[node] = float(growing)
        self.mode[node] = _RISING if growing else _NONE
        event = mark = math.inf
        if growing and cap < math.inf:
            event, mark = clock + cap - share, clock + cap * (1 - _CAP_TIE) - share
        kind = _CAP
        if node == 0:  # a one-node tree: the root is a leaf, and its subtree
            event, mark, kind = self._saturation(event, mark, kind)
        self.due_event[node], self.due_mark[node], self.due_kind[node] = event, mark, kind

    def _recompute_light(self, node: int, child: int) -> None:
        """A node whose children kept their factors but ``child`` (-1: none), which was recomputed.

        Its rates follow from one matrix product over its children, its consumption from its own
        clock, and its first event from the children's, which only ``child`` changed. Anything that
        may change which children are active (a waiting child, ``child`` turning flat or rising,
        or stopping while flat children are served) goes to ``_recompute_full``.
        """
        if self.waiting[node]:
            self._recompute_full(np.array([node]))
            return
        if child >= 0:
            flat = int(self.mode[child]) == _FLAT
            if self.factor[child] <= 0 or flat != bool(self.was_flat[child]):
                self._recompute_full(np.array([node]))
                return
            if self.live[child] <= 0:  # it stops growing: it leaves the level, alone if it was not flat
                if flat or self.flat_count[node]:
                    self._recompute_full(np.array([node]))
                    return
                self.anchor[child], self.factor[child] = self.clock[child], 0.0
        a = int(self.child_start[node])
        b = a + int(self.num_children[node])
        clock, drive = float(self.clock[node]), float(self.drive[node])
        factor = self.factor[a:b]
        rate_up = (factor @ self.rate[a:b]).tolist()
        mass_up = float(factor @ self.mass[a:b])
        total = self.consumption0[node] + self.rate[node] * (clock - float(self.clock0[node]))
        totals = total.tolist()
        share = max(totals)
        # A component is dominant when it is within _EXACT of the share, or when it was due to get
        # there by the clock (rates far apart can make that take less time than the clock resolves).
        due = clock * (1 + _SLACK)
        dominant = [v >= share - _EXACT or o <= due for v, o in zip(totals, self.overtake[node].tolist(), strict=True)]
        share_rate = max(r for r, d in zip(rate_up, dominant, strict=True) if d)
        rising = share_rate > 1e-12 * max(rate_up)
        divisor = share_rate if rising else mass_up
        divisor = divisor if divisor > 0 else 1.0
        rate = [r / divisor for r in rate_up]
        own_rate = share_rate / divisor  # the largest dominant component of ``rate``
        self.was_flat[node] = self.mode[node] == _FLAT
        self.mode[node] = (_RISING if rising else _FLAT) if self.live[node] > 0 else _NONE
        self.rate[node] = rate
        self.mass[node] = mass_up / divisor
        self.share_rate[node] = own_rate
        self.consumption0[node], self.clock0[node], self.divisor[node] = total, clock, divisor
        if drive:  # the drive restarts from 0: the children's anchors and events take up its value
            self.anchor[a:b] += factor * drive
            self.up_event[a:b] -= drive
            self.up_mark[a:b] -= drive
            self.first_event[node] -= drive
            self.first_mark[node] -= drive
            self.drive[node] = 0.0
        # Own events: a component overtaking the dominant share (no child waits).
        event = math.inf
        overtake = [math.inf] * len(rate)
        for r, (d, value) in enumerate(zip(dominant, totals, strict=True)):
            if not d and rate[r] > own_rate:
                event = min(event, clock + (share - value) / (rate[r] - own_rate))
                overtake[r] = clock + (share - value - _EXACT) / (rate[r] - own_rate)
        self.overtake[node] = overtake
        mark = min(overtake)
        kind = _DOMINANT
        if node == 0:
            event, mark, kind = self._saturation(event, mark, kind)
        if child >= 0:
            self._child_changed(node, child, a, b)
        self._gather(node, event, mark, kind)

    def _child_changed(self, node: int, child: int, a: int, b: int) -> None:
        """Update ``node``'s smallest children's events for one child whose own ones changed."""
        factor = float(self.factor[child])
        event = mark = math.inf
        if factor > 0:
            anchor = float(self.anchor[child])
            event = (float(self.due_event[child]) - anchor) / factor
            # Marks are clock values, never negative (inf when there is none).
            mark = (float(self.due_mark[child]) * (1 - _SLACK) - anchor - _SLACK * abs(anchor)) / factor
        for up, first, holder, value in (
            (self.up_event, self.first_event, self.event_child, event),
            (self.up_mark, self.first_mark, self.mark_child, mark),
        ):
            up[child] = value
            smallest, held = float(first[node]), int(holder[node]) == child
            if value < smallest or (held and value <= smallest):
                first[node], holder[node] = value, child
            elif held:  # the smallest grew: look again
                at = a + int(up[a:b].argmin())
                first[node], holder[node] = up[at], at

    def _gather(self, node: int, event: float, mark: float, kind: int) -> None:
        """First event in the subtree of ``node``: its own, or its children's in its clock."""
        clock0, divisor = float(self.clock0[node]), float(self.divisor[node])
        first = clock0 + float(self.first_event[node]) * divisor
        if first < event or (first == event and self.due_kind[self.event_child[node]] < kind):
            kind = int(self.due_kind[self.event_child[node]])
        self.due_event[node] = min(event, first)
        self.due_mark[node] = min(mark, clock0 + float(self.first_mark[node]) * divisor)
        self.due_kind[node] = kind

    def _recompute_full(self, parents: IntArray) -> None:
        """Modes, rates, factors and events of ``parents``, every child looked at (vectorised).

        Children are active when their weighted share is at the level (the lowest among growing
        siblings); the others wait for a catch-up. A child's clock stays continuous: its anchor
        moves with its new factor.
        """
        children = _Siblings(self.child_start[parents], self.num_children[parents])
        index = children.index
        drive = children.spread(self.drive[parents])
        now = self.clock[parents]
        clock = self.anchor[index] + self.factor[index] * drive
        use = self.consumption0[index] + self.rate[index] * (clock - self.clock0[index])[:, None]
        grows = self.live[index] > 0
        weight = self.weight[index]
        weighted = np.where(grows, use.max(axis=1) / weight, math.inf)
        level = children.spread(children.min(weighted))
        active = grows & (weighted <= level + _TIE * np.maximum(level, 1e-300))
        # A catch-up due by the clock although the levels say otherwise: sibling weights many orders
        # of magnitude apart can make it take less time than the children's clocks resolve.
        due = children.spread(now + _SLACK * now >= self.catch_mark[parents])
        if due.any():
            active |= grows & due & (weighted <= children.spread(self.catch_level[parents]) * (1 + _TIE))
        flat = active & (self.mode[index] == _FLAT)
        # Flat children go first, round robin (each carries one unit of leaf share per unit time).
        flat_count = children.sum(flat.astype(np.float64))
        served = children.spread(flat_count)
        factor = np.where(served > 0, flat / np.maximum(served, 1.0), active * weight)
        rate_up = children.sum(factor[:, None] * self.rate[index])
        mass_up = children.sum(factor * self.mass[index])
        total = children.sum(use)
        share = total.max(axis=1)
        # Dominant also when due by the clock (see ``_recompute_light``).
        dominant = (total >= share[:, None] - _EXACT) | (self.overtake[parents] <= now[:, None] * (1 + _SLACK))
        share_rate = np.where(dominant, rate_up, -math.inf).max(axis=1)
        rising = share_rate > 1e-12 * rate_up.max(axis=1)
        divisor = np.where(rising, share_rate, mass_up)
        divisor = np.where(divisor > 0, divisor, 1.0)
        rate = rate_up / divisor[:, None]
        own_rate = share_rate / divisor  # the largest dominant component of ``rate``
        self.was_flat[parents] = self.mode[parents] == _FLAT
        self.mode[parents] = np.where(self.live[parents] > 0, np.where(rising, _RISING, _FLAT), _NONE)
        self.rate[parents] = rate
        self.mass[parents] = mass_up / divisor
        self.share_rate[parents] = own_rate
        self.consumption0[parents], self.clock0[parents], self.divisor[parents] = total, now, divisor
        self.drive[parents] = 0.0  # restarts: the children's anchors are their clocks
        anchor = clock
        self.anchor[index], self.factor[index] = anchor, factor
        self.flat_count[parents] = flat_count.astype(np.int64)
        # Own events: a component overtaking the dominant share...
        closing = rate - own_rate[:, None]
        passing = ~dominant & (closing > 0)
        gap = share[:, None] - total
        event = now + np.where(passing, gap / closing, math.inf).min(axis=1)
        overtake = now[:, None] + np.where(passing, (gap - _EXACT) / closing, math.inf)
        self.overtake[parents] = overtake
        mark = overtake.min(axis=1)
        kind = np.full(len(parents), _DOMINANT)
        # ... or a waiting child caught up by the level of its active siblings, which rises by
        # ``speed`` per unit of the parent's drive.
        waiting = grows & ~active
        self.waiting[parents] = children.sum(waiting.astype(np.float64)).astype(np.int64)
        catch_mark = catch_level = np.full(len(parents), math.inf)
        if waiting.any():
            speed = children.spread(children.max(np.where(active, self.share_rate[index] * factor / weight, 0.0)))
            closes = waiting & (speed > 0)
            scale = children.spread(divisor)  # drive to clock
            catch = now + children.min(np.where(closes, (weighted - level) / speed * scale, math.inf))
            catch_mark = now + children.min(np.where(closes, (weighted / (1 + _TIE) - level) / speed * scale, math.inf))
            catch_level = children.min(np.where(closes, weighted, math.inf))
            mark = np.minimum(mark, catch_mark)
            kind = np.where(catch <= event, _CATCH_UP, kind)
            event = np.minimum(event, catch)
        self.catch_mark[parents], self.catch_level[parents] = catch_mark, catch_level
        if parents[0] == 0:
            event[0], mark[0], kind[0] = self._saturation(float(event[0]), float(mark[0]), int(kind[0]))
        # The children's first events in the parent's drive, and the smallest.
        moving = factor > 0
        due_mark = self.due_mark[index]
        up_event = np.where(moving, (self.due_event[index] - anchor) / factor, math.inf)
        up_mark = np.where(moving, (due_mark * (1 - _SLACK) - anchor - _SLACK * np.abs(anchor)) / factor, math.inf)
        self.up_event[index], self.up_mark[index] = up_event, up_mark
        for up, first, holder in (
            (up_event, self.first_event, self.event_child),
            (up_mark, self.first_mark, self.mark_child),
        ):
            smallest = children.min(up)
            at = np.where(up == children.spread(smallest), index, len(self.parent))
            first[parents], holder[parents] = smallest, np.minimum.reduceat(at, children.offsets)
        # The first event in each subtree: its own, or its children's in its clock.
        first = now + self.first_event[parents] * divisor
        child_kind = self.due_kind[self.event_child[parents]]
        self.due_kind[parents] = np.where(
            first < event, child_kind, np.where(first > event, kind, np.minimum(kind, child_kind))
        )
        self.due_event[parents] = np.minimum(event, first)
        self.due_mark[parents] = np.minimum(mark, now + self.first_mark[parents] * divisor)

    def _saturation(self, event: float, mark: float, kind: int) -> tuple[float, float, int]:
        """The root's own events, with a resource saturating (the root's clock is the time)."""
        time = float(self.clock0[0])  # the root was just recomputed
        marks = []
        for rate, use in zip(self.rate[0].tolist(), self.consumption0[0].tolist(), strict=True):
            marks.append(time + (1.0 - _EXACT - use) / rate if rate > 0 else math.inf)
            if rate > 0:
                saturation = time + (1.0 - use) / rate
                if saturation < event or (saturation == event and kind > _SATURATION):
                    event, kind = saturation, _SATURATION
        self.saturation_mark[:] = marks
        return event, min(mark, *marks), kind


class _Layout:
    """Index structures of ``_Reference``, built once per tree so that every phase is a few whole-tree passes.

    ``groups[d]`` holds the children at depth ``d + 1`` sorted by parent, so sums and minima over
    siblings are ``np.ufunc.reduceat`` over contiguous segments. Node totals over their subtrees' leaves
    are ``np.bincount`` over the node x leaf incidence (``subtree_sums``).
    """

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.groups: list[tuple[IntArray, IntArray, IntArray, IntArray]] = []
        for children in tree.levels[1:]:
            self.groups.append(self._segments(children[np.argsort(tree.parent[children], kind="stable")]))
        # All non-root nodes by parent at once, for sibling minima that need no bottom-up order.
        self.siblings = self._segments(np.argsort(tree.parent[1:], kind="stable") + 1)
        rows, cols = [], []
        current = tree.leaf_nodes.copy()
        leaf = np.arange(len(current))
        while current.size:
            rows.append(current)
            cols.append(leaf)
            up = tree.parent[current]
            keep = up >= 0
            current, leaf = up[keep], leaf[keep]
        rows_all, cols_all = np.concatenate(rows), np.concatenate(cols)
        # Sorted by node, then leaf: the order in which a sparse (CSR) product adds them up, so the totals
        # are the same to the last bit; numpy alone spares the CLI scipy's import (0.2-0.4 s).
        order = np.lexsort((cols_all, rows_all))
        self.subtree_nodes, self.subtree_leaves = rows_all[order], cols_all[order]

    def subtree_sums(self, values: FloatArray) -> FloatArray:
        """Per node, the sum of ``values`` (one entry or row per leaf) over the leaves of its subtree;
        rows of a matrix come back column-major."""
        n = self.tree.num_nodes
        picked = values[self.subtree_leaves]
        if values.ndim == 1:
            return np.bincount(self.subtree_nodes, weights=picked, minlength=n).astype(np.float64, copy=False)
        sums = np.empty((n, values.shape[1]), order="F")
        for column in range(values.shape[1]):
            sums[:, column] = np.bincount(self.subtree_nodes, weights=picked[:, column], minlength=n)
        return sums

    def _segments(self, children: IntArray) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        parents = self.tree.parent[children]
        starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]]) if len(children) else children
        return children, starts, parents[starts], np.diff(np.r_[starts, len(children)]).astype(np.int64)


class _Growth:
    """Growth modes and rates of every node (see the module docstring), recomputed for the whole tree.

    Bottom-up, every parent's mode and rates per unit of its own parameter follow from its active
    children's; then the leaf rates, products of per-node scales along root paths, are one top-down
    pass.
    """

    def __init__(self, layout: _Layout, resources: int) -> None:
        self.layout = layout
        n = layout.tree.num_nodes
        self.mode = np.zeros(n, dtype=np.int64)
        self.rate = np.zeros((n, resources), order="F")
        self.mass = np.zeros(n)
        self.factor = np.zeros(n)  # a child's rate per unit of its parent's rate, before the parent's divisor
        self.divisor = np.ones(n)
        self.growing = np.zeros(n, dtype=bool)
        self.active = np.zeros(n, dtype=bool)  # growing and at its siblings' level
        self.level = np.full(n, math.inf)  # weighted share of each node's active children
        self.dominant = np.zeros((n, resources), dtype=bool, order="F")
        self.leaf_rate = np.zeros(len(layout.tree.leaf_nodes))
        self.scale = np.zeros(n)  # rate of each node's own parameter per unit of time

    def _levels(self, share: FloatArray) -> BoolArray:
        tree = self.layout.tree
        active = np.zeros(tree.num_nodes, dtype=bool)
        children, starts, parents, sizes = self.layout.siblings
        if not len(children):
            return active
        grows = self.growing[children]
        weighted = np.where(grows, share[children] / tree.weight[children], math.inf)
        level = np.minimum.reduceat(weighted, starts)
        self.level[parents] = level
        level_of_child = np.repeat(level, sizes)
        active[children] = grows & (weighted <= level_of_child + _TIE * np.maximum(level_of_child, 1e-300))
        return active

    def update(self, water: _Reference) -> None:
        layout = self.layout
        tree = layout.tree
        consumption, share = water.node_consumption, water.node_share
        growing_leaf = ~water.blocked
        self.growing = layout.subtree_sums(growing_leaf.astype(np.float64)) > 0.5
        self.dominant = consumption >= share[:, None] - _EXACT
        self.active = self._levels(share)
        leaves = tree.leaf_nodes
        self.mode[leaves] = np.where(growing_leaf, _RISING, _NONE)
        self.rate[leaves] = np.where(growing_leaf[:, None], water.directions, 0.0)
        self.mass[leaves] = growing_leaf.astype(np.float64)
        for children, starts, parents, sizes in reversed(layout.groups):
            self._recompute(children, starts, parents, sizes, consumption, share)
        scale = np.zeros(tree.num_nodes)
        scale[0] = 1.0 if self.growing[0] else 0.0
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


class _Reference:
    """The reference engine: leaf shares, blocked leaves and node totals, every node recomputed every phase."""

    def __init__(self, instance: Instance, tree: Tree) -> None:
        leaves = _Leaves.of(instance)
        self.layout = _Layout(tree)
        self.directions, self.share_cap = leaves.directions, leaves.share_cap
        self.finite_cap = np.isfinite(self.share_cap)
        self.current = np.zeros(len(instance.tenants))
        self.blocked = ~leaves.runnable
        self.events: Counter[str] = Counter()
        self.growth = _Growth(self.layout, self.directions.shape[1])
        self.refresh()

    def refresh(self) -> None:
        self._since_refresh = 0
        self.node_rate: FloatArray | None = None
        # Column-major: reductions across the few resources of many nodes are ~30x faster that way.
        self.node_consumption = self.layout.subtree_sums(self.current[:, None] * self.directions)
        self.node_share = self.node_consumption.max(axis=1)

    def unblocked(self) -> int:
        return int(np.count_nonzero(~self.blocked))

    def leaf_rate(self) -> FloatArray:
        return self.growth.leaf_rate

    def shares(self) -> FloatArray:
        return self.current

    def next_event(self) -> tuple[float, str]:
        """Time to the first event at the current rates, and its kind."""
        growth = self.growth
        growth.update(self)
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
            to_cap = np.divide(self.share_cap - self.current, rate, out=np.full_like(rate, math.inf), where=capped)
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

    def advance(self, step: float) -> None:
        self.current = np.minimum(self.current + step * self.growth.leaf_rate, self.share_cap)
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
            self.block(np.flatnonzero((self.directions[:, full] > 0).any(axis=1)), "blocked by saturation")

    def block_capped(self) -> None:
        at_cap = ~self.blocked & (self.current >= self.share_cap * (1 - _CAP_TIE))
        # The clamp moves shares by round-off only; the periodic recount in ``advance`` absorbs it.
        self.current[at_cap] = self.share_cap[at_cap]
        self.block(np.flatnonzero(at_cap), "capped")

    def block(self, tenants: IntArray, reason: str) -> None:
        tenants = tenants[~self.blocked[tenants]]
        self.events[reason] += len(tenants)
        self.blocked[tenants] = True


class _Placement:
    """The heterogeneous-server LP: can the leaf shares grow along a direction and still be placed?

    Columns and rows are DRFH's (``DrfhModel``): ``G`` per leaf, the step ``t``, and ``g`` per
    (leaf, merged server class). Row ``level[k]`` becomes ``G_k - rate_k t = share_k`` for a phase;
    a probe for leaf ``k`` makes it ``G_k - t >= share_k`` and every other ``G_j >= share_j``.
    """

    def __init__(self, instance: Instance, backend: Backend, deadline: float | None) -> None:
        # Imported here: a pooled cluster needs no LP, and the LP brings scipy.sparse (0.2-0.4 s to import).
        from fairpack.solver.drfh.model import DrfhModel, UnitGrouping

        self.model = DrfhModel(instance, UnitGrouping.merge_identical(instance))
        tenants, units = self.model.all_pairs()
        self.pair_tenants, self.pair_units = tenants, units
        self.base = self.model.build(tenants, units, 1.0)
        self.backend = backend
        self.deadline = deadline
        # Out of time already: the filling will not solve anything, so do not transfer the model.
        expired = interrupt.requested() or (deadline is not None and time.perf_counter() >= deadline)
        # Presolve does not look at the clock (on 2,000 leaves x 500 server classes, a million columns, it ran
        # seconds past the limit) and the phases re-solve from the last basis anyway: without it the first
        # solve took 2.4 s instead of 4-8 s, and whole fillings of 1,000 leaves on 5 classes 30-40% less time.
        self.session = None if expired else backend.session(self.base, deadline=deadline, presolve=False)
        n = self.model.num_tenants
        self.coefficient = -instance.weights.copy()
        self.lp_solves = 0
        self.solve_s = 0.0
        self.x: FloatArray | None = None  # the last solution
        self.placed: FloatArray | None = None  # the last solution that places the current shares
        self._n = n

    def maximise_step(
        self, rate: FloatArray, lower: FloatArray, upper: FloatArray, step_upper: float
    ) -> tuple[Status, float]:
        """Largest ``t <= step_upper`` with ``lower_k <= G_k - rate_k t <= upper_k`` placeable."""
        n = self._n
        rows = self.model.level_rows()
        coefficient = -rate
        if self.session is None:  # the deadline had passed before the model was built
            return "time_limit", 0.0
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

    def unit_tasks(self, x: FloatArray) -> FloatArray:
        """Tasks per (leaf, merged unit) of a solution."""
        n = self._n
        g = np.maximum(x[n + 1 :], 0.0)
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
        Seconds for the whole call. When they run out, the filling stops between phases and returns
        the allocation grown so far (feasible, not yet efficient) with status ``time_limit``.
    max_phases : int, optional
        Safety stop; the default is generous (proportional to the tree size).
    incremental : bool
        True (default): the node-clock engine, which recomputes only the root paths an event
        touched. False: the reference engine, which recomputes every node in every phase (the tests
        compare the two).

    Returns
    -------
    HdrfFilling
        Leaf shares and tasks: per tenant on one pool, or per (tenant, server class).
    """
    started = time.perf_counter()
    deadline = None if time_limit is None else started + time_limit
    tree = tree_of(instance)
    target = instance.pooled() if pooled else instance
    if pooled:
        placement = None
    else:
        from fairpack.solver.backends import get_backend

        placement = _Placement(instance, backend or get_backend(), deadline)
    # Rates of zero give divisions by zero, and weights far apart overflow event times to inf: the
    # engines mask the one out and an infinite event time never comes.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        engine: _Engine = _Clocks(target, tree) if incremental else _Reference(target, tree)
        limit = max_phases if max_phases is not None else 20 * tree.num_nodes * max(1, len(instance.resources)) + 100
        status, message, phases = _fill(engine, placement, limit, deadline, time_limit)
        shares = engine.shares().copy()
    if placement is None:
        dominant = _Leaves.of(target).dominant
        tasks = np.divide(shares, dominant, out=np.zeros_like(shares), where=dominant > 0)
        tasks_matrix, kind_name = tasks[:, None], "pool"
    else:
        if status == "optimal":
            outcome, _ = _placeable_step(placement, engine, np.zeros_like(shares), 0.0)
            if outcome == "optimal":
                placement.placed = placement.x
            else:
                status, message = outcome, f"final placement LP: {outcome}"
        # Without a final solve (out of time), the last step's solution places the shares grown so far.
        tasks_matrix = (
            placement.model.units.split_to_classes(instance, placement.unit_tasks(placement.placed))
            if placement.placed is not None
            else np.zeros((len(instance.tenants), len(instance.servers)))
        )
        kind_name = "class"
    return HdrfFilling(
        status,
        shares,
        tasks_matrix,
        kind_name,  # type: ignore[arg-type]
        phases,
        0 if placement is None else placement.lp_solves,
        time.perf_counter() - started,
        engine.events,
        message,
    )


def _fill(
    engine: _Engine, placement: _Placement | None, limit: int, deadline: float | None, time_limit: float | None
) -> tuple[Status, str, int]:
    """Phase after phase until every leaf is blocked; the status, why it stopped early, and the phases."""
    phases = 0

    def out_of_time() -> str:
        why = "interrupted" if interrupt.requested() else f"time limit of {time_limit} s reached"
        return f"{why}: the allocation grown so far"

    # Phases that neither move the time nor block a leaf: a few when events coincide, never many.
    elapsed, unblocked, still = 0.0, engine.unblocked(), 0
    while unblocked:
        if interrupt.requested() or (deadline is not None and time.perf_counter() >= deadline):
            return "time_limit", f"{out_of_time()} ({phases} phases)", phases
        phases += 1
        if phases > limit:
            return "error", f"no convergence after {limit} phases", phases
        step, kind = engine.next_event()
        if placement is not None:
            outcome, reached = _placeable_step(placement, engine, engine.leaf_rate(), step)
            if outcome != "optimal":
                return outcome, out_of_time() if outcome == "time_limit" else f"placement LP: {outcome}", phases
            placement.placed = placement.x
            if reached < step * (1 - 1e-9):
                engine.advance(reached)
                engine.events["placement"] += 1
                if not _block_unplaceable(placement, engine):
                    return "time_limit", f"{out_of_time()} ({phases} phases)", phases
                engine.block_capped()
                elapsed, unblocked = elapsed + reached, engine.unblocked()
                continue
        if not math.isfinite(step):
            return "error", "growing leaves but no event ahead", phases
        engine.events[kind] += 1
        engine.advance(step)
        engine.block_saturated()
        engine.block_capped()
        left = engine.unblocked()
        still = still + 1 if elapsed + step == elapsed and left == unblocked else 0
        elapsed, unblocked = elapsed + step, left
        if still > _STALL:
            return "error", f"numerical stall at {kind} events: no progress in {_STALL} phases", phases
    return "optimal", "", phases


def _placeable_step(placement: _Placement, engine: _Engine, rate: FloatArray, step: float) -> tuple[Status, float]:
    bound = step if math.isfinite(step) else 2.0
    # A hair of slack below the current shares keeps the LP feasible despite round-off.
    shares = engine.shares()
    lower = shares * (1 - 1e-10)
    upper = shares * (1 + 1e-10) + 1e-12
    return placement.maximise_step(rate, lower, upper, bound)


def _block_unplaceable(placement: _Placement, engine: _Engine) -> bool:
    """Block every growing leaf that cannot grow at all with everyone else kept at their shares.

    Returns False when the time limit ran out before every leaf was probed (nothing is blocked then).
    """
    shares = engine.shares()
    n = len(shares)
    growing = np.flatnonzero(~engine.blocked)
    room = np.zeros(len(growing))
    for position, leaf in enumerate(growing):
        if interrupt.requested() or (placement.deadline is not None and time.perf_counter() >= placement.deadline):
            return False
        rate = np.zeros(n)
        rate[leaf] = 1.0
        upper = np.full(n, math.inf)
        status, room[position] = placement.maximise_step(rate, shares * (1 - 1e-10), upper, 1.0)
        if status == "time_limit":
            return False
        if status != "optimal":
            room[position] = 0.0
    stuck = room <= _GROW
    if not stuck.any() and growing.size:
        # Every leaf can grow alone although the joint step could not: only round-off separates the
        # two answers, so the leaf with the least room is the one the step LP ran into.
        stuck = room <= room.min()
    engine.block(growing[stuck], "blocked by placement")
    return True


def hdrf_shares(instance: Instance) -> FloatArray:
    """Pooled static H-DRF global dominant share of every leaf (per tenant)."""
    return solve_hdrf(instance, pooled=True).shares
