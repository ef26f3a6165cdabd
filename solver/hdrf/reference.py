"""Reference static H-DRF: the paper's Algorithm 1 with a small step ε, for small trees only.

Bhattacharya et al. (SoCC'13) define static H-DRF as progressive filling: repeatedly descend from the
root, at every internal node to the demanding (not blocked) child with the lowest weighted dominant
share, and give the leaf reached a little more; a leaf is blocked once a resource it needs is
saturated or its tasks run out.

Ties need care. A child whose growing leaves use only resources below its dominant component can
take resources without its share rising, so it stays the minimum and is served alone; when two such
children are tied, which one is a hair lower decides who gets everything, and the outcome jumps
with ε (we measured a leaf moving from 0.19 to 0.29 of a resource between ε = 1e-4 and 3e-5). So
children within one step (2ε / weight) of the lowest weighted share count as tied and are served
round robin, least recently served first. That makes the ε → 0 limit exist, and it is the rule the
exact method implements.

This is deliberately the naive, obviously-correct loop (one Python step per ε of dominant share) so
that it shares no code with the event-driven ``solver.hdrf.water_filling``; tests check that the two agree within
O(ε) on random hierarchies.
"""

from __future__ import annotations

import numpy as np

from fairpack.models.types import BoolArray, FloatArray, Instance


def hdrf_epsilon(instance: Instance, epsilon: float = 1e-3, max_steps: int = 10_000_000) -> FloatArray:
    """Pooled static H-DRF by ε-progressive filling.

    Parameters
    ----------
    instance : Instance
        Must carry a hierarchy; its leaves are the tenants. Servers are pooled.
    epsilon : float
        Dominant share given per step. Shares are within O(depth * ε) of the exact allocation.
    max_steps : int
        Safety stop.

    Returns
    -------
    ndarray
        Global dominant share of every leaf, per tenant.
    """
    hierarchy = instance.hierarchy
    if hierarchy is None:
        raise ValueError("the reference H-DRF needs a hierarchy")
    nodes = hierarchy.nodes
    children: list[list[int]] = [[] for _ in nodes]
    for index, node in enumerate(nodes):
        if node.parent >= 0:
            children[node.parent].append(index)
    total = instance.total_capacity
    usage_per_share, share_cap, blocked = _leaf_rates(instance)
    path = _root_paths(instance)
    live = np.zeros(len(nodes), dtype=np.int64)  # unblocked leaves under each node
    for unblocked in np.flatnonzero(~blocked):
        for node_index in path[int(unblocked)]:
            live[node_index] += 1
    consumption = np.zeros((len(nodes), len(total)))
    used = np.zeros(len(total))
    shares = np.zeros(len(instance.tenants))
    last_served = np.full(len(nodes), -1, dtype=np.int64)

    def block(tenant_index: int) -> None:
        blocked[tenant_index] = True
        for node_index in path[tenant_index]:
            live[node_index] -= 1

    for step in range(max_steps):
        if live[0] == 0:
            break
        tenant_index = _descend(instance, children, live, consumption, last_served, step, epsilon)
        rate = usage_per_share[tenant_index]
        room = min((1.0 - used[r]) / rate[r] for r in range(len(rate)) if rate[r] > 0)
        amount = max(0.0, min(epsilon, share_cap[tenant_index] - shares[tenant_index], room))
        shares[tenant_index] += amount
        used += amount * rate
        for node_index in path[tenant_index]:
            consumption[node_index] += amount * rate
        saturated = used >= 1.0 - 1e-12
        if saturated.any():
            for other in np.flatnonzero(~blocked):
                if (usage_per_share[other][saturated] > 0).any():
                    block(int(other))
        if not blocked[tenant_index] and shares[tenant_index] >= share_cap[tenant_index] - 1e-15:
            block(tenant_index)
    else:
        raise RuntimeError(f"no convergence in {max_steps} steps")
    return shares


def _leaf_rates(instance: Instance) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Per leaf: resources used per unit of dominant share, the share its task cap allows, blocked from the start."""
    total = instance.total_capacity
    num_tenants = len(instance.tenants)
    usage_per_share = np.zeros((num_tenants, len(total)))
    share_cap = np.zeros(num_tenants)
    blocked = np.zeros(num_tenants, dtype=bool)
    for tenant_index, tenant in enumerate(instance.tenants):
        demand = tenant.demand
        if np.any((demand > 0) & (total <= 0)) or tenant.tasks <= 0:
            blocked[tenant_index] = True
            continue
        fraction = demand / np.where(total > 0, total, 1.0)
        dominant = float(fraction.max())
        usage_per_share[tenant_index] = fraction / dominant
        share_cap[tenant_index] = tenant.tasks * dominant
    return usage_per_share, share_cap, blocked


def _root_paths(instance: Instance) -> list[list[int]]:
    """The nodes from every leaf up to the root, per tenant."""
    assert instance.hierarchy is not None
    nodes = instance.hierarchy.nodes
    leaf_of = {node.tenant: index for index, node in enumerate(nodes) if node.tenant >= 0}
    paths = []
    for tenant_index in range(len(instance.tenants)):
        current, walk = leaf_of[tenant_index], []
        while current >= 0:
            walk.append(current)
            current = nodes[current].parent
        paths.append(walk)
    return paths


def _descend(instance: Instance, children: list[list[int]], live: np.ndarray, consumption: FloatArray,
             last_served: np.ndarray, step: int, epsilon: float) -> int:  # fmt: skip
    """From the root to a leaf, always to the demanding child with the lowest weighted share (ties round robin)."""
    assert instance.hierarchy is not None
    nodes = instance.hierarchy.nodes
    current = 0
    while nodes[current].tenant < 0:
        candidates = [c for c in children[current] if live[c] > 0]
        weighted = {c: consumption[c].max() / nodes[c].weight for c in candidates}
        lowest = min(weighted.values())
        # One step moves a child's weighted share by at most ε / w: closer than that is a tie.
        tied = [c for c in candidates if weighted[c] <= lowest + 2 * epsilon / nodes[c].weight]
        current = min(tied, key=lambda c: last_served[c])
        last_served[current] = step
    return nodes[current].tenant
