"""Placement options with their own demand in the simulator: every online policy that places by option, the
DAG heuristics, the drf-strict fair-share schedule behind ``T_k`` (so the exact methods' fair caps), and
``fairpack check`` -- on hand-derived schedules, through the command line and in-process, and a property test
that no policy ever overloads a machine under option demands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairpack.models.io import instance_from_dict, instance_to_yaml
from fairpack.models.result import job_completion, task_demand
from fairpack.models.types import Instance, InstanceError
from fairpack.solver.api import simulate, solve
from fairpack.solver.registry import policies
from tests.check_cases import cli

ROOT = Path(__file__).resolve().parents[1]

#: The example of the feature: one GPU machine {cpu 4, gpu 1} and one plain machine {cpu 4}.
SERVERS = [
    {"name": "g", "capacity": {"cpu": 4, "gpu": 1}, "labels": {"gpu": "true"}},
    {"name": "p", "capacity": {"cpu": 4}},
]
#: 1 GPU + 1 CPU for 2 on a GPU machine, or 4 CPUs for 5 anywhere.
STRATEGIES = [{"on": {"gpu": "true"}, "duration": 2, "demand": {"gpu": 1, "cpu": 1}},
              {"duration": 5, "demand": {"cpu": 4}}]  # fmt: skip


def gpu_instance(jobs: list[dict[str, Any]], servers: list[dict[str, Any]] | None = None) -> Instance:
    return instance_from_dict({"resources": ["cpu", "gpu"], "servers": servers or SERVERS, "jobs": jobs},
                              name="gpus")  # fmt: skip


def one_stage(name: str, tasks: int = 1, options: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"name": name, "stages": [{"name": "s", "tasks": tasks, "demand": {"cpu": 1},
                                      "options": options or STRATEGIES}]}  # fmt: skip


TWO = gpu_instance([one_stage("a"), one_stage("b")])

#: Rows (job, start, end, server, option) by hand, per policy that accepts placement options.
#:
#: * Task-by-task placement (the DAG heuristics, ``oblivious``, ``jockey``: no deadlines, so all best effort):
#:   job a comes first (every ranking ties; the lower job wins). A task lands under the first option whose own
#:   demand fits the machine now: the GPU option on g (leaving 3 of 8 CPUs and 0 of 1 GPU: best-fit score
#:   3/8), the 4-CPU option on p (leaving nothing: score 0). Best fit takes p: a runs 4 CPUs for 5. Then b
#:   lands on g, the only machine with room, under the GPU option: 2. (drf-strict: a is idle, so it may take a
#:   task beyond its half share; so may b.)
#: * ``hard-only``: the first option only, so both wait for the one GPU in turn: a 0-2, b 2-4.
#: * ``tetrisched``: plans both jobs exactly (plan-ahead): waiting 2 for the GPU beats 5 on CPUs, so a 0-2, b
#:   2-4 on g, the exact optimum below.
#: * ``alsched``: no plan-ahead, only what starts now: a on the GPU (2) and b on the CPUs (5) -- 2 + 5 either
#:   way round, the first job gets the fast one.
UNAWARE = [("a", 0, 5, "p", 1), ("b", 0, 2, "g", 0)]
IN_TURN = [("a", 0, 2, "g", 0), ("b", 2, 4, "g", 0)]
EXPECTED = {"carbyne": UNAWARE, "drf-dag": UNAWARE, "drf-strict": UNAWARE, "tetris": UNAWARE, "sjf": UNAWARE,
            "oblivious": UNAWARE, "jockey": UNAWARE, "hard-only": IN_TURN, "tetrisched": IN_TURN,
            "alsched": [("a", 0, 2, "g", 0), ("b", 0, 5, "p", 1)]}  # fmt: skip
#: Fast, reproducible settings of the planning policies (one CP-SAT worker, a work limit per cycle).
SETTINGS: dict[str, dict[str, Any]] = {"tetrisched": {"cycle_limit": 2, "deterministic": True},
                                       "alsched": {"cycle_limit": 2, "deterministic": True}}  # fmt: skip


def rows(result: Any) -> list[tuple[str, float, float, str, int]]:
    """The schedule's tasks as (job, start, end, server, option), in job order."""
    s = result.schedule
    names = [job.name for job in TWO.jobs]
    servers = [server["name"] for server in SERVERS]
    return sorted((names[int(k)], float(b), float(e), servers[int(m)], int(o))
                  for k, b, e, m, o in zip(s.job, s.start, s.end, s.server, s.option, strict=True))  # fmt: skip


