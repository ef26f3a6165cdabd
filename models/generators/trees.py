"""Random weighted organisation trees (hierarchies) whose leaves are tenants."""

from __future__ import annotations

import math

import numpy as np

from fairpack.models.types import Hierarchy, HierarchyNode, Instance, ServerClass, Tenant

#: Resource names of generated tree instances (``r<k>`` beyond these).
_TREE_RESOURCES = ("cpu", "mem", "gpu", "net", "disk")
#: A generated tree is dense (all leaves at the bottom) when leaves**(1/depth) reaches this fraction of the
#: mean branching factor.
_DENSE_TREE = 0.9


def _spread(weights: np.ndarray, total: int) -> np.ndarray:
    """Integers >= 1, one per entry, summing to ``total`` (>= entries), roughly proportional to ``weights``.

    Every entry keeps 1; the rest of ``total`` is split in proportion to ``weights - 1`` (uniformly if
    all are 1) by largest remainders, vectorised.
    """
    base = np.ones(len(weights), dtype=np.int64)
    extra = total - len(weights)
    share = np.asarray(weights, dtype=np.float64) - 1.0
    if share.sum() <= 0:
        share = np.ones(len(weights))
    exact = share * (extra / share.sum())
    floor = np.floor(exact).astype(np.int64)
    short = extra - int(floor.sum())
    if short > 0:
        floor[np.argsort(floor - exact, kind="stable")[:short]] += 1
    return base + floor


def _level_growth(leaves: int, depth: int, mean_branching: float) -> float:
    """Growth ratio ``g`` of internal nodes per level so that the tree ends with about ``leaves`` leaves.

    With ``I_d = g**d`` internal nodes at depth ``d`` each having ``b`` children on average, the leaves
    number ``b + (b - 1) * sum_{d=1}^{depth-1} I_d``; solve that for ``g`` by bisection (``g >= 1``).
    """
    if depth <= 1:
        return 1.0
    target = max(0.0, (leaves - mean_branching) / (mean_branching - 1.0))
    if target <= depth - 1:
        return 1.0
    low, high = 1.0, max(2.0, target)
    for _ in range(100):
        middle = 0.5 * (low + high)
        if sum(middle**d for d in range(1, depth)) < target:
            low = middle
        else:
            high = middle
    return high


