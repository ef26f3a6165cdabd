"""``spacetime`` over alternatives (placement options, gangs, utility, input blocks): exact wherever it answers.

The time-indexed MILP of :mod:`fairpack.solver.spacetime.choice_milp` solves what
``spacetime-cp`` solves with :mod:`fairpack.solver.spacetime.choice_cp`; the smallest cases of its three bugs
(precedence, the capacity rows' indexing, locality ignored) have hand-derived optima here, through the command
line and in Python, and a derandomized property compares the two methods' optima on small random instances
with options, gangs, utility curves, deadlines and blocks, pooled and per machine, capped and uncapped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fairpack.models.io import instance_from_dict
from fairpack.models.types import Instance, InstanceError
from fairpack.solver.api import solve
from fairpack.solver.cli import main
from fairpack.solver.registry import OptionError

# ------------------------------------------------------------------------------------ smallest cases

#: One 2-CPU machine. j1 (released at 3): s0 (3) then s1 (2), 1 CPU each; j2 (weight 2, released at 1): one
#: 2-CPU task of 4, the whole machine. j2 first (1-5), then s0 5-8 and s1 8-10: U = -2 (5 - 1) - (10 - 3) = -15.
#: j1 first (s0 3-6, s1 6-8, j2 8-12) or j2 between (s0 3-6, j2 6-10, s1 10-12): -2 x 11 - 5 = -2 x 9 - 9 = -27.
#: The old MILP let s1 start at s0's earliest end (6) though s0 ran 5-8: -13, "optimal", failing the checker.
PRECEDENCE = {
    "name": "precedence", "resources": ["cpu"], "servers": [{"name": "m", "capacity": {"cpu": 2}}],
    "jobs": [
        {"name": "j1", "release": 3, "stages": [
            {"name": "s0", "tasks": 1, "duration": 3, "demand": {"cpu": 1}},
            {"name": "s1", "tasks": 1, "duration": 2, "demand": {"cpu": 1}, "after": ["s0"]}]},
        {"name": "j2", "weight": 2, "release": 1, "stages": [
            {"name": "t", "tasks": 1, "duration": 4, "demand": {"cpu": 2}}]},
    ],
}  # fmt: skip
#: One machine on rack r1; one task: a gang in one rack (2), or anywhere (5). A gang of one is in r1: 2.
RACK = {
    "name": "rack", "resources": ["cpu"], "servers": [{"name": "m", "capacity": {"cpu": 1}, "labels": {"rack": "r1"}}],
    "jobs": [{"name": "j", "stages": [{"name": "s", "tasks": 1, "demand": {"cpu": 1},
                                       "options": [{"same": "rack", "duration": 2}, {"duration": 5}]}]}],
}  # fmt: skip
#: One GPU machine; one task: 1 on a GPU machine, 4 anywhere: 1.
GPU = {
    "name": "gpu", "resources": ["cpu"],
    "servers": [{"name": "g", "capacity": {"cpu": 1}, "labels": {"gpu": "true"}}],
    "jobs": [{"name": "j", "stages": [{"name": "s", "tasks": 1, "demand": {"cpu": 1},
                                       "options": [{"on": {"gpu": "true"}, "duration": 1}, {"duration": 4}]}]}],
}  # fmt: skip
#: Three one-slot machines: a/0 and a/1 on rack r1, b on r2; block b1 on a/0, b2 on b; three maps (3 each,
#: reading b1, b2, b1) then a reduce (1). Factors 1, 1.3 (rack), 2 (remote). At most two maps are node-local
#: (b1's only replica is a/0, b2's is b), so in parallel the third runs 3.9 at best (b1 on a/1, same rack);
#: one after another on a/0 ends at 6. Maps end at 3.9, the reduce at 4.9. Base durations everywhere (the old
#: MILP's answer, "optimal"): 4, which is the pooled optimum, where locality is ignored.
BLOCKS = {
    "name": "blocks", "resources": ["slot"],
    "servers": [{"name": "a", "capacity": {"slot": 1}, "count": 2, "labels": {"rack": "r1"}},
                {"name": "b", "capacity": {"slot": 1}, "labels": {"rack": "r2"}}],
    "jobs": [{"name": "j", "stages": [
        {"name": "map", "tasks": 3, "duration": 3, "demand": {"slot": 1}, "input": ["b1", "b2", "b1"]},
        {"name": "reduce", "tasks": 1, "duration": 1, "demand": {"slot": 1}, "after": ["map"]}]}],
    "blocks": {"b1": ["a/0"], "b2": ["b"]},
}  # fmt: skip

#: (case, instance, options, hand-derived optimum).
SMALLEST = [
    ("precedence", PRECEDENCE, {"objective": "utility", "fair_cap": False}, -15.0),
    ("rack-gang", RACK, {"objective": "utility", "fair_cap": False}, -2.0),
    ("rack-gang-capped", RACK, {"objective": "makespan"}, 2.0),
    ("gpu", GPU, {"objective": "avg-jct", "fair_cap": False}, 1.0),
]


def _cli_args(options: dict[str, Any]) -> list[str]:
    args = ["--objective", options["objective"]]
    if options.get("fair_cap") is False:
        args.append("--no-fair-cap")
    if "placement" in options:
        args += ["--placement", options["placement"]]
    return args


@pytest.mark.parametrize(("case", "spec", "options", "optimum"), SMALLEST, ids=[c[0] for c in SMALLEST])
def test_smallest_cases_reach_the_hand_derived_optimum(case: str, spec: dict[str, Any], options: dict[str, Any],
                                                       optimum: float) -> None:  # fmt: skip
    instance = instance_from_dict(spec)
    for method in ("spacetime", "spacetime-cp"):
        result = solve(instance, method, time_limit=60, **options)
        assert result.verified, (case, method, result.violations)
        assert result.status == "optimal", (case, method, result.message)
        assert result.objective == pytest.approx(optimum), (case, method)
        assert result.bound == pytest.approx(optimum), (case, method)


@pytest.mark.parametrize(("case", "spec", "options", "optimum"), SMALLEST, ids=[c[0] for c in SMALLEST])
def test_smallest_cases_through_the_command_line(tmp_path: Path, case: str, spec: dict[str, Any],
                                                 options: dict[str, Any], optimum: float) -> None:  # fmt: skip
    path, out = tmp_path / f"{case}.yaml", tmp_path / "result.json"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    code = main(["solve", str(path), "--method", "spacetime", *_cli_args(options), "--json", "-o", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["status"] == "optimal" and data["verified"] is True
    assert data["objective"] == pytest.approx(optimum) and data["bound"] == pytest.approx(optimum)
    # fairpack check applies an option that loosens its rules (--no-fair-cap) only when given it too.
    loosening = [arg for arg in _cli_args(options) if arg == "--no-fair-cap"]
    assert main(["check", str(path), str(out), *loosening]) == 0


def test_a_child_stage_waits_for_its_parent_as_it_ran() -> None:
    """The precedence case's schedule: j2 first, then s0 and s1 one after the other."""
    result = solve(instance_from_dict(PRECEDENCE), "spacetime", objective="utility", fair_cap=False)
    schedule = result.schedule
    assert schedule is not None
    rows = {(int(j), int(s)): (float(b), float(e)) for j, s, b, e in
            zip(schedule.job, schedule.stage, schedule.start, schedule.end, strict=True)}  # fmt: skip
    assert rows == {(1, 0): (1.0, 5.0), (0, 0): (5.0, 8.0), (0, 1): (8.0, 10.0)}


