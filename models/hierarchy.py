"""The organisation tree as arrays: parents, children, depth levels, leaf <-> tenant maps.

``Hierarchy`` (models.types) is the validated, frozen description read from a file. ``Tree`` is its
working form for computations on trees of 100,000 leaves: every per-node quantity is a numpy array
indexed by node, and the two traversals every H-DRF computation needs, summing over subtrees (bottom
up) and multiplying along root paths (top down), are one vectorised step per depth level rather
than a Python call per node. ``to_networkx`` gives the same tree as a ``networkx.DiGraph`` for
drawing and for users who want graph algorithms.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from fairpack.models.types import BoolArray, FloatArray, Hierarchy, Instance, InstanceError, IntArray

if TYPE_CHECKING:
    import networkx as nx



@dataclass(frozen=True, eq=False)
class Tree:
    """A rooted weighted tree; node 0 is the root and every leaf is a tenant of the instance.

    Attributes
    ----------
    names, parent, weight:
        Per node; ``parent[0] == -1``.
    tenant:
        Per node, the tenant index of a leaf, -1 for internal nodes.
    """

    names: tuple[str, ...]
    parent: IntArray
    weight: FloatArray
    tenant: IntArray

    @classmethod
    def from_hierarchy(cls, hierarchy: Hierarchy) -> Tree:
        nodes = hierarchy.nodes
        return cls(
            tuple(n.name for n in nodes),
            np.array([n.parent for n in nodes], dtype=np.int64),
            np.array([n.weight for n in nodes], dtype=np.float64),
            np.array([n.tenant for n in nodes], dtype=np.int64),
        )

    @classmethod
    def of(cls, instance: Instance) -> Tree:
        """The instance's hierarchy, or a one-level tree over its tenants when it has none."""
        if instance.hierarchy is not None:
            return cls.from_hierarchy(instance.hierarchy)
        n = len(instance.tenants)
        return cls(
            ("root", *(t.name for t in instance.tenants)),
            np.concatenate([[-1], np.zeros(n, dtype=np.int64)]),
            np.concatenate([[1.0], instance.weights]),
            np.concatenate([[-1], np.arange(n, dtype=np.int64)]),
        )

    @property
    def num_nodes(self) -> int:
        return len(self.parent)

    @cached_property
    def depth(self) -> IntArray:
        depth = np.full(self.num_nodes, -1, dtype=np.int64)
        depth[0] = 0
        # Parent indices need not precede their children, so iterate until every depth is known.
        for _ in range(self.num_nodes):
            unknown = depth < 0
            if not unknown.any():
                break
            ready = unknown & (depth[np.maximum(self.parent, 0)] >= 0)
            depth[ready] = depth[self.parent[ready]] + 1
        return depth

    @cached_property
    def levels(self) -> tuple[IntArray, ...]:
        """Node indices by depth, root level first."""
        order = np.argsort(self.depth, kind="stable")
        bounds = np.searchsorted(self.depth[order], np.arange(int(self.depth.max()) + 2))
        return tuple(order[bounds[d] : bounds[d + 1]] for d in range(len(bounds) - 1))

    @cached_property
    def is_leaf(self) -> BoolArray:
        has_child = np.zeros(self.num_nodes, dtype=bool)
        has_child[self.parent[1:]] = True
        return ~has_child

    @cached_property
    def leaf_nodes(self) -> IntArray:
        """Node of every tenant: ``leaf_nodes[tenant]``."""
        leaves = np.flatnonzero(self.tenant >= 0)
        result = np.empty(len(leaves), dtype=np.int64)
        result[self.tenant[leaves]] = leaves
        return result

    def preorder(self) -> list[int]:
        """Nodes in depth-first order, children in index order (for drawing the tree)."""
        order = np.argsort(self.parent[1:], kind="stable") + 1
        starts = np.searchsorted(self.parent[order], np.arange(self.num_nodes + 1))
        result: list[int] = []
        stack = [0]
        while stack:
            node = stack.pop()
            result.append(node)
            stack.extend(reversed(order[starts[node] : starts[node + 1]].tolist()))
        return result

    def children(self, node: int) -> IntArray:
        return np.flatnonzero(self.parent == node)

    def subtree_sum(self, values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Sum of ``values`` (per node, optionally with trailing axes) over every node's subtree."""
        total = np.array(values, dtype=np.float64, copy=True)
        for level in reversed(self.levels[1:]):
            np.add.at(total, self.parent[level], total[level])
        return total

    def subtree_any(self, flags: BoolArray) -> BoolArray:
        """Whether any node of each subtree has the flag."""
        return self.subtree_sum(flags.astype(np.float64)) > 0

    def path_product(self, factors: FloatArray) -> FloatArray:
        """Product of ``factors`` along the path from the root to every node (root factor included)."""
        product = np.array(factors, dtype=np.float64, copy=True)
        for level in self.levels[1:]:
            product[level] *= product[self.parent[level]]
        return product

    def sibling_sum(self, values: FloatArray) -> FloatArray:
        """For every non-root node, the sum of ``values`` over its parent's children (itself included)."""
        per_parent = np.bincount(self.parent[1:], weights=values[1:], minlength=self.num_nodes)
        result = np.zeros(self.num_nodes)
        result[1:] = per_parent[self.parent[1:]]
        return result

    def guarantees(self, demanding: BoolArray) -> FloatArray:
        """Hierarchical share guarantee of every node (the root's is 1).

        A demanding node is guaranteed ``w_n / sum of w over its demanding siblings`` of its parent's
        guarantee (Bhattacharya et al., SoCC'13); a node that demands nothing is guaranteed 0.
        """
        fraction = np.where(demanding, self.weight, 0.0)
        siblings = self.sibling_sum(fraction)
        fraction = np.divide(fraction, siblings, out=np.zeros_like(fraction), where=siblings > 0)
        fraction[0] = 1.0
        return self.path_product(fraction)

    def collapsed_weights(self, demanding: BoolArray) -> FloatArray:
        """Leaf weights of the collapsed (flattened) hierarchy, per tenant: the leaf's guarantee."""
        return self.guarantees(demanding)[self.leaf_nodes]

    def to_networkx(self) -> nx.DiGraph:
        """The tree as a DiGraph from parent to child; node attributes ``weight`` and ``tenant``."""
        import networkx as nx

        graph = nx.DiGraph()
        for index, name in enumerate(self.names):
            graph.add_node(name, weight=float(self.weight[index]), tenant=int(self.tenant[index]))
        graph.add_edges_from((self.names[int(p)], self.names[i]) for i, p in enumerate(self.parent) if p >= 0)
        return graph


def tree_of(instance: Instance) -> Tree:
    """The instance's tree; an instance without a hierarchy is a flat tree of its tenants."""
    tree = Tree.of(instance)
    if len(tree.leaf_nodes) != len(instance.tenants):
        raise InstanceError("hierarchy leaves must map one-to-one onto tenants", "hierarchy")
    return tree
