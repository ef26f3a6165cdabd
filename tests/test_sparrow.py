"""Sparrow's sampling policies on the simulator: message delays, batch vs per-task probes, late binding, the
response-time lower bound, and the Sparrow-like generator."""

from __future__ import annotations

import numpy as np
import pytest

from fairpack.models.generators.short_tasks import sparrow_jobs
from fairpack.models.timeline import job_table
from fairpack.models.types import Instance, Job, ServerClass, Stage
from fairpack.solver.api import simulate
from fairpack.solver.registry import OptionError
from fairpack.solver.sim.policies.sparrow import distinct_machines, response_lower_bound
from fairpack.solver.sim.workload import Workload

RTT = 0.1


def _cluster(machines: int, jobs: list[tuple[float, list[float]]], slots: int = 1) -> Instance:
    """``machines`` workers of ``slots`` slots; jobs ``(release, task durations)``, one stage per task."""
    one = np.ones(1)
    job_list = tuple(Job(f"j{k}", tuple(Stage(f"t{i}", 1, d, one) for i, d in enumerate(lengths)), 1.0, release)
                     for k, (release, lengths) in enumerate(jobs))  # fmt: skip
    return Instance(("slot",), (ServerClass("w", np.array([float(slots)]), machines),), jobs=job_list)


def _run(instance: Instance, policy: str, seed: int = 0, **extra: object):  # type: ignore[no-untyped-def]
    result = simulate(instance, policy, placement="servers", seed=seed, extra={"rtt": RTT, **extra})
    assert result.verified, result.violations
    return result


def _starts(result) -> dict[tuple[int, int], float]:  # type: ignore[no-untyped-def]
    s = result.schedule
    return {(int(j), int(g)): float(t) for j, g, t in zip(s.job, s.stage, s.start, strict=True)}


def test_message_delays_on_an_idle_cluster() -> None:
    """Idle workers: a randomly placed task starts half a round trip after its job arrives (one message); a
    sampled one after 1.5 round trips (probe, reply, task); a late-bound one after 1.5 too (reservation,
    then the ask's round trip, during which the slot is held idle)."""
    instance = _cluster(100, [(1.0, [2.0, 2.0, 2.0])])
    expected = {"random": 1.05, "per-task": 1.15, "batch": 1.15, "late": 1.15}
    runs = {"random": _run(instance, "random"), "per-task": _run(instance, "sparrow", batch=False),
            "batch": _run(instance, "sparrow", late_binding=False), "late": _run(instance, "sparrow")}  # fmt: skip
    for name, result in runs.items():
        assert list(_starts(result).values()) == pytest.approx([expected[name]] * 3), name
    late = runs["late"].extra
    # 2 probes per task: 6 reservations, 3 used (each idling its slot one round trip), 3 cancelled.
    assert (late["probes"], late["requests"], late["cancelled"]) == (6, 3, 3)
    assert late["idle_slot_time"] == pytest.approx(3 * RTT)
    assert runs["batch"].extra["requests"] == 0 and runs["random"].extra["probes"] == 0


def test_sampling_avoids_the_busy_worker_and_random_does_not() -> None:
    """Two one-slot workers, one busy with a long task: with two probes every sampling variant sees both and
    queues the new task at the idle one; a random placement queues it behind the long task for some seed."""
    instance = _cluster(2, [(0.0, [50.0]), (1.0, [1.0])])
    for variant in ({"batch": False}, {"late_binding": False}, {}):
        for seed in range(8):
            assert _starts(_run(instance, "sparrow", seed, **variant))[(1, 0)] == pytest.approx(1.15), variant
    random_starts = [_starts(_run(instance, "random", seed))[(1, 0)] for seed in range(8)]
    assert max(random_starts) > 50 and min(random_starts) == pytest.approx(1.05)


def test_per_task_probes_race_inside_a_job_and_batch_probes_do_not() -> None:
    """A job of two tasks on two idle one-slot workers: per-task sampling probes both workers for each task
    and breaks the tie at random, so for some seed both tasks queue at the same worker; batch sampling puts
    its two tasks on the two least loaded of four probes, always two different workers."""
    instance = _cluster(2, [(0.0, [1.0, 1.0])])
    per_task = [max(_starts(_run(instance, "sparrow", seed, batch=False)).values()) for seed in range(12)]
    assert max(per_task) == pytest.approx(1.15) and min(per_task) == pytest.approx(0.15)
    for seed in range(12):
        assert max(_starts(_run(instance, "sparrow", seed, late_binding=False)).values()) == pytest.approx(0.15)


