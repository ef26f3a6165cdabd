"""``--time-limit S`` bounds the whole call of every exact method, on moderate sizes.

Each instance takes well beyond S without a limit; with S = 2 what comes back must say that the limit stopped
it, and be honest: an answer is verified, and a result without one (or a failed one) never is. The CLI gives
``solve()`` what is left of S after reading the file, less a reserve for the output (checked on a clock that
ticks by reads, tests/work.py). Sizes a method cannot hold in memory are refused with the limit named, and
running out of memory anyway is a failed solve, not a crash.

How far past S a call ends is wall time, which no test asserts (tests/test_suite_rules.py): it is measured
for these cases by ``benchmarks/unit_timings.py`` and for the largest instances, through the CLI in a fresh
process, by ``benchmarks/time_limits.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from work import TickClock

from fairpack.models.generators import google_instance, random_dag_jobs, random_tree_instance
from fairpack.models.io import instance_to_dict
from fairpack.models.result import Result
from fairpack.models.types import Instance, InstanceError
from fairpack.solver.api import solve
from fairpack.solver.cli import main

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 2.0


def honest(result: Result) -> None:
    assert result.status in ("optimal", "feasible", "time_limit", "error"), result.status
    if result.verified:
        assert result.has_answer and result.status != "error"
    if result.status == "error":
        assert not result.verified


def _fig10_tree(machines: int) -> Instance:
    """The H-DRF Fig. 10 tree (a CPU leaf beside a GPU leaf, against a CPU leaf) on ``machines`` machines."""
    from fairpack.models.io import parse_instance

    return parse_instance(f"""
resources: [cpu, gpu]
servers: [{{name: node, capacity: {{cpu: 5, gpu: 5}}, count: {machines}}}]
hierarchy:
  name: root
  children:
    - {{name: n1, children: [{{name: n11, demand: {{cpu: 1}}}}, {{name: n12, demand: {{gpu: 1}}}}]}}
    - {{name: n2, children: [{{name: n21, demand: {{cpu: 1}}}}]}}
