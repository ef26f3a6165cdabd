"""DRFH's exact reductions and its optimality certificate.

``solve_drfh`` pools scaled copies of a machine into one unit (``UnitGrouping.merge_proportional``), leaves the
capacity rows another row implies empty (``implied_capacity``), solves a large all-columns LP first by HiGHS's
interior point, and checks every round's level against the price bound of its duals (``DrfhModel.level_bound``).
Each is checked here against the unreduced LP (identical machines merged, every row, the simplex) on seeded random
instances with many classes, and the path is shown to be taken (``result.extra``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from benchmarks.gavel_lp import fairpack_instance, gavel_instance
from fairpack.models.types import Instance, ServerClass, Tenant
from fairpack.solver.api import solve
from fairpack.solver.backends import SolveOutcome, get_backend
from fairpack.solver.backends.highs import HighsBackend
from fairpack.solver.budget import Budget
from fairpack.solver.drfh import methods
from fairpack.solver.drfh.filling import CERTIFY_GAP, SessionRounds, progressive_filling
from fairpack.solver.drfh.model import DrfhModel, UnitGrouping, implied_capacity
from fairpack.solver.lp import LinearProgram


def scaled_copies(seed: int, shapes: int = 6, classes: int = 40, tenants: int = 60, resources: int = 4) -> Instance:
    """``classes`` server classes, each a scaled copy of one of ``shapes`` machines; dense random demands, some
    tenants capped. Resource 0 is every tenant's largest per unit of resource 1 on half the shapes, so rows
    there are implied."""
    rng = np.random.default_rng([seed, shapes, classes, tenants, resources])
    base = rng.uniform(0.5, 2.0, size=(shapes, resources))
    base[: shapes // 2, 1] = 50.0  # plenty of resource 1 where it cannot bind
    shape = rng.integers(0, shapes, size=classes)
    capacity = base[shape] * rng.uniform(0.5, 3.0, size=classes)[:, None]
    resource_names = tuple(f"r{k}" for k in range(resources))
    servers = ServerClass.many([f"c{k}" for k in range(classes)], capacity, rng.integers(1, 20, size=classes).tolist())
    demand = rng.uniform(0.05, 0.5, size=(tenants, resources))
    caps = np.where(rng.uniform(size=tenants) < 0.3, rng.uniform(5, 60, size=tenants), np.inf)
    weights = rng.choice([1.0, 2.0, 3.0], size=tenants)
    return Instance(resource_names, servers, Tenant.many([f"t{i}" for i in range(tenants)], demand, weights, caps))


def unreduced_shares(instance: Instance) -> np.ndarray:
    """Leximin global dominant shares by the LP as it was: identical machines merged, every row, the simplex."""
    model = DrfhModel(instance, UnitGrouping.merge_identical(instance))
    backend = get_backend("highs", "simplex")
    filled = progressive_filling(model, SessionRounds.all_columns(model, backend, Budget.of(None), "simplex"))
    assert filled.status == "optimal", filled.message
    return filled.shares


def shares_of(instance: Instance, tasks: np.ndarray) -> np.ndarray:
    return np.asarray(tasks.sum(axis=1) * instance.dominant_demand)


@pytest.mark.parametrize("seed", range(6))
def test_reduced_lp_reaches_the_unreduced_leximin_shares(seed: int) -> None:
    instance = scaled_copies(seed)
    model = methods.drfh_model(instance)
    assert model.units.num_units <= 6 < len(instance.servers)  # the copies pooled
    assert model.live is not None and not model.live.all()  # rows implied
    result = solve(instance, "drfh")
    assert result.status == "optimal" and result.verified and result.allocation is not None, result.message
    assert result.extra["units"] == model.units.num_units
    expected = unreduced_shares(instance)
    np.testing.assert_allclose(shares_of(instance, result.allocation.tasks), expected, rtol=1e-9, atol=1e-12)
    assert result.extra["certificate_gap"] <= CERTIFY_GAP


@pytest.mark.parametrize("strategy", ["plain", "decompose", "colgen", "aggregate"])
def test_every_strategy_on_the_reduced_model_agrees(strategy: str) -> None:
    instance = scaled_copies(7)
    expected = unreduced_shares(instance)
    result = solve(instance, "drfh", strategy=strategy)
    assert result.status == "optimal" and result.verified and result.allocation is not None, result.message
    np.testing.assert_allclose(shares_of(instance, result.allocation.tasks), expected, rtol=1e-9, atol=1e-12)


def test_gavel_lp_takes_the_reduced_interior_point_path() -> None:
    """Gavel's LP as DRFH: the 40 accelerator types of 4 families pool into 4 units of one binding row each, and
    the all-columns LP (400 tenants x 4 units, no task caps) goes to the interior point first. Before: 40 units,
    160 capacity rows, the decomposition (which stalled here and fell back to the plain simplex)."""
    gavel = gavel_instance(1_500, 40, 4, 0)
    instance = fairpack_instance(gavel)
    result = solve(instance, "drfh")
    assert result.status == "optimal" and result.verified, result.message
    assert result.extra["units"] == 4 and result.extra["capacity_rows"] == 4
    assert result.extra["strategy"] == "plain, interior point first"
    assert result.extra["lp_solves"] == 1 and result.extra["certificate_gap"] <= CERTIFY_GAP


def test_scaled_copies_split_back_within_every_machine() -> None:
    machine = np.array([2.0, 1.0, 0.0])
    servers = (ServerClass("a", machine, 3), ServerClass("b", 2.5 * machine, 2),
               ServerClass("c", machine * (1 + 1e-13), 1), ServerClass("d", np.array([2.0, 1.0, 1e-9]), 1))  # fmt: skip
    tenants = (Tenant("x", np.array([1.0, 0.2, 0.0]), tasks=math.inf), Tenant("y", np.array([0.1, 0.3, 0.0])))
    instance = Instance(("r0", "r1", "r2"), servers, tenants)
    grouping = UnitGrouping.merge_proportional(instance)
    # a, b and c are copies (c to 13 digits); d has a resource they lack, so it stays apart.
    assert grouping.num_units == 2 and len(set(grouping.unit_of_class[:3].tolist())) == 1
    assert grouping.unit_of_class[3] != grouping.unit_of_class[0]
    pooled = grouping.unit_of_class[0]
    # The unit holds 3 x 2 + 2 x 5 + 1 x 2 = 18 of resource 0; filling it exactly fills every machine.
    assert grouping.capacity[pooled, 0] == pytest.approx(18.0)
    assert grouping.capacity[pooled, 1] == pytest.approx(9.0)
    tasks = np.zeros((2, grouping.num_units))
    tasks[0, pooled] = 18.0  # tenant x: 18 of resource 0 and 3.6 of resource 1
    per_class = grouping.split_to_classes(instance, tasks)
    use = per_class[0, :, None] * instance.tenants[0].demand[None, :] / instance.counts[:, None]
    assert np.all(use <= instance.capacity * (1 + 1e-12))
    assert per_class[0].sum() == pytest.approx(18.0)


def test_implied_rows_follow_the_largest_ratio() -> None:
    # Per unit of resource 0 tenants use at most 0.5 of resource 1 (tenant b): a unit with C1 >= 0.5 C0 never
    # fills resource 1 first. Resource 0 per unit of resource 1 is unbounded for none, at most 4 (tenant a).
    consumption = np.array([[4.0, 1.0], [2.0, 1.0], [1.0, 0.5]])
    capacity = np.array([[10.0, 5.0], [10.0, 4.9], [10.0, 100.0], [0.0, 1.0]])
    implied = implied_capacity(consumption, capacity)
    assert implied.tolist() == [[False, True], [False, False], [False, True], [False, False]]
    # Two rows implying each other: one stays.
    assert implied_capacity(np.array([[1.0, 1.0]]), np.array([[1.0, 1.0]])).sum() == 1
    # A tenant that needs resource 1 but not resource 0: nothing implies resource 1.
    assert not implied_capacity(np.array([[1.0, 0.5], [0.0, 1.0]]), np.array([[10.0, 100.0]]))[0, 1]


def test_price_bound_is_the_optimum_at_the_duals_and_above_a_short_level() -> None:
    instance = scaled_copies(3)
    model = methods.drfh_model(instance)
    backend = get_backend("highs")
    rounds = SessionRounds.all_columns(model, backend, Budget.of(None))
    n = model.num_tenants
    outcome = rounds.solve_round(instance.weights.copy(), np.zeros(n), model.share_caps())
    assert outcome.status == "optimal" and outcome.gap <= CERTIFY_GAP
    # Any prices bound the level from above; the duals' bound is the level itself.
    rng = np.random.default_rng(0)
    prices = rng.uniform(0.0, 1.0, size=model.units.capacity.shape)
    assert model.level_bound(prices, instance.weights, np.zeros(n), math.inf) >= outcome.level * (1 - 1e-12)


class ShortSession:
    """A HiGHS session whose simplex answers stop short of the optimum: the level and every share scaled down by
    ``shortfall`` (still feasible), as HiGHS's simplex did on 10,000 uncapped tenants of the Google table.
    Interior point answers come through unchanged unless ``always``."""

    def __init__(self, inner: Any, shortfall: float, always: bool) -> None:
        self.inner, self.shortfall, self.always = inner, shortfall, always
        self.algorithm: str | None = None
        self.solves: list[str | None] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def use_algorithm(self, algorithm: str | None) -> None:
        self.algorithm = algorithm
        self.inner.use_algorithm(algorithm)

    def solve(self) -> SolveOutcome:
        outcome: SolveOutcome = self.inner.solve()
        self.solves.append(self.algorithm)
        if outcome.x is None or (self.algorithm == "ipm" and not self.always):
            return outcome
        return replace(outcome, x=outcome.x * (1 - self.shortfall))


class ShortBackend(HighsBackend):
    def __init__(self, shortfall: float, always: bool = False) -> None:
        super().__init__()
        self.shortfall, self.always = shortfall, always
        self.sessions: list[ShortSession] = []

    def session(self, lp: LinearProgram, time_limit: float | None = None, algorithm: str | None = None, *,
                deadline: float | None = None, presolve: bool = True) -> Any:  # fmt: skip
        session = ShortSession(super().session(lp, time_limit, algorithm), self.shortfall, self.always)
        session.algorithm = algorithm
        self.sessions.append(session)
        return session


def test_a_level_short_of_its_price_bound_is_solved_again_by_the_interior_point(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    instance = scaled_copies(4, tenants=20)
    expected = unreduced_shares(instance)
    backend = ShortBackend(0.004)
    monkeypatch.setattr(methods, "get_backend", lambda *args: backend)
    result = solve(instance, "drfh", strategy="plain")
    assert result.status == "optimal" and result.verified and result.allocation is not None, result.message
    assert "ipm" in backend.sessions[0].solves  # the retry ran
    np.testing.assert_allclose(shares_of(instance, result.allocation.tasks), expected, rtol=1e-9, atol=1e-12)


def test_a_level_nothing_certifies_is_reported_feasible(monkeypatch: pytest.MonkeyPatch) -> None:
    instance = scaled_copies(4, tenants=20)
    monkeypatch.setattr(methods, "get_backend", lambda *args: ShortBackend(0.004, always=True))
    result = solve(instance, "drfh", strategy="plain")
    assert result.status == "feasible" and result.verified, result.message
    assert "not certified optimal" in result.message
    assert result.extra["certificate_gap"] > 1e-3


def test_a_session_switches_from_the_interior_point_to_the_simplex_on_its_basis() -> None:
    instance = scaled_copies(5)
    model = methods.drfh_model(instance)
    tenants, units = model.all_pairs()
    lp = model.build(tenants, units, 10.0)
    session = get_backend("highs").session(lp, algorithm="ipm")
    first = session.solve()
    session.use_algorithm("simplex")
    again = session.solve()
    assert first.status == again.status == "optimal"
    assert again.objective == pytest.approx(first.objective, rel=1e-12)
    assert session._highs.getInfo().simplex_iteration_count == 0  # nothing changed: the crossover basis is optimal
    pdlp = get_backend("highs").session(lp, algorithm="pdlp")
    with pytest.raises(ValueError, match="PDLP"):
        pdlp.use_algorithm("simplex")


def test_auto_decomposes_with_task_caps_and_goes_plain_without() -> None:
    """The decomposition's master stalls when every tenant grows in one round (no caps) and hands the round to the
    plain LP anyway; with caps the filling probes breakpoints, and there it stays far ahead (Google table)."""
    from fairpack.models.generators import google_instance

    capped = google_instance(None, tenants=300, seed=1)
    assert np.isfinite(capped.task_caps).any()
    assert solve(capped, "drfh").extra["strategy"] == "decompose"
    uncapped = capped.with_tenants([replace(t, tasks=math.inf) for t in capped.tenants])
    result = solve(uncapped, "drfh")
    assert result.status == "optimal" and result.verified
    assert result.extra["strategy"].startswith("plain")


def test_with_task_caps_the_plain_lp_starts_by_the_simplex() -> None:
    """A capped filling probes its breakpoints from one basis; the interior point first solve is for one round."""
    from fairpack.models.generators import google_instance

    capped = google_instance(None, tenants=40, seed=1, machines=200, distinct=True)
    assert np.isfinite(capped.task_caps).any()
    result = solve(capped, "drfh")
    assert result.status == "optimal" and result.extra["strategy"] == "plain"
    uncapped = capped.with_tenants([replace(t, tasks=math.inf) for t in capped.tenants])
    assert solve(uncapped, "drfh").extra["strategy"] == "plain, interior point first"
