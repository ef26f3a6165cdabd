"""Small graph helpers shared by the DAG-job formulations, the simulator and the CP model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def adjacency(num_nodes: int, edges: Sequence[Sequence[int]]) -> tuple[list[list[int]], list[list[int]]]:
    """Parents and children lists of every node from ``(parent, child)`` pairs."""
    parents: list[list[int]] = [[] for _ in range(num_nodes)]
    children: list[list[int]] = [[] for _ in range(num_nodes)]
    for parent, child in edges:
        parents[int(child)].append(int(parent))
        children[int(parent)].append(int(child))
    return parents, children


def topological_order(parents: Sequence[Sequence[int]], children: Sequence[Sequence[int]]) -> list[int]:
    """Nodes with every parent before its children (Kahn's algorithm; the graphs are validated acyclic)."""
    missing = [len(p) for p in parents]
    ready = [node for node, count in enumerate(missing) if count == 0]
    order: list[int] = []
    while ready:
        node = ready.pop()
        order.append(node)
        for child in children[node]:
            missing[child] -= 1
            if missing[child] == 0:
                ready.append(child)
    return order


def longest_paths(
    parents: Sequence[Sequence[int]], children: Sequence[Sequence[int]], duration: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per node, ``(head, tail)``: the longest path from any source to the node's start, and from its start
    to any sink including its own duration (pure precedence, no resources)."""
    length = np.asarray(duration, dtype=np.float64)
    order = topological_order(parents, children)
    head = np.zeros(length.size)
    for node in order:
        head[node] = max((head[p] + length[p] for p in parents[node]), default=0.0)
    tail = np.zeros(length.size)
    for node in reversed(order):
        tail[node] = length[node] + max((tail[c] for c in children[node]), default=0.0)
    return head, tail


def reachability(parents: Sequence[Sequence[int]], children: Sequence[Sequence[int]]) -> npt.NDArray[np.bool_]:
    """``reach[a, b]``: node ``b`` transitively waits for node ``a`` (a dense nodes x nodes matrix)."""
    reach = np.zeros((len(parents), len(parents)), dtype=bool)
    for node in reversed(topological_order(parents, children)):  # children first
        for child in children[node]:
            reach[node] |= reach[child]
            reach[node, child] = True
    return reach