def runs(schedule: Any) -> list[tuple[float, float, int]]:
    """The schedule's tasks as (start, end, option), sorted."""
    return sorted(zip(schedule.start.tolist(), schedule.end.tolist(), schedule.option.tolist(), strict=True))


def overloads(instance: Instance, schedule: Any) -> list[str]:
    """Every (machine, resource, time) where the tasks running exceed the machine's capacity: the schedule's
    own per-option demands summed at every task start, independently of ``models.check``."""
    demand = task_demand(instance, schedule)
    found = []
    machines = {(int(c), int(m)) for c, m in zip(schedule.server, schedule.machine, strict=True)}
    for c, m in sorted(machines):
        on = np.flatnonzero((schedule.server == c) & (schedule.machine == m))
        for i in on.tolist():
            t = schedule.start[i]
            running = on[(schedule.start[on] <= t) & (schedule.end[on] > t)]
            used = demand[running].sum(axis=0)
            for r in np.flatnonzero(used > instance.servers[c].capacity + 1e-9).tolist():
                found.append(f"{instance.servers[c].name}#{m} {instance.resources[r]} {used[r]} at {t}")
    return found


def test_every_policy_that_accepts_options_is_derived_here() -> None:
    accepting = {name for name, record in policies().items() if record.placement_options != "none"}
    assert accepting == set(EXPECTED)


@pytest.mark.parametrize("policy", sorted(EXPECTED))
def test_each_policy_gives_the_hand_derived_schedule(policy: str) -> None:
    result = simulate(TWO, policy, time_limit=60, extra=SETTINGS.get(policy, {}))
    assert result.verified, result.violations
    assert rows(result) == EXPECTED[policy]
    assert not overloads(TWO, result.schedule)


def test_a_task_runs_under_the_option_that_fits_now_when_the_first_fits_nowhere() -> None:
    # One GPU machine {cpu 4, gpu 1}; two tasks of one stage, 1 GPU + 1 CPU for 2 or 3 CPUs for 5. The first
    # task takes the GPU; the GPU option then fits nowhere, the 3-CPU one does (3 CPUs left): the second task
    # runs under it at once rather than wait, ending at 5. Had it waited for the GPU it would end at 4, as
    # hard-only's (first option only) does and the exact optimum.
    options = [STRATEGIES[0], {"duration": 5, "demand": {"cpu": 3}}]
    inst = gpu_instance([one_stage("j", tasks=2, options=options)], servers=SERVERS[:1])
    for policy in ("drf-dag", "sjf", "tetris", "carbyne", "drf-strict", "oblivious", "jockey"):
        result = simulate(inst, policy)
        s = result.schedule
        assert result.verified, (policy, result.violations)
        assert runs(s) == [(0, 2, 0), (0, 5, 1)], policy
    assert runs(simulate(inst, "hard-only").schedule) == [(0, 2, 0), (2, 4, 0)]
    exact = solve(inst, "spacetime-cp", objective="makespan", fair_cap=False, time_limit=60)
    assert exact.status == "optimal" and exact.objective == pytest.approx(4.0)