@pytest.mark.parametrize("objective", ["makespan", "utility"])
def test_locality_on_machines_is_refused_before_solving(objective: str) -> None:
    """spacetime does not solve data locality on machines (too many start variables to solve): it refuses,
    naming the field and spacetime-cp, which finds the hand-derived optimum 4.9; pooled, both ignore locality."""
    instance = instance_from_dict(BLOCKS)
    with pytest.raises(InstanceError, match=r"does not solve data locality.*use spacetime-cp") as caught:
        solve(instance, "spacetime", objective=objective, fair_cap=False, placement="servers")
    assert caught.value.field == "jobs[0].stages[0].input"
    sign = -1.0 if objective == "utility" else 1.0
    exact = solve(instance, "spacetime-cp", objective=objective, fair_cap=False, placement="servers")
    assert exact.status == "optimal" and exact.verified and exact.objective == pytest.approx(sign * 4.9)
    maps = np.flatnonzero(exact.schedule.stage == 0)
    assert sorted(np.round(exact.schedule.end[maps] - exact.schedule.start[maps], 9).tolist()) == [3.0, 3.0, 3.9]
    for method in ("spacetime", "spacetime-cp"):
        pooled = solve(instance, method, objective=objective, fair_cap=False, placement="pooled")
        assert pooled.status == "optimal" and pooled.objective == pytest.approx(sign * 4.0), method


