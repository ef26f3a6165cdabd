"""Hierarchical checks (models.check.hierarchy) on hand-built trees, toy solvers and random trees, and the
random tree generator (models.generators.random_tree_instance)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from work import growth, lines_run, peak_bytes

from fairpack.models.check import (
    demanding_nodes,
    group_strategyproof,
    hierarchical_pareto,
    node_shares,
    pareto_optimal,
    random_group_misreports,
    share_guarantee,
    verify_allocation,
)
from fairpack.models.generators import random_tree_instance
from fairpack.models.hierarchy import tree_of
from fairpack.models.io import instance_from_dict, instance_to_dict
from fairpack.models.result import Allocation
from fairpack.models.types import Instance


def leaf(name: str, demand: dict[str, float], weight: float = 1.0, **more: Any) -> dict[str, Any]:
    return {"name": name, "demand": demand, "weight": weight, **more}


def node(name: str, children: list[dict[str, Any]], weight: float = 1.0) -> dict[str, Any]:
    return {"name": name, "weight": weight, "children": children}


def tree_instance(
    children: list[dict[str, Any]], capacity: dict[str, float], servers: list[dict[str, Any]] | None = None
) -> Instance:
    servers = servers or [{"name": "pool", "capacity": capacity}]
    return instance_from_dict({"resources": list(capacity), "servers": servers, "hierarchy": node("root", children)})


def pool(tasks: list[float]) -> Allocation:
    return Allocation(np.array(tasks, dtype=float)[:, None], "pool")


def by_name(instance: Instance, values: np.ndarray) -> dict[str, float]:
    tree = tree_of(instance)
    return {name: float(values[k]) for k, name in enumerate(tree.names)}


# ----------------------------------------------------------------------------------------------
# The H-DRF paper's Fig. 4 variant: 10 CPUs, 10 GPUs
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def fig4() -> Instance:
    # n1{n1,1 <1 CPU, 1 GPU>}, n2{n2,1 <1 CPU>, n2,2 <1 GPU>}; tenants are the leaves in order.
    return tree_instance(
        [
            node("n1", [leaf("n1,1", {"cpu": 1, "gpu": 1})]),
            node("n2", [leaf("n2,1", {"cpu": 1}), leaf("n2,2", {"gpu": 1})]),
        ],
        {"cpu": 10, "gpu": 10},
    )


def test_fig4_collapsed_allocation_violates_n2_guarantee(fig4: Instance) -> None:
    # Collapsed hierarchy (weighted DRF over leaves): n1,1 gets 2/3 of both, n2,1 and n2,2 a third each.
    collapsed = pool([20 / 3, 10 / 3, 10 / 3])
    assert verify_allocation(fig4, collapsed).ok
    consumption, share = node_shares(fig4, collapsed)
    shares = by_name(fig4, share)
    assert shares["n1"] == pytest.approx(2 / 3)
    assert shares["n2"] == pytest.approx(1 / 3)
    assert shares["root"] == pytest.approx(1.0)
    tree = tree_of(fig4)
    assert consumption[tree.names.index("n2")] == pytest.approx([1 / 3, 1 / 3])
    check = share_guarantee(fig4, collapsed)
    assert not check.holds
    assert check.name == "share_guarantee"
    assert check.worst == ("n2",)
    assert check.excess == pytest.approx(1 / 2 - 1 / 3)
    assert "0.333333" in check.detail and "0.5" in check.detail
    # Both resources are exhausted, so the collapsed allocation is still Pareto-efficient.
    assert hierarchical_pareto(fig4, collapsed).holds


def test_fig4_hdrf_allocation_meets_every_guarantee(fig4: Instance) -> None:
    hdrf = pool([5, 5, 5])  # n1,1 half of both; n2,1 half the CPUs; n2,2 half the GPUs
    consumption, share = node_shares(fig4, hdrf)
    tree = tree_of(fig4)
    assert consumption[tree.names.index("n2")] == pytest.approx([0.5, 0.5])
    assert consumption[tree.names.index("n2,1")] == pytest.approx([0.5, 0.0])
    assert by_name(fig4, share)["n1"] == pytest.approx(0.5)
    guarantees = by_name(fig4, tree.guarantees(demanding_nodes(fig4, "pool")))
    assert guarantees == pytest.approx({"root": 1, "n1": 0.5, "n2": 0.5, "n1,1": 0.5, "n2,1": 0.25, "n2,2": 0.25})
    check = share_guarantee(fig4, hdrf)
    assert check.holds, check.detail
    assert check.excess == pytest.approx(0.0, abs=1e-12)  # n1 and n2 sit exactly on their guarantee
    pareto = hierarchical_pareto(fig4, hdrf)
    assert pareto.holds and pareto.name == "hierarchical_pareto"


def test_fig4_wasteful_allocation_is_not_pareto(fig4: Instance) -> None:
    wasteful = pool([5, 4, 5])  # a CPU left idle that n2,1 could use
    check = hierarchical_pareto(fig4, wasteful)
    assert not check.holds
    assert check.worst == ("n2,1",)
    assert check.excess > 0
    # Same answer as the flat Pareto check over the leaves, which it reuses.
    assert check.holds == pareto_optimal(fig4, wasteful).holds


# ----------------------------------------------------------------------------------------------
# Section 2.1: 480 slots, one resource
# ----------------------------------------------------------------------------------------------


def section_2_1(n1_cap: float | None = None) -> Instance:
    n1 = leaf("n1", {"slot": 1}) if n1_cap is None else leaf("n1", {"slot": 1}, tasks=n1_cap)
    return tree_instance(
        [
            n1,
            node("n2", [leaf("n2,1", {"slot": 1}, 1), leaf("n2,2", {"slot": 1}, 2), leaf("n2,3", {"slot": 1}, 2)]),
        ],
        {"slot": 480},
    )


def test_section_2_1_guarantees_in_slots() -> None:
    instance = section_2_1()
    tree = tree_of(instance)
    slots = by_name(instance, 480 * tree.guarantees(demanding_nodes(instance, "pool")))
    assert slots == pytest.approx({"root": 480, "n1": 240, "n2": 240, "n2,1": 48, "n2,2": 96, "n2,3": 96})
    # Tenants are the leaves in file order: n1, n2,1, n2,2, n2,3.
    assert [t.name for t in instance.tenants] == ["n1", "n2,1", "n2,2", "n2,3"]
    assert share_guarantee(instance, pool([240, 48, 96, 96])).holds


def test_section_2_1_split_below_a_leaf_guarantee_fails() -> None:
    instance = section_2_1()
    check = share_guarantee(instance, pool([240, 80, 80, 80]))
    assert not check.holds
    assert check.worst in {("n2,2",), ("n2,3",)}
    assert check.excess == pytest.approx(16 / 480)
    check = share_guarantee(instance, pool([240, 40, 100, 100]))
    assert not check.holds and check.worst == ("n2,1",)
    assert check.excess == pytest.approx(8 / 480)
    assert "n2" in check.detail


def test_satisfied_node_is_exempt_but_an_unsatisfied_one_is_not() -> None:
    instance = section_2_1(n1_cap=100)
    # n1 holds its whole cap of 100 slots, below its guarantee of 240: satisfied, so exempt.
    check = share_guarantee(instance, pool([100, 76, 152, 152]))
    assert check.holds, check.detail
    # With 90 of its 100 tasks it is hungry and below its guarantee.
    check = share_guarantee(instance, pool([90, 78, 156, 156]))
    assert not check.holds and check.worst == ("n1",)
    assert check.excess == pytest.approx(0.5 - 90 / 480)


def test_non_demanding_sibling_raises_the_others_guarantees() -> None:
    instance = section_2_1(n1_cap=0)
    tree = tree_of(instance)
    demanding = demanding_nodes(instance, "pool")
    slots = by_name(instance, 480 * tree.guarantees(demanding))
    assert slots == pytest.approx({"root": 480, "n1": 0, "n2": 480, "n2,1": 96, "n2,2": 192, "n2,3": 192})
    assert share_guarantee(instance, pool([0, 96, 192, 192])).holds
    assert not share_guarantee(instance, pool([0, 48, 96, 96])).holds


def test_leaf_needing_a_missing_resource_demands_nothing() -> None:
    instance = tree_instance(
        [leaf("a", {"cpu": 1}), node("b", [leaf("b1", {"gpu": 1}), leaf("b2", {"cpu": 1})])],
        {"cpu": 10, "gpu": 0},
    )
    by = by_name(instance, demanding_nodes(instance, "pool").astype(float))
    assert by == {"root": 1, "a": 1, "b": 1, "b1": 0, "b2": 1}
    guarantees = by_name(instance, tree_of(instance).guarantees(demanding_nodes(instance, "pool")))
    assert guarantees["b2"] == pytest.approx(0.5) and guarantees["b1"] == 0


def test_demanding_depends_on_whether_tasks_must_fit_a_machine() -> None:
    # Two 5-CPU machines; leaf "big" needs 6 CPUs per task: divisible tasks can run, whole ones cannot.
    servers = [{"name": "m", "capacity": {"cpu": 5}, "count": 2}]
    instance = tree_instance([leaf("big", {"cpu": 6}), leaf("small", {"cpu": 1})], {"cpu": 5}, servers)
    for kind in ("pool", "class"):
        assert demanding_nodes(instance, kind).tolist() == [True, True, True]
    assert demanding_nodes(instance, "machine").tolist() == [True, False, True]
    assert demanding_nodes(instance, "class", integral=True).tolist() == [True, False, True]
    # "small" alone demands: whole tasks, it is guaranteed everything and holds 10 of 10 CPUs.
    whole = Allocation(np.array([[0, 0], [5, 5]], dtype=float), "machine", integral=True)
    assert share_guarantee(instance, whole).holds
    divisible = Allocation(np.array([[0.0], [10.0]]), "class")
    check = share_guarantee(instance, divisible)
    assert not check.holds and check.worst == ("big",)


def test_class_kind_leaf_whose_resources_are_on_different_classes_demands_nothing() -> None:
    servers = [{"name": "c", "capacity": {"cpu": 4}}, {"name": "g", "capacity": {"gpu": 4}}]
    instance = tree_instance(
        [leaf("both", {"cpu": 1, "gpu": 1}), leaf("cpu", {"cpu": 1})], {"cpu": 4, "gpu": 4}, servers
    )
    assert demanding_nodes(instance, "pool").tolist() == [True, True, True]
    assert demanding_nodes(instance, "class").tolist() == [True, False, True]


def test_flat_instance_is_a_one_level_tree() -> None:
    instance = instance_from_dict(
        {
            "resources": ["cpu", "mem"],
            "servers": [{"name": "pool", "capacity": {"cpu": 9, "mem": 18}}],
            "tenants": [{"name": "A", "demand": {"cpu": 1, "mem": 4}}, {"name": "B", "demand": {"cpu": 3, "mem": 1}}],
        }
    )
    drf = pool([3, 2])  # the DRF paper's answer: A and B both at dominant share 2/3
    assert share_guarantee(instance, drf).holds
    check = share_guarantee(instance, pool([3, 1]))
    assert not check.holds and check.worst == ("B",)
    assert check.excess == pytest.approx(0.5 - 1 / 3)


def test_node_shares_rejects_a_wrong_shape(fig4: Instance) -> None:
    with pytest.raises(ValueError, match="one row per tenant"):
        node_shares(fig4, pool([1, 2]))


# ----------------------------------------------------------------------------------------------
# Group strategyproofness
# ----------------------------------------------------------------------------------------------


def proportional_to_claims(instance: Instance) -> Allocation:
    """Manipulable: each tenant gets a share of every resource proportional to the size of its claim."""
    claims = instance.demand
    size = claims.sum(axis=1)
    fraction = size / size.sum()
    total = instance.total_capacity
    with np.errstate(divide="ignore"):
        tasks = np.where(claims > 0, fraction[:, None] * total[None, :] / claims, np.inf).min(axis=1)
    return pool(np.minimum(tasks, instance.task_caps).tolist())


def equal_split(instance: Instance) -> Allocation:
    """Strategyproof: a weighted equal split of the pool, as many tasks as the claimed demand allows."""
    assert instance.hierarchy is not None  # the probe keeps the tree
    fraction = instance.weights / instance.weights.sum()
    total = instance.total_capacity
    claims = instance.demand
    with np.errstate(divide="ignore"):
        tasks = np.where(claims > 0, fraction[:, None] * total[None, :] / claims, np.inf).min(axis=1)
    return pool(np.minimum(tasks, instance.task_caps).tolist())


@pytest.fixture
def three_leaves() -> Instance:
    return tree_instance(
        [node("g", [leaf("a", {"cpu": 1, "mem": 1}), leaf("b", {"cpu": 2, "mem": 1})]), leaf("c", {"cpu": 1})],
        {"cpu": 30, "mem": 30},
    )


def test_group_probe_catches_a_manipulable_solver(three_leaves: Instance) -> None:
    # a <1,1> and b <2,1> both double their whole demand: claimed sizes 4 and 6 of 11 instead of 2 and 3
    # of 6, so a runs 30 * 4/11 = 10.9 tasks instead of 10 and b 7.5 * 12/11 = 8.2 instead of 7.5.
    doubled = [[2, 2], [4, 2]]
    check = group_strategyproof(three_leaves, proportional_to_claims, ["a", "b"], [[[1, 1.5], [2, 1]], doubled])
    assert not check.holds
    assert check.name == "group_strategyproof"
    assert check.worst[0::2] == ("a", "b")
    assert check.excess == pytest.approx(30 * 4 / 11 - 10)
    assert "'a' 10.9091 vs 10" in check.detail and "'b' 8.18182 vs 7.5" in check.detail


def test_group_probe_needs_every_member_weakly_better(three_leaves: Instance) -> None:
    # a triples its demand, b tells the truth: a gains, b loses (sizes 6 and 3 of 10), so the group as
    # such does not gain.
    joint = [[3, 3], [2, 1]]
    check = group_strategyproof(three_leaves, proportional_to_claims, ["a", "b"], [joint])
    assert check.holds, check.detail
    assert check.excess == pytest.approx(7.5 * 0.3 / 0.5 - 7.5)  # b's loss
    # Alone, a's lie is profitable: the single-member probe flags it.
    assert not group_strategyproof(three_leaves, proportional_to_claims, ["a"], [[[3, 3]]]).holds


def test_group_probe_accepts_a_strategyproof_solver(three_leaves: Instance) -> None:
    claims = random_group_misreports(three_leaves, ["a", "b", "c"], 30, seed=1)
    check = group_strategyproof(three_leaves, equal_split, ["a", "b", "c"], claims)
    assert check.holds, check.detail
    assert check.excess <= 1e-9
    truthful = equal_split(three_leaves)
    again = group_strategyproof(three_leaves, equal_split, ["a", "c"], [], truthful_allocation=truthful)
    assert again.holds and again.detail == "no misreports given"


def test_group_probe_validates_its_arguments(three_leaves: Instance) -> None:
    with pytest.raises(ValueError, match="twice"):
        group_strategyproof(three_leaves, equal_split, ["a", 0], [])
    with pytest.raises(ValueError, match="2 vectors"):
        group_strategyproof(three_leaves, equal_split, ["a"], [[[1, 1], [1, 1]]])
    with pytest.raises(KeyError):
        random_group_misreports(three_leaves, ["nobody"], 1)


def test_random_group_misreports_are_deterministic_and_someone_lies(three_leaves: Instance) -> None:
    first = random_group_misreports(three_leaves, ["a", "b"], 25, seed=7)
    second = random_group_misreports(three_leaves, ["a", "b"], 25, seed=7)
    assert len(first) == 25 and all(len(joint) == 2 for joint in first)
    assert all(np.array_equal(x, y) for j1, j2 in zip(first, second, strict=True) for x, y in zip(j1, j2, strict=True))
    truths = [three_leaves.demand[0], three_leaves.demand[1]]
    for joint in first:
        lied = [not np.array_equal(claim, truth) for claim, truth in zip(joint, truths, strict=True)]
        assert any(lied)
        assert all(np.all(claim >= truth) for claim, truth in zip(joint, truths, strict=True))
    everyone_lies = random_group_misreports(three_leaves, ["a", "b"], 10, seed=7, keep_truth=0.0)
    assert all(not np.array_equal(j[0], truths[0]) and not np.array_equal(j[1], truths[1]) for j in everyone_lies)


def test_drf_is_group_strategyproof_on_a_flat_instance() -> None:
    from fairpack.solver.api import solve

    instance = instance_from_dict(
        {
            "resources": ["cpu", "mem"],
            "servers": [{"name": "pool", "capacity": {"cpu": 9, "mem": 18}}],
            "tenants": [
                {"name": "A", "demand": {"cpu": 1, "mem": 4}},
                {"name": "B", "demand": {"cpu": 3, "mem": 1}},
                {"name": "C", "demand": {"cpu": 1, "mem": 1}, "weight": 2},
            ],
        }
    )
    claims = random_group_misreports(instance, ["A", "B"], 8, seed=2)
    check = group_strategyproof(instance, lambda i: solve(i, "drf"), ["A", "B"], claims)
    assert check.holds, check.detail


# ----------------------------------------------------------------------------------------------
# With the exact H-DRF solver (skipped until it is available)
# ----------------------------------------------------------------------------------------------


def test_exact_hdrf_meets_the_checks_on_fig4(fig4: Instance) -> None:
    pytest.importorskip("fairpack.solver.hdrf.water_filling")
    from fairpack.solver.api import solve

    allocation = solve(fig4, "hdrf").allocation
    assert allocation is not None
    assert allocation.tenant_tasks == pytest.approx([5, 5, 5], abs=1e-6)
    assert share_guarantee(fig4, allocation).holds
    assert hierarchical_pareto(fig4, allocation).holds


@pytest.mark.parametrize("seed", range(4))
def test_exact_pooled_hdrf_meets_the_checks_on_random_trees(seed: int) -> None:
    hdrf = pytest.importorskip("fairpack.solver.hdrf.water_filling")
    instance = random_tree_instance(seed, leaves=12, depth=3)
    filled = hdrf.solve_hdrf(instance, pooled=True)
    allocation = Allocation(np.asarray(filled.tasks).reshape(len(instance.tenants), -1), "pool")
    assert verify_allocation(instance, allocation).ok
    check = share_guarantee(instance, allocation)
    assert check.holds, check.detail
    pareto = hierarchical_pareto(instance, allocation)
    assert pareto.holds, pareto.detail


# ----------------------------------------------------------------------------------------------
# The random tree generator
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("leaves", "depth"), [(1, 1), (1, 4), (3, 6), (5, 1), (10, 3), (50, 2), (200, 4), (1000, 6), (2000, 2)]
)
def test_random_tree_sizes_and_depth(leaves: int, depth: int) -> None:
    instance = random_tree_instance(seed=leaves + depth, leaves=leaves, depth=depth)
    tree = tree_of(instance)
    assert len(instance.tenants) == leaves
    assert int(tree.depth[tree.leaf_nodes].max()) == depth
    assert tree.is_leaf[tree.leaf_nodes].all() and int(tree.is_leaf.sum()) == leaves
    assert [t.name for t in instance.tenants] == [tree.names[k] for k in tree.leaf_nodes]
    assert instance.resources == ("cpu", "mem", "gpu")
    assert len(instance.servers) == 1 and instance.total_capacity.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(("leaves", "depth"), [(10, 3), (20, 6), (300, 5), (1000, 6)])
def test_random_tree_branching_stays_in_range_when_it_can(leaves: int, depth: int) -> None:
    for seed in range(5):
        tree = tree_of(random_tree_instance(seed, leaves=leaves, depth=depth, branching=(2, 5)))
        children = np.bincount(tree.parent[1:], minlength=tree.num_nodes)[~tree.is_leaf]
        assert children.min() >= 2 and children.max() <= 6
        assert ((children < 2) | (children > 5)).mean() <= 0.1
        assert 2 <= children.mean() <= 5


def test_random_tree_fan_out_grows_when_the_leaves_need_it() -> None:
    tree = tree_of(random_tree_instance(0, leaves=2000, depth=2, branching=(2, 5)))
    children = np.bincount(tree.parent[1:], minlength=tree.num_nodes)[~tree.is_leaf]
    assert children.mean() == pytest.approx(2000**0.5, rel=0.1)


def test_random_tree_contents() -> None:
    instance = random_tree_instance(11, leaves=400, depth=4, resources=4, capped_fraction=0.25)
    tree = tree_of(instance)
    demand = instance.demand
    assert (demand > 0).any(axis=1).all()
    assert 0.15 < (demand == 0).mean() < 0.45  # zero_component_prob 0.3
    caps = instance.task_caps
    assert 0.15 < np.isfinite(caps).mean() < 0.35
    assert set(caps[np.isfinite(caps)].tolist()) <= set(range(1, 11))
    assert ((tree.weight[1:] >= 0.5) & (tree.weight[1:] <= 4)).all()
    assert instance.weights.tolist() == tree.weight[tree.leaf_nodes].tolist()
    assert instance.fits().all()
    assert instance.resources == ("cpu", "mem", "gpu", "net")
    uncapped = random_tree_instance(11, leaves=50, depth=3, capped_fraction=0.0, zero_component_prob=0.0)
    assert np.isinf(uncapped.task_caps).all() and (uncapped.demand > 0).all()


def test_random_tree_heterogeneous_servers() -> None:
    instance = random_tree_instance(4, leaves=30, depth=3, servers=5)
    assert len(instance.servers) == 5
    assert instance.total_capacity == pytest.approx([1.0, 1.0, 1.0])
    assert len({tuple(s.capacity) for s in instance.servers}) == 5
    assert instance.fits().all()  # every task fits on every machine


def test_random_tree_is_deterministic_and_round_trips() -> None:
    first = random_tree_instance(5, leaves=60, depth=4, servers=2)
    second = random_tree_instance(5, leaves=60, depth=4, servers=2)
    other = random_tree_instance(6, leaves=60, depth=4, servers=2)
    assert _same(first, second)
    assert [n.name for n in first.hierarchy.nodes] == [n.name for n in second.hierarchy.nodes]  # type: ignore[union-attr]
    assert not _same(first, other)
    # Preorder node order: reading the written form back gives the same nodes and tenants.
    again = instance_from_dict(instance_to_dict(first))
    assert [n.name for n in again.hierarchy.nodes] == [n.name for n in first.hierarchy.nodes]  # type: ignore[union-attr]
    assert [t.name for t in again.tenants] == [t.name for t in first.tenants]
    assert np.array_equal(again.demand, first.demand)


def _same(a: Instance, b: Instance) -> bool:
    return (
        np.array_equal(a.demand, b.demand)
        and np.array_equal(a.task_caps, b.task_caps)
        and np.array_equal(tree_of(a).parent, tree_of(b).parent)
        and np.array_equal(tree_of(a).weight, tree_of(b).weight)
    )


def test_random_tree_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        random_tree_instance(0, leaves=0, depth=2)
    with pytest.raises(ValueError):
        random_tree_instance(0, leaves=5, depth=0)
    with pytest.raises(ValueError):
        random_tree_instance(0, leaves=5, depth=2, branching=(3, 2))


def test_random_tree_with_100k_leaves_builds_in_linear_work() -> None:
    instance = random_tree_instance(0, leaves=100_000, depth=5)
    assert len(instance.tenants) == 100_000
    tree = tree_of(instance)
    assert int(tree.depth.max()) == 5
    # The work, counted in Python lines and in bytes allocated (numpy's arrays included), grows in proportion
    # to the leaves (about 80 lines and 1 kB a leaf): no step per pair of nodes, no array per level and node.
    random_tree_instance(0, leaves=100, depth=5)  # first-use imports out of the count
    assert growth(lambda leaves: lines_run(random_tree_instance, 0, leaves=leaves, depth=5)[1], 5000) < 2.3
    assert growth(lambda leaves: peak_bytes(random_tree_instance, 0, leaves=leaves, depth=5)[1], 5000) < 2.3


# ----------------------------------------------------------------------------------------------
# Property: guarantees split each demanding parent's guarantee among its demanding children
# ----------------------------------------------------------------------------------------------


@settings(derandomize=True, max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    leaves=st.integers(1, 60),
    depth=st.integers(1, 5),
    idle=st.floats(0.0, 0.8),
)
def test_guarantees_are_consistent(seed: int, leaves: int, depth: int, idle: float) -> None:
    instance = random_tree_instance(seed, leaves=leaves, depth=depth)
    # Give a random subset of leaves a zero task cap, so some subtrees demand nothing.
    rng = np.random.default_rng(seed)
    zero = rng.random(leaves) < idle
    tenants = tuple(replace(t, tasks=0.0) if z else t for t, z in zip(instance.tenants, zero, strict=True))
    instance = replace(instance, tenants=tenants)
    tree = tree_of(instance)
    demanding = demanding_nodes(instance, "pool")
    guarantee = tree.guarantees(demanding)
    assert demanding[tree.leaf_nodes].tolist() == (~zero).tolist()
    assert guarantee[0] == 1.0  # by definition, even when nothing demands
    assert (guarantee[1:][~demanding[1:]] == 0).all()
    assert (guarantee[demanding] > 0).all()
    child_sum = np.bincount(tree.parent[1:], weights=guarantee[1:], minlength=tree.num_nodes)
    parents = demanding & ~tree.is_leaf
    assert child_sum[parents] == pytest.approx(guarantee[parents], rel=1e-12)
    # The leaves' guarantees add up to the whole cluster whenever anything is demanded.
    if demanding[0]:
        assert guarantee[tree.leaf_nodes].sum() == pytest.approx(1.0, rel=1e-12)