""", "fig10.yaml")


CASES: dict[str, tuple[str, Any, dict[str, Any]]] = {
    # 20,000 distinct machines x 200 tenants: 4 million (tenant, machine) pairs; Best-Fit's warm start and
    # building one level model each take longer than the limit.
    "drfh-int": ("drfh-int", lambda: google_instance(None, 200, 0, machines=20000, distinct=True), {}),
    # 2,000 distinct machines x 200 tenants without caps: progressive filling over 400,000 columns.
    "drfh": ("drfh", lambda: google_instance(None, 200, 1, machines=2000, distinct=True), {"strategy": "plain"}),
    "hdrf": ("hdrf", lambda: random_tree_instance(1, 1000, 3, 3, servers=200), {"placement": "servers"}),
    # 60 random DAG jobs, 2,202 tasks: warm starts alone took 10 s and the MILP 7 s before.
    "spacetime": ("spacetime", lambda: random_dag_jobs(0, jobs=60), {}),
    # 5,113 tasks, with the fair caps: the drf-strict schedule that sets them takes seconds too.
    "spacetime-cp": ("spacetime-cp", lambda: random_dag_jobs(5, jobs=50, stages_range=(8, 10)), {}),
    # The fuzz campaign's hang: the simulated hierarchical schedulers on 200,000 machines scan every machine per
    # launch (20 ms), and the clock was read every 1,024th launch, 20 s apart (a million machines: 100 s).
    "dynamic-hdrf": ("dynamic-hdrf", lambda: _fig10_tree(200_000), {}),
    "naive-hdrf": ("naive-hdrf", lambda: _fig10_tree(200_000), {}),
}
#: What comes back: stopped by the limit (without it each call takes more than 30 s), except drfh-int, whose
#: leximin steps are refused up front on this many (tenant, machine) pairs: its first level, proven optimal, is
#: the answer when the heuristics and that level fit in the limit (1-2 s), else the better heuristic's allocation.
STATUS = {"drfh-int": ("feasible", "time_limit")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_limit_bounds_the_whole_call(case: str) -> None:
    method, make, options = CASES[case]
    instance: Instance = make()
    result = solve(instance, method, time_limit=LIMIT, **options)
    honest(result)
    assert result.status in STATUS.get(case, ("time_limit",)), (case, result.status, result.message)


def test_the_cli_counts_reading_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str],
                                         tick_clock: Callable[..., TickClock]) -> None:  # fmt: skip
    import fairpack.solver.api as api
    import fairpack.solver.cli.commands as commands

    path = tmp_path / "dag60.yaml"
    path.write_text(yaml.safe_dump(instance_to_dict(random_dag_jobs(0, jobs=60)), default_flow_style=None))
    clock = tick_clock(1e-3)
    read, solving = commands.load, api.solve
    given: list[float | None] = []

    def slow_read(name: str, *args: Any) -> Instance:
        instance = read(name, *args)
        clock.jump(0.5)  # reading the file "took" half a second
        return instance

    def recorded(instance: Instance, method: str, **options: Any) -> Result:
        given.append(options.get("time_limit"))
        return solving(instance, method, **options)

    monkeypatch.setattr(commands, "load", slow_read)
    monkeypatch.setattr(api, "solve", recorded)
    code = main(["solve", str(path), "--method", "spacetime", "--time-limit", str(LIMIT), "--json"])
    data = json.loads(capsys.readouterr().out)
    # solve() got what was left after reading the file and the output's reserve (a tenth of S), to a few reads.
    (left,) = given
    reserve = min(commands.OUTPUT_RESERVE_S, commands.OUTPUT_RESERVE_SHARE * LIMIT)
    assert left is not None and LIMIT - reserve - 0.5 - 0.01 <= left <= LIMIT - reserve - 0.5, left
    # With the fair caps on, the drf-strict schedule may not finish in what is left: an honest error then.
    assert (data["verified"] is True) == (data["status"] in ("time_limit", "feasible", "optimal")), data["status"]
    assert code == (0 if data["verified"] else 1), (code, data["status"])


def test_a_milp_too_large_for_memory_is_refused_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    import fairpack.solver.spacetime.milp as milp

    monkeypatch.setattr(milp, "MAX_NONZEROS", 10_000)
    instance = random_dag_jobs(0, jobs=6)
    with pytest.raises(InstanceError, match="MAX_NONZEROS = 10,000"):
        solve(instance, "spacetime", fair_cap=False)


def test_running_out_of_memory_is_a_failed_solve(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    import fairpack.solver.spacetime.methods as drivers

    def exhausted(*args: Any) -> Result:
        raise MemoryError("Unable to allocate 222. MiB")

    monkeypatch.setattr(drivers, "run_spacetime", exhausted)
    result = solve(random_dag_jobs(0, jobs=2), "spacetime")
    assert result.status == "error" and not result.verified and "out of memory" in result.message
    path = ROOT / "instances" / "dag_two_jobs.yaml"
    assert main(["solve", str(path), "--method", "spacetime", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)  # still exactly one JSON object, no traceback
    assert data["status"] == "error" and data["verified"] is False


def test_a_billion_slot_stage_is_refused_before_it_is_built() -> None:
    # Found by the fuzz campaign: one stage of 1e9 time units at time.slot 0.5 made the capacity rows a
    # 2e9-entry array (14.9 GiB) although its window was tiny; the size estimate now counts those terms.
    from fairpack.models.io import parse_instance
    from fairpack.models.types import InstanceError
    from fairpack.solver.api import solve

    instance = parse_instance(
        "resources: [cpu]\nservers: [{name: node, capacity: {cpu: 2}}]\njobs:\n"
        "- {name: long, stages: [{name: load, tasks: 1, duration: 2, demand: {cpu: 1}},\n"
        "   {name: join, tasks: 1, duration: 1000000000.0, demand: {cpu: 2}, after: [load]}]}\n"
        "- {name: short, release: 0.5, stages: [{name: scan, tasks: 2, duration: 1, demand: {cpu: 1}}]}\n"
        "time: {slot: 0.5}\n")  # fmt: skip
    with pytest.raises(InstanceError, match="nonzeros"):
        solve(instance, "spacetime", time_limit=5)


def test_spacetime_cp_keeps_a_limit_its_workers_spend_loading(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 5-query TPC-H mix (4,512 tasks, below the decomposition's size): with two CP-SAT workers the
    portfolio's full-problem worker built the LP relaxation of the cumulatives for 8-10 s without looking at
    its clock, so a 6 s limit ended after 10 s (a 10 s limit after 13-19 s, by load); without the relaxation on
    models this large (and the no-LP worker in the portfolio) the call takes 6.0 s, with a schedule at least as
    good (21.68 against the warm start's 21.72). Checked here as what CP-SAT is told: every solve of a model
    this large runs without the relaxation, in every worker, within the limit; the wall time of the call is
    measured by benchmarks/unit_timings.py."""
    from ortools.sat.python import cp_model

    from fairpack.models.generators.families import FAMILIES
    from fairpack.solver.spacetime.cp import LP_MAX_TASKS

    told: list[tuple[int, list[str], float]] = []  # linearization level, subsolvers, time limit
    original = cp_model.CpSolver.solve

    def record(self: cp_model.CpSolver, model: cp_model.CpModel, *args: object) -> object:
        parameters = self.parameters
        told.append((parameters.linearization_level, list(parameters.subsolvers), parameters.max_time_in_seconds))
        return original(self, model, *args)

    monkeypatch.setattr(cp_model.CpSolver, "solve", record)
    instance = FAMILIES["tpch"].instance({"queries": 5}, 0, data_dir)
    assert sum(stage.tasks for job in instance.jobs for stage in job.stages) > LP_MAX_TASKS
    result = solve(instance, "spacetime-cp", time_limit=6.0, workers=2)
    honest(result)
    assert result.verified, (result.status, result.message)
    assert told, "no CP-SAT solve"
    for level, subsolvers, limit in told:
        assert level == 0 and "no_lp" in subsolvers and 0 < limit <= 6.0, (level, subsolvers, limit)