@pytest.mark.parametrize("method", ["carbyne", "drf-dag", "drf-strict", "tetris", "sjf"])
def test_the_dag_heuristics_solve_with_option_demands_and_report_t_k(method: str, gpu_file: Path,
                                                                     tmp_path: Path) -> None:  # fmt: skip
    # `fairpack solve --method` runs the same policies: the schedule derived above, T_k = drf-strict's (5, 2).
    result = solve(TWO, method)
    assert result.verified, result.violations
    assert rows(result) == UNAWARE
    np.testing.assert_allclose(result.schedule.fair_completion, [5.0, 2.0])
    saved = tmp_path / "result.json"
    code, out, err = cli("solve", "--method", method, gpu_file, "-o", saved)
    assert code == 0, out + err
    code, out, err = cli("check", gpu_file, saved)
    assert code == 0, out + err


@pytest.mark.parametrize("method", ["spacetime-cp", "spacetime"])
def test_exact_methods_with_fair_caps_take_the_fair_share_schedule_under_option_demands(method: str) -> None:
    # T_k is drf-strict's completion: a at 5 (on the CPUs), b at 2 (on the GPU), derived above. The caps
    # C_b <= 2 leave one optimum of the avg JCT: b on the GPU first, then a (3); unconstrained, a first would
    # do as well.
    result = solve(TWO, method, objective="avg-jct", time_limit=60)
    assert result.verified, result.violations
    assert result.status == "optimal" and result.objective == pytest.approx(3.0)
    assert result.extra["fair_cap"] is True
    np.testing.assert_allclose(result.schedule.fair_completion, [5.0, 2.0])
    np.testing.assert_allclose(job_completion(TWO, result.schedule), [4.0, 2.0])


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairpack", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=180, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def gpu_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gpus") / "gpus.yaml"
    path.write_text(instance_to_yaml(TWO))
    return path


def settings_args(policy: str) -> list[str]:
    return [part for key, value in SETTINGS.get(policy, {}).items() for part in ("--option", f"{key}={value}")]


@pytest.mark.parametrize("policy", sorted(EXPECTED))
def test_the_cli_simulates_and_checks_every_policy(policy: str, gpu_file: Path, tmp_path: Path) -> None:
    saved = tmp_path / "result.json"
    done = run("simulate", "--policy", policy, str(gpu_file), *settings_args(policy), "--json", "-o", str(saved))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    got = sorted((t["job"], t["start"], t["end"], t["server"], t["option"]) for t in data["tasks"])
    assert got == EXPECTED[policy]
    # The utilisation counts each option's own demand: under UNAWARE the GPU is busy at time 0.
    assert max(data["utilisation_series"]["gpu"]) == pytest.approx(1.0)
    code, out, err = cli("check", gpu_file, saved, *settings_args(policy))
    assert code == 0, out + err


@pytest.mark.parametrize("method", ["spacetime-cp", "spacetime"])
def test_the_cli_solves_with_fair_caps_and_check_accepts(method: str, gpu_file: Path, tmp_path: Path) -> None:
    saved = tmp_path / "result.json"
    done = run("solve", "--method", method, str(gpu_file), "--objective", "avg-jct", "--json", "-o", str(saved))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["objective"] == pytest.approx(3.0)
    assert {name: job["fair_completion"] for name, job in data["jobs"].items()} == {"a": 5.0, "b": 2.0}
    assert {name: job["completion"] for name, job in data["jobs"].items()} == {"a": 4.0, "b": 2.0}
    code, out, err = cli("check", gpu_file, saved, "--objective", "avg-jct")
    assert code == 0, out + err


def test_check_rejects_two_gpu_option_tasks_sharing_the_gpu(gpu_file: Path, tmp_path: Path) -> None:
    saved = tmp_path / "result.json"
    done = run("simulate", "--policy", "hard-only", str(gpu_file), "--json", "-o", str(saved))
    assert done.returncode == 0, done.stderr
    data = json.loads(saved.read_text())
    for task in data["tasks"]:  # both at once on the one GPU, each under the GPU option
        task["start"], task["end"] = 0.0, 2.0
    data["jobs"]["b"].update(start=0.0, completion=2.0, jct=2.0, slowdown=1.0, utility=-2.0)
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(data))
    code, out, err = cli("check", gpu_file, tampered)
    assert code != 0
    assert "machine g: resource gpu: 2 in use" in out + err
    # Under the stage's demand ({cpu 1}) they would have fit: the option's demand is what is checked.
    assert "resource cpu" not in out + err


