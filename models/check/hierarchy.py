"""Hierarchical properties (static H-DRF, Bhattacharya et al., SoCC'13), checked from the instance alone.

An instance with a ``hierarchy`` is a weighted tree whose leaves are its tenants; an internal node
consumes the sum of its leaves' consumption. The checks here take the tree from
:func:`fairpack.models.hierarchy.tree_of` (an instance without a hierarchy is a one-level tree, so every check
also applies to flat instances):

* :func:`share_guarantee` -- every demanding, unsatisfied node gets at least its hierarchical share
  guarantee (:func:`node_shares` gives the per-node consumption it compares, which the CLI's
  ``nodes:`` output also uses; :func:`demanding_nodes` says which nodes demand anything);
* :func:`hierarchical_pareto` -- no leaf can get more tasks without another getting fewer;
* :func:`group_strategyproof` -- no group of leaves gains by misreporting demands jointly (with
  :func:`random_group_misreports` to draw joint misreports).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from fairpack.models.check.probes import random_misreports, runnable_tasks
from fairpack.models.check.properties import pareto_optimal
from fairpack.models.check.report import (
    PropertyCheck,
    Solver,
    as_allocation,
    clean_tasks,
    fmt,
    task_slack,
    tenant_index,
    vector_text,
)
from fairpack.models.hierarchy import Tree, tree_of
from fairpack.models.result import Allocation
from fairpack.models.tolerance import CHECK_RTOL
from fairpack.models.types import BoolArray, FloatArray, Instance

# ----------------------------------------------------------------------------------------------
# Node shares and the share guarantee
# ----------------------------------------------------------------------------------------------


def demanding_nodes(
    instance: Instance, kind: str = "class", integral: bool = False, *, tree: Tree | None = None
) -> BoolArray:
    """Which nodes demand anything: their subtree has a leaf that wants tasks and can run one.

    A leaf (tenant) is demanding when its task cap is positive and it can run on the cluster in the
    allocation's setting:

    * whole tasks (``integral``, or kind ``'machine'``): one task fits on some machine
      (``instance.fits()``);
    * divisible tasks on server classes (kind ``'class'``): some class has every resource the leaf
      needs (a fraction of a task need not fit a machine, as in DRFH);
    * divisible tasks on the pooled cluster (kind ``'pool'``): the cluster has every resource the
      leaf needs (``instance.runnable``).

    An internal node is demanding when any leaf of its subtree is. Non-demanding nodes are
    guaranteed nothing (:meth:`fairpack.models.hierarchy.Tree.guarantees`).

    Parameters
    ----------
    instance : Instance
    kind : {'class', 'machine', 'pool'}
        The allocation's unit kind.
    integral : bool
        Whether tasks are whole.
    tree : Tree, optional
        ``tree_of(instance)``, if already built.

    Returns
    -------
    ndarray of bool, shape (nodes,)
    """
    tree = tree if tree is not None else tree_of(instance)
    if integral or kind == "machine":
        can_run = instance.fits().any(axis=1)
    elif kind == "pool":
        can_run = instance.runnable
    else:
        # A class is usable when it has some of every resource the leaf needs.
        lacks = (instance.demand > 0).astype(np.int64) @ (instance.capacity <= 0).astype(np.int64).T
        can_run = (lacks == 0).any(axis=1)
    flags = np.zeros(tree.num_nodes, dtype=bool)
    flags[tree.leaf_nodes] = (instance.task_caps > 0) & can_run
    return tree.subtree_any(flags)


def node_shares(
    instance: Instance, allocation: Allocation, *, tree: Tree | None = None
) -> tuple[FloatArray, FloatArray]:
    """Consumption and global dominant share of every node of the instance's tree.

    A leaf consumes ``X_i * D[i]`` (its task count times its demand, summed over units); an internal
    node consumes the sum over the leaves of its subtree. Amounts are fractions of the cluster total
    of each resource (0 for resources the cluster lacks).

    Parameters
    ----------
    instance : Instance
    allocation : Allocation
        Task counts, one row per tenant (leaf); non-finite entries count as 0.
    tree : Tree, optional
        ``tree_of(instance)``, if already built.

    Returns
    -------
    node_consumption : ndarray, shape (nodes, resources)
        Fraction of the cluster total of each resource that each node's subtree consumes.
    node_dominant_share : ndarray, shape (nodes,)
        Max over resources of ``node_consumption``.
    """
    tree = tree if tree is not None else tree_of(instance)
    tasks = clean_tasks(allocation)
    if tasks.ndim != 2 or tasks.shape[0] != len(instance.tenants):
        raise ValueError(f"allocation has shape {tasks.shape}, expected one row per tenant ({len(instance.tenants)})")
    totals = tasks.sum(axis=1)
    total = instance.total_capacity
    per_unit = np.divide(1.0, total, out=np.zeros_like(total), where=total > 0)
    consumption = np.zeros((tree.num_nodes, len(instance.resources)))
    consumption[tree.leaf_nodes] = totals[:, None] * instance.demand * per_unit[None, :]
    consumption = tree.subtree_sum(consumption)
    return consumption, consumption.max(axis=1)


def guaranteed_nodes(
    instance: Instance, allocation: Allocation, tol: float = CHECK_RTOL, *, tree: Tree | None = None
) -> tuple[BoolArray, FloatArray, FloatArray]:
    """The nodes the share guarantee applies to, with every node's dominant share and guarantee.

    Those are the demanding non-root nodes that are not satisfied (some demanding leaf below its task
    cap, within ``tol`` relative as in :func:`fairpack.models.metrics.min_weighted_share`).

    Returns
    -------
    applies : ndarray of bool, shape (nodes,)
    share, guarantee : ndarray, shape (nodes,)
    """
    tree = tree if tree is not None else tree_of(instance)
    demanding = demanding_nodes(instance, allocation.kind, allocation.integral, tree=tree)
    guarantee = tree.guarantees(demanding)
    _, share = node_shares(instance, allocation, tree=tree)
    totals = clean_tasks(allocation).sum(axis=1)
    # Same satisfaction test as min_weighted_share; inf caps are never reached.
    unsatisfied_leaf = demanding[tree.leaf_nodes] & ~(totals >= instance.task_caps * (1 - tol) - tol)
    flags = np.zeros(tree.num_nodes, dtype=bool)
    flags[tree.leaf_nodes] = unsatisfied_leaf
    applies = demanding & tree.subtree_any(flags)
    applies[0] = False
    return applies, share, guarantee


def share_guarantee(instance: Instance, allocation: Allocation, tol: float = CHECK_RTOL) -> PropertyCheck:
    """Hierarchical share guarantee: every demanding node gets its guaranteed dominant share.

    The guarantee of a node ``n`` is ``G_parent * w_n / (sum of w over n's demanding siblings, n
    included)``, the root's is 1 (:meth:`fairpack.models.hierarchy.Tree.guarantees`; which nodes demand
    anything depends on the allocation's kind and integrality, see :func:`demanding_nodes`). A
    node's dominant share is the max over resources of its subtree's consumption as a fraction of
    the cluster total (:func:`node_shares`). The property holds iff
    every demanding non-root node has dominant share ``>= guarantee - tol``, except a node that is
    *satisfied*: every demanding leaf of its subtree holds its full task cap (within ``tol``
    relative, as in :func:`fairpack.models.metrics.min_weighted_share`; leaves that demand nothing count as
    satisfied, an unbounded leaf never is).

    The root is left out: its guarantee, the whole cluster, is met only by exhausting a resource,
    which is work conservation (:func:`hierarchical_pareto`), not a guarantee among siblings. On a
    flat instance the property is weighted sharing incentive in dominant-share terms.

    Parameters
    ----------
    instance : Instance
    allocation : Allocation
    tol : float
        Absolute tolerance on dominant shares (fractions of the cluster).

    Returns
    -------
    PropertyCheck
        ``worst`` is ``(node,)`` with the largest shortfall ``guarantee - share`` among demanding,
        unsatisfied nodes; ``excess`` is that shortfall as a fraction of the cluster (the largest
        found even when it holds; 0 when no node qualifies).
    """
    tree = tree_of(instance)
    candidate, share, guarantee = guaranteed_nodes(instance, allocation, tol, tree=tree)
    if not candidate.any():
        return PropertyCheck(
            "share_guarantee", True, "every demanding node is satisfied (holds its task caps)", (), 0.0
        )
    shortfall = np.where(candidate, guarantee - share, -math.inf)
    node = int(np.argmax(shortfall))
    worst = float(shortfall[node])
    name = tree.names[node]
    if worst <= tol:
        detail = (
            f"every demanding node gets its guarantee; closest: {name!r} has dominant share "
            f"{fmt(share[node])} for a guarantee of {fmt(guarantee[node])}"
        )
        return PropertyCheck("share_guarantee", True, detail, (), worst)
    parent = int(tree.parent[node])
    detail = (
        f"node {name!r} has dominant share {fmt(share[node])}, below its guarantee {fmt(guarantee[node])} "
        f"(weight {fmt(tree.weight[node])} under {tree.names[parent]!r}, whose guarantee is "
        f"{fmt(guarantee[parent])})"
    )
    return PropertyCheck("share_guarantee", False, detail, (name,), worst)


# ----------------------------------------------------------------------------------------------
# Pareto efficiency of the leaves
# ----------------------------------------------------------------------------------------------


def hierarchical_pareto(instance: Instance, allocation: Allocation, tol: float = CHECK_RTOL) -> PropertyCheck:
    """Pareto efficiency of the leaves: no leaf can get more tasks without another getting fewer.

    The hierarchy adds no constraint to what is feasible (an internal node only consumes what its
    leaves consume), so this is :func:`fairpack.models.check.pareto_optimal` applied to the leaves as tenants:
    for divisible allocations, an LP solved with ``scipy.optimize.linprog`` (a different code path
    from the solvers) over the per-unit capacities of ``allocation.kind`` and the leaves' task caps,
    keeping every leaf at least at its current task count; for integral allocations, the "one more
    whole task fits" probe. See :func:`fairpack.models.check.pareto_optimal` for the exact formulation and
    tolerances.

    Returns
    -------
    PropertyCheck
        As :func:`fairpack.models.check.pareto_optimal`, named ``"hierarchical_pareto"``.
    """
    return replace(pareto_optimal(instance, allocation, tol), name="hierarchical_pareto")


# ----------------------------------------------------------------------------------------------
# Group strategyproofness
# ----------------------------------------------------------------------------------------------


def _group_indices(instance: Instance, group: Sequence[int | str]) -> list[int]:
    indices = [tenant_index(instance, member) for member in group]
    if not indices:
        raise ValueError("the group is empty")
    if len(set(indices)) != len(indices):
        raise ValueError(f"the group names a tenant twice: {list(group)}")
    return indices


def random_group_misreports(
    instance: Instance,
    group: Sequence[int | str],
    count: int,
    seed: int = 0,
    *,
    keep_truth: float = 0.25,
) -> list[list[FloatArray]]:
    """Random joint misreports for a group of leaves (tenants).

    Each member's claims come from :func:`fairpack.models.check.random_misreports` (inflated needed
    components and/or demand on resources it does not need), drawn with a per-member seed derived
    from ``seed``. With probability ``keep_truth`` a member reports its true demand instead, so the
    probe also covers coalitions where only some members lie; at least one member always lies.

    Parameters
    ----------
    instance : Instance
    group : sequence of int or str
        Tenant (leaf) indices or names.
    count : int
        Number of joint misreports.
    seed : int
    keep_truth : float
        Probability that a member tells the truth in a joint misreport.

    Returns
    -------
    list of list of ndarray
        ``count`` joint misreports, each one claimed demand vector per member in ``group`` order.
    """
    indices = _group_indices(instance, group)
    rng = np.random.default_rng(seed)
    member_seeds = rng.integers(0, 2**31 - 1, size=len(indices))
    claims = [
        random_misreports(instance, index, count, int(member_seed))
        for index, member_seed in zip(indices, member_seeds, strict=True)
    ]
    honest = rng.random((count, len(indices))) < keep_truth
    liar = rng.integers(len(indices), size=count)
    honest[np.arange(count), liar] = False  # somebody has to lie, or it is the truthful case again
    joint: list[list[FloatArray]] = []
    for k in range(count):
        joint.append(
            [
                np.array(instance.demand[index], dtype=np.float64) if honest[k, m] else claims[m][k]
                for m, index in enumerate(indices)
            ]
        )
    return joint


def group_strategyproof(
    instance: Instance,
    solve: Solver,
    group: Sequence[int | str],
    misreports: Sequence[Sequence[Sequence[float] | FloatArray]],
    tol: float = CHECK_RTOL,
    *,
    truthful_allocation: Allocation | None = None,
) -> PropertyCheck:
    """Group-strategyproofness probe: no group of leaves gains by misreporting demands jointly.

    ``T_k`` = member ``k``'s task count in ``solve(instance)`` (or ``truthful_allocation``). For each
    joint misreport (one claimed demand vector per member), the instance is re-solved with those
    leaves' demands replaced (``dataclasses.replace(instance, tenants=...)``: the hierarchy is kept),
    and each member's runnable tasks are counted with its TRUE demand (:func:`runnable_tasks`),
    capped at its true task cap: ``A_k``. A joint misreport is a violation iff every member is
    weakly better off (``A_k >= T_k - s_k``) and at least one strictly (``A_k > T_k + s_k``), with
    ``s_k = tol * max(1, T_k)``.

    Parameters
    ----------
    instance : Instance
    solve : callable
        ``Instance -> Allocation`` (or an object with ``.allocation``, such as ``Result``).
    group : sequence of int or str
        Indices or names of the coalition's leaves (tenants).
    misreports : sequence of joint misreports
        Each is one claimed demand vector per member, in ``group`` order and ordered like
        ``instance.resources``; see :func:`random_group_misreports`.
    tol : float
    truthful_allocation : Allocation, optional
        The solution of the truthful instance, if already computed.

    Returns
    -------
    PropertyCheck
        ``worst`` is ``(member, its claim as text, member, claim, ...)`` for the most profitable
        joint misreport. ``excess`` is, for that misreport, the largest member gain in tasks when
        nobody in the group loses; for a misreport where somebody loses, the (negative) gain of
        the worst-off member. It is the largest such number over all misreports, so it is positive
        beyond the tolerance exactly when some joint misreport is a violation.
    """
    indices = _group_indices(instance, group)
    names = [instance.tenants[i].name for i in indices]
    truths = [instance.demand[i] for i in indices]
    caps = instance.task_caps[indices]
    base = truthful_allocation if truthful_allocation is not None else as_allocation(solve(instance))
    honest = clean_tasks(base)[indices].sum(axis=1)
    slack = task_slack(honest, tol)
    best: tuple[float, bool, list[FloatArray], FloatArray] | None = None  # (score, violates, claims, tasks)
    for joint in misreports:
        if len(joint) != len(indices):
            raise ValueError(f"a joint misreport has {len(joint)} vectors for a group of {len(indices)}")
        claims = [np.asarray(claim, dtype=np.float64).reshape(-1) for claim in joint]
        tenants = list(instance.tenants)
        for index, claim, truth in zip(indices, claims, truths, strict=True):
            if claim.shape != truth.shape:
                raise ValueError(f"misreport has {claim.size} entries for {truth.size} resources")
            tenants[index] = replace(tenants[index], demand=claim)
        # ``replace`` keeps the hierarchy (same tenant count and order), unlike ``with_tenants`` on resize.
        result = as_allocation(solve(replace(instance, tenants=tuple(tenants))))
        rows = clean_tasks(result)[indices]
        actual = np.array(
            [
                min(float(cap), runnable_tasks(truth, claim, row, result.integral))
                for cap, truth, claim, row in zip(caps, truths, claims, rows, strict=True)
            ]
        )
        gain = actual - honest
        nobody_loses = bool(np.all(gain >= -slack))
        violates = nobody_loses and bool(np.any(gain > slack))
        score = float(gain.max()) if nobody_loses else float(gain.min())
        if best is None or (violates, score) > (best[1], best[0]):
            best = (score, violates, claims, actual)
    if best is None:
        return PropertyCheck("group_strategyproof", True, "no misreports given", (), 0.0)
    score, violates, claims, actual = best
    worst: list[str] = []
    for name, claim in zip(names, claims, strict=True):
        worst += [name, vector_text(instance.resources, claim)]
    outcome = ", ".join(f"{name!r} {fmt(a)} vs {fmt(t)}" for name, a, t in zip(names, actual, honest, strict=True))
    if not violates:
        detail = f"no joint misreport of {names} helps the group; closest (tasks vs truthful): {outcome}"
        return PropertyCheck("group_strategyproof", True, detail, (), score)
    lies = "; ".join(f"{worst[k]!r} claims {worst[k + 1]}" for k in range(0, len(worst), 2))
    detail = f"group {names} gains by misreporting jointly ({lies}): tasks vs truthful: {outcome}"
    return PropertyCheck("group_strategyproof", False, detail, tuple(worst), score)