def test_locality_refusal_through_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "blocks.yaml"
    path.write_text(yaml.safe_dump(BLOCKS, sort_keys=False))
    assert main(["solve", str(path), "--method", "spacetime", "--placement", "servers"]) == 2
    err = capsys.readouterr().err
    assert "jobs[0].stages[0].input" in err and "use spacetime-cp --placement servers" in err


# ------------------------------------------------------------------------------------ statuses and sizes


def test_optimal_only_when_the_recomputed_objective_is_the_proven_bound() -> None:
    from fairpack.solver.spacetime.choice_milp import _honest_status

    assert _honest_status(-15.0, -15.0, True) == ("optimal", "")
    status, note = _honest_status(-13.0, -15.0, True)  # the old precedence bug's answer beside the true bound
    assert status == "feasible" and "not the solver's proven bound" in note
    assert _honest_status(2.0, None, True)[0] == "feasible"
    assert _honest_status(2.0, 2.0, False)[0] == "feasible"  # rounded ticks prove nothing


def test_a_run_out_of_time_returns_the_warm_start_never_optimal() -> None:
    """Ten Tetrisched jobs whose optimum misses an SLO leave the completion bounds loose: HiGHS does not prove
    the optimum in 3 s. The answer is the verified warm start, ``time_limit``, with a bound no better than it."""
    from fairpack.models.generators.soft import soft_workload

    instance = soft_workload(seed=5, jobs=10, racks=3, per_rack=3, gpu_racks=1, gpus_per_rack=1)
    result = solve(instance, "spacetime", objective="utility", fair_cap=False, time_limit=3)
    assert result.status == "time_limit" and result.verified
    assert result.bound is None or result.bound >= result.objective - 1e-9


def test_ticks_are_the_coarsest_whole_divisor_of_durations_and_releases() -> None:
    """Durations 1.5 and 3, release 4: ticks of 0.5 (the power of ten would be 0.1, five times more)."""
    from fairpack.solver.spacetime.choice_milp import coarsest_tick
    from fairpack.solver.spacetime.choice_model import build_problem
    from fairpack.solver.spacetime.choices import Units

    spec = {**GPU, "jobs": [{"name": "j", "release": 4, "stages": [
        {"name": "s", "tasks": 1, "demand": {"cpu": 1},
         "options": [{"on": {"gpu": "true"}, "duration": 1.5}, {"duration": 3}]}]}]}  # fmt: skip
    instance = instance_from_dict(spec)
    problem = build_problem(instance, Units.of(instance, "machine"), "makespan")
    assert problem.tick == pytest.approx(0.1) and coarsest_tick(problem) == pytest.approx(0.5)
    result = solve(instance, "spacetime", objective="makespan", fair_cap=False)
    assert result.status == "optimal" and result.objective == pytest.approx(5.5) and result.extra["tick"] == 0.5


