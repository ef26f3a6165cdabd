"""Tests of the independent checker (models.check) on hand-built allocations and toy solvers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from work import lines_run, peak_bytes

from fairpack.models.check import (
    CheckReport,
    PropertyCheck,
    envy_free,
    equal_split_tasks,
    pareto_optimal,
    population_monotone,
    random_misreports,
    runnable_tasks,
    sharing_incentive,
    truthful,
    verify_allocation,
    verify_amounts,
)
from fairpack.models.result import Allocation
from fairpack.models.types import Instance, ServerClass, Tenant


def make(servers, tenants, resources=("cpu", "mem")) -> Instance:
    return Instance(
        resources=tuple(resources),
        servers=tuple(ServerClass(name, np.array(cap, dtype=float), count) for name, cap, count in servers),
        tenants=tuple(
            Tenant(name, np.array(demand, dtype=float), weight, tasks) for name, demand, weight, tasks in tenants
        ),
    )


@pytest.fixture
def drf_paper() -> Instance:
    # Ghodsi et al.: 9 CPUs, 18 GB; A <1 CPU, 4 GB>, B <3 CPU, 1 GB>.
    return make([("cluster", [9, 18], 1)], [("A", [1, 4], 1.0, math.inf), ("B", [3, 1], 1.0, math.inf)])


@pytest.fixture
def drfh_fig1() -> Instance:
    return make(
        [("server1", [2, 12], 1), ("server2", [12, 2], 1)],
        [("user1", [0.2, 1], 1.0, math.inf), ("user2", [1, 0.2], 1.0, math.inf)],
    )


def pool(tasks, integral=False) -> Allocation:
    return Allocation(np.array(tasks, dtype=float)[:, None], "pool", integral)


# ---------------------------------------------------------------------------------------------
# A tiny exact solver written here, independent of solver/: weighted DRF water-filling on one pool.
# ---------------------------------------------------------------------------------------------


def drf_pool(instance: Instance) -> Allocation:
    """Weighted DRF with divisible tasks on the pooled cluster, by event-driven progressive filling.

    Every active tenant's weighted dominant share rises at the same rate; a tenant freezes when it
    reaches its task cap or when a resource it needs saturates.
    """
    demand, total = instance.demand, instance.total_capacity
    share, weights, caps = instance.dominant_demand, instance.weights, instance.task_caps
    x = np.zeros(len(weights))
    active = instance.runnable & (share > 0) & (caps > 0)
    rate = np.divide(weights, share, out=np.zeros_like(weights), where=share > 0)  # tasks per unit level
    while active.any():
        used = x @ demand
        speed = rate[active] @ demand[active]  # resource use per unit level
        with np.errstate(divide="ignore", invalid="ignore"):
            to_saturate = np.where(speed > 0, (total - used) / speed, np.inf)
            to_cap = (caps[active] - x[active]) / rate[active]
        step = max(0.0, min(float(to_saturate.min()), float(to_cap.min())))
        x[active] += rate[active] * step
        capped = active & (x >= caps * (1 - 1e-12))
        x[capped] = caps[capped]
        saturated = (total - x @ demand) <= 1e-12 * np.maximum(total, 1.0)
        blocked = active & np.any(demand[:, saturated] > 0, axis=1)
        active &= ~(capped | blocked)
    return Allocation(x[:, None], "pool")


def greedy_by_claim(instance: Instance) -> Allocation:
    """A deliberately NON-truthful toy: tenants claiming larger (normalised) demand are served first."""
    demand, total, caps = instance.demand, instance.total_capacity, instance.task_caps
    order = np.argsort(-(demand / total).sum(axis=1), kind="stable")
    free = total.astype(float).copy()
    x = np.zeros(len(caps))
    for i in order:
        need = demand[i] > 0
        x[i] = min(caps[i], float(np.min(free[need] / demand[i, need])))
        free -= x[i] * demand[i]
    return Allocation(x[:, None], "pool")


def random_instance(
    seed: int, tenants: int = 4, resources: int = 3, caps: bool = True, positive: bool = False
) -> Instance:
    rng = np.random.default_rng(seed)
    names = [f"r{k}" for k in range(resources)]
    servers = [(f"s{k}", rng.uniform(5, 50, resources), int(rng.integers(1, 4))) for k in range(3)]
    specs = []
    for k in range(tenants):
        demand = rng.uniform(0.1, 3, resources) * (positive | (rng.random(resources) < 0.7))
        if not demand.any():
            demand[rng.integers(resources)] = 1.0
        cap = float(rng.integers(5, 60)) if caps and rng.random() < 0.5 else math.inf
        specs.append((f"t{k}", demand, float(rng.choice([1.0, 2.0, 3.0])), cap))
    return make(servers, specs, names)


# ---------------------------------------------------------------------------------------------
# verify_allocation / verify_amounts
# ---------------------------------------------------------------------------------------------


def test_drf_example_verifies_with_recomputed_numbers(drf_paper):
    for alloc in (pool([3, 2]), pool([3, 2], integral=True), Allocation(np.array([[3.0], [2.0]]), "class")):
        report = verify_allocation(drf_paper, alloc)
        assert isinstance(report, CheckReport)
        assert report.ok, report.violations
        assert report.violations == []
        np.testing.assert_allclose(report.tasks, [3, 2])
        np.testing.assert_allclose(report.dominant_shares, [2 / 3, 2 / 3])
        np.testing.assert_allclose(report.weighted_shares, [2 / 3, 2 / 3])
        assert report.min_weighted_share == pytest.approx(2 / 3)
        np.testing.assert_allclose(report.utilisation, [1.0, 14 / 18])


def test_capacity_overflow_by_one_task_is_named(drf_paper):
    report = verify_allocation(drf_paper, pool([3, 3]))
    assert not report.ok
    assert len(report.violations) == 1
    message = report.violations[0]
    assert "'pool'" in message and "'cpu'" in message and "12" in message and "9" in message
    # Class kind names the server.
    report = verify_allocation(drf_paper, Allocation(np.array([[4.0], [2.0]]), "class"))
    assert any("'cluster'" in v and "'cpu'" in v and "10" in v for v in report.violations)
    # Within relative tolerance is fine; just beyond is not.
    assert verify_allocation(drf_paper, pool([3 + 5e-7, 2])).ok
    assert not verify_allocation(drf_paper, pool([3 + 1e-4, 2])).ok


def test_task_cap_violation(drf_paper):
    capped = drf_paper.with_tenants([drf_paper.tenants[0], Tenant("B", np.array([3.0, 1.0]), 1.0, 1)])
    report = verify_allocation(capped, pool([3, 2]))
    assert not report.ok
    assert any("'B'" in v and "cap" in v and "2" in v and "1" in v for v in report.violations)
    assert verify_allocation(capped, pool([3, 1])).ok


def test_tenant_on_unit_lacking_its_resource():
    instance = make(
        [("cpu-node", [32, 128, 0], 1), ("gpu-node", [16, 64, 4], 1)],
        [("train", [2, 16, 1], 1.0, math.inf), ("batch", [2, 4, 0], 1.0, math.inf)],
        ("cpu", "mem", "gpu"),
    )
    good = Allocation(np.array([[0.0, 4.0], [10.0, 0.0]]), "class")
    assert verify_allocation(instance, good).ok
    bad = Allocation(np.array([[1.0, 3.0], [10.0, 0.0]]), "class")
    report = verify_allocation(instance, bad)
    assert not report.ok
    assert any("'train'" in v and "'cpu-node'" in v and "'gpu'" in v for v in report.violations)


def test_fractional_tasks_on_machines():
    instance = make([("m", [4, 4], 2)], [("A", [1, 1], 1.0, math.inf)])
    whole = Allocation(np.array([[2.0, 3.0]]), "machine", integral=True)
    assert verify_allocation(instance, whole).ok
    split = Allocation(np.array([[1.5, 3.0]]), "machine", integral=True)
    report = verify_allocation(instance, split)
    assert not report.ok
    assert any("'A'" in v and "'m[0]'" in v and "1.5" in v for v in report.violations)
    # Machine units mean indivisible tasks even if the flag is not set.
    assert not verify_allocation(instance, Allocation(np.array([[1.5, 3.0]]), "machine")).ok
    # Integral class allocations with fractional counts are caught too.
    assert not verify_allocation(instance, Allocation(np.array([[2.5]]), "class", integral=True)).ok


def test_integral_class_tasks_must_fit_one_machine():
    instance = make([("small", [2, 2], 4)], [("A", [3, 1], 1.0, math.inf)])
    # 2 tasks fit the class's aggregate capacity (8 CPUs) but a single task does not fit one machine.
    assert verify_allocation(instance, Allocation(np.array([[2.0]]), "class")).ok  # divisible: fine
    report = verify_allocation(instance, Allocation(np.array([[2.0]]), "class", integral=True))
    assert not report.ok and "single machine" in report.violations[0]


def test_shape_nan_and_negative(drf_paper):
    report = verify_allocation(drf_paper, Allocation(np.zeros((2, 3)), "pool"))
    assert not report.ok and "shape" in report.violations[0]
    assert math.isnan(report.min_weighted_share)
    report = verify_allocation(drf_paper, pool([math.nan, 2]))
    assert not report.ok and any("'A'" in v and "nan" in v for v in report.violations)
    np.testing.assert_allclose(report.tasks, [0, 2])
    report = verify_allocation(drf_paper, pool([-1, 2]))
    assert not report.ok and any("negative" in v and "'A'" in v for v in report.violations)


def test_many_violations_are_summarised():
    instance = make([("m", [1, 1], 50)], [("A", [1, 1], 1.0, math.inf)])
    report = verify_allocation(instance, Allocation(np.full((1, 50), 2.0), "machine"))
    assert not report.ok
    assert len(report.violations) == 21 and "80 more capacity" in report.violations[-1]


def test_verify_amounts_catches_tampering(drf_paper):
    alloc = pool([3, 2])
    honest = {"A": {"cpu": 3, "mem": 12}, "B": [6, 2]}
    assert verify_amounts(drf_paper, alloc, honest).ok
    assert verify_allocation(drf_paper, alloc, amounts=honest).ok
    tampered = {"A": {"cpu": 3, "mem": 13}, "B": [6, 2]}
    report = verify_amounts(drf_paper, alloc, tampered)
    assert not report.ok
    assert len(report.violations) == 1
    assert "'A'" in report.violations[0] and "'mem'" in report.violations[0] and "13" in report.violations[0]
    assert not verify_allocation(drf_paper, alloc, amounts=tampered).ok
    # Missing, unknown, malformed entries.
    assert not verify_amounts(drf_paper, alloc, {"A": [3, 12]}).ok
    assert not verify_amounts(drf_paper, alloc, {**honest, "C": [0, 0]}).ok
    assert not verify_amounts(drf_paper, alloc, {"A": {"cpu": 3, "mem": 12, "gpu": 0}, "B": [6, 2]}).ok
    assert not verify_amounts(drf_paper, alloc, {"A": [3, 12, 0], "B": [6, 2]}).ok
    assert not verify_amounts(drf_paper, alloc, {"A": [3, math.nan], "B": [6, 2]}).ok


# ---------------------------------------------------------------------------------------------
# Envy-freeness, Pareto optimality, sharing incentive
# ---------------------------------------------------------------------------------------------


def test_drf_example_has_the_fairness_properties(drf_paper):
    for alloc in (pool([3, 2]), pool([3, 2], integral=True)):
        for check in (envy_free, pareto_optimal, sharing_incentive):
            outcome = check(drf_paper, alloc)
            assert outcome.holds, outcome.detail
            assert outcome.worst == ()


def test_drfh_fig1_has_the_fairness_properties(drfh_fig1):
    alloc = Allocation(np.array([[10.0, 0.0], [0.0, 10.0]]), "class")
    assert verify_allocation(drfh_fig1, alloc).ok
    for check in (envy_free, pareto_optimal, sharing_incentive):
        outcome = check(drfh_fig1, alloc)
        assert outcome.holds, outcome.detail
    np.testing.assert_allclose(equal_split_tasks(drfh_fig1, "class"), [6, 6])
    # Per-server DRF's 6 tasks each is not Pareto optimal.
    per_server = Allocation(np.array([[5.0, 1.0], [1.0, 5.0]]), "class")
    assert verify_allocation(drfh_fig1, per_server).ok
    assert not pareto_optimal(drfh_fig1, per_server).holds


def test_envious_allocation():
    instance = make([("cluster", [10, 10], 1)], [("A", [1, 1], 1.0, math.inf), ("B", [1, 1], 1.0, math.inf)])
    outcome = envy_free(instance, pool([1, 3]))
    assert not outcome.holds
    assert outcome.worst == ("A", "B")
    assert outcome.excess == pytest.approx(2.0)
    assert "'A' envies 'B'" in outcome.detail
    # Weighted: B has weight 3, so A (weight 1) is only entitled to a third of B's bundle.
    weighted = make([("cluster", [10, 10], 1)], [("A", [1, 1], 1.0, math.inf), ("B", [1, 1], 3.0, math.inf)])
    assert envy_free(weighted, pool([1, 3])).holds
    # A capped tenant at its cap envies no one.
    capped = make([("cluster", [10, 10], 1)], [("A", [1, 1], 1.0, 1), ("B", [1, 1], 1.0, math.inf)])
    assert envy_free(capped, pool([1, 3])).holds


def test_envy_of_indivisible_allocations_counts_whole_tasks_per_machine():
    instance = make([("m", [2.5, 10], 2)], [("A", [1.5, 1], 1.0, math.inf), ("B", [1, 1], 1.0, math.inf)])
    tasks = np.array([[1.0, 0.0], [1.0, 2.0]])
    assert verify_allocation(instance, Allocation(tasks, "machine", integral=True)).ok
    # Whole tasks: B's bundle is 1 CPU on m[0] (0 tasks of A) and 2 CPUs on m[1] (1 task of A): no envy.
    assert envy_free(instance, Allocation(tasks, "machine", integral=True)).holds
    # Divisible view of the same counts: 3 CPUs hold 2 tasks of A, more than its 1.
    divisible = Allocation(tasks, "class", integral=False)
    two_classes = make(
        [("m0", [2.5, 10], 1), ("m1", [2.5, 10], 1)],
        [("A", [1.5, 1], 1.0, math.inf), ("B", [1, 1], 1.0, math.inf)],
    )
    assert not envy_free(two_classes, divisible).holds


def test_non_pareto_allocation_names_the_tenant_that_can_grow(drf_paper):
    outcome = pareto_optimal(drf_paper, pool([2, 2]))
    assert not outcome.holds
    assert outcome.worst == ("A",)
    assert "'A'" in outcome.detail and outcome.excess > 0
    integral = pareto_optimal(drf_paper, pool([2, 2], integral=True))
    assert not integral.holds
    assert integral.worst == ("A", "pool")
    # A capped tenant at its cap does not count as able to grow.
    capped = drf_paper.with_tenants([Tenant("A", np.array([1.0, 4.0]), 1.0, 2), drf_paper.tenants[1]])
    assert pareto_optimal(capped, pool([2, 7 / 3])).holds
    assert pareto_optimal(capped, pool([2, 2], integral=True)).holds  # one more B needs 3 CPUs, 1 is free


def test_pareto_on_an_infeasible_allocation_fails_with_explanation(drf_paper):
    outcome = pareto_optimal(drf_paper, pool([4, 2]))
    assert not outcome.holds and "infeasible" in outcome.detail


def test_pareto_respects_missing_resources():
    instance = make(
        [("cpu-node", [10, 10, 0], 1), ("gpu-node", [4, 4, 2], 1)],
        [("train", [1, 1, 1], 1.0, math.inf), ("batch", [1, 1, 0], 1.0, math.inf)],
        ("cpu", "mem", "gpu"),
    )
    # train can only use the gpu node (2 tasks); batch gets the rest of everything.
    alloc = Allocation(np.array([[0.0, 2.0], [10.0, 2.0]]), "class")
    assert verify_allocation(instance, alloc).ok
    assert pareto_optimal(instance, alloc).holds
    assert pareto_optimal(instance, Allocation(alloc.tasks, "class", integral=True)).holds
    worse = Allocation(np.array([[0.0, 2.0], [9.0, 2.0]]), "class")
    assert pareto_optimal(instance, worse).worst == ("batch",)


def test_sharing_incentive_fails_below_the_equal_split(drf_paper):
    np.testing.assert_allclose(equal_split_tasks(drf_paper, "pool"), [2.25, 1.5])
    np.testing.assert_allclose(equal_split_tasks(drf_paper, "pool", integral=True), [2, 1])
    outcome = sharing_incentive(drf_paper, pool([2, 2]))
    assert not outcome.holds
    assert outcome.worst == ("A",)
    assert outcome.excess == pytest.approx(0.25)
    # With whole tasks the equal split is only 2 tasks of A.
    assert sharing_incentive(drf_paper, pool([2, 2], integral=True)).holds


# ---------------------------------------------------------------------------------------------
# Truthfulness and population monotonicity with the solvers written above
# ---------------------------------------------------------------------------------------------


def test_drf_pool_solver_reproduces_the_paper(drf_paper):
    np.testing.assert_allclose(drf_pool(drf_paper).tasks[:, 0], [3, 2])


def test_random_misreports_inflate_and_never_vanish(drf_paper):
    inst = make([("s", [10, 10, 10], 1)], [("A", [1, 0, 2], 1.0, math.inf)], ("a", "b", "c"))
    claims = random_misreports(inst, "A", 30, seed=3)
    assert len(claims) == 30
    truth = inst.demand[0]
    for claim in claims:
        assert claim.shape == truth.shape
        assert np.all(claim >= truth) and np.any(claim > truth) and np.any(claim > 0)
    assert any(claim[1] > 0 for claim in claims)  # demand added on an unneeded resource
    again = random_misreports(inst, 0, 30, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(claims, again, strict=True))


def test_runnable_tasks_uses_the_true_demand():
    # Claimed <2, 1>, true <1, 1>: 3 tasks received = <6, 3>, enough for 3 true tasks.
    assert runnable_tasks(np.array([1.0, 1.0]), np.array([2.0, 1.0]), np.array([3.0]), False) == pytest.approx(3)
    # Claimed <1, 2>, true <1, 4>: 3 tasks received = <3, 6>: 1.5 true tasks, 1 when whole per unit.
    assert runnable_tasks(np.array([1.0, 4.0]), np.array([1.0, 2.0]), np.array([3.0]), False) == pytest.approx(1.5)
    assert runnable_tasks(np.array([1.0, 4.0]), np.array([1.0, 2.0]), np.array([3.0]), True) == pytest.approx(1)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_drf_is_truthful(seed):
    # Zero demands and task caps included: extended DRF is strategy-proof (Parkes et al. EC'12).
    instance = random_instance(seed)
    base = drf_pool(instance)
    assert verify_allocation(instance, base).ok
    assert envy_free(instance, base).holds
    assert pareto_optimal(instance, base).holds
    assert sharing_incentive(instance, base).holds
    for tenant in range(len(instance.tenants)):
        claims = random_misreports(instance, tenant, 8, seed=seed)
        outcome = truthful(instance, drf_pool, tenant, claims, truthful_allocation=base)
        assert outcome.holds, outcome.detail
        assert outcome.excess <= 1e-6


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_drf_with_positive_demands_is_population_monotone(seed):
    # Every tenant needs every resource: the first saturated resource freezes everyone, and removing a
    # tenant can only delay that moment.
    instance = random_instance(seed, tenants=5, positive=True)
    outcome = population_monotone(instance, drf_pool)
    assert outcome.holds, outcome.detail


def test_drf_with_zero_demands_is_not_population_monotone():
    # Hand-derived: capacities <10, 10>; A <1, 0>, B <1, 0.5>, C <0, 1>; every per-task dominant share 0.1.
    # With A: r1 saturates when A = B = 5, freezing B; C then takes the rest of r2: 10 - 2.5 = 7.5.
    # Without A: B and C rise together until r2 saturates at 0.5 x + x = 10, so C gets only 6.67.
    instance = make(
        [("cluster", [10, 10], 1)],
        [("A", [1, 0], 1.0, math.inf), ("B", [1, 0.5], 1.0, math.inf), ("C", [0, 1], 1.0, math.inf)],
    )
    np.testing.assert_allclose(drf_pool(instance).tasks[:, 0], [5, 5, 7.5])
    np.testing.assert_allclose(drf_pool(instance.without_tenant(0)).tasks[:, 0], [20 / 3, 20 / 3])
    outcome = population_monotone(instance, drf_pool)
    assert not outcome.holds
    assert outcome.worst == ("A", "C")
    assert outcome.excess == pytest.approx(7.5 - 20 / 3)
    assert "removing 'A' lowers 'C' from 7.5 to 6.66667" in outcome.detail
    # Probing only the removal of B or C finds nothing.
    assert population_monotone(instance, drf_pool, tenants=["B", "C"]).holds


def test_paper_instances_are_truthful_under_drf(drf_paper):
    for tenant in ("A", "B"):
        assert truthful(drf_paper, drf_pool, tenant, random_misreports(drf_paper, tenant, 10, seed=7)).holds
    assert population_monotone(drf_paper, drf_pool).holds


def test_non_truthful_solver_is_caught():
    instance = make([("cluster", [10, 10], 1)], [("A", [1, 1], 1.0, 6), ("B", [1, 1], 1.0, 6)])
    np.testing.assert_allclose(greedy_by_claim(instance).tasks[:, 0], [6, 4])
    outcome = truthful(instance, greedy_by_claim, "B", random_misreports(instance, "B", 5, seed=0))
    assert not outcome.holds
    assert outcome.worst[0] == "B"
    assert outcome.excess == pytest.approx(2.0)
    # DRF on the same instance resists the same misreports.
    assert truthful(instance, drf_pool, "B", random_misreports(instance, "B", 5, seed=0)).holds


def test_solve_may_return_a_result_like_object(drf_paper):
    class Wrapped:
        def __init__(self, allocation):
            self.allocation = allocation

    outcome = population_monotone(drf_paper, lambda inst: Wrapped(drf_pool(inst)))
    assert outcome.holds


# ---------------------------------------------------------------------------------------------
# Scale
# ---------------------------------------------------------------------------------------------


def _random_cluster(tenants: int, units: int, seed: int = 0) -> tuple[Instance, Allocation]:
    rng = np.random.default_rng(seed)
    servers = [(f"s{k}", rng.uniform(10, 100, 3), 1) for k in range(units)]
    specs = [(f"t{k}", rng.uniform(0.1, 2, 3), float(rng.integers(1, 4)), math.inf) for k in range(tenants)]
    instance = make(servers, specs, ("cpu", "mem", "disk"))
    # A feasible random allocation: each unit split among a few tenants at 60% load.
    tasks = np.zeros((tenants, units))
    for u in range(units):
        who = rng.choice(tenants, size=3, replace=False)
        share = rng.dirichlet(np.ones(3)) * 0.6
        for i, f in zip(who, share, strict=True):
            tasks[i, u] = f * float(np.min(instance.capacity[u] / instance.demand[i]))
    return instance, Allocation(tasks, "class")


def test_pareto_lp_handles_200_tenants_by_100_units_as_one_sparse_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    import scipy.optimize
    import scipy.sparse

    instance, alloc = _random_cluster(200, 100)
    assert verify_allocation(instance, alloc).ok
    solved: list[tuple[dict[str, Any], Any]] = []
    linprog = scipy.optimize.linprog

    def recorded(*args: Any, **kwargs: Any) -> Any:
        result = linprog(*args, **kwargs)
        solved.append((kwargs, result))
        return result

    monkeypatch.setattr(scipy.optimize, "linprog", recorded)
    outcome = pareto_optimal(instance, alloc)
    assert not outcome.holds  # 60% load leaves room
    # The work, counted: one LP, sparse, with a column per (tenant, unit) pair and per tenant, a capacity row
    # per (unit, resource) and a tenant-total row per tenant, three nonzeros per pair in the capacity rows; the
    # simplex ends within a few iterations per row (1,793 with HiGHS 1.12).
    ((kwargs, result),) = solved
    pairs, rows = 200 * 100, 100 * 3 + 200
    assert scipy.sparse.issparse(kwargs["A_ub"]) and scipy.sparse.issparse(kwargs["A_eq"])
    assert kwargs["A_ub"].shape == (100 * 3, pairs + 200) and kwargs["A_ub"].nnz == 3 * pairs
    assert kwargs["A_eq"].shape == (200, pairs + 200) and kwargs["A_eq"].nnz == pairs + 200
    assert result.status == 0 and result.nit <= 10 * rows


def _large_integral(machines: int) -> tuple[Instance, Allocation]:
    """400 tenants on ``machines`` machines of 5 classes, each tenant on about 1% of them."""
    rng = np.random.default_rng(1)
    instance = make(
        [(f"c{k}", rng.uniform(4, 64, 2), machines // 5) for k in range(5)],
        [(f"t{k}", rng.uniform(0.1, 2, 2), 1.0, math.inf) for k in range(400)],
    )
    tasks = (rng.random((400, machines)) < 0.01).astype(float)
    return instance, Allocation(tasks, "machine", integral=True)


def _check_all(instance: Instance, alloc: Allocation) -> tuple[CheckReport, list[PropertyCheck]]:
    return verify_allocation(instance, alloc), [check(instance, alloc) for check in
                                                (envy_free, pareto_optimal, sharing_incentive)]  # fmt: skip


def test_large_allocations_check_in_work_independent_of_the_machines():
    report, outcomes = _check_all(*_large_integral(5000))
    assert report.tasks.shape == (400,)
    assert [outcome.holds for outcome in outcomes] == [False, False, True]
    # Counted work: no Python step per machine (doubling the machines adds a few chunks of rows, not twice
    # the lines) and memory in proportion to the allocation (no tenants x tenants x machines array).
    half, full = _large_integral(2500), _large_integral(5000)
    assert lines_run(_check_all, *full)[1] < 1.5 * lines_run(_check_all, *half)[1]
    assert peak_bytes(_check_all, *full)[1] < 2.5 * peak_bytes(_check_all, *half)[1]


def test_a_mostly_zero_allocation_is_judged_as_the_whole_matrix_would_be(monkeypatch: pytest.MonkeyPatch) -> None:
    # Per-machine allocations are mostly zeros, and the checks read only the non-zero cells there; every
    # violation kind must come out exactly as the whole-matrix reading finds it.
    from fairpack.models.check import verify as verify_module

    instance = Instance(
        ("cpu", "mem"),
        (ServerClass("big", np.array([4.0, 8.0]), count=30), ServerClass("nomem", np.array([4.0, 0.0]), count=10)),
        (Tenant("a", np.array([1.0, 1.0]), tasks=5.0), Tenant("b", np.array([2.0, 1.0])),
         Tenant("c", np.array([1.0, 0.0]))),
    )  # fmt: skip
    tasks = np.zeros((3, 40))
    tasks[0, 0] = 5.0  # over capacity: 5 cpu on a 4-cpu machine, and 2 more tasks than its cap below
    tasks[0, 1] = 2.0
    tasks[1, 2] = math.nan
    tasks[1, 3] = -1.0
    tasks[2, 4] = 0.5  # half a task on a machine
    tasks[0, 35] = 1.0  # needs memory on a machine without any
    allocation = Allocation(tasks, "machine")
    sparse = verify_allocation(instance, allocation)
    monkeypatch.setattr(verify_module._Audit, "entries", lambda self: None)
    dense = verify_allocation(instance, allocation)
    assert not sparse.ok and len(sparse.violations) >= 6
    assert sparse.violations == dense.violations
    assert sparse.min_weighted_share == dense.min_weighted_share
    # Given as its cells, the same allocation is judged the same, and its table is never built.
    rows, units = np.nonzero(tasks)
    cells = Allocation.from_cells(tasks.shape, rows, units, tasks[rows, units], kind="machine")
    monkeypatch.undo()
    given_cells = verify_allocation(instance, cells)
    assert cells.sparse
    assert given_cells.violations == dense.violations
    assert given_cells.tasks.tolist() == dense.tasks.tolist()


def _random_cells(seed: int, classes: bool) -> tuple[Instance, Allocation]:
    """Three tenants on 12 machines or 3 classes (one without memory), with random counts in a few cells: whole,
    fractional, negative, NaN, infinite, repeated pairs."""
    rng = np.random.default_rng(seed)
    instance = Instance(
        ("cpu", "mem"),
        (ServerClass("big", np.array([4.0, 8.0]), count=5), ServerClass("small", np.array([2.0, 2.0]), count=4),
         ServerClass("nomem", np.array([4.0, 0.0]), count=3)),
        (Tenant("a", np.array([1.0, 1.0]), tasks=6.0), Tenant("b", np.array([3.0, 1.0])),
         Tenant("c", np.array([1.0, 0.0]), tasks=2.0)),
    )  # fmt: skip
    units = 3 if classes else 12
    size = int(rng.integers(0, 12))
    values = rng.choice([1.0, 1.0, 2.0, 3.0, 0.5, -1.0, 0.0, math.nan, math.inf], size=size)
    allocation = Allocation.from_cells((3, units), rng.integers(0, 3, size), rng.integers(0, units, size), values,
                                       kind="class" if classes else "machine", integral=bool(rng.integers(0, 2)))
    return instance, allocation


@pytest.mark.parametrize("classes", [False, True], ids=["machines", "classes"])
def test_an_allocation_given_as_cells_is_judged_as_its_table_is(classes: bool) -> None:
    judged = set()
    for seed in range(300):
        instance, cells = _random_cells(seed, classes)
        report = verify_allocation(instance, cells)
        assert cells.sparse  # the check read the cells alone
        table = Allocation(cells.tasks, cells.kind, cells.integral)
        expected = verify_allocation(instance, table)
        assert report.violations == expected.violations
        np.testing.assert_array_equal(report.tasks, expected.tasks)
        np.testing.assert_array_equal(cells.tenant_tasks, table.tenant_tasks)
        judged.add(report.ok)
    assert judged == {True, False}