def test_late_binding_hands_each_freed_slot_the_jobs_next_task() -> None:
    """One two-slot worker, a job of four tasks of lengths 1, 1, 3, 3: late binding sends four reservations
    (probes cycle over the one worker), two asks start at once, and each slot freed asks again, idling one
    round trip per task: tasks start at 0.15, 0.15, 1.25, 1.25 (one ask 0.1 after the end at 1.15)."""
    instance = _cluster(1, [(0.0, [1.0, 1.0, 3.0, 3.0])], slots=2)
    result = _run(instance, "sparrow", probes=1)
    starts = sorted(_starts(result).values())
    assert starts == pytest.approx([0.15, 0.15, 1.25, 1.25])
    assert result.extra["requests"] == 4 and result.extra["cancelled"] == 0


def test_lower_bound_holds_and_the_variants_rank_as_sparrow_reports() -> None:
    """On a loaded cluster of short parallel jobs every job's response time is at least its lower bound
    (longest task, or its work over the cluster), for every policy; and at load 0.9 with exponential
    durations, mean response over the bound ranks random > per-task > batch > batch with late binding."""
    instance = sparrow_jobs(3, machines=20, slots=2, tasks=5, load=0.9, jobs=300, mean_duration=1.0)
    bound = response_lower_bound(Workload.of_jobs(instance, "servers"))
    ratios = {}
    for name, policy, extra in (("random", "random", {}), ("per-task", "sparrow", {"batch": False}),
                                ("batch", "sparrow", {"late_binding": False}), ("late", "sparrow", {}),
                                ("ideal", "monolithic", {"t_job": 0, "t_task": 0})):  # fmt: skip
        result = simulate(instance, policy, placement="servers", seed=1, extra={"rtt": 0.01, **extra}
                          if policy != "monolithic" else extra)  # fmt: skip
        assert result.verified, (name, result.violations)
        jct = job_table(instance, result.schedule)["jct"]
        assert np.all(jct >= bound * (1 - 1e-9)), name
        ratios[name] = float(np.mean(jct / bound))
    assert ratios["random"] > ratios["per-task"] > ratios["batch"] > ratios["late"] > ratios["ideal"] >= 1.0


def test_options_are_checked_and_counters_reach_the_result() -> None:
    instance = _cluster(4, [(0.0, [1.0, 1.0])])
    with pytest.raises(OptionError):
        simulate(instance, "sparrow", placement="servers", extra={"bogus": 1})
    with pytest.raises(ValueError, match="late binding"):
        simulate(instance, "sparrow", placement="servers", extra={"batch": False, "late_binding": True})
    result = simulate(instance, "sparrow", placement="servers", extra={"probes": 3})
    assert result.verified and result.extra["probes"] == 6


def test_distinct_machines() -> None:
    rng = np.random.default_rng(0)
    for machines, count in ((1000, 20), (10, 7), (10, 25)):
        picked = distinct_machines(rng, machines, count)
        assert picked.size == count and picked.min() >= 0 and picked.max() < machines
        assert np.unique(picked).size == min(count, machines)


@pytest.mark.parametrize("durations", ["fixed", "exponential", "lognormal"])
def test_sparrow_generator_offers_its_load(durations: str) -> None:
    instance = sparrow_jobs(4, machines=50, slots=4, tasks=10, load=0.7, jobs=2000, durations=durations)
    assert instance == sparrow_jobs(4, machines=50, slots=4, tasks=10, load=0.7, jobs=2000, durations=durations)
    work = sum(stage.tasks * stage.duration for job in instance.jobs for stage in job.stages)
    span = instance.jobs[-1].release
    tolerance = 0.25 if durations == "lognormal" else 0.08  # heavy tails: the sample mean wanders more
    assert work / (span * 200) == pytest.approx(0.7, rel=tolerance)
    stages = {len(job.stages) for job in instance.jobs}
    assert stages == ({1} if durations == "fixed" else {10})


def _ratios(instance: Instance, policy: str, rtt: float, **extra: object) -> tuple[float, float, float]:
    """Mean and p99 of response time over its lower bound (the policy's yardstick counters), and the slot
    time held idle per task."""
    result = simulate(instance, policy, placement="servers", seed=1, extra={"rtt": rtt, **extra})
    assert result.verified, result.violations
    e = result.extra
    return e["response_ratio_mean"], e["response_ratio_p99"], e["idle_slot_time"] / result.schedule.job.size


