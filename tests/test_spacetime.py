"""``spacetime``: the time-indexed MILP for DAG jobs (hand cases, CP-SAT agreement, horizon, backends), and
per-server placement (``--placement servers``) across the MILP, CP-SAT, the heuristics, the checker and the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from fairpack.models.check import verify_schedule
from fairpack.models.io import instance_from_dict
from fairpack.models.result import Schedule
from fairpack.models.types import Instance, InstanceError
from fairpack.models.view import schedule_from_json
from fairpack.solver.api import METHODS, solve
from fairpack.solver.backends import get_backend, installed_backends
from fairpack.solver.cli import main
from fairpack.solver.sim.policies.dag import HEURISTICS
from fairpack.solver.sim.runs import run_policy
from fairpack.solver.spacetime.milp import solve_spacetime
from fairpack.solver.spacetime.model import SlotData, build_spacetime, objective_coefficients, order_machines_by_load
from fairpack.solver.spacetime.warmstart import priority_rules, serial_sgs

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


def deadlines(result: Any, instance: Instance) -> Any:
    """The deadlines a result promised: its T_k, unless it ran with --no-fair-cap (then T_k is only reported)."""
    return None if result.extra.get("fair_cap", True) else np.full(len(instance.jobs), np.inf)


def check(result: Any, instance: Instance) -> None:
    assert result.verified, result.violations
    assert result.schedule is not None
    assert verify_schedule(instance, result.schedule, fair_completion=deadlines(result, instance)).ok


def test_barrier_by_hand() -> None:
    result = solve(BARRIER, "spacetime", objective="makespan", **NO_CAP)
    assert result.status == "optimal" and result.objective == pytest.approx(3.0)
    assert result.bound == pytest.approx(3.0) and result.gap == 0
    check(result, BARRIER)
    schedule = result.schedule
    assert schedule is not None
    b_start = schedule.start[schedule.stage == 1]
    assert b_start.min() >= schedule.end[schedule.stage == 0].max() - 1e-9


@pytest.mark.parametrize(("objective", "value", "makespan"), [("makespan", 4.0, 4.0), ("avg-jct", 7 / 3, 5.0)])
def test_release_by_hand(objective: str, value: float, makespan: float) -> None:
    result = solve(RELEASE, "spacetime", objective=objective, **NO_CAP)
    assert result.status == "optimal" and result.objective == pytest.approx(value)
    check(result, RELEASE)
    report = verify_schedule(RELEASE, result.schedule, fair_completion=deadlines(result, RELEASE))
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
    result = solve(CAPACITY, "spacetime", **NO_CAP)  # one job: makespan by default
    assert result.status == "optimal" and result.objective == pytest.approx(6.0)
    check(result, CAPACITY)
    assert result.extra["objective_name"] == "makespan"


def test_two_jobs_file_matches_the_hand_optimum_and_fair_caps_conflict() -> None:
    from fairpack.models.io import load_instance

    instance = load_instance(TWO_JOBS)
    # Optima derived in tests/test_spacetime_cp.py: makespan 4.5, weighted avg JCT 2.5.
    assert solve(instance, "spacetime", objective="makespan", **NO_CAP).objective == pytest.approx(4.5)
    assert solve(instance, "spacetime", **NO_CAP).objective == pytest.approx(2.5)
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
    off = solve(RELEASE, "spacetime", objective="avg-jct", fair_cap=False, extra={"fair_completion": {"j1": 4.0}})
    assert off.objective == pytest.approx(7 / 3) and off.schedule is not None and off.schedule.fair_completion is None


def test_servers_placement_keeps_tasks_on_classes_that_fit() -> None:
    # Two one-CPU machines and one two-CPU machine; tasks needing two CPUs fit only the big one, so the
    # two of them run one after another (makespan 2), whereas the pooled cluster (4 CPUs) runs both at once.
    servers = [{"name": "big", "capacity": {"cpu": 2}}, {"name": "small", "capacity": {"cpu": 1}, "count": 2}]
    instance = jobs_instance({"cpu": 1}, [{"name": "j", "stages": [stage("s", 2, 1, {"cpu": 2})]}], servers=servers)
    pooled = solve(instance, "spacetime", **NO_CAP)
    servers_result = solve(instance, "spacetime", placement="servers", **NO_CAP)
    assert pooled.objective == pytest.approx(1.0) and servers_result.objective == pytest.approx(2.0)
    assert servers_result.verified and servers_result.status == "optimal"
    schedule = servers_result.schedule
    assert schedule is not None and schedule.server is not None and schedule.machine is not None
    assert schedule.server.tolist() == [0, 0] and schedule.machine.tolist() == [0, 0]  # both on "big"
    # The class-aggregated time-table puts both tasks on "big" one after another: first fit places it.
    assert servers_result.extra["machine_assignment"] == "first fit"


def test_fractional_durations_round_up_to_slots() -> None:
    # Duration 1.5 on slots of 1 occupies 2 slots: feasible, but optimal only for the slotted problem.
    instance = jobs_instance({"cpu": 1}, [{"name": "j", "stages": [stage("s", 2, 1.5, {"cpu": 1})]}])
    result = solve(instance, "spacetime", **NO_CAP)
    assert result.status == "feasible" and result.bound is None and result.extra["slotted_bound"] == pytest.approx(4)
    check(result, instance)
    assert result.objective == pytest.approx(3.5)  # starts 0 and 2, true end 3.5


@pytest.mark.parametrize("backend", ["highs", "cbc"])
def test_backends_agree_on_the_barrier_case(backend: str) -> None:
    if backend not in installed_backends():
        pytest.skip(f"{backend} not installed")
    result = solve(BARRIER, "spacetime", backend=backend, objective="makespan", **NO_CAP)
    assert result.status == "optimal" and result.objective == pytest.approx(3.0) and result.verified
    assert result.backend == backend


def list_schedule(data: SlotData) -> tuple[np.ndarray, np.ndarray]:
    """The critical-path list schedule: start slots and the unit of every task."""
    priority = priority_rules(data.stage_job, data.tail, data.release, data.weight)["critical-path"]
    found = serial_sgs(data.stage_job, data.tasks, data.duration, data.demand, data.release, data.edges, priority,
                       data.machine_capacity, data.fits[:, data.machine_unit])  # fmt: skip
    assert found is not None
    return found[0], data.machine_unit[found[1]]


def random_instance(seed: int, servers: list[dict[str, Any]] | None = None, cpu: int = 2) -> Instance:
    """2-3 small random jobs (1-3 stages of 1-3 tasks, ``1 .. cpu`` CPUs and 0-2 mem each) on a pool
    of (3 cpu, 4 mem), or on ``servers``."""
    rng = np.random.default_rng(seed)
    jobs = []
    for k in range(int(rng.integers(2, 4))):
        stages = []
        for s in range(int(rng.integers(1, 4))):
            parents = [f"s{p}" for p in range(s) if rng.random() < 0.6]
            demand = {"cpu": int(rng.integers(1, cpu + 1)), "mem": int(rng.integers(0, 3))}
            stages.append(stage(f"s{s}", int(rng.integers(1, 4)), int(rng.integers(1, 4)), demand, parents))
        jobs.append({"name": f"j{k}", "weight": int(rng.integers(1, 3)), "release": int(rng.integers(0, 3)),
                     "stages": stages})  # fmt: skip
    return jobs_instance({"cpu": 3, "mem": 4}, jobs, **({"servers": servers} if servers else {}))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("objective", ["makespan", "avg-jct", "mix"])
def test_milp_and_cp_sat_agree(seed: int, objective: str) -> None:
    if "spacetime-cp" not in METHODS:
        pytest.skip("spacetime-cp is not registered")
    pytest.importorskip("ortools")
    instance = random_instance(seed)
    mix = {"alpha": 0.3} if objective == "mix" else {}  # alpha weighs only the mix objective
    milp = solve(instance, "spacetime", objective=objective, time_limit=30, **mix, **NO_CAP)
    cp = solve(instance, "spacetime-cp", objective=objective, time_limit=30, **mix, **NO_CAP)
    assert milp.status == "optimal" and cp.status == "optimal"
    assert milp.verified and cp.verified
    assert milp.objective <= cp.objective * (1 + 1e-6)  # both verified, the MILP proven optimal
    # Seed 2 once caught spacetime-cp bounding its horizon by the sum of *stage* durations (the optimum
    # ends at 15 > 13); both now agree.
    assert milp.objective == pytest.approx(cp.objective, rel=1e-6)
    assert milp.bound == pytest.approx(milp.objective, rel=1e-6)


def test_warm_start_is_a_feasible_point_of_the_model() -> None:
    instance = random_instance(7)
    data = SlotData.of(instance)
    found = list_schedule(data)
    model = build_spacetime(data, "avg-jct", 0.5, np.full(data.num_jobs, data.sum_horizon()))
    vector = model.start_vector(*found)
    assert model.lp.max_violation(vector) <= 1e-9
    starts, _ = model.task_starts(vector)
    assert np.array_equal(np.sort(starts), np.sort(found[0]))
    a, b = objective_coefficients(data.weight, "avg-jct")
    assert b == 0 and a.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("method", ["spacetime", "spacetime-cp"])
def test_cli_no_fair_cap(method: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``--no-fair-cap`` drops C_k <= T_k for both exact methods; T_k is still reported, and checked as a report.

    With the caps (T_long 4.5, T_short 2.5, the drf-strict schedule) the avg-JCT optimum is 17/6; without them
    it is 2.5, finishing ``long`` at 5.5, after its T_k (test_two_jobs_by_hand derives both).
    """
    saved = tmp_path / "r.json"
    code = main(["solve", str(TWO_JOBS), "--method", method, "--no-fair-cap", "--json", "-o", str(saved)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["status"] == "optimal" and data["verified"] is True and data["fair_cap"] is False
    assert data["objective"] == pytest.approx(2.5) and data["avg_jct"] == pytest.approx(2.5)
    assert len(data["tasks"]) == 4
    long = {key: data["jobs"]["long"][key] for key in ("completion", "fair_completion", "deadline", "utility")}
    assert long == {"completion": 5.5, "fair_completion": 4.5, "deadline": None, "utility": -5.5}
    assert data["jobs"]["short"]["fair_completion"] == 2.5
    # --no-fair-cap loosens the rules: check applies it only when given it too (T_k is then reported, not a
    # deadline); without it the caps apply, and the violation says which recorded option would excuse it.
    assert main(["check", str(TWO_JOBS), str(saved), "--no-fair-cap"]) == 0
    capsys.readouterr()
    assert main(["check", str(TWO_JOBS), str(saved)]) == 1
    out = capsys.readouterr().out
    assert "after its fair completion time" in out and "records --no-fair-cap" in out
    # Claiming the caps were on turns the same schedule into a broken promise.
    data = {**json.loads(saved.read_text()), "fair_cap": True, "options": {}}
    saved.write_text(json.dumps(data))
    assert main(["check", str(TWO_JOBS), str(saved)]) == 1
    assert "after its fair completion time" in capsys.readouterr().out


# --- Per-server placement (--placement servers): exact methods, heuristics, checker, CLI -----------------

#: The exact methods per machine: the MILP (relaxation first, then per machine if needed), the MILP per
#: machine from the start, and CP-SAT.
EXACT: list[tuple[str, dict[str, Any]]] = [
    ("spacetime", {**NO_CAP}),
    ("spacetime", {**NO_CAP, "extra": {"servers_model": "machine"}}),
    ("spacetime-cp", {**NO_CAP}),
]
TWO_NODES = [{"name": "node", "capacity": {"cpu": 4}, "count": 2}]


def cluster(jobs: list[dict[str, Any]], servers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An instance file's data: ``jobs`` on ``servers`` (default two 4-CPU machines of one class)."""
    servers = servers or TWO_NODES
    resources = sorted({r for server in servers for r in server["capacity"]})
    return {"resources": resources, "servers": servers, "jobs": jobs}


# Two machines of 4 CPUs (one class, count 2); one job with two independent stages: "a", two 3-CPU tasks,
# and "b", one 2-CPU task, all of length 1. Pooled (8 CPUs) all three run at once: 3 + 3 + 2 = 8, makespan 1.
# Per machine, a machine holding a 3-CPU task has 1 CPU left, so no two tasks ever share a machine
# (3 + 3 > 4, 3 + 2 > 4): three tasks on two machines take two rounds, makespan 2. The class-aggregated
# relaxation (capacity 2 x 4 = 8) still says 1, and its time-table cannot be placed on the machines.
SPLIT_JOBS = [{"name": "j", "stages": [stage("a", 2, 1, {"cpu": 3}), stage("b", 1, 1, {"cpu": 2})]}]
SPLIT = instance_from_dict(cluster(SPLIT_JOBS), name="split")

# Same machines, two jobs: "big" two 3-CPU tasks of length 2, "small" one 2-CPU task of length 1.
# Pooled: everything at 0, C = (2, 1): avg JCT 1.5, makespan 2. Per machine again one task per machine at a
# time; work 2 + 2 + 1 = 5 machine-units on 2 machines, so the makespan is >= 2.5, i.e. 3 on whole units
# (big on both machines [0, 2], small [2, 3]). Avg JCT: small first on one machine [0, 1], big on the other
# [0, 2] and after small [1, 3]: C = (3, 1), avg 2; big first: C = (2, 3), avg 2.5; small cannot finish
# before 1 and big cannot finish before 2, and (2, 1) needs three machines, so 2 is optimal.
TWO_JOBS_SPLIT = instance_from_dict(cluster([
    {"name": "big", "stages": [stage("s", 2, 2, {"cpu": 3})]},
    {"name": "small", "stages": [stage("s", 1, 1, {"cpu": 2})]},
]), name="two-jobs")  # fmt: skip


#: Three machines in two classes, two of (4 cpu, 2 mem) and one of (3 cpu, 4 mem).
SERVERS = [{"name": "a", "capacity": {"cpu": 4, "mem": 2}, "count": 2}, {"name": "b", "capacity": {"cpu": 3, "mem": 4}}]


def placed(result: Any) -> Schedule:
    schedule = result.schedule
    assert schedule is not None and schedule.server is not None and schedule.machine is not None
    assert result.verified, result.violations
    return schedule


@pytest.mark.parametrize(("method", "extra"), EXACT)
def test_pooled_and_per_machine_optima_differ_by_hand(method: str, extra: dict[str, Any]) -> None:
    # servers_model chooses the per-machine model: it is refused on the pooled cluster.
    pooled_extra = {key: value for key, value in extra.items() if key != "extra"}
    pooled = solve(SPLIT, method, objective="makespan", **pooled_extra)
    assert pooled.status == "optimal" and pooled.objective == pytest.approx(1.0) and pooled.schedule is not None
    assert pooled.schedule.server is None and pooled.extra["placement"] == "pooled"
    servers = solve(SPLIT, method, objective="makespan", placement="servers", **extra)
    assert servers.status == "optimal" and servers.objective == pytest.approx(2.0) and servers.gap == 0
    schedule = placed(servers)
    assert set(schedule.machine.tolist()) == {0, 1} and set(schedule.server.tolist()) == {0}
    for objective, pooled_value, value in (("makespan", 2.0, 3.0), ("avg-jct", 1.5, 2.0)):
        pooled_value_found = solve(TWO_JOBS_SPLIT, method, objective=objective, **pooled_extra).objective
        assert pooled_value_found == pytest.approx(pooled_value)
        result = solve(TWO_JOBS_SPLIT, method, objective=objective, placement="servers", **extra)
        assert result.status == "optimal" and result.objective == pytest.approx(value)
        placed(result)


def test_the_class_relaxation_is_never_called_optimal_when_it_does_not_fit() -> None:
    auto = solve(SPLIT, "spacetime", objective="makespan", placement="servers", **NO_CAP)
    assert auto.extra["machine_assignment"] == "no placement exists" and "per-machine MILP" in auto.message
    assert set(auto.extra["models"]) == {"class", "machine"}
    relaxed = solve(SPLIT, "spacetime", objective="makespan", placement="servers",
                    extra={"servers_model": "class"}, **NO_CAP)  # fmt: skip
    # The relaxation's optimum (1) is a valid bound; the schedule is a per-machine heuristic one.
    assert relaxed.status == "feasible" and relaxed.bound == pytest.approx(1.0)
    assert relaxed.objective == pytest.approx(2.0) and relaxed.gap == pytest.approx(0.5)
    assert "does not fit the machines" in relaxed.message
    placed(relaxed)


@pytest.mark.parametrize("seed", [4, 9, 14, 17, 20])
@pytest.mark.parametrize("objective", ["makespan", "avg-jct"])
def test_milp_and_cp_sat_agree_per_machine(seed: int, objective: str) -> None:
    # Seeds measured to cover every path of the MILP: first fit places the relaxation (20), the exact
    # assignment does (4, 17), or no placement exists and the per-machine MILP runs (9, 14); on 9, 14 and
    # 20 per-machine packing is strictly worse than pooled for avg JCT.
    instance = random_instance(seed, SERVERS, cpu=3)
    values = []
    for method, extra in EXACT:
        result = solve(instance, method, objective=objective, placement="servers", time_limit=30, **extra)
        assert result.status == "optimal", (method, extra, result.message)
        placed(result)
        values.append(result.objective)
    assert values == pytest.approx([values[-1]] * len(values), rel=1e-6)
    pooled = solve(instance, "spacetime-cp", objective=objective, time_limit=30, **NO_CAP)
    assert pooled.objective <= values[-1] + 1e-9


def test_per_machine_warm_start_satisfies_the_symmetry_rows() -> None:
    instance = random_instance(9, SERVERS, cpu=3)
    data = SlotData.of(instance, "servers", per_machine=True)
    priority = priority_rules(data.stage_job, data.tail, data.release, data.weight)["critical-path"]
    found = serial_sgs(data.stage_job, data.tasks, data.duration, data.demand, data.release, data.edges, priority,
                       data.machine_capacity, data.fits[:, data.machine_unit])  # fmt: skip
    assert found is not None
    model = build_spacetime(data, "avg-jct", 0.5, np.full(data.num_jobs, data.sum_horizon()))
    assert "symmetry" in model.lp.rows
    machine = order_machines_by_load(data, found[1])
    assert model.lp.max_violation(model.start_vector(found[0], data.machine_unit[machine])) <= 1e-9


def test_checker_verifies_every_machine() -> None:
    pooled = solve(SPLIT, "spacetime-cp", objective="makespan").schedule
    assert pooled is not None and verify_schedule(SPLIT, pooled).ok
    # The pooled optimum runs all three tasks at once; put the two 3-CPU tasks on machine 0: 6 CPUs on a
    # 4-CPU machine while the pool (8) is fine.
    crowded = replace(pooled, server=np.zeros(3, dtype=np.int64), machine=np.array([0, 0, 1]))
    report = verify_schedule(SPLIT, crowded)
    assert not report.ok and report.peak_usage.tolist() == [8.0]
    assert report.violations == ["machine node[0]: resource cpu: 6 in use at time 0 exceeds its capacity 4"]
    # A pooled schedule claimed as per-server is missing its placement.
    missing = verify_schedule(SPLIT, pooled, require_placement=True).violations
    assert missing == ["the schedule has no per-server placement (placement 'servers' needs a machine per task)"]
    # Machines that do not exist, unplaced tasks and tasks bigger than their machine.
    later = replace(pooled, start=np.array([0.0, 1.0, 2.0]), end=np.array([1.0, 2.0, 3.0]))
    bad = replace(later, server=np.array([0, 0, -1]), machine=np.array([2, 0, -1]))
    problems = verify_schedule(SPLIT, bad).violations
    assert any("machine 2, which does not exist" in p for p in problems)
    assert any("stage b task 0 is not placed on a machine" in p for p in problems)
    mixed = instance_from_dict(cluster(SPLIT_JOBS, [{"name": "wide", "capacity": {"cpu": 4}},
                                                    {"name": "thin", "capacity": {"cpu": 2}}]))  # fmt: skip
    thin = replace(later, server=np.array([1, 0, 0]), machine=np.zeros(3, dtype=np.int64))
    assert any("does not fit machine thin" in p for p in verify_schedule(mixed, thin).violations)


def test_a_task_that_fits_no_machine_is_refused_naming_the_stage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 5 CPUs fit the pool (8) but neither 4-CPU machine.
    data = cluster([{"name": "j", "stages": [stage("ok", 1, 1, {"cpu": 1}), stage("wide", 1, 1, {"cpu": 5})]}])
    instance = instance_from_dict(data)
    for method in ("spacetime", "spacetime-cp", *HEURISTICS):
        assert solve(instance, method, **(NO_CAP if method == "spacetime" else {})).verified
        with pytest.raises(InstanceError, match=r"jobs\[0\]\.stages\[1\]\.demand.*'wide'.*any one machine"):
            solve(instance, method, placement="servers", **(NO_CAP if method == "spacetime" else {}))
    path = tmp_path / "wide.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["solve", str(path), "--method", "spacetime-cp", "--placement", "servers", "--json"]) == 2
    assert "jobs[0].stages[1].demand" in capsys.readouterr().err


@pytest.mark.parametrize("seed", range(6))
def test_heuristics_place_every_task_on_a_machine(seed: int) -> None:
    instance = random_instance(seed, SERVERS, cpu=3)
    for name in HEURISTICS:
        pooled, _ = run_policy(instance, name)
        schedule, _ = run_policy(instance, name, placement="servers")
        assert schedule.server is not None and pooled.server is None
        report = verify_schedule(instance, schedule, require_placement=True)
        assert report.ok, (name, report.violations[:3])
    for name in HEURISTICS:  # the hand case: one task per machine at a time, two rounds
        assert verify_schedule(SPLIT, run_policy(SPLIT, name, placement="servers")[0]).makespan == 2.0


def test_cli_round_trip_with_machines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "split.yaml"
    path.write_text(yaml.safe_dump(cluster(SPLIT_JOBS)))
    saved = tmp_path / "result.json"
    code = main(["solve", str(path), "--method", "spacetime", "--placement", "servers", "--no-fair-cap",
                 "--objective", "makespan", "--json", "-o", str(saved)])  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["status"] == "optimal" and data["placement"] == "servers" and data["makespan"] == 2
    assert all(task["server"] == "node" and task["machine"] in (0, 1) for task in data["tasks"])
    options = ["--placement", "servers", "--no-fair-cap", "--objective", "makespan"]  # as given to solve
    assert main(["check", str(path), str(saved), "--json", *options]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is True
    instance = instance_from_dict(cluster(SPLIT_JOBS))
    assert schedule_from_json(instance, data).machine is not None

    # Both 3-CPU tasks on one machine at the same time: that machine is overloaded (the pool is not).
    for task in data["tasks"]:
        task["start"], task["end"], task["machine"] = 0.0, 1.0, 0 if task["stage"] == "a" else 1
    data["makespan"] = data["objective"] = data["avg_jct"] = data["jobs"]["j"]["completion"] = 1.0
    saved.write_text(json.dumps(data))
    assert main(["check", str(path), str(saved), "--json", *options]) == 1
    problems = json.loads(capsys.readouterr().out)["violations"]
    assert problems[0] == "machine node[0]: resource cpu: 6 in use at time 0 exceeds its capacity 4"
    # The file's other claims no longer hold either: its bound (the true optimum, 2) and its "verified".
    assert any("bound 2 is above the objective 1" in p for p in problems)
    assert any("says verified True" in p for p in problems)
    # A result that claims per-server placement must carry it.
    for task in data["tasks"]:
        del task["server"], task["machine"]
    saved.write_text(json.dumps(data))
    assert main(["check", str(path), str(saved), "--json", *options]) == 1
    assert any("no per-server placement" in p for p in json.loads(capsys.readouterr().out)["violations"])
    data["tasks"][0]["server"] = "nowhere"
    saved.write_text(json.dumps(data))
    assert main(["check", str(path), str(saved), *options]) == 2
    assert "tasks[0].server: unknown server 'nowhere'" in capsys.readouterr().err
