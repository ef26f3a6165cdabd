"""drfh-int's by-class construction (``solver.drfh.class_pack``): hand-derived optima and its invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairpack.models.check import verify_allocation
from fairpack.models.result import Allocation
from fairpack.models.tolerance import FIT_RTOL
from fairpack.models.types import Instance, ServerClass, Tenant
from fairpack.solver.api import solve
from fairpack.solver.backends import get_backend
from fairpack.solver.budget import Budget
from fairpack.solver.drfh import int_search
from fairpack.solver.drfh.class_pack import _round_rows, construct_level, pack_class, search_by_class
from fairpack.solver.drfh.int_model import DrfhIntModel
from fairpack.solver.drfh.int_search import LevelSearch

HIGHS = get_backend("highs")


def _one_resource(capacity: float, machines: int, tenants: list[tuple[float, float]]) -> Instance:
    """One resource, one class of ``machines`` machines; tenants as (demand, cap), weight 1."""
    people = tuple(Tenant(f"t{i}", np.array([d]), 1.0, cap) for i, (d, cap) in enumerate(tenants))
    return Instance(("cpu",), (ServerClass("m", np.array([capacity]), machines),), people, name="hand")


def _search(instance: Instance, top: float) -> float:
    model = DrfhIntModel.build_pairs(instance)
    start = np.zeros((len(instance.tenants), model.num_machines))
    found = search_by_class(model, HIGHS, start, top, Budget.of(30.0))
    assert verify_allocation(instance, Allocation(found.tasks, "machine", integral=True)).ok
    return found.value


def test_two_shapes_reach_the_integer_optimum_below_the_lp() -> None:
    # Two machines of 10; A needs 6 (share 0.3 a task), B needs 4 (0.2). The LP levels them at f = 0.5
    # (6 n_A + 4 n_B = 20 with 0.3 n_A = 0.2 n_B). Whole tasks: one A and one B fill a machine, and two
    # A never share one, so n_A <= 2 and f <= 0.6 for A; n_A = 2 leaves 4 + 4 for B: n_B = 2, f = 0.4.
    # f = 0.5 would need n_A = 2 and n_B = 3 (24 > 20). So the optimum is 0.4.
    instance = _one_resource(10.0, 2, [(6.0, math.inf), (4.0, math.inf)])
    assert _search(instance, 0.5) == pytest.approx(0.4)


def test_a_level_the_class_lp_allows_but_no_packing_holds_is_backed_off() -> None:
    # Two machines of 10; B (7, cap 1) and A (4, uncapped, share 0.2 a task). With B at its cap, three A
    # and one B need 19 <= 20 in total, but B's machine keeps 3 free (no A fits) and the other holds two
    # A: so n_A <= 2 and the optimum is f = 0.4 (B dropping its task would make f = 0).
    instance = _one_resource(10.0, 2, [(4.0, math.inf), (7.0, 1.0)])
    model = DrfhIntModel.build_pairs(instance)
    tasks, left, _ = construct_level(model, HIGHS, 0.6)  # n_A = 3: the split exists, the packing does not
    assert tasks is not None and left == 1
    tasks, left, _ = construct_level(model, HIGHS, 0.4)
    assert tasks is not None and left == 0 and model.max_min_value(tasks) == pytest.approx(0.4)
    assert _search(instance, 0.65) == pytest.approx(0.4)


def test_a_level_beyond_the_cluster_has_no_split() -> None:
    instance = _one_resource(10.0, 2, [(6.0, math.inf)])  # one 6 per machine: at most 2 tasks, f = 0.6
    model = DrfhIntModel.build_pairs(instance)
    tasks, left, _ = construct_level(model, HIGHS, 0.9)  # 3 tasks
    assert tasks is None and left == 3
    assert _search(instance, 1.0) == pytest.approx(0.6)


def test_classes_of_two_shapes_take_the_tasks_that_suit_them() -> None:
    # A cpu-heavy (2, 1) and a memory-heavy (1, 2) class, one machine each; tenant C needs (2, 1), M
    # needs (1, 2), both uncapped: cluster (3, 3), shares 2/3 a task each. One task each fits (C on the
    # cpu machine, M on the other) and a second of either would need 3 of its heavy resource with 1
    # left over: the optimum is f = 2/3, and only by sending each tenant to its own class.
    servers = (ServerClass("cpu", np.array([2.0, 1.0]), 1), ServerClass("mem", np.array([1.0, 2.0]), 1))
    people = (Tenant("c", np.array([2.0, 1.0]), 1.0, math.inf), Tenant("m", np.array([1.0, 2.0]), 1.0, math.inf))
    instance = Instance(("cpu", "mem"), servers, people, name="shapes")
    assert _search(instance, 1.0) == pytest.approx(2 / 3)


def test_round_rows_keeps_row_totals_within_floor_and_ceiling() -> None:
    split = np.array([[1.5, 2.5, 0.0], [0.2, 0.3, 0.5], [3.0, 0.0, 1.0]])
    rounded = _round_rows(split, split.sum(axis=1))
    assert np.array_equal(rounded.sum(axis=1), split.sum(axis=1))
    assert np.all(rounded >= np.floor(split)) and np.all(rounded <= np.ceil(split))


def test_pack_class_places_every_task_when_they_tile_the_machines() -> None:
    # Three machines of 1; tasks 0.5, 0.25 and 0.75, two of each: 3.0 in all, tiled only as 0.75 + 0.25 twice
    # and 0.5 + 0.5 (a machine that mixed 0.5 with 0.25 would strand a 0.75).
    relative = np.array([[0.5], [0.25], [0.75]])
    count = np.array([2, 2, 2])
    types, counts, ends, machines, left = pack_class(relative, count, 3, FIT_RTOL)
    assert left.sum() == 0 and machines.sum() <= 3
    starts = np.concatenate([[0], ends[:-1]])
    placed = np.zeros(3, dtype=np.int64)
    for start, end, used in zip(starts, ends, machines, strict=True):
        assert counts[start:end] @ relative[types[start:end], 0] <= 1.0 + 1e-12
        np.add.at(placed, types[start:end], counts[start:end] * used)
    assert np.array_equal(placed, count)


def _instance(data: st.DataObject) -> Instance:
    resources = data.draw(st.integers(1, 3))
    sizes = st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])
    servers = tuple(
        ServerClass(f"s{k}", np.array(data.draw(st.lists(st.sampled_from([4.0, 6.0, 8.0, 10.0]), min_size=resources,
                                                         max_size=resources))), data.draw(st.integers(1, 5)))
        for k in range(data.draw(st.integers(1, 4)))
    )  # fmt: skip
    people = tuple(
        Tenant(f"t{i}", np.array(data.draw(st.lists(sizes, min_size=resources, max_size=resources))),
               float(data.draw(st.integers(1, 4))), data.draw(st.sampled_from([math.inf, 2.0, 5.0, 12.0])))
        for i in range(data.draw(st.integers(1, 6)))
    )  # fmt: skip
    return Instance(tuple(f"r{r}" for r in range(resources)), servers, people, name="property")


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.data())
def test_construction_stays_within_machines_and_under_the_proven_bound(data: st.DataObject) -> None:
    instance = _instance(data)
    model = DrfhIntModel.build_pairs(instance)
    if not len(model.players):
        return
    top = float((model.player_step * np.minimum(model.player_caps, 50.0)).max())
    level = data.draw(st.floats(0.05, 1.0)) * top
    tasks, left, _ = construct_level(model, HIGHS, level)
    if tasks is None:
        return
    report = verify_allocation(instance, Allocation(tasks, "machine", integral=True))
    assert report.ok, report.violations  # within every machine, whole, under the caps
    f = model.max_min_value(tasks)
    if left == 0:
        assert f >= level * (1 - 1e-12)  # a level packed with nothing left over is reached
    # The top the construction is handed (the level search's LP relaxations by class, the levels they leave
    # open) never cuts below an allocation that exists.
    search = LevelSearch(model, HIGHS, Budget.of(30.0), np.zeros_like(tasks), None)
    search.bisect_relaxations()
    if math.isfinite(f):
        assert search._top() >= f * (1 - 1e-9)


def test_drfh_int_reaches_the_gap_through_the_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    # Three machines of 10; A needs 5 (share 1/6 a task), B and C need 3 (0.1). f = 0.3 takes n_B = n_C = 3
    # and n_A = 2: A + A, B + B + B and C + C + C, 28 of 30. The next level, 1/3, needs four B and four C
    # as well (34 > 30): 0.3 is the optimum. First-Fit and Best-Fit stop at 0.2; the construction,
    # inside drfh-int's search, packs 0.3.
    instance = _one_resource(10.0, 3, [(5.0, math.inf), (3.0, math.inf), (3.0, math.inf)])
    seen: list[tuple[float, float]] = []
    original = int_search.LevelSearch.lift_by_classes

    def spy(self: LevelSearch) -> None:
        before = self.value(self.best)
        original(self)
        seen.append((before, self.value(self.best)))

    monkeypatch.setattr(int_search.LevelSearch, "lift_by_classes", spy)
    result = solve(instance, "drfh-int", time_limit=30.0, gap=0.2)
    assert result.verified and result.objective == pytest.approx(0.3)
    assert seen and seen[0][0] == pytest.approx(0.2) and seen[0][1] == pytest.approx(0.3)
