"""Static H-DRF: the paper's worked examples with their exact numbers, and cross-checks of the exact
event-driven method against the ε reference, DRF and DRFH."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from work import TickClock

from fairpack.models.io import DEFAULT_LIMITS, Limits, instance_from_dict
from fairpack.models.types import Hierarchy, HierarchyNode, Instance, ServerClass, Tenant
from fairpack.solver.api import solve
from fairpack.solver.hdrf.reference import hdrf_epsilon
from fairpack.solver.hdrf.water_filling import solve_hdrf


def leaf(name: str, demand: dict[str, float], weight: float = 1.0, **more: Any) -> dict[str, Any]:
    return {"name": name, "demand": demand, "weight": weight, **more}


def node(name: str, children: list[dict[str, Any]], weight: float = 1.0) -> dict[str, Any]:
    return {"name": name, "weight": weight, "children": children}


def tree_instance(
    root_children: list[dict[str, Any]],
    resources: tuple[str, ...] = ("cpu", "gpu"),
    servers: list[dict[str, Any]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Instance:
    servers = servers or [{"name": "pool", "capacity": {r: 10 for r in resources}}]
    return instance_from_dict(
        {"resources": list(resources), "servers": servers, "hierarchy": node("root", root_children)}, limits=limits
    )


def resource_fractions(instance: Instance, tasks: np.ndarray) -> dict[str, list[float]]:
    """Per leaf, its fraction of the cluster total of every resource."""
    per_tenant = tasks.reshape(len(instance.tenants), -1).sum(axis=1)
    fractions = per_tenant[:, None] * instance.demand / instance.total_capacity
    return {t.name: fractions[i].tolist() for i, t in enumerate(instance.tenants)}


FIG4 = [node("n1", [leaf("n1-1", {"cpu": 1})]), node("n2", [leaf("n2-1", {"cpu": 1}), leaf("n2-2", {"gpu": 1})])]
FIG4_VARIANT = [
    node("n1", [leaf("n1-1", {"cpu": 1, "gpu": 1})]),
    node("n2", [leaf("n2-1", {"cpu": 1}), leaf("n2-2", {"gpu": 1})]),
]
FIG5 = [
    node("n1", [leaf("n1-1", {"cpu": 1})]),
    node("n2", [leaf("n2-1", {"cpu": 1})]),
    node("n3", [leaf("n3-1", {"cpu": 1}), leaf("n3-2", {"gpu": 1})]),
    node("n4", [leaf("n4-1", {"gpu": 1})]),
]
FIG6 = [
    node("n1", [leaf("n1-1", {"cpu": 3, "gpu": 2})]),
    node("n2", [leaf("n2-1", {"cpu": 1, "gpu": 1}), leaf("n2-2", {"cpu": 1, "gpu": 3})]),
]
FIG7 = [node("n1", [leaf("n1-1", {"cpu": 3, "gpu": 2})]), node("n2", [leaf("n2-1", {"cpu": 1, "gpu": 1})])]

PAPER_CASES = {
    "fig4": (FIG4, {"n1-1": [0.5, 0], "n2-1": [0.5, 0], "n2-2": [0, 1]}),
    "fig4-variant": (FIG4_VARIANT, {"n1-1": [0.5, 0.5], "n2-1": [0.5, 0], "n2-2": [0, 0.5]}),
    "fig5": (
        FIG5,
        {"n1-1": [1 / 3, 0], "n2-1": [1 / 3, 0], "n3-1": [1 / 3, 0], "n3-2": [0, 0.5], "n4-1": [0, 0.5]},
    ),
    "fig6": (FIG6, {"n1-1": [0.6, 0.4], "n2-1": [0.3, 0.3], "n2-2": [0.1, 0.3]}),
    "fig7": (FIG7, {"n1-1": [0.5, 1 / 3], "n2-1": [0.5, 0.5]}),
}


@pytest.mark.parametrize("case", sorted(PAPER_CASES))
@pytest.mark.parametrize("pooled", [True, False])
def test_paper_examples(case: str, pooled: bool) -> None:
    children, expected = PAPER_CASES[case]
    instance = tree_instance(children)
    filled = solve_hdrf(instance, pooled=pooled)
    assert filled.status == "optimal"
    got = resource_fractions(instance, filled.tasks)
    for name, fractions in expected.items():
        assert got[name] == pytest.approx(fractions, abs=1e-9), name


def test_fig4_in_cpu_counts() -> None:
    instance = tree_instance(FIG4)
    result = solve(instance, "hdrf")
    assert result.verified
    tasks = dict(zip([t.name for t in instance.tenants], result.allocation.tenant_tasks, strict=True))
    assert tasks == pytest.approx({"n1-1": 5, "n2-1": 5, "n2-2": 10})


def test_fig4_variant_collapsed_gives_n2_a_third() -> None:
    instance = tree_instance(FIG4_VARIANT)
    result = solve(instance, "collapsed")
    assert result.verified
    got = resource_fractions(instance, result.allocation.tasks)
    assert got["n1-1"] == pytest.approx([2 / 3, 2 / 3])
    assert got["n2-1"] == pytest.approx([1 / 3, 0])
    assert got["n2-2"] == pytest.approx([0, 1 / 3])
    # n2 = {n2-1, n2-2} consumes a third of each resource: dominant share 1/3 instead of its 1/2.
    assert max(got["n2-1"][0] + got["n2-2"][0], got["n2-1"][1] + got["n2-2"][1]) == pytest.approx(1 / 3)


def test_fig5_rescaling_without_ignoring_blocked_nodes_differs() -> None:
    """The issue's contrast: 2/3 and 1/3 is what the wrong rescaling gives; H-DRF gives 1/2 each."""
    got = resource_fractions(tree_instance(FIG5), solve_hdrf(tree_instance(FIG5)).tasks)
    assert got["n3-2"][1] == pytest.approx(0.5) and got["n3-2"][1] != pytest.approx(2 / 3)