# ------------------------------------------------------------------------------------ the property

OBJECTIVES = ("makespan", "avg-jct", "mix", "utility")


@st.composite
def _servers(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One to three server classes, at most four machines: racks r1/r2, some GPU machines, 1-3 CPUs."""
    servers, machines = [], 0
    for c in range(draw(st.integers(1, 3))):
        count = draw(st.integers(1, min(2, 4 - machines)))
        labels = {"rack": draw(st.sampled_from(["r1", "r2"]))}
        if draw(st.booleans()):
            labels["gpu"] = "true"
        servers.append({"name": f"c{c}", "capacity": {"cpu": draw(st.integers(1, 3))}, "count": count,
                        "labels": labels})  # fmt: skip
        machines += count
        if machines >= 4:
            break
    return servers


def _machine_names(servers: list[dict[str, Any]]) -> list[str]:
    return [s["name"] if s["count"] == 1 else f"{s['name']}/{i}" for s in servers for i in range(s["count"])]


@st.composite
def _stage(draw: st.DrawFn, g: int, cpu: int, placed: bool, blocks: int) -> dict[str, Any]:
    """A stage: 1-2 tasks of 1-3 ticks, after some earlier stages; options, gangs and input blocks when placed."""
    tasks = draw(st.integers(1, 2))
    stage: dict[str, Any] = {"name": f"s{g}", "tasks": tasks, "demand": {"cpu": draw(st.integers(1, cpu))}}
    if g:
        after = draw(st.lists(st.integers(0, g - 1), max_size=2, unique=True))
        if after:
            stage["after"] = [f"s{p}" for p in sorted(after)]
    kinds = draw(st.lists(st.sampled_from(["gpu", "gang", "any"]), min_size=1, max_size=2, unique=True)) if (
        placed and draw(st.booleans())) else []  # fmt: skip
    if kinds:
        selectors = {"gpu": {"on": {"gpu": "true"}}, "gang": {"same": "rack"}, "any": {}}
        stage["options"] = [{**selectors[kind], "duration": draw(st.integers(1, 4))} for kind in kinds]
    else:
        stage["duration"] = draw(st.integers(1, 3))
    if blocks and draw(st.booleans()):
        stage["input"] = [f"b{draw(st.integers(0, blocks - 1))}" for _ in range(tasks)]
    return stage


@st.composite
def _job(draw: st.DrawFn, k: int, cpu: int, placed: bool, blocks: int) -> dict[str, Any]:
    stages = [draw(_stage(g, cpu, placed, blocks)) for g in range(draw(st.integers(1, 3)))]
    job: dict[str, Any] = {"name": f"j{k}", "release": draw(st.integers(0, 3)), "weight": draw(st.integers(1, 3)),
                           "stages": stages}  # fmt: skip
    if draw(st.booleans()):  # worth v until t, then falling by a whole slope per unit of time until t + span
        t, span, value, slope = (draw(st.integers(1, 8)), draw(st.integers(1, 4)), draw(st.integers(0, 20)),
                                 draw(st.integers(0, 3)))  # fmt: skip
        job["utility"] = [[t, value], [t + span, value - slope * span]]
    if draw(st.booleans()):
        job["deadline"] = draw(st.integers(2, 12))
    return job


def _spread(n: int) -> st.SearchStrategy[int]:
    """``0 .. n - 1`` about evenly (``sampled_from`` and small integers lean to the first)."""
    return st.integers(0, 10 * n - 1).map(lambda value: value % n)


@st.composite
def choice_cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A small random instance and the options to solve it with (both methods alike)."""
    servers = draw(_servers())
    placed = draw(st.booleans())  # per machine, else pooled (no options then: they select machines)
    machines = _machine_names(servers)
    blocks = max(draw(_spread(4)) - 1, 0)  # none half the time, else one or two blocks
    cpu = min(s["capacity"]["cpu"] for s in servers)
    jobs = [draw(_job(k, cpu, placed, blocks)) for k in range(draw(st.integers(1, 3)))]
    spec: dict[str, Any] = {"name": "random", "resources": ["cpu"], "servers": servers, "jobs": jobs}
    if blocks:
        spec["blocks"] = {f"b{b}": draw(st.lists(st.sampled_from(machines), min_size=1, max_size=2, unique=True))
                          for b in range(blocks)}  # fmt: skip
        spec["locality"] = {"rack": 1.5, "remote": 2}
    options: dict[str, Any] = {"objective": OBJECTIVES[draw(_spread(len(OBJECTIVES)))], "placement":
                               "servers" if placed else "pooled", "fair_cap": draw(_spread(2)) == 0}  # fmt: skip
    if options["objective"] == "mix":
        options["alpha"] = 0.5
    if draw(st.integers(0, 3)) == 0:  # explicit deadlines T_k (some may be unmeetable)
        options["extra"] = {"fair_completion": {job["name"]: draw(st.integers(3, 14)) for job in jobs}}
        # Under --no-fair-cap the slot model ignores given T_k (tests/test_spacetime.py pins it), spacetime-cp
        # and both models over alternatives enforce them: compare where the methods mean the same.
        options["fair_cap"] = True
    return spec, options


def _run(instance: Instance, method: str, options: dict[str, Any]) -> Any:
    try:
        return solve(instance, method, time_limit=60, **options)
    except (OptionError, InstanceError) as error:
        return type(error).__name__


def _events(instance: Instance, options: dict[str, Any], milp: Any) -> None:
    """What the example covers (``--hypothesis-show-statistics``)."""
    event(f"placement {options['placement']}, objective {options['objective']}")
    gangs = any(o.same for job in instance.jobs for stage in job.stages for o in stage.options)
    for name, present in (("options", instance.has_options), ("gangs", gangs), ("blocks", instance.data is not None),
                          ("utility points", any(job.utility for job in instance.jobs)),
                          ("precedence", any(stage.after for job in instance.jobs for stage in job.stages)),
                          ("given deadlines", "extra" in options), ("fair caps", options["fair_cap"])):
        if present:
            event(name)
    event(f"milp: {milp if isinstance(milp, str) else milp.status}")


def _locality_on_machines(instance: Instance, options: dict[str, Any]) -> bool:
    placed = options["placement"] == "servers" or instance.has_options
    return placed and instance.data is not None and any(s.input for job in instance.jobs for s in job.stages)


@settings(derandomize=True, max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])  # fmt: skip
@given(choice_cases())
def test_milp_optimum_is_spacetime_cp_optimum(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """On small random instances with options, gangs, utility curves, deadlines and blocks, pooled and per
    machine, capped and uncapped, ``spacetime`` proves what ``spacetime-cp`` proves: the same status, and when
    optimal the same objective, each schedule verified and equal to its bound. Input blocks read on machines
    it refuses (InstanceError) before solving."""
    spec, options = case
    try:
        instance = instance_from_dict(spec)
    except InstanceError:
        return  # a selector or gang no machine holds: refused by the loader, nothing to compare
    milp, cp = _run(instance, "spacetime", options), _run(instance, "spacetime-cp", options)
    _events(instance, options, milp)
    if _locality_on_machines(instance, options):
        assert milp == "InstanceError", milp
        return
    if isinstance(cp, str) or isinstance(milp, str):
        assert milp == cp, (milp, cp)  # both refuse, with the same kind of error
        return
    for result in (milp, cp):
        if result.status == "optimal":
            assert result.verified, (result.method, result.violations)
            assert result.objective == pytest.approx(result.bound, rel=1e-6, abs=1e-6), result.method
    assert milp.status == cp.status, (milp.status, milp.message, cp.status, cp.message)
    if cp.status == "optimal":
        assert milp.objective == pytest.approx(cp.objective, rel=1e-6, abs=1e-6)