def test_batch_beats_per_task_and_late_binding_beats_both_when_durations_vary() -> None:
    """Sparrow's shapes on 20 workers x 4 slots, 400 jobs of 10 tasks with log-normal durations (mean 0.1 s,
    CV 2.9) at load 0.9, round trip 1 ms. Measured (mean / p99 over the bound): per-task 1.435 / 5.15, batch
    1.238 / 4.55, batch + late binding 1.092 / 1.82; late binding idles each task's slot exactly one round trip."""
    instance = sparrow_jobs(1, machines=20, slots=4, tasks=10, load=0.9, jobs=400, durations="lognormal")
    per_task = _ratios(instance, "sparrow", 0.001, batch=False)
    batch = _ratios(instance, "sparrow", 0.001, late_binding=False)
    late = _ratios(instance, "sparrow", 0.001)
    assert per_task[:2] == pytest.approx((1.435, 5.15), abs=0.01)
    assert batch[:2] == pytest.approx((1.238, 4.55), abs=0.01)
    assert late[:2] == pytest.approx((1.092, 1.82), abs=0.01)
    assert per_task[0] > batch[0] > late[0] and per_task[1] > batch[1] > 2 * late[1]
    assert late[2] == pytest.approx(0.001) and batch[2] == per_task[2] == 0.0


def test_late_binding_loses_when_its_idle_round_trip_is_long() -> None:
    """The price of late binding: fixed 0.1 s tasks at load 0.9 (no duration variance to exploit). With a
    1 ms round trip late binding still wins (mean 1.301 vs batch 1.412); with 10 ms every task's slot idles
    10% of a task, the load it sees is 0.99 and it loses (2.183 vs 1.680)."""
    instance = sparrow_jobs(1, machines=20, slots=4, tasks=10, load=0.9, jobs=400, durations="fixed")
    short = (_ratios(instance, "sparrow", 0.001, late_binding=False)[0], _ratios(instance, "sparrow", 0.001)[0])
    long = (_ratios(instance, "sparrow", 0.01, late_binding=False)[0], _ratios(instance, "sparrow", 0.01)[0])
    assert short == pytest.approx((1.412, 1.301), abs=0.01) and short[1] < short[0]
    assert long == pytest.approx((1.680, 2.183), abs=0.01) and long[1] > long[0]


@pytest.mark.parametrize(
    ("family", "policy", "options", "counter"),
    [
        ("sparrow", "random", [], "response_ratio_mean"),
        ("sparrow", "sparrow", ["--option", "batch=false"], "probes"),
        ("sparrow", "sparrow", ["--option", "late_binding=false,probes=3"], "probes"),
        ("sparrow", "sparrow", ["--option", "rtt=0.005"], "idle_slot_time"),
        ("sparrow", "monolithic", ["--option", "t_job=0,t_task=0"], "wait_mean"),
        ("omega", "omega", ["--option", "schedulers=4,t_job=2"], "conflict_fraction"),
        ("omega", "monolithic", [], "busy_time"),
    ],
)
def test_generate_then_simulate_from_the_cli(family: str, policy: str, options: list[str], counter: str,
                                             tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    """As a user runs them: ``fairpack generate FAMILY`` to a file, ``fairpack simulate`` on it."""
    import json

    from fairpack.solver.cli import main

    path = tmp_path / f"{family}.yaml"
    size = ["--machines", "10", "--jobs", "40"] if family == "sparrow" else ["--machines", "10", "--param", "span=120"]
    assert main(["generate", family, "--seed", "2", *size]) == 0
    path.write_text(capsys.readouterr().out)
    assert main(["simulate", str(path), "--policy", policy, *options, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verified"] and data["policy"] == policy and counter in data
    assert main(["simulate", str(path), "--policy", policy, *options]) == 0
    assert counter in capsys.readouterr().out  # the table shows the policy's counters


@pytest.mark.parametrize(
    ("policy", "option", "named"),
    [("sparrow", "probes=0", "probes"), ("sparrow", "batch=maybe", "batch"), ("random", "rtt=-1", "rtt"),
     ("sparrow", "batch=false,late_binding=true", "late_binding"), ("omega", "schedulers=2.5", "schedulers"),
     ("omega", "detection=sometimes", "detection"), ("monolithic", "t_job=-1", "t_job")],
)  # fmt: skip
def test_bad_settings_exit_2_naming_the_option(policy: str, option: str, named: str, tmp_path,
                                               capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    import json

    from fairpack.models.io import instance_to_dict
    from fairpack.solver.cli import main

    path = tmp_path / "cell.json"
    path.write_text(json.dumps(instance_to_dict(_cluster(4, [(0.0, [1.0, 1.0])]))))
    assert main(["simulate", str(path), "--policy", policy, "--option", option]) == 2
    error = capsys.readouterr().err
    assert f"{named}:" in error and "Traceback" not in error


@pytest.mark.parametrize("policy", ["random", "sparrow", "omega", "monolithic"])
def test_an_instance_without_jobs_is_refused(policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Tenants' endless backlogs are not arrivals of jobs: exit 2 naming the policy, no traceback."""
    from pathlib import Path

    from fairpack.solver.cli import main

    path = Path(__file__).resolve().parents[1] / "instances" / "drfh_fig1.yaml"
    assert main(["simulate", str(path), "--policy", policy]) == 2
    assert "policy:" in capsys.readouterr().err