def test_population_monotonicity_fails_as_the_paper_proves() -> None:
    """Figs. 6-7: removing n2,2 lowers n1's dominant share from 60% to 50%."""
    with_leaf = resource_fractions(tree_instance(FIG6), solve_hdrf(tree_instance(FIG6)).tasks)
    without = resource_fractions(tree_instance(FIG7), solve_hdrf(tree_instance(FIG7)).tasks)
    assert max(with_leaf["n1-1"]) == pytest.approx(0.6)
    assert max(without["n1-1"]) == pytest.approx(0.5)


def test_fig8_gpu_cluster() -> None:
    """49 servers of <16 GB, 4 CPU, 4 GPU>; n1 (weight 4) {<1,1,0>, <1,0,1>}, n2 (weight 1) {<1,1,0> x 2}."""
    instance = tree_instance(
        [
            node("n1", [leaf("n1-1", {"mem": 1, "cpu": 1}), leaf("n1-2", {"mem": 1, "gpu": 1})], weight=4),
            node("n2", [leaf("n2-1", {"mem": 1, "cpu": 1}), leaf("n2-2", {"mem": 1, "cpu": 1})], weight=1),
        ],
        resources=("mem", "cpu", "gpu"),
        servers=[{"name": "box", "capacity": {"mem": 16, "cpu": 4, "gpu": 4}, "count": 49}],
    )
    for pooled in (True, False):
        got = resource_fractions(instance, solve_hdrf(instance, pooled=pooled).tasks)
        assert got["n1-1"][1] == pytest.approx(0.8)
        assert got["n2-1"][1] == pytest.approx(0.1)
        assert got["n2-2"][1] == pytest.approx(0.1)
        assert got["n1-2"][2] == pytest.approx(1.0)


def test_section_2_1_single_resource_slots() -> None:
    instance = tree_instance(
        [
            leaf("n1", {"slot": 1}),
            node(
                "n2",
                [leaf("n2-1", {"slot": 1}), leaf("n2-2", {"slot": 1}, 2.0), leaf("n2-3", {"slot": 1}, 2.0)],
            ),
        ],
        resources=("slot",),
        servers=[{"name": "pool", "capacity": {"slot": 480}}],
    )
    result = solve(instance, "hdrf")
    assert result.allocation.tenant_tasks == pytest.approx([240, 48, 96, 96])