# ------------------------------------------------------------------ work before the solver watches the clock

#: Two map tasks reading blocks on three one-slot machines of two racks, then a reduce: a choice model (one
#: alternative per task and machine) with ``placement: servers``.
BLOCKS = """
resources: [slot]
servers:
  - {name: a, capacity: {slot: 1}, labels: {rack: r1}}
  - {name: b, capacity: {slot: 1}, labels: {rack: r1}}
  - {name: c, capacity: {slot: 1}, labels: {rack: r2}}
blocks: {b0: [a], b1: [c]}
locality: {node: 1, rack: 1.5, remote: 2}
jobs:
  - name: mr
    stages:
      - {name: map, tasks: 2, duration: 2, demand: {slot: 1}, input: [b0, b1]}
      - {name: reduce, duration: 1, demand: {slot: 1}, after: [map]}
"""


def test_a_cp_model_not_built_by_the_deadline_returns_the_best_warm_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the CP-SAT model (a Python call per variable) is watched: past the deadline it stops, and the
    answer is the best feasible warm start, ``time_limit``, verified (a model of a million alternatives took
    11 s to build under a 5 s limit before)."""
    from fairpack.models.io import parse_instance
    from fairpack.solver.spacetime import choice_cp

    instance = parse_instance(BLOCKS)
    built: list[bool] = []

    def out_of_time(self: Any) -> Any:
        built.append(True)
        raise choice_cp.ModelOutOfTime

    monkeypatch.setattr(choice_cp.ChoiceCp, "build", out_of_time)
    result = solve(instance, "spacetime-cp", time_limit=60, placement="servers", fair_cap=False)
    assert built and result.status == "time_limit" and result.verified, (result.status, result.message)
    assert "was not built in the time left; returning the best warm start" in result.message


def test_the_model_build_stops_at_its_deadline() -> None:
    """``build_until`` in the past: no model, no plan without hints, status ``MODEL_NOT_BUILT``."""
    import time

    from fairpack.models.io import parse_instance
    from fairpack.solver.spacetime import choice_cp
    from fairpack.solver.spacetime.choices import Units

    instance = parse_instance(BLOCKS)
    problem = choice_cp.build_problem(instance, Units.of(instance, "machine"), None, 0.5, None)
    plan, status, bound, _ = choice_cp.solve_plan(problem, [], 60.0, build_until=time.perf_counter() - 1)
    assert (plan, status, bound) == (None, "MODEL_NOT_BUILT", None)
    plan, status, _, _ = choice_cp.solve_plan(problem, [], 60.0, build_until=time.perf_counter() + 600)
    assert status == "OPTIMAL" and plan is not None


def test_with_no_warm_start_an_event_driven_heuristic_gives_the_first_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """No list schedule (too large to profile) and no fair-share witness (``--no-fair-cap``): a heuristic's
    schedule is the answer should the model not be built in time (before: no answer, status ``error``)."""
    from fairpack.models.io import parse_instance
    from fairpack.solver.spacetime import choice_cp

    monkeypatch.setattr(choice_cp, "list_schedule", lambda problem: None)
    monkeypatch.setattr(choice_cp.ChoiceCp, "build", lambda self: (_ for _ in ()).throw(choice_cp.ModelOutOfTime))
    result = solve(parse_instance(BLOCKS), "spacetime-cp", time_limit=60, placement="servers", fair_cap=False)
    assert result.status == "time_limit" and result.verified and result.schedule is not None, result.message


def test_drfh_int_does_not_start_a_level_relaxation_it_cannot_build_in_time(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The level LP relaxation costs about a microsecond per tenant x machine pair to build (12.6 million pairs
    took 16 s on the Google table under a 10 s limit); with less time left than that it is not started."""
    from fairpack.solver.drfh import int_search

    built: list[float] = []
    monkeypatch.setattr(int_search, "LEVEL_RELAXATION_S_PER_PAIR", 1e6)  # any relaxation: longer than the limit
    monkeypatch.setattr(int_search.LevelSearch, "_level_relaxation", lambda self, level: built.append(level))
    instance = google_instance(None, tenants=40, seed=3, machines=60, distinct=True)
    result = solve(instance, "drfh-int", time_limit=60)
    assert not built
    assert result.status == "time_limit" and result.verified, (result.status, result.message)
    assert "the LP relaxations that bound the levels were not started" in result.message


