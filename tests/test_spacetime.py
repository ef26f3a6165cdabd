"""``spacetime``: the time-indexed MILP for DAG jobs (hand cases, CP-SAT agreement, horizon, backends)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from models.check import verify_schedule
from models.io import instance_from_dict
from models.spacetime import SlotData, build_spacetime, objective_coefficients
from models.types import Instance
from solver.api import METHODS, solve
from solver.backends import get_backend, installed_backends
from solver.cli import main
from solver.spacetime import solve_spacetime

TWO_JOBS = Path(__file__).resolve().parents[1] / "instances" / "dag_two_jobs.yaml"
NO_CAP = {"fair_cap": False}


def jobs_instance(capacity: dict[str, float], jobs: list[dict[str, Any]], slot: float = 1.0, **extra: Any) -> Instance:
    servers = extra.pop("servers", [{"name": "node", "capacity": capacity}])
    data = {"resources": list(capacity), "servers": servers, "jobs": jobs, "time": {"slot": slot}}
    return instance_from_dict(data, name="hand")


def stage(name: str, tasks: int, duration: float, demand: dict[str, float], after: list[str] | None = None) -> Any:
    row: dict[str, Any] = {"name": name, "tasks": tasks, "duration": duration, "demand": demand}
    if after:
        row["after"] = after
    return row


# Barrier: 2 CPUs; stage A has 3 one-CPU tasks of length 1, stage B one task after A. A needs 3 CPU-slots
# on 2 CPUs, so its last task ends at 2 at the earliest; B starts after *all* of A: makespan 3. (Were B
# allowed to follow any single A task it could run at 1-2 beside A's third task, makespan 2.)
BARRIER = jobs_instance({"cpu": 2}, [{"name": "j", "stages": [
    stage("A", 3, 1, {"cpu": 1}), stage("B", 1, 1, {"cpu": 1}, ["A"])]}])  # fmt: skip

# Release: 1 CPU; j1 (weight 1, release 0) one task of 3; j2 (weight 2, release 1) one task of 1.
# j1 first: C = (3, 4), JCTs (3, 3), weighted avg (3 + 6)/3 = 3, makespan 4 (the makespan optimum).
# j2 first at 1-2 (it cannot start before its release), j1 cannot fit in 0-1, so it runs 2-5:
# JCTs (5, 1), weighted avg (5 + 2)/3 = 7/3 (the avg-JCT optimum), makespan 5.
RELEASE = jobs_instance({"cpu": 1}, [
    {"name": "j1", "weight": 1, "release": 0, "stages": [stage("s", 1, 3, {"cpu": 1})]},
    {"name": "j2", "weight": 2, "release": 1, "stages": [stage("s", 1, 1, {"cpu": 1})]},
])  # fmt: skip

# Capacity: cpu 4, mem 7; 5 tasks of length 2 needing (1 cpu, 3 mem): memory fits 2 at a time, so
# 3 waves: makespan 6 (CPU alone would allow 4 at a time, makespan 4).
CAPACITY = jobs_instance({"cpu": 4, "mem": 7}, [{"name": "j", "stages": [stage("s", 5, 2, {"cpu": 1, "mem": 3})]}])


def check(result: Any, instance: Instance) -> None:
    assert result.verified, result.violations
    assert result.schedule is not None
    assert verify_schedule(instance, result.schedule).ok


def test_barrier_by_hand() -> None:
    result = solve(BARRIER, "spacetime", objective="makespan", extra=NO_CAP)
    assert result.status == "optimal" and result.objective == pytest.approx(3.0)
    assert result.bound == pytest.approx(3.0) and result.gap == 0
    check(result, BARRIER)
    schedule = result.schedule
    assert schedule is not None
    b_start = schedule.start[schedule.stage == 1]
    assert b_start.min() >= schedule.end[schedule.stage == 0].max() - 1e-9


@pytest.mark.parametrize(("objective", "value", "makespan"), [("makespan", 4.0, 4.0), ("avg-jct", 7 / 3, 5.0)])
def test_release_by_hand(objective: str, value: float, makespan: float) -> None:
    result = solve(RELEASE, "spacetime", objective=objective, extra=NO_CAP)
    assert result.status == "optimal" and result.objective == pytest.approx(value)
    check(result, RELEASE)
    report = verify_schedule(RELEASE, result.schedule)
    assert report.makespan == pytest.approx(makespan)
    assert result.schedule is not None and result.schedule.start[result.schedule.job == 1].min() >= 1


def test_horizon_keeps_the_avg_jct_optimum_beyond_the_heuristic_makespan() -> None:
    # The critical-path list schedule runs j1 first (makespan 4); the avg-JCT optimum ends at 5. The
    # horizon comes from the heuristic's objective value, so it must still reach 5, and solving over the
    # always-valid horizon (last release + every task's duration) gives the same optimum.
    result = solve_spacetime(RELEASE, objective="avg-jct", fair_cap=False)
    assert result.extra["horizon"] >= 5
    data = SlotData.of(RELEASE)
    wide = build_spacetime(data, "avg-jct", 0.5, np.full(data.num_jobs, data.sum_horizon()))
    outcome = get_backend("highs").solve(wide.lp)
    assert outcome.status == "optimal" and outcome.objective == pytest.approx(result.solver_objective)


def test_capacity_by_hand() -> None:
    result = solve(CAPACITY, "spacetime", extra=NO_CAP)  # one job: makespan by default
    assert result.status == "optimal" and result.objective == pytest.approx(6.0)
    check(result, CAPACITY)
    assert result.extra["objective_name"] == "makespan"


def test_two_jobs_file_matches_the_hand_optimum_and_fair_caps_conflict() -> None:
    from models.io import load_instance

    instance = load_instance(TWO_JOBS)
    # Optima derived in tests/test_spacetime_cp.py: makespan 4.5, weighted avg JCT 2.5.
    assert solve(instance, "spacetime", objective="makespan", extra=NO_CAP).objective == pytest.approx(4.5)
    assert solve(instance, "spacetime", extra=NO_CAP).objective == pytest.approx(2.5)
    # Caps T = (4, 2.5): "short" must run its two tasks in [0.5, 2.5] beside "load" (one CPU free), so
    # the second ends at 2.5 and "join" (both CPUs) cannot start before 2.5: "long" ends at 4.5 > 4.
    capped = solve_spacetime(instance, fair_completion={"long": 4.0, "short": 2.5})
    assert capped.status == "infeasible" and "--no-fair-cap" in capped.message


def test_fair_cap_is_respected() -> None:
    # Without caps the avg-JCT optimum finishes j1 at 5; capping j1 at 4 forces j1 first (avg JCT 3).
    result = solve(RELEASE, "spacetime", objective="avg-jct", extra={"fair_completion": {"j1": 4.0}})
    assert result.status == "optimal" and result.objective == pytest.approx(3.0)
    check(result, RELEASE)
    assert result.schedule is not None and result.schedule.fair_completion is not None
    assert verify_schedule(RELEASE, result.schedule).completion[0] <= 4.0
    off = solve(RELEASE, "spacetime", objective="avg-jct", extra={"fair_completion": {"j1": 4.0}, "fair_cap": False})
    assert off.objective == pytest.approx(7 / 3) and off.schedule is not None and off.schedule.fair_completion is None


def test_servers_placement_keeps_tasks_on_classes_that_fit() -> None:
    # Two one-CPU machines and one two-CPU machine; tasks needing two CPUs fit only the big one, so the
    # two of them run one after another (makespan 2), whereas the pooled cluster (4 CPUs) runs both at once.
    servers = [{"name": "big", "capacity": {"cpu": 2}}, {"name": "small", "capacity": {"cpu": 1}, "count": 2}]
    instance = jobs_instance({"cpu": 1}, [{"name": "j", "stages": [stage("s", 2, 1, {"cpu": 2})]}], servers=servers)
    pooled = solve(instance, "spacetime", extra=NO_CAP)
    servers_result = solve(instance, "spacetime", placement="servers", extra=NO_CAP)
    assert pooled.objective == pytest.approx(1.0) and servers_result.objective == pytest.approx(2.0)
    assert servers_result.verified and servers_result.extra["task_class"] == ["big", "big"]


def test_fractional_durations_round_up_to_slots() -> None:
    # Duration 1.5 on slots of 1 occupies 2 slots: feasible, but optimal only for the slotted problem.
    instance = jobs_instance({"cpu": 1}, [{"name": "j", "stages": [stage("s", 2, 1.5, {"cpu": 1})]}])
    result = solve(instance, "spacetime", extra=NO_CAP)
    assert result.status == "feasible" and result.bound is None and result.extra["slotted_bound"] == pytest.approx(4)
    check(result, instance)
    assert result.objective == pytest.approx(3.5)  # starts 0 and 2, true end 3.5


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_backends_agree_on_the_barrier_case(backend: str) -> None:
    if backend not in installed_backends():
        pytest.skip(f"{backend} not installed")
    result = solve(BARRIER, "spacetime", backend=backend, objective="makespan", extra=NO_CAP)
    assert result.status == "optimal" and result.objective == pytest.approx(3.0) and result.verified
    assert result.backend == backend


def random_instance(seed: int) -> Instance:
    rng = np.random.default_rng(seed)
    jobs = []
    for k in range(int(rng.integers(2, 4))):
        stages = []
        for s in range(int(rng.integers(1, 4))):
            parents = [f"s{p}" for p in range(s) if rng.random() < 0.6]
            demand = {"cpu": int(rng.integers(1, 3)), "mem": int(rng.integers(0, 3))}
            stages.append(stage(f"s{s}", int(rng.integers(1, 4)), int(rng.integers(1, 4)), demand, parents))
        jobs.append({"name": f"j{k}", "weight": int(rng.integers(1, 3)), "release": int(rng.integers(0, 3)),
                     "stages": stages})  # fmt: skip
    return jobs_instance({"cpu": 3, "mem": 4}, jobs)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("objective", ["makespan", "avg-jct", "mix"])
def test_milp_and_cp_sat_agree(seed: int, objective: str) -> None:
    if "spacetime-cp" not in METHODS:
        pytest.skip("spacetime-cp is not registered")
    pytest.importorskip("ortools")
    instance = random_instance(seed)
    milp = solve(instance, "spacetime", objective=objective, time_limit=30, extra={**NO_CAP, "alpha": 0.3})
    cp = solve(instance, "spacetime-cp", objective=objective, time_limit=30, extra={"alpha": 0.3})
    assert milp.status == "optimal" and cp.status == "optimal"
    assert milp.verified and cp.verified
    assert milp.objective <= cp.objective * (1 + 1e-6)  # both verified, the MILP proven optimal
    # Seed 2 once caught spacetime-cp bounding its horizon by the sum of *stage* durations (the optimum
    # ends at 15 > 13); both now agree.
    assert milp.objective == pytest.approx(cp.objective, rel=1e-6)
    assert milp.bound == pytest.approx(milp.objective, rel=1e-6)


def test_warm_start_is_a_feasible_point_of_the_model() -> None:
    from solver.spacetime import _rules, list_schedule

    instance = random_instance(7)
    data = SlotData.of(instance)
    found = list_schedule(data, _rules(data)["critical-path"])
    assert found is not None
    model = build_spacetime(data, "avg-jct", 0.5, np.full(data.num_jobs, data.sum_horizon()))
    vector = model.start_vector(*found)
    assert model.lp.max_violation(vector) <= 1e-9
    starts, _ = model.task_starts(vector)
    assert np.array_equal(np.sort(starts), np.sort(found[0]))
    a, b = objective_coefficients(data.weight, "avg-jct")
    assert b == 0 and a.sum() == pytest.approx(1.0)


def test_cli_no_fair_cap(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["solve", str(TWO_JOBS), "--method", "spacetime", "--no-fair-cap", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["status"] == "optimal" and data["verified"] is True
    assert data["objective"] == pytest.approx(2.5) and data["avg_jct"] == pytest.approx(2.5)
    assert len(data["tasks"]) == 4 and data["jobs"]["long"]["fair_completion"] is None