def random_tree_instance(
    seed: int,
    leaves: int,
    depth: int,
    resources: int = 3,
    servers: int | None = None,
    branching: tuple[int, int] = (2, 5),
    capped_fraction: float = 0.5,
    zero_component_prob: float = 0.3,
) -> Instance:
    """A random weighted organisation tree whose leaves are tenants (for H-DRF experiments and tests).

    The tree is grown level by level and has exactly ``leaves`` leaves, the deepest at exactly
    ``depth``. A sparse tree (fewer leaves than about ``mean(branching) ** depth``) draws every
    internal node's number of children uniformly from ``branching`` (inclusive) and keeps a random
    subset of each level internal, sized for the leaves still to place, so leaves also sit at
    shallower levels, as in real org charts. A dense tree keeps every leaf at the bottom and sizes
    the levels geometrically, each node's share of its level drawn from ``branching``: fan-outs are
    about ``leaves ** (1 / depth)``, beyond ``branching`` when the leaf count forces it. Rounding
    leaves a few fan-outs one outside the range, and a tree with fewer than about ``depth`` leaves
    needs single-child nodes.

    Nodes are stored in depth-first preorder (the order ``models.io`` reads a hierarchy back in),
    named by their path (``n2.1.3``; the root is ``root``), with weights uniform in [0.5, 4]. Leaf
    ``k`` in preorder is tenant ``k`` (same name and weight).

    Leaves get random per-task demand vectors: each component is zero with probability
    ``zero_component_prob`` (never all of them) and otherwise uniform in [0.1, 1] times a per-resource
    scale of about ``1 / leaves`` of the cluster (at most half of the smallest machine, so every task
    fits somewhere). A ``capped_fraction`` of the leaves get a task cap uniform in 1..10, the others
    are unbounded.

    Everything is drawn with vectorised numpy calls and the validated ``Hierarchy``/``Tenant``
    objects are built directly (no file round trip), so 100,000 leaves take a few seconds at most.

    Parameters
    ----------
    seed : int
        The instance is a deterministic function of all arguments.
    leaves : int
        Number of leaves (tenants), >= 1.
    depth : int
        Depth of the deepest leaf (the root has depth 0), >= 1.
    resources : int
        Number of resources (named cpu, mem, gpu, net, disk, then ``r5``, ...).
    servers : int, optional
        None: one pooled server ``pool`` with capacity 1.0 of every resource. An int: that many
        random heterogeneous server classes (shapes uniform in [0.1, 1] per resource, 1-8 machines
        each), scaled so that the cluster total of every resource is 1.0.
    branching : (int, int)
        Inclusive range of children per internal node.
    capped_fraction : float
        Fraction of leaves with a finite task cap.
    zero_component_prob : float
        Probability that a demand component is zero.

    Returns
    -------
    Instance
        With ``hierarchy`` set and ``tenants`` the leaves in preorder; named
        ``tree-<leaves>l-d<depth>-s<seed>``.
    """
    lo, hi = branching
    if leaves < 1 or depth < 1 or resources < 1:
        raise ValueError(f"need leaves >= 1, depth >= 1 and resources >= 1, got {leaves}, {depth}, {resources}")
    if not 1 <= lo <= hi:
        raise ValueError(f"branching must be a range (lo, hi) with 1 <= lo <= hi, got {branching}")
    if servers is not None and servers < 1:
        raise ValueError(f"servers must be a positive number of classes, got {servers}")
    rng = np.random.default_rng(seed)

    # Grow the tree breadth first. Node ids are in level order and, within a level, children of the
    # same parent are contiguous and follow their parents' order (np.repeat over sorted parent ids).
    mean_branching = max(1.5, 0.5 * (lo + hi))
    growth = _level_growth(leaves, depth, mean_branching)
    even = leaves ** (1.0 / depth)  # the fan-out of a tree with every leaf at the bottom
    # Dense trees (about as many leaves as full branching gives, or more) keep every leaf at the bottom
    # and size the levels geometrically, so every fan-out is about `even` (drawn fan-outs would compound
    # their randomness and leave the last level to absorb it). Sparse trees draw fan-outs from the range
    # and stop some branches early.
    dense = even >= _DENSE_TREE * mean_branching
    parents: list[np.ndarray] = [np.array([-1], dtype=np.int64)]
    internal: list[np.ndarray] = [np.array([True])]
    frontier = np.array([0], dtype=np.int64)  # internal nodes of the previous level
    next_id, remaining = 1, leaves
    for level in range(1, depth + 1):
        draws = rng.integers(lo, hi + 1, size=frontier.size)
        natural = int(draws.sum())
        if level == depth:
            size, stays = remaining, 0  # every frontier node still needs >= 1 child: remaining >= frontier
        elif dense:
            size = stays = min(remaining, max(frontier.size, round(even**level)))
        else:
            # Keep as many internal nodes as the leaves still to place need: each will carry about
            # `below` leaves (the same geometric scheme over the levels left) and can carry at most
            # hi**levels_left, so the last levels keep their fan-out in range instead of absorbing
            # the difference.
            levels_left = depth - level
            below = mean_branching + (mean_branching - 1.0) * sum(growth**k for k in range(1, levels_left))
            target = round((remaining - natural) / (below - 1.0))
            needed = math.ceil((remaining - natural) / max(hi**levels_left - 1, 1))
            stays = min(max(1, target, needed), natural, remaining)
            # Each internal node will end in at least one leaf, so keep that many leaves in reserve.
            size = stays + min(natural - stays, remaining - stays)
        counts = _spread(draws, size) if size != natural else draws.astype(np.int64)
        level_parents = np.repeat(frontier, counts)
        flags = np.zeros(size, dtype=bool)
        flags[rng.permutation(size)[:stays]] = True
        parents.append(level_parents)
        internal.append(flags)
        ids = np.arange(next_id, next_id + size)
        remaining -= size - stays
        frontier = ids[flags]
        next_id += size
    parent = np.concatenate(parents)
    is_internal = np.concatenate(internal)
    n_nodes = parent.size

    # Sibling rank (1-based) and depth-first preorder: sort by the ids of the ancestors at every
    # level (missing levels as -1, so a node precedes its descendants).
    rank = np.zeros(n_nodes, dtype=np.int64)
    ancestors = np.full((n_nodes, depth + 1), -1, dtype=np.int64)
    ancestors[0, 0] = 0
    start = 1
    for level in range(1, depth + 1):
        ids = np.arange(start, start + parents[level].size)
        start += ids.size
        level_parents = parents[level]
        rank[ids] = np.arange(ids.size) - np.searchsorted(level_parents, level_parents) + 1
        ancestors[ids] = ancestors[level_parents]
        ancestors[ids, level] = ids
    order = np.lexsort(ancestors.T[::-1])
    position = np.empty(n_nodes, dtype=np.int64)
    position[order] = np.arange(n_nodes)

    names = [""] * n_nodes  # by breadth-first id; parents are named before their children
    names[0] = "root"
    for node, (up, r) in enumerate(zip(parent[1:].tolist(), rank[1:].tolist(), strict=True), start=1):
        names[node] = f"n{r}" if up == 0 else f"{names[up]}.{r}"

    weight = np.round(rng.uniform(0.5, 4.0, size=n_nodes), 3)
    leaf_ids = order[~is_internal[order]]  # breadth-first ids of the leaves, in preorder
    tenant_of = np.full(n_nodes, -1, dtype=np.int64)
    tenant_of[leaf_ids] = np.arange(leaves)

    # Servers: one pool, or random shapes scaled to a cluster total of 1.0 per resource.
    resource_names = tuple(_TREE_RESOURCES[k] if k < len(_TREE_RESOURCES) else f"r{k}" for k in range(resources))
    if servers is None:
        server_list: tuple[ServerClass, ...] = (ServerClass("pool", np.ones(resources), 1),)
        smallest = np.ones(resources)
    else:
        shapes = rng.uniform(0.1, 1.0, size=(servers, resources))
        machine_counts = rng.integers(1, 9, size=servers)
        shapes = shapes / (shapes * machine_counts[:, None]).sum(axis=0)
        server_list = tuple(ServerClass(f"s{k}", shapes[k], int(machine_counts[k])) for k in range(servers))
        smallest = shapes.min(axis=0)

    # Demands: about 1/leaves of the cluster per task, never more than half the smallest machine.
    unit = np.minimum(1.0 / max(leaves, 2), 0.5 * smallest)
    demand = rng.uniform(0.1, 1.0, size=(leaves, resources)) * unit[None, :]
    zero = rng.random((leaves, resources)) < zero_component_prob
    all_zero = zero.all(axis=1)
    zero[np.flatnonzero(all_zero), rng.integers(resources, size=int(all_zero.sum()))] = False
    demand[zero] = 0.0
    caps = np.where(rng.random(leaves) < capped_fraction, rng.integers(1, 11, size=leaves).astype(np.float64), math.inf)

    nodes = tuple(
        HierarchyNode(
            names[b], int(position[parent[b]]) if b else -1, float(weight[b]) if b else 1.0, int(tenant_of[b])
        )
        for b in order.tolist()
    )
    tenants = tuple(
        Tenant(names[b], demand[k], float(weight[b]), float(caps[k])) for k, b in enumerate(leaf_ids.tolist())
    )
    name = f"tree-{leaves}l-d{depth}-s{seed}"
    return Instance(resource_names, server_list, tenants, Hierarchy(nodes), name=name)