def test_highs_is_stopped_past_its_deadline_where_its_own_limit_is_not_read() -> None:
    """HiGHS's interrupt callbacks watch the clock too: the root of a MIP of a million rows ran 300 s past a 30 s
    limit while asking them. Past the deadline (plus OVERRUN_S) they stop the solve, reported as the time limit."""
    import time

    import numpy as np
    import scipy.sparse as sp

    from fairpack.solver.backends import highs as backend
    from fairpack.solver.lp import LinearProgram

    lp = LinearProgram(objective=np.array([1.0, 1.0]), matrix=sp.csr_matrix(np.array([[1.0, 1.0]])),
                       row_lower=np.array([1.0]), row_upper=np.array([np.inf]), col_lower=np.zeros(2),
                       col_upper=np.full(2, 5.0), integrality=np.array([True, True]), sense="min")  # fmt: skip
    session = backend.HighsSession(lp, time_limit=60)
    assert session.solve().status == "optimal" and not session.should_stop()  # the watch is set by a solve
    assert session._watch_until is not None
    session._watch_until = time.monotonic() - 1
    assert session.should_stop()
    unlimited = backend.HighsSession(lp)
    assert unlimited.solve().status == "optimal" and unlimited._watch_until is None and not unlimited.should_stop()


def test_a_milp_highs_cannot_stop_in_time_is_not_started_under_a_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above LIMITED_MAX_NONZEROS the choice MILP is not started under a time limit (HiGHS's root LP of 3 million
    nonzeros ran past 100 s under a 30 s limit without checking it): the warm start is the answer; without a
    limit the MILP is solved."""
    from fairpack.models.io import parse_instance
    from fairpack.solver.spacetime import choice_milp

    monkeypatch.setattr(choice_milp, "LIMITED_MAX_NONZEROS", 0)
    instance = parse_instance("""