def random_tree(seed: int, leaves: int = 8, resources: int = 3, depth: int = 3) -> Instance:
    """A random weighted tree with sparse demand vectors and some task caps, on one unit pool."""
    rng = np.random.default_rng(seed)
    nodes = [HierarchyNode("root", -1, 1.0)]
    depth_of = [0]
    internal = [0]
    for _ in range(max(1, leaves // 2)):
        parent = internal[int(rng.integers(len(internal)))]
        if depth_of[parent] < depth - 1:
            nodes.append(HierarchyNode(f"g{len(nodes)}", parent, float(rng.uniform(0.5, 4))))
            depth_of.append(depth_of[parent] + 1)
            internal.append(len(nodes) - 1)
    tenants = []
    for index in range(leaves):
        # Every internal node gets at least one leaf, so none of them is mistaken for a leaf.
        parent = internal[index] if index < len(internal) else internal[int(rng.integers(len(internal)))]
        demand = rng.uniform(0.01, 0.1, resources) * (rng.random(resources) > 0.4)
        if not demand.any():
            demand[int(rng.integers(resources))] = 0.05
        cap = float(rng.integers(1, 20)) if rng.random() < 0.4 else math.inf
        tenants.append(Tenant(f"t{index}", demand, 1.0, cap))
        nodes.append(HierarchyNode(f"t{index}", parent, float(rng.uniform(0.5, 4)), index))
    names = tuple(f"r{r}" for r in range(resources))
    return Instance(names, (ServerClass("pool", np.ones(resources)),), tuple(tenants), Hierarchy(tuple(nodes)))


@pytest.mark.parametrize("seed", range(12))
def test_exact_agrees_with_epsilon_reference(seed: int) -> None:
    instance = random_tree(seed, leaves=6 + seed % 5, depth=2 + seed % 3)
    exact = solve_hdrf(instance).shares
    for epsilon in (1e-3, 2e-4):
        reference = hdrf_epsilon(instance, epsilon)
        # Each step moves a share by at most ε, so ties and events are resolved within a few ε per level.
        assert np.abs(exact - reference).max() <= 20 * epsilon, epsilon


def test_reference_limit_exists_where_exact_ties_break() -> None:
    """Seed 4 of the generator has two flat subtrees tied on a saturated resource: the naive ε-rule
    (exact ties only) jumps between ε values there; the tie band makes the references converge."""
    instance = random_tree(4)
    coarse, fine = hdrf_epsilon(instance, 1e-3), hdrf_epsilon(instance, 1e-4)
    assert np.abs(coarse - fine).max() < 5e-3


@pytest.mark.parametrize("seed", range(4))
def test_flat_tree_is_drf_pooled_and_drfh_on_servers(seed: int) -> None:
    from fairpack.models.generators import google_like_servers, random_tenants

    resources = ("cpu", "mem")
    tenants = random_tenants(resources, 8, seed, np.array([0.5, 0.5]), max_fraction=0.05, max_tasks=200)
    instance = Instance(resources, google_like_servers(30, 5, seed), tenants)
    share = instance.dominant_demand
    drfh = solve(instance, "drfh").allocation.tenant_tasks * share
    hdrf = solve(instance, "hdrf", placement="servers")
    assert hdrf.verified
    assert hdrf.allocation.tenant_tasks * share == pytest.approx(drfh, abs=1e-8)
    drf = solve(instance, "drf").allocation.tenant_tasks * share
    pooled = solve(instance, "hdrf", placement="pooled").allocation.tenant_tasks * share
    assert pooled == pytest.approx(drf, abs=1e-8)


def test_placement_blocks_leaves_the_pool_would_not() -> None:
    """DRFH's Fig. 1 servers under a two-level tree: per-server capacities bind before the pool does."""
    instance = instance_from_dict(
        {
            "resources": ["cpu", "mem"],
            "servers": [
                {"name": "s1", "capacity": {"cpu": 2, "mem": 12}},
                {"name": "s2", "capacity": {"cpu": 12, "mem": 2}},
            ],
            "hierarchy": node(
                "root",
                [node("a", [leaf("u1", {"cpu": 0.2, "mem": 1})]), node("b", [leaf("u2", {"cpu": 1, "mem": 0.2})])],
            ),
        }
    )
    result = solve(instance, "hdrf")
    assert result.extra["placement"] == "servers" and result.verified
    assert result.allocation.tenant_tasks == pytest.approx([10, 10], abs=1e-6)
    assert result.extra["events"].get("blocked by placement", 0) >= 1


def test_backends_agree_on_servers(lp_backend: str) -> None:
    instance = instance_from_dict(
        {
            "resources": ["cpu", "mem", "gpu"],
            "servers": [
                {"name": "cpu-box", "capacity": {"cpu": 16, "mem": 32}, "count": 3},
                {"name": "gpu-box", "capacity": {"cpu": 8, "mem": 64, "gpu": 4}, "count": 2},
            ],
            "hierarchy": node(
                "root",
                [
                    node("ads", [leaf("ads-a", {"cpu": 1, "mem": 2}), leaf("ads-b", {"cpu": 1, "gpu": 1}, tasks=3)], 2),
                    node("ml", [leaf("ml-a", {"gpu": 1, "mem": 8}), leaf("ml-b", {"cpu": 2, "mem": 1})]),
                ],
            ),
        }
    )
    reference = solve(instance, "hdrf", backend="highs")
    result = solve(instance, "hdrf", backend=lp_backend)
    assert result.verified and result.status == "optimal"
    assert result.allocation.tenant_tasks == pytest.approx(reference.allocation.tenant_tasks, rel=1e-6, abs=1e-6)


def test_identical_servers_match_the_pool() -> None:
    for seed in range(5):
        pooled_instance = random_tree(seed)
        spread = Instance(
            pooled_instance.resources,
            (ServerClass("quarter", np.full(len(pooled_instance.resources), 0.25), count=4),),
            pooled_instance.tenants,
            pooled_instance.hierarchy,
        )
        assert solve_hdrf(spread, pooled=False).shares == pytest.approx(solve_hdrf(pooled_instance).shares, abs=1e-7)


def test_zero_cap_leaf_and_lacking_resource_get_nothing() -> None:
    instance = tree_instance(
        [
            node("a", [leaf("idle", {"cpu": 1}, tasks=0), leaf("busy", {"cpu": 1})]),
            node("b", [leaf("disk", {"disk": 1}), leaf("gpu-user", {"gpu": 1})]),
        ],
        resources=("cpu", "gpu", "disk"),
        servers=[{"name": "pool", "capacity": {"cpu": 10, "gpu": 10}}],
    )
    result = solve(instance, "hdrf")
    assert result.verified
    tasks = dict(zip([t.name for t in instance.tenants], result.allocation.tenant_tasks, strict=True))
    assert tasks == pytest.approx({"idle": 0, "busy": 10, "disk": 0, "gpu-user": 10})


def test_cli_json_has_nodes_and_the_table_draws_the_tree(tmp_path: Any, capsys: Any) -> None:
    import json

    from fairpack.solver.cli import main

    assert main(["solve", "instances/hdrf_fig4.yaml", "--method", "hdrf", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # Every node gets its guarantee: no shortfall, the smallest share/guarantee ratio exactly 1.
    assert data["verified"] and data["objective"] == 0 and data["bound"] == 0 and data["status"] == "optimal"
    assert data["objective_name"] == "guarantee shortfall" and data["min_share_guarantee"] == pytest.approx(1.0)
    nodes = data["nodes"]
    assert list(nodes) == ["root", "n1", "n1-1", "n2", "n2-1", "n2-2"]
    assert nodes["n2"]["guarantee"] == pytest.approx(0.5) and nodes["n2"]["dominant_share"] == pytest.approx(0.5)
    assert nodes["n2-2"]["allocation"] == pytest.approx({"cpu": 0.0, "gpu": 5.0})
    assert main(["solve", "instances/hdrf_fig4.yaml", "--method", "collapsed"]) == 0
    table = capsys.readouterr().out
    assert "min share/guarantee 0.666667" in table
    row = next(line for line in table.splitlines() if line.strip().startswith("`- n2 "))
    assert row.split()[2:6] == ["1", "0.5000", "0.3333", "0.667"]


def test_cli_generates_trees_and_places_them(tmp_path: Any, capsys: Any) -> None:
    import json

    from fairpack.solver.cli import main

    assert main(["generate", "tree", "--seed", "3", "--tenants", "6", "--depth", "2", "--machines", "3"]) == 0
    path = tmp_path / "tree.yaml"
    path.write_text(capsys.readouterr().out)
    for placement, kind in (("servers", "class"), ("pooled", "pool")):
        assert main(["solve", str(path), "--method", "hdrf", "--placement", placement, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["unit_kind"] == kind and data["verified"] and len(data["tenants"]) == 6


@pytest.mark.parametrize("seed", range(6))
def test_incremental_phases_match_full_recomputation(seed: int) -> None:
    from fairpack.models.generators import random_tree_instance

    instance = random_tree_instance(seed, 300, 2 + seed % 4, 3 + seed % 3, servers=None)
    incremental = solve_hdrf(instance)
    full = solve_hdrf(instance, incremental=False)
    assert incremental.phases == full.phases
    assert incremental.shares == pytest.approx(full.shares, abs=1e-12)


# -- the node-clock engine against the reference engine, and the edges around them -------------


FAST_VS_REFERENCE = [
    # (seed, leaves, depth, resources, capped fraction, zero-component probability)
    (0, 400, 1, 3, 0.5, 0.3),  # a flat tree: weighted DRF
    (1, 400, 4, 4, 0.5, 0.3),
    (2, 400, 6, 5, 0.5, 0.3),
    (3, 300, 3, 2, 0.0, 0.5),  # no caps: every leaf ends blocked by saturation
    (4, 300, 5, 5, 0.9, 0.0),  # mostly caps, dense demands
    (5, 300, 4, 5, 0.3, 0.7),  # sparse demands: many flat subtrees
    (6, 200, 2, 1, 0.5, 0.0),  # one resource
    (7, 500, 3, 4, 0.5, 0.5),
]


@pytest.mark.parametrize(("seed", "leaves", "depth", "resources", "capped", "zeros"), FAST_VS_REFERENCE)
def test_node_clocks_reproduce_the_reference_phase_by_phase(
    seed: int, leaves: int, depth: int, resources: int, capped: float, zeros: float
) -> None:
    """The default engine recomputes only the touched root paths; the reference recomputes every
    node in every phase with whole-tree passes. Same phases, same blocked leaves, same shares."""
    from fairpack.models.generators import random_tree_instance

    instance = random_tree_instance(seed, leaves, depth, resources, capped_fraction=capped, zero_component_prob=zeros)
    fast = solve_hdrf(instance)
    reference = solve_hdrf(instance, incremental=False)
    assert fast.status == reference.status == "optimal"
    assert fast.phases == reference.phases
    for reason in ("capped", "blocked by saturation"):
        assert fast.events[reason] == reference.events[reason], reason
    assert fast.shares == pytest.approx(reference.shares, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_light_updates_match_full_recomputes(seed: int, monkeypatch: Any) -> None:
    """Along an event's root path a node is updated from its own values and one child's
    (``_recompute_light``) unless its active children may change; looking at every child of every
    touched node instead (``_recompute_full``) gives the same filling."""
    from fairpack.models.generators import random_tree_instance
    from fairpack.solver.hdrf import water_filling as hdrf

    instance = random_tree_instance(seed, 300, 3 + seed, 3 + seed % 3)
    fast = solve_hdrf(instance)

    def full(self: Any, node: int, child: int) -> None:
        self._recompute_full(np.array([node]))

    monkeypatch.setattr(hdrf._Clocks, "_recompute_light", full)
    everywhere = solve_hdrf(instance)
    assert everywhere.phases == fast.phases
    assert everywhere.shares == pytest.approx(fast.shares, abs=1e-12)


@pytest.mark.parametrize("placement", ["pooled", "servers"])
def test_one_node_hierarchy_is_one_tenant(placement: str) -> None:
    """The root alone is a leaf: it takes the cluster up to its cap or the first full resource."""
    servers = [{"name": "s", "capacity": {"cpu": 10, "mem": 10}}, {"name": "t", "capacity": {"cpu": 2, "mem": 30}}]
    for tasks, expected in ((3, {"pooled": 3, "servers": 3}), (None, {"pooled": 12, "servers": 7})):
        root = {"name": "root", "demand": {"cpu": 1, "mem": 2}, **({"tasks": tasks} if tasks else {})}
        instance = instance_from_dict({"resources": ["cpu", "mem"], "servers": servers, "hierarchy": root})
        result = solve(instance, "hdrf", placement=placement)
        assert result.status == "optimal" and result.verified
        assert result.allocation.tenant_tasks == pytest.approx([expected[placement]], rel=1e-6)


def test_sibling_weights_300_orders_apart() -> None:
    """Weights 1e-150..1e150: each heavy sibling takes everything its resources allow before a light
    one gets a share that a float can still hold. The previous engine never converged here."""
    instance = tree_instance(
        [
            node(
                "a",
                [
                    leaf("a1", {"cpu": 1}, 1e-150, tasks=2),
                    leaf("a2", {"cpu": 1}),
                    leaf("a3", {"cpu": 1, "gpu": 1}, 1e150, tasks=3),
                ],
                weight=1e150,
            ),
            node("b", [leaf("b1", {"cpu": 1}), leaf("b2", {"gpu": 1}, 1e-150)], weight=1e-150),
            leaf("c", {"gpu": 1}),
        ],
        limits=Limits(weight_range=(1e-300, 1e300)),  # the engine's range; files are held to [1e-6, 1e6]
    )
    result = solve(instance, "hdrf")
    assert result.status == "optimal" and result.verified
    # a3 fills to its cap, a2 takes the rest of the CPU; c takes the rest of the GPU.
    assert result.allocation.tenant_tasks == pytest.approx([0, 7, 3, 0, 0, 7], abs=1e-12)


def spread_weights(instance: Instance, seed: int, decades: float) -> Instance:
    """The instance with every node's weight drawn log-uniformly over ``decades`` orders of magnitude."""
    from dataclasses import replace

    assert instance.hierarchy is not None
    rng = np.random.default_rng(seed)
    weights = 10.0 ** rng.uniform(-decades / 2, decades / 2, len(instance.hierarchy.nodes))
    nodes = tuple(replace(n, weight=float(w)) for n, w in zip(instance.hierarchy.nodes, weights, strict=True))
    leaf_weight = {n.tenant: n.weight for n in nodes if n.tenant >= 0}
    tenants = tuple(replace(t, weight=leaf_weight[i]) for i, t in enumerate(instance.tenants))
    return replace(instance, tenants=tenants, hierarchy=Hierarchy(nodes))


@pytest.mark.parametrize("seed", range(6))
def test_weights_12_orders_apart_match_the_reference(seed: int) -> None:
    from fairpack.models.generators import random_tree_instance

    instance = spread_weights(random_tree_instance(seed, 40, 2 + seed % 4, 3), seed, 12)
    result = solve(instance, "hdrf", placement="pooled")
    assert result.status == "optimal" and result.verified
    reference = solve_hdrf(instance, incremental=False)
    assert reference.status == "optimal"
    assert solve_hdrf(instance).shares == pytest.approx(reference.shares, abs=1e-9)


def test_weights_12_orders_apart_converge_to_the_epsilon_limit() -> None:
    """A tree where the reference engine loops on catch-ups it cannot resolve (weights normalised per
    sibling group keep the node clocks in range): the exact shares are the limit of the ε-filling."""
    from fairpack.models.generators import random_tree_instance

    instance = spread_weights(random_tree_instance(5, 120, 3, 3), 5, 12)
    result = solve(instance, "hdrf", placement="pooled")
    assert result.status == "optimal" and result.verified
    exact = solve_hdrf(instance).shares
    coarse, fine = (np.abs(exact - hdrf_epsilon(instance, epsilon)).max() for epsilon in (1e-3, 2e-4))
    assert fine < 0.3 * coarse and fine <= 25 * 2e-4


@pytest.mark.parametrize(
    ("placement", "leaves", "servers", "limit"), [("pooled", 30000, None, 0.2), ("servers", 400, 60, 0.3)]
)
def test_time_limit_returns_the_allocation_grown_so_far(
    placement: str, leaves: int, servers: int | None, limit: float, tick_clock: Callable[..., TickClock]
) -> None:
    """Out of time, hdrf stops between phases with status time_limit and a feasible allocation.

    On a clock that ticks 10 ms a read, the limit is 20 or 30 reads: hdrf reads it before every phase (and
    before every placement LP), so it stops after the same phases on every machine, under any load."""
    import re

    from fairpack.models.generators import random_tree_instance

    instance = random_tree_instance(1, leaves, 3, 3, servers=servers)
    clock = tick_clock(1e-2)
    result = solve(instance, "hdrf", placement=placement, time_limit=limit)
    assert result.status == "time_limit" and result.verified, result.message
    assert result.allocation.tenant_tasks.sum() > 0  # some phases ended: what they grew is returned
    found = re.search(r"\((\d+) phases\)", result.message)
    assert found is not None and 0 < int(found.group(1)) < clock.reads, result.message
    assert clock.reads_past(limit) <= 10  # it stopped at the first read past its deadline


def test_a_filling_that_stops_moving_is_an_error_not_a_hang() -> None:
    from collections import Counter

    from fairpack.solver.hdrf.water_filling import _fill

    class Stuck:
        def __init__(self) -> None:
            self.blocked = np.zeros(1, dtype=bool)
            self.events: Counter[str] = Counter()

        def unblocked(self) -> int:
            return 1

        def next_event(self) -> tuple[float, str]:
            return 0.0, "catch-up"

        def advance(self, step: float) -> None: ...

        def block_saturated(self) -> None: ...

        def block_capped(self) -> None: ...

    status, message, phases = _fill(Stuck(), None, 10**9, None, None)  # type: ignore[arg-type]
    assert status == "error" and "stall" in message and phases < 10**4