# ------------------------------------------------------------------------------------------ property


#: Two GPU machines (rack r1) and two plain ones (rack r2).
RACKS = [{"name": "g", "capacity": {"cpu": 2, "gpu": 1}, "count": 2, "labels": {"gpu": "true", "rack": "r1"}},
         {"name": "p", "capacity": {"cpu": 4}, "count": 2, "labels": {"rack": "r2"}}]  # fmt: skip


@st.composite
def option_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A GPU strategy, a rack gang (each maybe), and always a task-by-task one last, mostly with own demands."""
    options: list[dict[str, Any]] = []
    if draw(st.booleans()):
        options.append({"on": {"gpu": "true"}, "duration": draw(st.integers(1, 3)),
                        "demand": {"gpu": 1, "cpu": draw(st.integers(0, 2))}})  # fmt: skip
    if draw(st.integers(0, 3)) == 0:
        options.append({"same": "rack", "duration": draw(st.integers(1, 4)),
                        "demand": {"cpu": draw(st.integers(1, 2))}})  # fmt: skip
    plain = draw(st.sampled_from([None, 1, 2, 3, 4]))
    options.append({"duration": draw(st.integers(1, 6)), **({"demand": {"cpu": plain}} if plain else {})})
    return options


@st.composite
def instances(draw: st.DrawFn) -> Instance:
    jobs = []
    for k in range(draw(st.integers(1, 3))):
        stages = []
        for s in range(draw(st.integers(1, 2))):
            stages.append({"name": f"s{s}", "tasks": draw(st.integers(1, 3)), "demand": {"cpu": 1},
                           "options": draw(option_lists()), **({"after": [f"s{s - 1}"]} if s else {})})  # fmt: skip
        jobs.append({"name": f"j{k}", "release": draw(st.integers(0, 2)), "stages": stages})
    try:
        return gpu_instance(jobs, RACKS)
    except InstanceError:  # a gang of more tasks than a rack holds under its demand
        return draw(st.nothing())


@settings(derandomize=True, max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_no_policy_overloads_a_machine_and_the_exact_optimum_is_never_worse(inst: Instance) -> None:
    exact = solve(inst, "spacetime-cp", objective="makespan", fair_cap=False, time_limit=60)
    assert exact.verified, exact.violations
    for policy in sorted(EXPECTED):
        result = simulate(inst, policy, time_limit=120, extra=SETTINGS.get(policy, {}))
        assert result.verified, (policy, result.violations)
        assert not overloads(inst, result.schedule), policy
        unfinished = result.extra.get("unfinished_jobs")
        assert not unfinished, (policy, instance_to_yaml(inst))
        if exact.status == "optimal" and not unfinished:
            assert exact.objective <= float(job_completion(inst, result.schedule).max()) + 1e-9, policy


@settings(derandomize=True, max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_the_checkers_fair_share_run_is_the_solvers_under_option_demands(inst: Instance) -> None:
    """``fairpack check`` recomputes ``T_k`` with its own drf-strict run: it must size by option as the engine."""
    from fairpack.models.check.fairshare import fair_times
    from fairpack.solver.sim.fairshare import fair_completion_times

    theirs = fair_completion_times(inst, "servers")
    mine = fair_times(inst, "servers", shares=True)
    assert mine is not None
    np.testing.assert_allclose(mine.completion, theirs.completion, rtol=1e-12)
    np.testing.assert_allclose(mine.share, theirs.share, rtol=1e-12, atol=1e-15)
    assert not overloads(inst, theirs.schedule)
