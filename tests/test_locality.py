"""Data locality and delay scheduling (Zaharia et al., EuroSys'10): data placement in instances, per-machine
durations in the simulator and the checker, the fifo / fair / delay policies, the paper's analysis.

Hand cases derive every number by hand. The analysis test compares the simulated locality of single-task
jobs against ``1 - (1 - p)^D`` with a binomial error bar; its seeds are fixed.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from fairpack.models.check import verify_schedule
from fairpack.models.io import instance_to_yaml, parse_instance
from fairpack.models.result import Schedule
from fairpack.models.types import DataPlacement, Instance, InstanceError, Job, ServerClass, Stage
from fairpack.solver.api import simulate

#: Two racks: r1 holds a/0 and a/1, r2 holds b (one machine).
RACKED = """
resources: [slot]
servers:
  - {name: a, capacity: {slot: 2}, count: 2, labels: {rack: r1}}
  - {name: b, capacity: {slot: 2}, labels: {rack: r2}}
jobs:
  - name: j
    stages:
      - {name: map, tasks: 2, duration: 3, demand: {slot: 1}, input: [b1, b2]}
blocks:
  b1: [a/0, b]
  b2: [a/1]
locality: {rack: 1.5}
"""


def _load(text: str = RACKED) -> Instance:
    return parse_instance(text, "racked.yaml")


# --- data placement in instance files -----------------------------------------------------------------


def test_blocks_labels_and_locality_are_read_and_written_back() -> None:
    instance = _load()
    assert instance.servers[0].label("rack") == "r1" and instance.servers[1].label("rack") == "r2"
    assert instance.data == DataPlacement(("b1", "b2"), ((0, 2), (1,)), (1.0, 1.5, 2.0))
    assert instance.machine_racks().tolist() == [0, 0, 1]
    assert instance.jobs[0].stages[0].input == ("b1", "b2")
    assert parse_instance(instance_to_yaml(instance), "again.yaml") == instance


def test_default_locality_factors_are_the_papers_up_to_twice_as_long() -> None:
    instance = _load(RACKED.replace("locality: {rack: 1.5}\n", ""))
    assert instance.data is not None and instance.data.factors == (1.0, 1.3, 2.0)


@pytest.mark.parametrize(
    ("old", "new", "field", "reason"),
    [
        ("b2: [a/1]", "b2: [a/2]", "blocks.b2[0]", "unknown machine 'a/2'"),
        # Digits int() reads (or chokes on) but a machine number is not written with: refused, never a crash.
        ("b2: [a/1]", "b2: ['a/\u00b2']", "blocks.b2[0]", "unknown machine 'a/\u00b2'"),
        ("b2: [a/1]", "b2: ['a/\u0661']", "blocks.b2[0]", "unknown machine 'a/\u0661'"),
        ("b2: [a/1]", "b2: [a/" + "1" * 5000 + "]", "blocks.b2[0]", "(server 'a' has machines 0 to 1)"),
        ("b2: [a/1]", "b2: [a/]", "blocks.b2[0]", "unknown machine 'a/' (server 'a' has machines 0 to 1)"),
        ("b2: [a/1]", "b2: [c/0]", "blocks.b2[0]", "no server named 'c'"),
        ("b2: [a/1]", "b2: [a]", "blocks.b2[0]", "has 2 machines"),
        ("b2: [a/1]", "b2: []", "blocks.b2", "at least one replica"),
        ("b2: [a/1]", "b2: [a/1, a/1]", "blocks.b2", "same block twice"),
        ("input: [b1, b2]", "input: [b1, b3]", "jobs[0].stages[0].input[1]", "unknown block 'b3'"),
        ("input: [b1, b2]", "input: [b1]", "jobs[0].stages[0].input", "1 input blocks for 2 tasks"),
        ("{rack: 1.5}", "{rack: 0}", "locality.rack", "must be positive"),
        ("{rack: 1.5}", "{rack: .nan}", "locality.rack", "must be finite"),
        ("{rack: 1.5}", "{remote: 1e9}", "locality.remote", "above the limit"),
        ("{rack: 1.5}", "{rack: 2.5}", "locality.remote", "must not decrease"),
        ("{rack: 1.5}", "{rack: fast}", "locality.rack", "must be a number"),
        ("{rack: 1.5}", "{disk: 2}", "locality.disk", "unknown key"),
        ("labels: {rack: r2}", "labels: {rack: 2}", "servers[1].labels.rack", "must be a string"),
        ("labels: {rack: r2}", "labels: [r2]", "servers[1].labels", "must be a mapping"),
    ],
)
def test_bad_data_placement_names_file_and_field(old: str, new: str, field: str, reason: str) -> None:
    assert old in RACKED
    with pytest.raises(InstanceError) as caught:
        _load(RACKED.replace(old, new))
    assert caught.value.source == "racked.yaml"
    assert caught.value.field == field
    assert reason in caught.value.reason


def test_a_machine_name_that_reads_two_ways_is_refused() -> None:
    """``a/1`` names a one-machine server ``a/1`` and machine 1 of server ``a``: neither is picked silently."""
    servers = "  - {name: b, capacity: {slot: 2}, labels: {rack: r2}}\n"
    two_ways = RACKED.replace(servers, servers + "  - {name: a/1, capacity: {slot: 2}}\n")
    with pytest.raises(InstanceError, match="machine 'a/1' is ambiguous") as caught:
        _load(two_ways)
    assert caught.value.field == "blocks.b2[0]"
    one_way = _load(two_ways.replace("a/1, capacity", "a/x, capacity").replace("b2: [a/1]", "b2: [a/x]"))
    assert one_way.data is not None and one_way.data.replicas[1] == (3,)  # the server a/x: machine 3


def test_an_input_block_needs_a_blocks_section() -> None:
    text = RACKED.split("blocks:")[0]
    with pytest.raises(InstanceError, match="unknown block 'b1'") as caught:
        _load(text)
    assert caught.value.field == "jobs[0].stages[0].input[0]"


# --- durations per machine: simulator and checker -----------------------------------------------------


def test_fifo_runs_each_task_its_duration_times_its_locality_factor() -> None:
    # First fit puts both tasks on a/0: task 0 reads b1 (a replica on a/0: node-local, 3 x 1.0), task 1
    # reads b2 (only on a/1, same rack r1: rack-local, 3 x 1.5 = 4.5).
    result = simulate(_load(), "fifo")
    assert result.verified, result.violations
    schedule = result.schedule
    assert schedule is not None
    assert (schedule.end - schedule.start).tolist() == [3.0, 4.5]
    assert result.extra["locality"] == {"node": 1, "rack": 1, "remote": 0}


def test_checker_rejects_a_duration_that_ignores_locality() -> None:
    instance = _load()
    server, machine = np.array([0, 0]), np.array([0, 0])
    right = Schedule(np.array([0, 0]), np.array([0, 0]), np.array([0, 1]), np.array([0.0, 0.0]),
                     np.array([3.0, 4.5]), None, server, machine)  # fmt: skip
    assert verify_schedule(instance, right).ok
    wrong = replace(right, end=np.array([3.0, 3.0]))  # task 1 as if node-local
    report = verify_schedule(instance, wrong)
    assert not report.ok
    assert any("task 1 runs 3 but its duration is 4.5" in v for v in report.violations)
    # On b (rack r2), task 1 is remote: 3 x 2 = 6; task 0 (b1 has a replica on b) node-local.
    remote = replace(right, server=np.array([1, 1]), machine=np.array([0, 0]), end=np.array([3.0, 6.0]))
    assert verify_schedule(instance, remote).ok
    assert not verify_schedule(instance, replace(remote, end=np.array([3.0, 4.5]))).ok


def test_tasks_without_input_run_their_plain_duration() -> None:
    servers = (ServerClass("m", np.array([1.0]), 2, (("rack", "r"),)),)
    job = Job("j", (Stage("s", 2, 2.0, np.array([1.0])),))
    data = DataPlacement(("x",), ((1,),), (1.0, 1.3, 2.0))
    instance = Instance(("slot",), servers, jobs=(job,), data=data)
    result = simulate(instance, "fifo")
    assert result.verified and result.schedule is not None
    assert (result.schedule.end - result.schedule.start).tolist() == [2.0, 2.0]


def test_pooled_runs_ignore_locality() -> None:
    result = simulate(_load(), "fifo", placement="pooled")
    assert result.verified and result.schedule is not None
    assert (result.schedule.end - result.schedule.start).tolist() == [3.0, 3.0]


# --- policies: hand cases ------------------------------------------------------------------------------


def _remote_choice() -> Instance:
    """m0 (rack r0) holds J's block but runs B (only m0 has a ``pin``) until 5; m2 (rack r1) is free.
    J (3 long) arrives at 1."""
    servers = (ServerClass("m0", np.array([1.0, 1.0]), 1, (("rack", "r0"),)),
               ServerClass("m2", np.array([1.0, 0.0]), 1, (("rack", "r1"),)))  # fmt: skip
    blocker = Job("B", (Stage("s", 1, 5.0, np.array([1.0, 1.0])),))
    reader = Job("J", (Stage("map", 1, 3.0, np.array([1.0, 0.0]), (), ("b",)),), release=1.0)
    data = DataPlacement(("b",), ((0,),), (1.0, 1.3, 2.0))
    return Instance(("slot", "pin"), servers, jobs=(blocker, reader), data=data, name="hand")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fair_takes_the_free_remote_slot_and_delay_waits_for_the_local_one(seed: int) -> None:
    instance = _remote_choice()
    # fair: at 1 the only free slot is m2; J launches there, remote: 3 x 2 = 6, done at 7.
    fair = simulate(instance, "fair", seed=seed)
    assert fair.verified and fair.schedule is not None
    assert fair.schedule.end[1] == 7.0 and fair.extra["locality"] == {"node": 0, "rack": 0, "remote": 1}
    # delay (d1 = 5): J is skipped on m2 at 1 (and at 5 if m2 is offered first); m0 frees at 5, J runs
    # there node-local: 5 + 3 = 8. It waited 4 to save 3: delay scheduling's bet, lost on one task.
    delay = simulate(instance, "delay", seed=seed, extra={"d1": 5, "d2": 0})
    assert delay.verified and delay.schedule is not None
    assert delay.schedule.start[1] == 5.0 and delay.schedule.end[1] == 8.0
    assert delay.extra["locality"] == {"node": 1, "rack": 0, "remote": 0}
    assert delay.extra["skips"] in (1, 2) and fair.extra["skips"] == 0
    # With d1 = 0 (and no rack wait) delay is fair.
    assert simulate(instance, "delay", seed=seed, extra={"d1": 0, "d2": 0}).schedule.end[1] == 7.0  # type: ignore[union-attr]


def test_delay_launches_rack_local_at_the_rack_level() -> None:
    # J's block lives on m1 (rack r0), busy until 5; m0 (rack r0) and m2 (rack r1) are free at 1. With
    # d1 = 0 and d2 = 10, J may go rack-local at once but not remote: it runs on m0, 3 x 1.3 = 3.9.
    servers = (ServerClass("m0", np.array([1.0, 0.0]), 1, (("rack", "r0"),)),
               ServerClass("m1", np.array([1.0, 1.0]), 1, (("rack", "r0"),)),
               ServerClass("m2", np.array([1.0, 0.0]), 1, (("rack", "r1"),)))  # fmt: skip
    blocker = Job("B", (Stage("s", 1, 5.0, np.array([1.0, 1.0])),))
    reader = Job("J", (Stage("map", 1, 3.0, np.array([1.0, 0.0]), (), ("b",)),), release=1.0)
    instance = Instance(("slot", "pin"), servers, jobs=(blocker, reader),
                        data=DataPlacement(("b",), ((1,),), (1.0, 1.3, 2.0)))  # fmt: skip
    for seed in range(4):
        result = simulate(instance, "delay", seed=seed, extra={"d1": 0, "d2": 10})
        assert result.verified and result.schedule is not None
        assert result.schedule.server[1] == 0  # m0
        assert result.schedule.end[1] == pytest.approx(1.0 + 3.9)


def test_fair_serves_the_job_furthest_below_its_share() -> None:
    # One machine with 3 slots; A and C (4 tasks each, 1 long) both arrive at 0. Slot 1: both run 0 tasks,
    # the tie goes to the lower index, A. Slot 2: A runs 1, C 0: C. Slot 3: A and C run 1 each: with equal
    # weights the tie goes to A (A runs 2, C 1); with C weighted 2, C's 1 / 2 is further below (C runs 2).
    servers = (ServerClass("m", np.array([3.0]), 1),)
    one = np.array([1.0])
    for weight, launched in ((1.0, [0, 0, 1]), (2.0, [0, 1, 1])):
        jobs = (Job("A", (Stage("s", 4, 1.0, one),)), Job("C", (Stage("s", 4, 1.0, one),), weight))
        result = simulate(Instance(("slot",), servers, jobs=jobs), "fair")
        assert result.verified and result.schedule is not None
        at_zero = result.schedule.start == 0.0
        assert sorted(result.schedule.job[at_zero].tolist()) == launched


def test_delay_options_are_checked() -> None:
    from fairpack.solver.registry import OptionError

    with pytest.raises(OptionError, match="d1 must be a whole number"):
        simulate(_remote_choice(), "delay", extra={"d1": -1})
    with pytest.raises(OptionError, match="slots must be a positive whole number"):
        simulate(_remote_choice(), "fair", extra={"slots": 0})


def test_slots_option_caps_tasks_per_machine() -> None:
    servers = (ServerClass("m", np.array([4.0]), 2, (("rack", "r"),)),)
    job = Job("j", (Stage("s", 4, 1.0, np.array([1.0])),))
    result = simulate(Instance(("slot",), servers, jobs=(job,)), "fair", extra={"slots": 1})
    assert result.verified and result.schedule is not None
    assert sorted(result.schedule.start.tolist()) == [0.0, 0.0, 1.0, 1.0]


# --- the HDFS-like generator ---------------------------------------------------------------------------


def test_hdfs_placement_puts_one_replica_on_a_rack_and_two_on_another() -> None:
    from fairpack.models.generators.families import FAMILIES

    instance = FAMILIES["hdfs"].instance({"jobs": 20, "machines": 24, "racks": 4}, seed=3)
    assert instance == FAMILIES["hdfs"].instance({"jobs": 20, "machines": 24, "racks": 4}, seed=3)  # seeded
    assert instance.data is not None
    racks = instance.machine_racks()
    assert sorted(set(racks.tolist())) == [0, 1, 2, 3] and np.bincount(racks).tolist() == [6, 6, 6, 6]
    for replicas in instance.data.replicas:
        assert len(replicas) == 3 and len(set(replicas)) == 3
        first, others = racks[replicas[0]], racks[list(replicas[1:])]
        assert others[0] == others[1] != first
    blocks = [b for job in instance.jobs for stage in job.stages for b in stage.input]
    assert sorted(blocks) == sorted(instance.data.names)
    assert parse_instance(instance_to_yaml(instance), "hdfs.yaml") == instance


# --- the paper's analysis -----------------------------------------------------------------------------


def test_the_papers_numbers_follow_from_the_formula() -> None:
    # A job with data on a fraction p of the nodes, offered slots on random nodes, finds a local one
    # within D offers with probability 1 - (1 - p)^D: p = 0.1 gives 0.65 at D = 10 and 0.99 at D = 40.
    from fairpack.solver.sim.policies.locality import local_probability

    assert round(local_probability(0.1, 10), 2) == 0.65 and round(local_probability(0.1, 40), 2) == 0.99
    assert local_probability(0.1, 10) == pytest.approx(0.6513215599, abs=1e-10)
    assert local_probability(0.1, 40) == pytest.approx(0.9852191170, abs=1e-10)
    assert local_probability(0.1, 0) == 0.0 and local_probability(1.0, 1) == 1.0


@pytest.mark.parametrize("d1", [0, 4, 9])
def test_simulated_locality_of_a_single_job_matches_the_formula(d1: int) -> None:
    # A probe allowed d1 skips sees at most d1 + 1 offers, each on a uniformly random machine (the
    # background's exponential durations are memoryless) holding its block with p = 2 / 20: it launches
    # locally with probability q = 1 - (1 - p)^(d1 + 1) -- the paper's 1 - (1 - p)^D with D = d1 + 1 offers
    # (d1 = 9: D = 10, q = 0.65). Probes are independent: the count is binomial, sigma = sqrt(q(1-q)/n).
    from fairpack.models.generators.locality import locality_probe
    from fairpack.solver.sim.policies.locality import local_probability

    probes, p = 300, 0.1
    instance = locality_probe(seed=7, probes=probes, machines=20, holders=2, gap=2.0)
    result = simulate(instance, "delay", seed=7, extra={"d1": d1, "d2": 0})
    assert result.verified, result.violations[:3]
    counts = result.extra["locality"]
    assert sum(counts.values()) == probes
    q = local_probability(p, d1 + 1)
    sigma = math.sqrt(q * (1 - q) / probes)
    assert abs(counts["node"] / probes - q) <= 4 * sigma, (counts, q, sigma)


def test_locality_against_d_rises_to_near_all_local_on_the_hdfs_workload() -> None:
    # Multi-user HDFS workload (60 jobs, Facebook-shaped sizes, 40 machines x 2 slots, 4 racks): naive fair
    # sharing launches whatever the freed slot's job has; a few skips make nearly every task node-local.
    from fairpack.models.generators.families import FAMILIES

    instance = FAMILIES["hdfs"].instance({"jobs": 60, "slots": 2, "interarrival": 4.0, "max_tasks": 200}, seed=1)

    def node_local(policy: str, **extra: int) -> float:
        result = simulate(instance, policy, seed=1, extra=dict(extra))
        assert result.verified, result.violations[:3]
        counts = result.extra["locality"]
        return counts["node"] / sum(counts.values())

    fair, small_d, large_d = node_local("fair"), node_local("delay", d1=5, d2=5), node_local("delay", d1=20, d2=20)
    assert fair < 0.9 < small_d < large_d
    assert large_d >= 0.98


# --- the exact yardstick -------------------------------------------------------------------------------


@pytest.mark.parametrize(("remote", "optimum", "machine"), [(2.0, 5.5, 1), (3.0, 6.0, 0)])
def test_exact_yardstick_weighs_waiting_against_running_remote(remote: float, optimum: float, machine: int) -> None:
    # B runs 0-5 on m0 (JCT 5). J (3 long, arrives at 1, block on m0) either runs remote on m2 at once,
    # ending at 1 + 3 x remote (JCT 3 x remote), or waits for m0: 5-8 (JCT 7). Remote x2: JCT 6 < 7, the
    # optimum (5 + 6) / 2 = 5.5 runs it remote (fair's choice); remote x3: 9 > 7, it waits (delay's).
    from fairpack.solver.spacetime.locality_cp import locality_optimum

    base = _remote_choice()
    assert base.data is not None
    instance = replace(base, data=replace(base.data, factors=(1.0, 1.3, remote)))
    found = locality_optimum(instance, "avg-jct", time_limit=30)
    assert found.optimal and found.objective == pytest.approx(optimum)
    report = verify_schedule(instance, found.schedule, require_placement=True)
    assert report.ok and report.avg_jct == pytest.approx(optimum)
    assert found.schedule.server is not None and found.schedule.server[1] == machine
    fair = simulate(instance, "fair").objective
    delay = simulate(instance, "delay", extra={"d1": 5}).objective
    assert fair is not None and delay is not None
    assert min(fair, delay) == pytest.approx(optimum)


def test_exact_yardstick_bounds_every_policy_on_a_small_hdfs_instance() -> None:
    from fairpack.models.generators.families import FAMILIES
    from fairpack.solver.spacetime.locality_cp import locality_optimum

    params = {"jobs": 3, "machines": 4, "racks": 2, "slots": 1, "max_tasks": 2, "interarrival": 3.0}
    instance = FAMILIES["hdfs"].instance(params, seed=2)
    found = locality_optimum(instance, "avg-jct", time_limit=60)
    assert found.optimal
    report = verify_schedule(instance, found.schedule, require_placement=True)
    assert report.ok and report.avg_jct == pytest.approx(found.objective)
    for policy, extra in (("fifo", {}), ("fair", {}), ("delay", {"d1": 2, "d2": 2})):
        value = simulate(instance, policy, extra=extra).objective
        assert value is not None and value >= found.objective - 1e-9


def test_locality_cp_is_the_yardstick_from_the_cli_with_its_bound_and_time_limit() -> None:
    """``locality-cp`` (the method) returns the proven optimum of the hand case, verified per machine with the
    durations locality dictates, T_k reported beside it; a limit too short for a schedule says so."""
    from fairpack.solver.api import solve

    base = _remote_choice()
    assert base.data is not None
    instance = replace(base, data=replace(base.data, factors=(1.0, 1.3, 3.0)))
    result = solve(instance, "locality-cp")
    assert result.status == "optimal" and result.verified and result.objective == pytest.approx(6.0)
    assert result.bound == pytest.approx(6.0) and result.gap == 0
    assert result.schedule is not None and result.schedule.fair_completion is not None
    assert np.all(np.isfinite(result.schedule.fair_completion))
    late = solve(instance, "locality-cp", time_limit=1e-6)
    assert late.status == "error" and not late.verified and late.schedule is None  # no answer: never verified
    assert "CP-SAT stopped at the time limit" in late.message


def test_readme_locality_block_is_the_saved_run() -> None:
    """The delay-scheduling numbers and figure in ``benchmarks/README.md`` are what ``benchmarks.delay_scheduling``
    wrote from its saved run (``make figures`` regenerates them), not hand-copied."""
    import json
    from pathlib import Path

    from benchmarks.delay_scheduling import BEGIN, END, FIGURE, readme_block

    root = Path(__file__).resolve().parents[1]
    saved = json.loads((root / "benchmarks" / "results" / "delay_scheduling.json").read_text())
    readme = (root / "benchmarks" / "README.md").read_text()
    block = readme[readme.index(BEGIN) + len(BEGIN) : readme.index(END)].strip()
    assert block == readme_block(saved, f"results/figures/{FIGURE}").strip()
    assert (root / "benchmarks" / "results" / "figures" / FIGURE).is_file()
    assert saved["sweep"]["grids"], "the yardstick-gap sweep is part of the saved run"


def test_locality_cp_refuses_placement_options_with_the_field() -> None:
    """Found by the fuzz campaign: locality-cp dropped a stage's options and its schedule failed the checker
    ("names no option of its stage", exit 1). It is refused as input instead, pointing to spacetime-cp."""
    from pathlib import Path

    from fairpack.models.io import load_instance
    from fairpack.solver.api import solve
    from fairpack.solver.cli import main

    path = Path(__file__).resolve().parents[1] / "instances" / "tetrisched_gpu.yaml"
    with pytest.raises(InstanceError, match="spacetime-cp") as caught:
        solve(load_instance(path), "locality-cp")
    assert caught.value.field == "jobs[0].stages[0].options"
    assert main(["solve", str(path), "--method", "locality-cp"]) == 2


def test_locality_cp_refuses_a_model_too_large_to_build_within_a_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # 12 tasks on a million machines: the (task, machine) pairs were built in Python for minutes, past any
    # time limit; the model's size is known before building, so it is refused up front, naming its size.
    import fairpack.solver.spacetime.locality_cp as locality_cp
    from fairpack.models.generators.locality import hdfs_jobs
    from fairpack.solver.api import solve

    instance = hdfs_jobs(0, jobs=2, machines=6, racks=3, slots=1, max_tasks=3)
    tasks = sum(stage.tasks for job in instance.jobs for stage in job.stages)
    monkeypatch.setattr(locality_cp, "MAX_PAIRS", tasks * 6 - 1)
    with pytest.raises(InstanceError, match="pairs, above its limit"):
        solve(instance, "locality-cp", time_limit=5)
    monkeypatch.setattr(locality_cp, "MAX_PAIRS", tasks * 6)
    assert solve(instance, "locality-cp", time_limit=30).verified
