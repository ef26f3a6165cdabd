"""Exact DRF / DRFH / DRFH-int: the papers' examples and hand-derived optima, on every backend.

Notation in the derivations: a cluster's totals are <CPU, mem, ...>; a tenant's task share s is its
global dominant share per task (max over resources of demand / cluster total); "level" is the common
weighted dominant share of the tenants still growing in a progressive-filling round.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairpack.models.check import envy_free, pareto_optimal, verify_allocation
from fairpack.models.generators import google_instance, random_small
from fairpack.models.result import Allocation, Result
from fairpack.models.types import Instance, ServerClass, Tenant
from fairpack.models.view import result_json
from fairpack.solver.api import METHODS, solve
from fairpack.solver.backends import LP_BACKENDS, SolveOutcome, installed_backends
from fairpack.solver.backends.ortools import OrToolsBackend
from fairpack.solver.drfh.filling import unit_tasks
from fairpack.solver.drfh.methods import solve_drfh
from fairpack.solver.lp import LinearProgram

from library import (
    BRUTE_FORCE_CASES,
    INF,
    LIBRARY,
    Case,
    drf_paper,
    fig1,
    leximin_brute_force,
    make,
    sorted_weighted_shares,
)

TOL = 1e-6
PDLP_TOL = 1e-5
BACKENDS = [name for name in installed_backends() if name in LP_BACKENDS]
FLAT_METHODS = tuple(name for name, method in METHODS.items() if method.family == "flat")


def alloc(result: Result) -> Allocation:
    assert result.allocation is not None, result.message
    return result.allocation


def num(value: float | None) -> float:
    assert value is not None
    return value


def tasks_of(result: Result | Allocation) -> np.ndarray:
    allocation = result if isinstance(result, Allocation) else alloc(result)
    return np.asarray(allocation.tenant_tasks)


# ---------------------------------------------------------------------------------------------
# The papers' examples
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["drf", "drfh", "drfh-int"])
def test_drf_paper_example(method: str) -> None:
    # Totals <9, 18>: s_A = max(1/9, 4/18) = 2/9 (memory), s_B = max(3/9, 1/18) = 1/3 (CPU).
    # Equal dominant shares t: A runs 4.5t tasks, B 3t. CPU 4.5t + 9t <= 9 and memory 18t + 3t <= 18
    # give t = 2/3: A = 3, B = 2, using 9 CPU and 14 GB. Both need CPU, so nobody grows further.
    instance = drf_paper()
    result = solve(instance, method)
    assert result.status == "optimal" and result.verified, result.violations
    np.testing.assert_allclose(tasks_of(result), [3.0, 2.0], atol=TOL)
    data = result_json(instance, result)
    assert data["tenants"]["A"]["dominant_share"] == pytest.approx(2 / 3, abs=TOL)
    assert data["tenants"]["B"]["dominant_share"] == pytest.approx(2 / 3, abs=TOL)
    assert data["tenants"]["A"]["allocation"] == pytest.approx({"cpu": 3.0, "mem": 12.0}, abs=TOL)
    assert data["tenants"]["B"]["allocation"] == pytest.approx({"cpu": 6.0, "mem": 2.0}, abs=TOL)
    assert num(result.objective) == pytest.approx(2 / 3, abs=TOL)


def test_drf_paper_weighted() -> None:
    # Same cluster, weights A 1, B 2: A's dominant share is t, B's 2t; A runs t / (2/9) = 4.5t tasks,
    # B 2t / (1/3) = 6t. CPU: 4.5t + 18t <= 9 -> t <= 0.4; memory: 18t + 6t <= 18 -> t <= 0.75.
    # t = 0.4: A = 1.8, B = 2.4 (dominant shares 0.4 and 0.8, proportional to the weights); CPU is
    # exhausted and both need it.
    instance = make([("cluster", [9, 18], 1)], [("A", [1, 4], 1, INF), ("B", [3, 1], 2, INF)])
    for method in ("drf", "drfh"):
        result = solve(instance, method)
        np.testing.assert_allclose(tasks_of(result), [1.8, 2.4], atol=TOL)
        shares = tasks_of(result) * instance.dominant_demand
        np.testing.assert_allclose(shares, [0.4, 0.8], atol=TOL)


def test_drfh_fig1_gives_each_user_ten_tasks_on_its_own_server() -> None:
    # Totals <14, 14>: s_1 = s_2 = 1/14. Server 1 holds at most 2 / 0.2 = 10 user-1 tasks (CPU) and
    # server 2 at most 2 / 0.2 = 10 user-2 tasks (memory). An upper bound for equal shares: add
    # 5 x (server-1 CPU row: 0.2 a1 + b1 <= 2) and 5 x (server-2 memory row: a2 + 0.2 b2 <= 2):
    # a1 + 5 b1 + 5 a2 + b2 <= 20, so a + b <= 20 and min(a, b) <= 10, attained by a1 = b2 = 10.
    instance = fig1()
    result = solve(instance, "drfh")
    assert result.verified
    assert alloc(result).kind == "class"
    np.testing.assert_allclose(alloc(result).tasks, [[10.0, 0.0], [0.0, 10.0]], atol=TOL)
    assert num(result.objective) == pytest.approx(10 / 14, abs=TOL)
    data = result_json(instance, result)
    assert data["tenants"]["user1"]["per_server"] == pytest.approx({"server1": 10})
    assert data["tenants"]["user2"]["per_server"] == pytest.approx({"server2": 10})


def test_fig1_per_server_drf_gives_six_each() -> None:
    # DRF inside each server: on server 1 <2, 12>, user 1's local dominant share per task is
    # max(0.2/2, 1/12) = 0.1 and user 2's max(1/2, 0.2/12) = 0.5; equalising: 5 tasks of user 1 and 1
    # of user 2 (CPU 1 + 1 = 2). Server 2 is the mirror image. Totals: 5 + 1 = 6 each.
    result = solve(fig1(), "per-server-drf")
    assert result.verified
    np.testing.assert_allclose(tasks_of(result), [6.0, 6.0])


def test_fig1_pooled_drf_is_not_placeable() -> None:
    # DRF on the pooled cluster <14, 14>: x tasks each use 1.2x CPU and 1.2x memory, so
    # x = 14 / 1.2 = 35/3 = 11.67 each. But the bound above says a + b <= 20 on the real servers:
    # 70/3 > 20, so the pooled answer cannot be placed. Placement matters.
    instance = fig1()
    pooled = solve(instance, "drf")
    assert pooled.verified and alloc(pooled).kind == "pool"
    np.testing.assert_allclose(tasks_of(pooled), [35 / 3, 35 / 3], atol=TOL)
    placed = solve(instance, "drfh")
    assert tasks_of(pooled).sum() > 20 + 1e-3
    assert tasks_of(placed).sum() == pytest.approx(20.0, abs=TOL)
    # For instance, spreading the pooled counts over the servers in proportion to their CPU (1/7 and
    # 6/7) puts 10 user-1 tasks (10 GB) on server 2, which has 2 GB.
    share = instance.capacity / instance.total_capacity
    spread = np.outer(tasks_of(pooled), share[:, 0])
    assert not verify_allocation(instance, Allocation(spread, "class")).ok


def test_fig1_drfh_int(lp_backend: str) -> None:
    result = solve(fig1(), "drfh-int", backend=lp_backend)
    assert result.status == "optimal" and result.verified, result.violations
    assert alloc(result).integral and alloc(result).kind == "machine"
    np.testing.assert_array_equal(alloc(result).tasks, [[10.0, 0.0], [0.0, 10.0]])
    assert num(result.bound) == pytest.approx(10 / 14, abs=TOL)
    assert result.gap == pytest.approx(0.0, abs=TOL)


# ---------------------------------------------------------------------------------------------
# Single server, single resource, weights
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_single_server_drfh_equals_drf(seed: int) -> None:
    instance = random_small(seed, servers=1, tenants=1 + seed % 5, resources=2 + seed % 2)
    drfh = solve(instance, "drfh")
    drf = solve(instance, "drf")
    assert drfh.verified and drf.verified
    np.testing.assert_allclose(tasks_of(drfh), tasks_of(drf), atol=TOL)


def water_filling(capacity: float, demand: list[float], weight: list[float], cap: list[float]) -> np.ndarray:
    """Weighted max-min fairness of one divisible resource, with task caps, by hand.

    With level t, tenant i uses min(w_i t C, d_i cap_i) of the resource (dominant share w_i t). Raise t
    until the resource is used up; tenants whose cap is reached first drop out at their cap.
    """
    d, w, c = (np.array(v, dtype=float) for v in (demand, weight, cap))
    need = d * c  # resource a capped tenant uses at its cap
    order = np.argsort(need / w)  # level at which each tenant's cap binds, times C
    x = np.zeros(len(d))
    left, active = capacity, list(order)
    while active:
        rate = w[active].sum() * capacity  # resource per unit of level
        level = left / rate
        first = active[0]
        if need[first] / (w[first] * capacity) <= level:
            x[first] = c[first]
            left -= need[first]
            active.pop(0)
            continue
        for i in active:
            x[i] = w[i] * level * capacity / d[i]
        break
    return x


def test_water_filling_helper_by_hand() -> None:
    # 22 CPUs; A <1> cap 2, B <1> cap 4, C <1>, D <1> weight 1: A stops at 2 (level 2/22), the other
    # three share 20 -> 6.67 > 4, so B stops at 4 and C, D share 16: 8 each.
    np.testing.assert_allclose(water_filling(22, [1, 1, 1, 1], [1, 1, 1, 1], [2, 4, INF, INF]), [2, 4, 8, 8])
    # 12 CPUs; A <1> weight 1, B <2> weight 2: A's dominant share t, B's 2t: t*12 + 2t*12 = 12,
    # t = 1/3: A = 4 tasks, B = 8/2 = 4 tasks (dominant shares 1/3 and 2/3).
    np.testing.assert_allclose(water_filling(12, [1, 2], [1, 2], [INF, INF]), [4, 4])


@pytest.mark.parametrize(
    ("servers", "tenants"),
    [
        # 22 CPUs over two servers: A = 2, B = 4, C = D = 8 (see the helper test).
        (
            [("a", [10], 1), ("b", [12], 1)],
            [("A", [1], 1, 2), ("B", [1], 1, 4), ("C", [1], 1, INF), ("D", [1], 1, INF)],
        ),
        # 12 CPUs: weights 1 : 2 with demands 1 : 2 -> 4 tasks each.
        ([("a", [4], 3)], [("A", [1], 1, INF), ("B", [2], 2, INF)]),
        # 30 CPUs: A <3> w3 cap 1 stops at 1 task (3 CPUs, level 0.1/3); B <1> w1, C <0.5> w2 share the
        # remaining 27: B uses t*30, C 2t*30, 90t = 27 -> t = 0.3: B = 9 tasks, C = 18 / 0.5 = 36 tasks.
        (
            [("a", [5], 2), ("b", [20], 1)],
            [("A", [3], 3, 1), ("B", [1], 1, INF), ("C", [0.5], 2, INF)],
        ),
    ],
)
def test_single_resource_is_weighted_max_min(
    servers: list[tuple[str, list[float], int]], tenants: list[tuple[str, list[float], float, float]]
) -> None:
    instance = make(servers, tenants, resources=("cpu",))
    expected = water_filling(
        float(instance.total_capacity[0]),
        [t[1][0] for t in tenants],
        [t[2] for t in tenants],
        [t[3] for t in tenants],
    )
    result = solve(instance, "drfh")
    assert result.verified
    np.testing.assert_allclose(tasks_of(result), expected, atol=TOL)


def test_single_resource_third_case_by_hand() -> None:
    np.testing.assert_allclose(water_filling(30, [3, 1, 0.5], [3, 1, 2], [1, INF, INF]), [1, 9, 36])


def test_weighted_dominant_shares_are_proportional_to_weights() -> None:
    # Two servers <8, 4> and <4, 8> (totals <12, 12>); A <2, 1> weight 1, B <1, 2> weight 3. s_A = s_B
    # = 2/12 = 1/6. B's dominant share is 3x A's: b = 3a tasks. CPU 2a + 3a <= 12, memory a + 6a <= 12:
    # a = 12/7, b = 36/7. Placement: A entirely on <8, 4> (CPU 24/7, memory 12/7), B 8/7 there
    # (memory 12/7 + 16/7 = 4) and 4 on <4, 8> (CPU 4, memory 8): feasible, so the pooled optimum holds.
    instance = make(
        [("s1", [8, 4], 1), ("s2", [4, 8], 1)],
        [("A", [2, 1], 1, INF), ("B", [1, 2], 3, INF)],
    )
    result = solve(instance, "drfh")
    np.testing.assert_allclose(tasks_of(result), [12 / 7, 36 / 7], atol=TOL)
    shares = tasks_of(result) * instance.dominant_demand
    np.testing.assert_allclose(shares / instance.weights, [2 / 7, 2 / 7], atol=TOL)


@pytest.mark.parametrize("seed", range(6))
def test_weights_proportional_on_a_single_server(seed: int) -> None:
    # One server class, uncapped tenants that need every resource: all tenants rise together until
    # the first resource runs out, and since every tenant needs it, all freeze at that one level, so
    # dominant share / weight is the same for everybody (nobody is capped or blocked earlier).
    rng = np.random.default_rng(seed)
    servers = [("s", list(rng.uniform(4, 10, 3).round(2)), int(rng.integers(1, 4)))]
    tenants = [(f"u{i}", list(rng.uniform(0.1, 1, 3).round(2)), float(w), INF) for i, w in enumerate([1, 2, 3, 1, 2])]
    instance = make(servers, tenants, resources=("cpu", "mem", "disk"))
    for method in ("drf", "drfh"):
        result = solve(instance, method)
        levels = tasks_of(result) * instance.dominant_demand / instance.weights
        np.testing.assert_allclose(levels, levels[0], rtol=1e-6)
        # ...and that level exhausts some resource.
        used = tasks_of(result) @ instance.demand
        assert np.max(used / instance.total_capacity) == pytest.approx(1.0, abs=1e-6)


# ---------------------------------------------------------------------------------------------
# A library of tiny cases with hand-derived optima, on every backend, LP algorithm and strategy
# ---------------------------------------------------------------------------------------------


# (backend, algorithm, strategy, tolerance). Column generation and aggregation need HiGHS sessions.
COMBOS = [
    ("highs", None, "plain", TOL),
    ("highs", None, "colgen", TOL),
    ("highs", None, "aggregate", TOL),
    ("highs", None, "decompose", TOL),
    ("highs", "ipm", "decompose", TOL),
    ("ortools", "glop", "decompose", TOL),
    ("highs", "ipm", "plain", TOL),
    ("highs", "ipm", "colgen", TOL),
    ("highs", "ipm", "aggregate", TOL),
    ("ortools", "glop", "plain", TOL),
    ("ortools", "pdlp", "plain", PDLP_TOL),
    ("cbc", None, "plain", TOL),
]


def _combo_id(combo: tuple[str, str | None, str, float]) -> str:
    backend, algorithm, strategy, _ = combo
    return "-".join(part for part in (backend, algorithm, strategy) if part)


# Known bugs as (case, combo id) -> reason; strict xfails, so a fix shows up as XPASS and the entry
# must then be deleted.
KNOWN_BUGS: dict[tuple[str, str], str] = {}


def _library_params() -> list[Any]:
    params = []
    for case in LIBRARY:
        for combo in COMBOS:
            marks = [] if combo[0] in BACKENDS else [pytest.mark.skip(reason=f"{combo[0]} not installed")]
            bug = KNOWN_BUGS.get((case.name, _combo_id(combo)))
            if bug:
                marks.append(pytest.mark.xfail(strict=True, reason=bug))
            params.append(pytest.param(case, combo, id=f"{case.name}[{_combo_id(combo)}]", marks=marks))
    return params


@pytest.mark.parametrize(("case", "combo"), _library_params())
def test_library_case(case: Case, combo: tuple[str, str | None, str, float]) -> None:
    backend, algorithm, strategy, tol = combo
    result = solve(case.instance, "drfh", backend=backend, algorithm=algorithm, strategy=strategy)
    assert result.status == "optimal", result.message
    assert result.verified, result.violations
    np.testing.assert_allclose(tasks_of(result), case.tasks, atol=tol, rtol=0)
    names = [s.name for s in case.instance.servers]
    for tenant, expected in case.per_server.items():
        i = [t.name for t in case.instance.tenants].index(tenant)
        for server, count in expected.items():
            assert alloc(result).tasks[i, names.index(server)] == pytest.approx(count, abs=tol)
    assert num(result.objective) == pytest.approx(case.objective, abs=tol)


class _PdlpBackend(OrToolsBackend):
    """OR-Tools with PDLP forced on every solve (``solve()`` does not pass ``algorithm`` on; see below)."""

    def solve(
        self,
        lp: LinearProgram,
        time_limit: float | None = None,
        warm_start: np.ndarray | None = None,
        algorithm: str | None = None,
    ) -> SolveOutcome:
        return super().solve(lp, time_limit, warm_start, "pdlp")


PDLP_BUGS: dict[str, str] = {}


@pytest.mark.skipif("ortools" not in BACKENDS, reason="ortools not installed")
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            id=case.name,
            marks=[pytest.mark.xfail(strict=True, reason=PDLP_BUGS[case.name])] if case.name in PDLP_BUGS else [],
        )
        for case in LIBRARY
    ],
)
def test_library_case_with_pdlp_really_used(case: Case) -> None:
    model, filled, _ = solve_drfh(case.instance, _PdlpBackend(), strategy="plain")
    assert filled.status == "optimal", filled.message
    per_unit = unit_tasks(model, filled)
    np.testing.assert_allclose(per_unit.sum(axis=1), case.tasks, atol=PDLP_TOL, rtol=0)
    allocation = Allocation(model.units.split_to_classes(case.instance, per_unit), "class")
    report = verify_allocation(case.instance, allocation)
    assert report.ok, report.violations
    assert report.min_weighted_share == pytest.approx(case.objective, abs=PDLP_TOL)


def test_tenant_needing_an_absent_resource_changes_nothing() -> None:
    case = next(c for c in LIBRARY if c.name == "resource-no-server-has")
    full = tasks_of(solve(case.instance, "drfh"))
    without = tasks_of(solve(case.instance.without_tenant(0), "drfh"))
    assert full[0] == 0.0
    np.testing.assert_allclose(full[1:], without, atol=TOL)


@pytest.mark.parametrize("case", LIBRARY, ids=[case.name for case in LIBRARY])
def test_library_every_method_verifies_and_json_adds_up(case: Case) -> None:
    instance = case.instance
    exact = solve(instance, "drfh")
    assert pareto_optimal(instance, alloc(exact)).holds
    assert envy_free(instance, alloc(exact)).holds
    for method in FLAT_METHODS:
        result = solve(instance, method)
        assert result.verified, (method, result.violations)
        data = result_json(instance, result)
        assert data["verified"] is True and data["method"] == method
        for i, tenant in enumerate(instance.tenants):
            entry = data["tenants"][tenant.name]
            assert entry["tasks"] == pytest.approx(tasks_of(result)[i], abs=TOL)
            assert sum(entry["per_server"].values()) == pytest.approx(entry["tasks"], abs=TOL)
            assert set(entry["per_server"]) <= set(alloc(result).unit_names(instance))


def test_strategies_agree_on_a_distinct_google_like_cluster() -> None:
    # 60 machines perturbed into distinct configurations (no merging), 25 tenants with caps.
    instance = google_instance(None, tenants=25, seed=3, machines=60, distinct=True)
    assert len(instance.servers) >= 50
    plain = solve(instance, "drfh", strategy="plain")
    assert plain.verified
    for strategy in ("decompose", "colgen", "aggregate"):
        other = solve(instance, "drfh", strategy=strategy)
        assert other.verified, other.violations
        np.testing.assert_allclose(tasks_of(other), tasks_of(plain), rtol=1e-6, atol=1e-6)


def _crowded(seed: int) -> Instance:
    """60-600 tenants with caps, zero demands and weights 1-4 on 2-7 classes with zero capacities: several
    rounds of filling, frozen tenants that must move between classes, levels of 1e-3 to 1e-2."""
    rng = np.random.default_rng(seed)
    resources, classes = int(rng.integers(2, 4)), int(rng.integers(2, 8))
    servers = []
    for k in range(classes):
        capacity = rng.choice([0.0, 4.0, 8.0, 16.0, 32.0], size=resources)
        if not capacity.any():
            capacity[0] = 8.0
        servers.append(ServerClass(f"s{k}", capacity, int(rng.integers(1, 50))))
    tenants = []
    for i in range(int(rng.integers(60, 600))):
        demand = rng.choice([0.0, 0.0, 0.5, 1.0, 2.0, 3.0], size=resources)
        if not demand.any():
            demand[int(rng.integers(resources))] = 1.0
        cap = float(rng.choice([math.inf, math.inf, 1.0, 3.0, 10.0, 40.0]))
        tenants.append(Tenant(f"t{i}", demand, float(rng.integers(1, 5)), cap))
    return Instance(tuple(f"r{r}" for r in range(resources)), tuple(servers), tuple(tenants))


def _agree_with_plain(instance: Instance) -> None:
    plain = solve(instance, "drfh", strategy="plain")
    decomposed = solve(instance, "drfh", strategy="decompose")
    assert decomposed.status == "optimal" and decomposed.verified, decomposed.message
    assert decomposed.extra["rounds"] == plain.extra["rounds"]
    np.testing.assert_allclose(tasks_of(decomposed), tasks_of(plain), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", [3, 12, 38])
def test_decomposition_reaches_the_plain_lps_shares_over_several_rounds(seed: int) -> None:
    # Seed 12: a master HiGHS called optimal without a point within its tolerances (a level of 0.004 against
    # capacities of 1,600, before the master was scaled) ended the filling.
    _agree_with_plain(_crowded(seed))


def test_decomposition_reaches_the_plain_lps_shares_on_the_google_table(data_dir: Path) -> None:
    # Levels of 0.0003-0.002: a master whose objective was the level itself sat below HiGHS's optimality
    # tolerance and stopped at a third of it, verified all the same (a feasible answer is).
    _agree_with_plain(google_instance(data_dir, 1000, 1))


# ---------------------------------------------------------------------------------------------
# drfh-int: brute force on tiny instances
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "instance"), BRUTE_FORCE_CASES, ids=[c[0] for c in BRUTE_FORCE_CASES])
def test_drfh_int_matches_brute_force_leximin(name: str, instance: Instance, lp_backend: str) -> None:
    expected = leximin_brute_force(instance)
    lp = solve(instance, "drfh")
    result = solve(instance, "drfh-int", backend=lp_backend)
    assert result.status == "optimal" and result.verified, result.violations
    assert alloc(result).integral and alloc(result).kind == "machine"
    tasks = alloc(result).tasks
    assert np.array_equal(tasks, np.round(tasks))
    # The bound is the LP optimum (CBC's LP values carry 8 digits).
    assert num(result.bound) == pytest.approx(num(lp.objective), rel=TOL)
    assert num(result.objective) <= num(result.bound) * (1 + TOL)
    assert result.gap is not None and result.gap >= 0
    # Every backend reaches the same brute-force leximin vector, so they agree with each other too.
    np.testing.assert_allclose(sorted_weighted_shares(instance, alloc(result)), expected, atol=1e-9)


def test_brute_force_cases_by_hand() -> None:
    by_name = dict(BRUTE_FORCE_CASES)
    np.testing.assert_allclose(leximin_brute_force(by_name["fig1-small"]), [5 / 7, 5 / 7])
    np.testing.assert_allclose(leximin_brute_force(by_name["two-by-two"]), [2 / 3, 2 / 3])
    np.testing.assert_allclose(leximin_brute_force(by_name["weighted"]), [1 / 3, 1 / 3])
    np.testing.assert_allclose(leximin_brute_force(by_name["cap-and-zero-demands"]), [1 / 4, 3 / 4, 3 / 4])


# ---------------------------------------------------------------------------------------------
# Known bugs (strict xfails: each must start passing when its bug is fixed)
# ---------------------------------------------------------------------------------------------


@pytest.mark.skipif("ortools" not in BACKENDS, reason="ortools not installed")
def test_algorithm_reaches_a_non_incremental_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []
    original = OrToolsBackend.solve

    def spy(
        self: OrToolsBackend,
        lp: LinearProgram,
        time_limit: float | None = None,
        warm_start: np.ndarray | None = None,
        algorithm: str | None = None,
    ) -> SolveOutcome:
        seen.append(algorithm)
        return original(self, lp, time_limit, warm_start, algorithm)

    monkeypatch.setattr(OrToolsBackend, "solve", spy)
    solve(fig1(), "drfh", backend="ortools", algorithm="pdlp")
    assert seen and set(seen) == {"pdlp"}


@pytest.mark.parametrize("backend", [b for b in ("ortools", "cbc") if b in BACKENDS])
def test_unknown_algorithm_is_rejected(backend: str) -> None:
    with pytest.raises(ValueError):
        solve(fig1(), "drfh", backend=backend, algorithm="no-such-algorithm")


def test_drfh_int_lifts_the_leximin_candidate(lp_backend: str) -> None:
    # 10 CPUs; B <1> weight 1, C <1> weight 2; one task is 1/10 of dominant share, so B's weighted
    # share is b/10 and C's c/20 with b + c <= 10. Max-min: b = 10/3, so in whole tasks the level is
    # 0.3 (b = 3, c = 6) with one CPU left: giving it to B yields (0.4, 0.3), to C (0.3, 0.35).
    # Sorted, (0.3, 0.4) > (0.3, 0.35): the leximin optimum is B = 4, C = 6.
    tenants = [("B", [1.0], 1.0, INF), ("C", [1.0], 2.0, INF)]
    answers = {}
    for order in (tenants, tenants[::-1]):
        instance = make([("s", [10.0], 1)], order, resources=("cpu",))
        result = solve(instance, "drfh-int", backend=lp_backend)
        names = [t.name for t in instance.tenants]
        answers[names[0]] = dict(zip(names, tasks_of(result).tolist(), strict=True))
    assert all(got == {"B": 4.0, "C": 6.0} for got in answers.values()), answers


# A single <1 CPU, 1 GB> server. A <1, 0.25> cap 1 excludes everybody else (it takes the whole CPU, and
# with C it would need 1.25 GB); without A, B <0.25, 0> runs its cap of 3 tasks (0.75 CPU) and C <0, 1>
# one task: weighted shares (0, 0.75, 1) beat (0, 0, 1). Leximin: A = 0, B = 3, C = 1.
PIN_CASE_SINGLE = make([("s", [1, 1], 1)], [("A", [1, 0.25], 1, 1), ("B", [0.25, 0], 1, 3), ("C", [0, 1], 1, INF)])
# Machines <0, 1>, <0, 1>, <1, 0>: U0 <0.25, 0> (CPU only, 4 tasks on the CPU machine), U1 <0, 0.25>
# cap 1 and U2 <0, 0.25> cap 3 share 2 GB. All caps fit: U0 = 4, U1 = 1, U2 = 3.
PIN_CASE_THREE = make(
    [("m0", [0, 1], 1), ("m1", [0, 1], 1), ("m2", [1, 0], 1)],
    [("U0", [0.25, 0], 1, INF), ("U1", [0, 0.25], 1, 1), ("U2", [0, 0.25], 1, 3)],
)


@pytest.mark.parametrize(
    ("instance", "expected"),
    [(PIN_CASE_SINGLE, [0.0, 3.0, 1.0]), (PIN_CASE_THREE, [4.0, 1.0, 3.0])],
    ids=["single-server", "three-machines"],
)
def test_drfh_int_keeps_tenants_that_reached_their_cap(instance: Instance, expected: list[float]) -> None:
    result = solve(instance, "drfh-int", backend="highs")
    assert result.verified
    assert pareto_optimal(instance, alloc(result)).holds
    np.testing.assert_array_equal(tasks_of(result), expected)


def test_drfh_int_with_a_fractional_cap() -> None:
    # One server with 1 GB; u0 <0.25 GB> cap 1, u1 <0.25 GB> cap 3.2: 4 tasks fit, u1 can run
    # floor(3.2) = 3 whole tasks next to u0's 1.
    instance = make([("s", [1.0], 1)], [("u0", [0.25], 1, 1), ("u1", [0.25], 1, 3.2)], resources=("mem",))
    result = solve(instance, "drfh-int", backend="highs")
    np.testing.assert_array_equal(tasks_of(result), [1.0, 3.0])
    assert pareto_optimal(instance, alloc(result)).holds


def _tiny_random(seed: int) -> Instance:
    rng = np.random.default_rng(seed)
    servers = [(f"m{k}", list(rng.integers(1, 7, 2).astype(float)), 1) for k in range(2)]
    tenants = []
    for i in range(int(rng.integers(2, 4))):
        demand = rng.integers(0, 4, 2).astype(float)
        if not demand.any():
            demand[0] = 1.0
        cap = float(rng.integers(1, 5)) if rng.random() < 0.3 else INF
        tenants.append((f"u{i}", list(demand), float(rng.integers(1, 4)), cap))
    return make(servers, tenants)


def test_drfh_int_matches_brute_force_on_random_tiny_instances() -> None:
    mismatches = []
    for seed in range(40):
        instance = _tiny_random(seed)
        expected = leximin_brute_force(instance)
        got = sorted_weighted_shares(instance, alloc(solve(instance, "drfh-int")))
        if not np.allclose(got, expected, atol=1e-9):
            mismatches.append((seed, got, expected))
    assert not mismatches, mismatches


def test_tenant_needing_only_absent_resources_gets_nothing() -> None:
    instance = make([("s", [4, 0], 1)], [("A", [0, 1], 1, INF), ("B", [1, 0], 1, INF)], resources=("cpu", "gpu"))
    for method in FLAT_METHODS:
        result = solve(instance, method)
        assert result.verified, (method, result.violations)
        assert tasks_of(result)[0] == 0.0


def test_no_runtime_warning_for_a_tenant_needing_only_absent_resources() -> None:
    import warnings

    instance = make([("s", [4, 0], 1)], [("A", [0, 1], 1, INF), ("B", [1, 0], 1, INF)], resources=("cpu", "gpu"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solve(instance, "drfh")


def test_objective_is_monotone_when_every_tenant_is_satisfied() -> None:
    # Two machines with 1 CPU each; A <0.6> cap 3, B <0.1> cap 1; one task of A is 0.3 of dominant
    # share, one of B 0.05. Divisible: A = 3 (1.8 CPU) and B = 1 fit, everybody is satisfied, and the
    # objective becomes min(0.9, 0.05) = 0.05. Whole tasks: one A per machine, A = 2 is unsatisfied
    # with share 0.6, B = 1: objective 0.6 for drfh-int and every heuristic.
    instance = make([("m", [1.0], 2)], [("A", [0.6], 1, 3), ("B", [0.1], 1, 1)], resources=("cpu",))
    exact = solve(instance, "drfh")
    np.testing.assert_allclose(tasks_of(exact), [3.0, 1.0], atol=TOL)
    integral = solve(instance, "drfh-int")
    np.testing.assert_array_equal(tasks_of(integral), [2.0, 1.0])
    assert num(exact.objective) >= num(solve(instance, "first-fit").objective) - 1e-9
    assert num(integral.objective) <= num(integral.bound) + 1e-9


# One server <1 CPU, 5 GB>; A <0, 1> (s_A = 1/5), B <1, 0.01> (s_B = 1). Level t: A = 5t tasks, B = t;
# memory 5t + 0.01t = 5 -> t = 5/5.01 (CPU t < 1): A = 25/5.01, B = 5/5.01, memory exactly full and
# both need memory, so nobody can grow: the allocation is Pareto optimal.
PARETO_CASE = make([("s", [1, 5], 1)], [("A", [0, 1], 1, INF), ("B", [1, 0.01], 1, INF)])
PARETO_TASKS = [25 / 5.01, 5 / 5.01]


def test_drfh_on_the_pareto_case() -> None:
    np.testing.assert_allclose(tasks_of(solve(PARETO_CASE, "drfh")), PARETO_TASKS, rtol=1e-9)


def test_pareto_check_on_an_exact_allocation() -> None:
    exact = Allocation(np.array(PARETO_TASKS)[:, None], "class")
    assert verify_allocation(PARETO_CASE, exact).ok
    check = pareto_optimal(PARETO_CASE, exact)
    assert check.holds, check.detail


# s0 <2 CPU, 16 GB>, s1 <6 CPU, 0 GB>; totals <8, 16>. A <0.25, 0.25> (s_A = 1/32) needs memory, so it
# runs only on s0, whose 2 CPUs hold 8 tasks: A is blocked at share 8/32 = 0.25. B <0, 0.25> (s_B = 1/64)
# and C <0, 1> cap 10 (s_C = 1/16, cap share 0.625). Round 1 stops at 0.25 with A = 8, B = 16, C = 4
# (memory 2 + 4 + 4 = 10 of 16); A freezes. Round 2: B = 64t, C = 16t tasks, memory
# 2 + 16t + 16t = 16 -> t = 7/16: B = 28, C = 7, below C's cap of 10 (cap level 0.625 > 7/16).
CAP_FREEZE_CASE = make(
    [("s0", [2, 16], 1), ("s1", [6, 0], 1)],
    [("A", [0.25, 0.25], 1, INF), ("B", [0, 0.25], 1, INF), ("C", [0, 1], 1, 10)],
)


@pytest.mark.parametrize("combo", [c for c in COMBOS if c[0] in BACKENDS], ids=_combo_id)
def test_capped_tenant_is_not_frozen_below_its_cap_level(combo: tuple[str, str | None, str, float]) -> None:
    backend, algorithm, strategy, _ = combo
    result = solve(CAP_FREEZE_CASE, "drfh", backend=backend, algorithm=algorithm, strategy=strategy)
    assert envy_free(CAP_FREEZE_CASE, alloc(result)).holds
    np.testing.assert_allclose(tasks_of(result), [8.0, 28.0, 7.0], atol=1e-5)


# Eight machines in four classes, three weighted tenants: the first level MILP of drfh-int makes
# HiGHS 1.12's presolve throw std::length_error, which escapes solve() as "ValueError: vector::reserve".
# OR-Tools (SCIP) and CBC solve the same model. B and C have the same weight and the same task share,
# so leximin is not unique: A = 4 and {B, C} = {10, 11} in either order.
HIGHS_CRASH_CASE = make(
    [("s0", [4, 6], 3), ("s1", [1, 0], 1), ("s2", [1, 2], 1), ("s3", [4, 6], 3)],
    [("A", [0, 1.5], 1, INF), ("B", [1, 1.5], 3, INF), ("C", [0.5, 1.5], 3, INF)],
)


def test_drfh_int_survives_a_highs_presolve_crash() -> None:
    result = solve(HIGHS_CRASH_CASE, "drfh-int", backend="highs")
    assert result.status == "optimal" and result.verified


@pytest.mark.skipif("ortools" not in BACKENDS, reason="ortools not installed")
def test_highs_crash_case_solves_on_ortools() -> None:
    result = solve(HIGHS_CRASH_CASE, "drfh-int", backend="ortools")
    assert result.status == "optimal" and result.verified
    got = tasks_of(result)
    assert got[0] == 4.0 and sorted(got[1:]) == [10.0, 11.0]
    reference = solve(HIGHS_CRASH_CASE, "drfh-int", backend="highs")
    np.testing.assert_allclose(
        sorted_weighted_shares(HIGHS_CRASH_CASE, alloc(result)),
        sorted_weighted_shares(HIGHS_CRASH_CASE, alloc(reference)),
        atol=1e-12,
    )


def test_drfh_int_gap_stops_within_the_proven_bound() -> None:
    # A Google-like cluster where Best-Fit is already close to the LP: with a 50% gap the level search
    # stops at once ('feasible'), and the reported proven bound is never below the f it returns.
    instance = google_instance(None, 6, 3, machines=12)
    loose = solve(instance, "drfh-int", gap=0.5)
    assert loose.verified and loose.status in ("feasible", "optimal")
    bound = loose.extra["proven_bound"]
    assert bound is not None and num(loose.objective) <= bound * (1 + 1e-9)
    assert num(loose.objective) >= 0.5 * bound
    # Without a gap the search climbs further (here it cannot finish in a second: the feasibility
    # MILPs next to the bound are hard), never below the loose answer and never above its bound.
    tighter = solve(instance, "drfh-int", time_limit=1.0)
    assert tighter.verified
    assert num(loose.objective) - 1e-12 <= num(tighter.objective) <= tighter.extra["proven_bound"] * (1 + 1e-9)
