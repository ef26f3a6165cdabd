"""The wall times the unit tests no longer assert: each step they used to time, timed here.

No unit test compares an elapsed time with a number (tests/test_suite_rules.py): under load such a bound
flakes (``make test`` under load 4-5 failed on ``11.4 s < 10 s``). The tests now check counted work -- Python
lines, bytes, LP size and iterations, decoded schedules, clock reads on a clock that ticks by reads
(tests/work.py) -- and this benchmark keeps the wall-clock figures: each step the tests once timed, in this
process, with the bound the test used to assert beside it ("was < N s") and, for a time limit S, how far past
S the call ended (``over``). The load average is recorded before and after every row.

    python -m benchmarks.unit_timings --data-dir ../shared/data      # rows needing the data are skipped without it
    python -m benchmarks.unit_timings --only time-limit              # rows whose name contains a word

Results: ``benchmarks/results/unit_timings.{md,json}``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._common import data_dir_or_none, load_line, parser, save

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the instances and helpers the tests build


#: What a step's set-up returns: the call to time (untimed: generating its instance, reading the data).
Timed = Callable[[], str]


@dataclass(frozen=True)
class Step:
    name: str
    test: str  # the test that now checks the point by counted work or by what the code records
    was: str  # the wall-clock bound the test used to assert
    setup: Callable[[Path | None], Timed]  # the call to time, which returns a note; Skip without the data
    limit_s: float | None = None  # the time limit S the call was given (over = wall - S)


class Skip(Exception):
    pass


def _status(result: Any) -> str:
    return f"{result.status}{', verified' if result.verified else ''}"


# --- complexity steps --------------------------------------------------------------------------------------


def tree_100k(_: Path | None) -> Timed:
    from fairpack.models.generators import random_tree_instance

    return lambda: f"{len(random_tree_instance(0, leaves=100_000, depth=5).tenants):,} leaves"


def pareto_lp(_: Path | None) -> Timed:
    from test_check import _random_cluster

    from fairpack.models.check import pareto_optimal

    instance, allocation = _random_cluster(200, 100)
    return lambda: f"holds={pareto_optimal(instance, allocation).holds}"


def large_checks(_: Path | None) -> Timed:
    from test_check import _check_all, _large_integral

    instance, allocation = _large_integral(5000)
    return lambda: " ".join(f"{o.name}={o.holds}" for o in _check_all(instance, allocation)[1])


def long_chain(_: Path | None) -> Timed:
    from fairpack.models.types import Hierarchy, HierarchyNode

    size = 60_000
    forwards = [HierarchyNode("n0", -1), *(HierarchyNode(f"n{k}", k - 1) for k in range(1, size))]
    backwards = [HierarchyNode("n0", -1), *(HierarchyNode(f"n{k}", k + 1 if k < size - 1 else 0)
                                            for k in range(1, size))]  # fmt: skip
    return lambda: f"{len(Hierarchy(tuple(forwards)).nodes):,} + {len(Hierarchy(tuple(backwards)).nodes):,} nodes"


def huge_counts(_: Path | None) -> Timed:
    from test_heuristics_flat import HEURISTICS, make

    from fairpack.models.types import InstanceError

    instance = make([([4.0, 8.0], 1_000_000_000)], [([1.0, 1.0], 1.0, math.inf)] * 3)

    def run() -> str:
        refused = 0
        for heuristic in HEURISTICS.values():
            try:
                heuristic(instance)
            except InstanceError:
                refused += 1
        return f"{refused}/{len(HEURISTICS)} refused"

    return run


def million_tasks(_: Path | None) -> Timed:
    from test_spacetime_cp import chain

    from fairpack.models.types import InstanceError
    from fairpack.solver.api import solve

    instance = chain(1.0, tasks=1_000_000)

    def run() -> str:
        try:
            solve(instance, "spacetime-cp", time_limit=1)
        except InstanceError:
            return "refused"
        return "NOT refused"

    return run


def ga_past_deadline(_: Path | None) -> Timed:
    import numpy as np
    from test_rcpsp_ga import list_schedule, random_rcpsp

    from fairpack.solver.spacetime.rcpsp_ga import evolve

    problem = random_rcpsp(11)
    first = list_schedule(problem, np.zeros(problem.tasks.size))
    def run() -> str:
        _, _, stats = evolve(problem, [first], time.perf_counter(), 0, stall=10**9)
        return f"{stats.generations} generations, {stats.schedules} schedules"

    return run


def lns_stall(_: Path | None) -> Timed:
    import numpy as np
    from ortools.sat.python import cp_model

    from fairpack.solver.spacetime import lns

    duration = np.arange(1, 21, dtype=np.int64)
    horizon = int(duration.sum())
    model = cp_model.CpModel()
    start = [model.new_int_var(0, horizon - int(d), f"s{t}") for t, d in enumerate(duration)]
    intervals = [model.new_fixed_size_interval_var(s, int(d), f"i{t}")
                 for t, (s, d) in enumerate(zip(start, duration, strict=True))]  # fmt: skip
    model.add_cumulative(intervals, [1] * duration.size, 1)
    makespan = model.new_int_var(0, horizon, "M")
    for s, d in zip(start, duration, strict=True):
        model.add(makespan >= s + int(d))
    model.minimize(makespan)
    incumbent = np.concatenate([[0], np.cumsum(duration)[:-1]])

    def run() -> str:
        _, _, stats = lns.improve(model, [v.index for v in start], duration, np.ones((20, 1), dtype=np.int64),
                                  np.array([1]), incumbent, horizon, time.perf_counter() + 60, seed=0)  # fmt: skip
        return f"{stats.steps} steps (stall at {lns.STALL_STEPS})"

    return run


def decompose_stall(_: Path | None) -> Timed:
    from fairpack.models.io import load_instance
    from fairpack.solver.api import solve

    instance = load_instance(ROOT / "instances" / "dag_two_jobs.yaml")
    return lambda: _status(solve(instance, "spacetime-cp", time_limit=60.0, workers=1, extra={"decompose": "true"}))


# --- time limits ---------------------------------------------------------------------------------------------


def limit_case(case: str) -> Callable[[Path | None], Timed]:
    def run(_: Path | None) -> Timed:
        from test_time_limits import CASES, LIMIT

        from fairpack.solver.api import solve

        method, make, options = CASES[case]
        instance = make()
        return lambda: _status(solve(instance, method, time_limit=LIMIT, **options))

    return run


def cli_dag60(_: Path | None) -> Timed:
    import yaml

    from fairpack.models.generators import random_dag_jobs
    from fairpack.models.io import instance_to_dict

    path = Path(tempfile.mkdtemp(prefix="unit-timings-")) / "dag60.yaml"
    path.write_text(yaml.safe_dump(instance_to_dict(random_dag_jobs(0, jobs=60)), default_flow_style=None))

    def run() -> str:
        done = subprocess.run([sys.executable, "-m", "fairpack", "solve", str(path), "--method", "spacetime",
                               "--time-limit", "2", "--json"], cwd=ROOT, capture_output=True, text=True,
                              timeout=600, check=False)  # fmt: skip
        path.unlink()
        path.parent.rmdir()
        data = json.loads(done.stdout)
        return f"{data['status']}, solve() {data['wall_s']:.2f} s, exit {done.returncode}"

    return run


def milp_backends(_: Path | None) -> Timed:
    from test_backends import _combos, _label, _solve, hard_knapsack

    lp = hard_knapsack()

    def run() -> str:
        notes = []
        for combo in _combos(mip=True):
            started = time.perf_counter()
            outcome = _solve(lp, combo, time_limit=0.05)
            notes.append(f"{_label(combo)} {outcome.status} {time.perf_counter() - started:.2f} s")
        return "; ".join(notes)

    return run


def hdrf_limit(placement: str, leaves: int, servers: int | None, limit: float) -> Callable[[Path | None], Timed]:
    def run(_: Path | None) -> Timed:
        from fairpack.models.generators import random_tree_instance
        from fairpack.solver.api import solve

        instance = random_tree_instance(1, leaves, 3, 3, servers=servers)
        return lambda: _status(solve(instance, "hdrf", placement=placement, time_limit=limit))

    return run


def simulated_hdrf(_: Path | None) -> Timed:
    from fairpack.models.io import parse_instance
    from fairpack.solver.api import solve

    text = ("{name: big, resources: [cpu, gpu], servers: [{name: node, capacity: {cpu: 123456.789, gpu: 5}, "
            "count: 4}], hierarchy: {name: root, children: [{name: n1, weight: 1, children: [{name: a, demand: "
            "{cpu: 1}}, {name: b, demand: {gpu: 1}}]}, {name: n2, weight: 1, children: [{name: c, demand: "
            "{cpu: 1}}]}]}}")  # fmt: skip
    instance = parse_instance(text)
    return lambda: "; ".join(f"{m} {_status(solve(instance, m, time_limit=1.0))}"
                             for m in ("naive-hdrf", "dynamic-hdrf"))


def spacetime_cp_5113(_: Path | None) -> Timed:
    from fairpack.models.generators import random_dag_jobs
    from fairpack.solver.api import solve

    instance = random_dag_jobs(5, jobs=50, stages_range=(8, 10))
    return lambda: _status(solve(instance, "spacetime-cp", time_limit=2.0, objective="makespan", fair_cap=False))


def tpch_heuristics(data_dir: Path | None) -> Timed:
    from fairpack.models.generators.families import FAMILIES
    from fairpack.solver.api import solve

    if data_dir is None:
        raise Skip("needs the shared data")
    instance = FAMILIES["tpch"].instance({"queries": 30, "executors": 50}, 1, data_dir)

    def run() -> str:
        notes = []
        for name in ("carbyne", "drf-dag", "drf-strict", "tetris"):
            started = time.perf_counter()
            result = solve(instance, name, time_limit=0.3)
            notes.append(f"{name} {result.status} {time.perf_counter() - started:.2f} s")
        return "; ".join(notes)

    return run


def tpch_spacetime_cp(data_dir: Path | None) -> Timed:
    from fairpack.models.generators.families import FAMILIES
    from fairpack.solver.api import solve

    if data_dir is None:
        raise Skip("needs the shared data")
    instance = FAMILIES["tpch"].instance({"queries": 5}, 0, data_dir)
    return lambda: _status(solve(instance, "spacetime-cp", time_limit=6.0, workers=2))


def _steps() -> list[Step]:
    from test_time_limits import CASES, LIMIT

    steps = [
        Step("tree 100k leaves", "test_check_hierarchy::test_random_tree_with_100k_leaves_builds_in_linear_work",
             "< 10 s", tree_100k),
        Step("Pareto LP 200 x 100", "test_check::test_pareto_lp_handles_200_tenants_by_100_units_as_one_sparse_lp",
             "< 10 s", pareto_lp),
        Step("checks 400 x 5000 integral",
             "test_check::test_large_allocations_check_in_work_independent_of_the_machines", "< 10 s", large_checks),
        Step("hierarchy chain 60k (both orders)", "test_loader::test_a_long_parent_chain_is_checked_in_linear_time",
             "< 5 s", long_chain),
        Step("heuristics refuse 10^9 machines",
             "test_heuristics_flat::test_huge_counts_are_refused_before_anything_per_machine", "< 5 s each",
             huge_counts),
        Step("spacetime-cp refuses 10^6 tasks", "test_spacetime_cp::test_a_million_tasks_are_refused_up_front",
             "< 30 s", million_tasks),
        Step("GA past its deadline", "test_rcpsp_ga::test_stops_at_the_lower_bound_and_at_the_deadline", "< 5 s",
             ga_past_deadline),
        Step("LNS stalls", "test_spacetime_cp::test_lns_gives_its_time_back_once_stalled", "< 30 s", lns_stall),
        Step("search by parts stalls (60 s limit)",
             "test_spacetime_decompose::test_a_search_by_parts_that_stalls_before_its_limit_is_feasible_not_time_limit",
             "< 30 s", decompose_stall),
        Step("time limit: MILP backends, S = 0.05 each", "test_backends::test_milp_time_limit_returns_cleanly",
             "< 30 s each", milp_backends),
        *(Step(f"time limit: {case}", f"test_time_limits::test_the_limit_bounds_the_whole_call[{case}]",
               f"<= S + 5 = {LIMIT + 5:g} s", limit_case(case), LIMIT) for case in sorted(CASES)),
        Step("time limit: CLI dag60 spacetime (fresh process)",
             "test_time_limits::test_the_cli_counts_reading_the_file", f"<= S + 8 = {LIMIT + 8:g} s, solve() <= S",
             cli_dag60, LIMIT),
        Step("time limit: hdrf pooled 30k leaves", "test_hdrf::test_time_limit_returns_the_allocation_grown_so_far",
             "<= S + 5 s", hdrf_limit("pooled", 30000, None, 0.2), 0.2),
        Step("time limit: hdrf servers 400 leaves", "test_hdrf::test_time_limit_returns_the_allocation_grown_so_far",
             "<= S + 5 s", hdrf_limit("servers", 400, 60, 0.3), 0.3),
        Step("time limit: naive + dynamic H-DRF, 4 x 123,456 cpu (2 calls)",
             "test_simulator::test_a_simulation_stops_at_the_time_limit_with_what_it_placed", "<= S + 8 s each",
             simulated_hdrf, 2.0),
        Step("time limit: spacetime-cp 5,113 tasks", "test_spacetime_cp::test_time_limit_bounds_warm_start_and_search",
             "<= S + 4 s", spacetime_cp_5113, 2.0),
        Step("time limit: 4 DAG heuristics, TPC-H 30 queries, S = 0.3 each",
             "test_dag_heuristics::test_dag_heuristics_stop_at_the_time_limit_with_a_verified_partial_schedule",
             "<= S + 5 s each", tpch_heuristics, 1.2),
        Step("time limit: spacetime-cp TPC-H 5 queries, 2 workers",
             "test_time_limits::test_spacetime_cp_keeps_a_limit_its_workers_spend_loading", "<= S + 2 s",
             tpch_spacetime_cp, 6.0),
    ]  # fmt: skip
    return steps


def measure(step: Step, data_dir: Path | None) -> dict[str, Any]:
    try:
        call = step.setup(data_dir)
    except Skip as skipped:
        return {"step": step.name, "skipped": str(skipped)}
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    note = call()
    wall = time.perf_counter() - started
    row: dict[str, Any] = {"step": step.name, "test": step.test, "was": step.was, "wall_s": round(wall, 2),
                           "limit_s": step.limit_s, "note": note, "load_before": round(load_before, 2),
                           "load_after": round(os.getloadavg()[0], 2)}  # fmt: skip
    if step.limit_s is not None:
        row["over_s"] = round(wall - step.limit_s, 2)
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Unit-test timings: the wall times the tests no longer assert",
        "",
        "Each step a unit test used to time (its bound then in *was*), timed once in this process after the "
        "imports and after building its instance; the test now checks it by counted work or by what the code "
        "records (tests/work.py). S is the time limit a call was given and over = wall - S. Load = the 1-minute "
        "load average before / after the step (2 cores, shared machine).",
        "",
        "| step | wall s | S | over s | was | load | note | test |",
        "|---|---:|---:|---:|---|---|---|---|",
    ]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['step']} | - | | | | | skipped: {r['skipped']} | |")
            continue
        limit = "" if r["limit_s"] is None else f"{r['limit_s']:g}"
        over = "" if "over_s" not in r else f"{r['over_s']:+.2f}"
        note = str(r["note"]).replace("|", "/")
        lines.append(f"| {r['step']} | {r['wall_s']:.2f} | {limit} | {over} | {r['was']} | "
                     f"{r['load_before']:.1f} / {r['load_after']:.1f} | {note} | `{r['test']}` |")  # fmt: skip
    lines += ["", load_line()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("--only", nargs="*", help="run only the steps whose name contains one of these words")
    args = parse.parse_args(argv)
    data_dir = data_dir_or_none(args.data_dir)
    from fairpack.solver.api import solve  # noqa: F401  (imports out of the first row)
    from fairpack.solver.spacetime.rcpsp_ga import warm_up

    warm_up()  # numba's compilation too
    rows = []
    for step in _steps():
        if args.only and not any(word in step.name for word in args.only):
            continue
        row = measure(step, data_dir)
        print(json.dumps(row), flush=True)
        rows.append(row)
    save("unit_timings", {"rows": rows}, markdown(rows), args.out)


if __name__ == "__main__":
    main()