resources: [cpu]
servers: [{name: m, capacity: {cpu: 2}}]
jobs:
  - {name: a, utility: [[2, 5], [6, 0]], stages: [{name: s, duration: 2, demand: {cpu: 2}}]}
  - {name: b, utility: [[3, 4], [8, 0]], stages: [{name: s, duration: 1, demand: {cpu: 2}}]}
""")
    limited = solve(instance, "spacetime", objective="utility", fair_cap=False, time_limit=60)
    assert limited.status == "time_limit" and limited.verified and "was not started: HiGHS" in limited.message
    unlimited = solve(instance, "spacetime", objective="utility", fair_cap=False)
    assert unlimited.status == "optimal" and unlimited.verified


def test_drfh_int_does_not_build_a_level_relaxation_larger_than_the_memory_left(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A relaxation that needs more memory than is available (MemAvailable, or what an address-space limit leaves)
    is not built: under an 8 GiB limit the 12.6 million pairs of the Google table's distinct machines died in
    HiGHS with SIGSEGV. The answer is the search so far, feasible, saying why."""
    from fairpack.solver.drfh import int_search

    built: list[float] = []
    monkeypatch.setattr(int_search, "available_memory", lambda: 1000)  # bytes: any relaxation is larger
    monkeypatch.setattr(int_search.LevelSearch, "_level_relaxation", lambda self, level: built.append(level))
    result = solve(google_instance(None, tenants=40, seed=3, machines=60, distinct=True), "drfh-int", time_limit=60)
    assert not built and result.verified and result.status == "feasible", (result.status, result.message)
    assert "were not built" in result.message and "GiB are available" in result.message


def test_available_memory_counts_an_address_space_limit() -> None:
    """Run in a child with ``ulimit -v``: the room is at most what the limit leaves above the process's size."""
    import subprocess
    import sys

    code = ("import resource; from fairpack.solver.budget import available_memory; "
            "resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, resource.RLIM_INFINITY)); "
            "print(available_memory())")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert 0 < int(done.stdout) < 3 * 2**30


@pytest.mark.parametrize("method", ["first-fit", "best-fit", "slots", "per-server-drf"])
def test_a_filling_heuristic_stops_at_the_limit(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flat heuristics ask the budget before every batch of grants: Best-Fit on a million three-resource
    machines ran past 300 s under a 2 s limit. Stopped, the tasks placed so far are the answer, time_limit."""
    from fairpack.solver.budget import Budget

    monkeypatch.setattr(Budget, "expired", lambda self: True)
    instance = google_instance(None, tenants=30, seed=2, machines=40)
    result = solve(instance, method, time_limit=60)
    assert result.status == "time_limit" and result.verified, (result.status, result.message)
    assert "the tasks placed until then" in result.message


def test_drfh_int_gives_best_fit_a_share_of_the_time_left_and_keeps_the_better_start(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Best-Fit may cost a hundred First-Fits (three resources: 1.2 s against 0.01 s on the Alibaba cluster, which
    made a 0.5 s limit end after 1.3 s): its warm start watches a budget of a quarter of the time left, and a
    Best-Fit cut short (feasible, but with fewer tasks) loses to First-Fit's start."""
    import time

    from fairpack.models.metrics import min_weighted_share
    from fairpack.solver.drfh import heuristics, methods

    original = heuristics.best_fit
    deadlines: list[float] = []

    def cut_short(instance: Instance, compiled: Any = None, stop: Any = None) -> Any:
        deadlines.append(stop.__self__.deadline - time.perf_counter())  # the budget Budget.expired watches
        return original(instance, compiled, stop=lambda: True)  # stopped before its first chunk: no task

    monkeypatch.setattr(heuristics, "best_fit", cut_short)
    instance = google_instance(None, tenants=3, seed=0, machines=10)
    result = solve(instance, "drfh-int", time_limit=60)
    assert len(deadlines) == 1 and 0 < deadlines[0] <= methods.BEST_FIT_SHARE * 60
    assert result.verified and result.objective is not None
    assert result.objective >= min_weighted_share(instance, heuristics.first_fit(instance)) - 1e-12
