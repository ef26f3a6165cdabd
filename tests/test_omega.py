"""Omega's shared-state schedulers and the monolithic scheduler on the simulator: decision times, optimistic
commits and their conflicts (fine and coarse), and the Omega-like generator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairpack.models.generators.short_tasks import omega_jobs
from fairpack.models.types import Instance, Job, ServerClass, Stage
from fairpack.solver.api import simulate, solve
from fairpack.solver.registry import OptionError, policies
from fairpack.solver.sim.policies.omega import Omega


def _cell(cpus: float, jobs: list[tuple[str, float, int, float, float]], machines: int = 1) -> Instance:
    """Jobs ``(tenant, release, tasks, cpu per task, duration)`` on ``machines`` machines of ``cpus`` cpus."""
    job_list = tuple(Job(f"{tenant}{k}", (Stage("s", tasks, duration, np.array([cpu])),), 1.0, release, tenant)
                     for k, (tenant, release, tasks, cpu, duration) in enumerate(jobs))  # fmt: skip
    return Instance(("cpu",), (ServerClass("m", np.array([cpus]), machines),), jobs=job_list)


def _run(instance: Instance, policy: str, **extra: object):  # type: ignore[no-untyped-def]
    result = simulate(instance, policy, placement="servers", seed=0, extra=extra)
    assert result.verified, result.violations
    return result


def _first_starts(result, jobs: int) -> list[float]:  # type: ignore[no-untyped-def]
    first = np.full(jobs, np.inf)
    np.minimum.at(first, result.schedule.job, result.schedule.start)
    return first.tolist()


def test_a_stale_snapshot_conflicts_and_the_job_is_retried() -> None:
    """One 2-cpu machine; a service job and a batch job, each one 2-cpu task, both arriving at 0. Omega with
    two schedulers: both snapshot the empty machine; batch decides in 1 s and starts (runs 1..4); service
    decides in 2 s and its commit at 2 conflicts (the machine is full); its scheduler finds no room until 4,
    decides again in 2 s and starts at 6. The conflicted attempt's 2 s are wasted work."""
    instance = _cell(2, [("service", 0.0, 1, 2.0, 5.0), ("batch", 0.0, 1, 2.0, 3.0)])
    result = _run(instance, "omega", schedulers=2, t_job=1.0, t_task=0.0, t_job_service=2.0)
    assert _first_starts(result, 2) == pytest.approx([6.0, 1.0])
    extra = result.extra
    assert (extra["transactions"], extra["conflicts"], extra["conflicted_tasks"]) == (3, 1, 1)
    assert extra["conflict_fraction"] == pytest.approx(1 / 3)
    assert extra["wasted_time"] == pytest.approx(2.0)
    assert extra["busy_time"] == pytest.approx([4.0, 1.0])
    assert extra["first_attempt_wait"] == pytest.approx(0.0)


def test_monolithic_serialises_the_same_decisions() -> None:
    """The same two jobs through one scheduler: service first (arrival order, then instance order) decides
    0..2 and runs 2..7; batch cannot fit until 7, decides 7..8 and starts at 8. No conflicts, ever."""
    instance = _cell(2, [("service", 0.0, 1, 2.0, 5.0), ("batch", 0.0, 1, 2.0, 3.0)])
    result = _run(instance, "monolithic", t_job=1.0, t_task=0.0, t_job_service=2.0)
    assert _first_starts(result, 2) == pytest.approx([2.0, 8.0])
    assert result.extra["conflicts"] == 0 and result.extra["busy_time"] == pytest.approx([3.0])


def test_monolithic_decision_times_queue_jobs_up() -> None:
    """Five jobs of 4 tasks at 0 on a large cell, t_job 1 and t_task 0.5: each decision takes 3 s, so job i's
    tasks start at 3 (i + 1); a job waits for every decision before it (head-of-line blocking)."""
    instance = _cell(100, [("batch", 0.0, 4, 1.0, 10.0)] * 5)
    result = _run(instance, "monolithic", t_job=1.0, t_task=0.5)
    assert _first_starts(result, 5) == pytest.approx([3.0, 6.0, 9.0, 12.0, 15.0])
    assert result.extra["first_attempt_wait"] == pytest.approx(np.mean([0, 3, 6, 9, 12]))


def test_omega_decides_in_parallel_where_monolithic_queues() -> None:
    """The same five batch jobs with 6 schedulers (one for service, five for batch): all decide at once and
    start at 3; the cell has room for all, so no commit conflicts."""
    instance = _cell(100, [("batch", 0.0, 4, 1.0, 10.0)] * 5)
    result = _run(instance, "omega", schedulers=6, t_job=1.0, t_task=0.5)
    assert _first_starts(result, 5) == pytest.approx([3.0] * 5)
    assert result.extra["conflicts"] == 0
    assert result.extra["busy_time"] == pytest.approx([0.0] + [3.0] * 5)


def test_commits_at_the_same_instant_see_each_other() -> None:
    """Two batch schedulers snapshot one empty 2-cpu machine at 0 and both commit a 2-cpu task at 1: the
    first commit takes the machine, the second conflicts (it must not launch on top: the machine would hold
    4 cpus) and is retried when the room frees at 6, deciding 6..7. With 1-cpu tasks on a 4-cpu machine both
    fit (fine-grained detection), but coarse detection sees the machine changed by the first commit."""
    instance = _cell(2, [("batch", 0.0, 1, 2.0, 5.0), ("batch", 0.0, 1, 2.0, 5.0)])
    result = _run(instance, "omega", schedulers=3, t_job=1.0, t_task=0.0)
    assert _first_starts(result, 2) == pytest.approx([1.0, 7.0])
    assert (result.extra["conflicts"], result.extra["transactions"]) == (1, 3)
    small = _cell(4, [("batch", 0.0, 1, 1.0, 5.0), ("batch", 0.0, 1, 1.0, 5.0)])
    fine = _run(small, "omega", schedulers=3, t_job=1.0, t_task=0.0)
    coarse = _run(small, "omega", schedulers=3, t_job=1.0, t_task=0.0, detection="coarse")
    assert _first_starts(fine, 2) == pytest.approx([1.0, 1.0]) and fine.extra["conflicts"] == 0
    assert _first_starts(coarse, 2) == pytest.approx([1.0, 2.0]) and coarse.extra["conflicts"] == 1


def test_coarse_detection_rejects_a_claim_that_still_fits() -> None:
    """One 4-cpu machine, two 1-cpu tasks decided concurrently: fine-grained detection commits both (the
    machine still holds the second); coarse detection rejects the second (the machine changed) and retries."""
    instance = _cell(4, [("service", 0.0, 1, 1.0, 5.0), ("batch", 0.0, 1, 1.0, 5.0)])
    fine = _run(instance, "omega", t_job=1.0, t_task=0.0, t_job_service=2.0)
    coarse = _run(instance, "omega", t_job=1.0, t_task=0.0, t_job_service=2.0, detection="coarse")
    assert _first_starts(fine, 2) == pytest.approx([2.0, 1.0]) and fine.extra["conflicted_tasks"] == 0
    assert _first_starts(coarse, 2) == pytest.approx([4.0, 1.0]) and coarse.extra["conflicted_tasks"] == 1


def test_omega_on_a_generated_cell() -> None:
    """Batch and service streams: every run verifies; with zero decision times nothing ever conflicts and
    every decision is instant; more schedulers cut the wait of a busy monolithic scheduler."""
    instance = omega_jobs(1, machines=30, load=0.6, span=900.0, batch_tasks=10, batch_duration=30.0)
    assert {job.tenant for job in instance.jobs} == {"batch", "service"}
    ideal = _run(instance, "omega", schedulers=4, t_job=0.0, t_task=0.0)
    assert ideal.extra["conflicts"] == 0 and sum(ideal.extra["busy_time"]) == 0.0
    mono = _run(instance, "monolithic", t_job=2.0)
    many = _run(instance, "omega", schedulers=8, t_job=2.0)
    assert many.extra["first_attempt_wait"] < mono.extra["first_attempt_wait"] / 5
    assert sum(many.extra["busy_time"]) >= sum(mono.extra["busy_time"])  # retries cost decisions too


def test_options_and_listing() -> None:
    instance = _cell(2, [("batch", 0.0, 1, 1.0, 1.0)])
    with pytest.raises(OptionError, match="schedulers"):
        simulate(instance, "monolithic", placement="servers", extra={"schedulers": 3})
    with pytest.raises(ValueError, match="exactly 1"):
        Omega("monolithic", schedulers=3)
    with pytest.raises(ValueError, match="detection"):
        simulate(instance, "omega", placement="servers", extra={"detection": "sometimes"})
    listed = policies()
    assert {"omega", "monolithic", "sparrow", "random"} <= set(listed)
    assert "schedulers" in listed["omega"].extra_keys and "t_job" in listed["monolithic"].extra_keys


def test_omega_generator_offers_its_load() -> None:
    instance = omega_jobs(2, machines=200, load=0.6, span=7200.0, service_share=0.5)
    assert instance == omega_jobs(2, machines=200, load=0.6, span=7200.0, service_share=0.5)
    capacity = np.array([8.0, 32.0])
    offered = {"batch": 0.0, "service": 0.0}
    for job in instance.jobs:
        stage = job.stages[0]
        offered[job.tenant] += stage.tasks * stage.duration * float(np.max(stage.demand / capacity))
    for tenant in offered:
        assert offered[tenant] / (7200.0 * 200) == pytest.approx(0.3, rel=0.2), tenant


def _cell_600s() -> Instance:
    """A 50-machine cell, 307 jobs (3,017 tasks) over 600 s at offered load 0.6, 30% of it service work."""
    return omega_jobs(1, machines=50, load=0.6, span=600.0, service_share=0.3, batch_tasks=10.0,
                      batch_duration=30.0)  # fmt: skip


def test_monolithic_wait_blows_up_with_its_decision_time_and_omega_does_not() -> None:
    """Half a batch job per second: a monolithic scheduler deciding every job in t_job + 0.005 s per task
    is busy 46 s of the 600 at t_job 0.1 s and over 900 s at 3 s, and its mean wait (arrival to last task
    started) goes 0.15 -> 1.48 -> 27.7 -> 180 s for t_job 0.1, 1, 2, 3 s. Omega with 4 schedulers on the
    same decision times stays within 25% of the jobs' own decision time (0.15, 1.11, 2.29, 3.68 s)."""
    cell = _cell_600s()
    mono, omega, floor = [], [], []
    for t_job in (0.1, 1.0, 2.0, 3.0):
        m = _run(cell, "monolithic", t_job=t_job)
        o = _run(cell, "omega", schedulers=4, t_job=t_job)
        mono.append(m.extra["wait_mean"])
        omega.append(o.extra["wait_mean"])
        floor.append(o.extra["decision_floor_mean"])
        assert m.extra["wait_mean"] >= m.extra["decision_floor_mean"] - 1e-9
    assert mono == pytest.approx([0.15, 1.48, 27.71, 179.73], abs=0.01)
    assert omega == pytest.approx([0.15, 1.11, 2.29, 3.68], abs=0.01)
    assert all(f <= w <= 1.25 * f for w, f in zip(omega, floor, strict=True))
    assert mono[3] > 40 * omega[3]


def test_schedulers_scale_until_conflicts_dominate() -> None:
    """Slow batch decisions (t_job 30 s, service 1 s) on the same cell: the mean wait falls as schedulers are
    added (4234, 1210, 138, 50.7, 49.2 s for k = 1, 4, 16, 32, 64) while the fraction of commits that conflict
    climbs (0, 0.006, 0.231, 0.388, 0.400): from 32 to 64 schedulers the wait gains 3% and 40% of commits
    are retried."""
    cell = _cell_600s()
    rows = [_run(cell, "omega", schedulers=k, t_job=30.0, t_job_service=1.0).extra for k in (1, 4, 16, 32, 64)]
    waits = [r["wait_mean"] for r in rows]
    conflicts = [r["conflict_fraction"] for r in rows]
    assert waits == pytest.approx([4233.99, 1210.35, 137.82, 50.66, 49.24], abs=0.01)
    assert conflicts == pytest.approx([0.0, 0.006, 0.231, 0.388, 0.400], abs=0.001)
    assert all(a > b for a, b in itertools.pairwise(waits))
    assert all(a <= b for a, b in itertools.pairwise(conflicts))
    assert rows[-1]["wasted_time"] > 0.1 * sum(rows[-1]["busy_time"])


def test_the_clairvoyant_packing_bounds_every_policy() -> None:
    """A 2-machine cell at offered load 1.2 (11 jobs, 20 tasks): CP-SAT proves the clairvoyant packing's mean
    wait 0.663 s (min avg JCT on one-stage jobs); the zero-decision greedy waits 1.167 s, monolithic with 1 s
    decisions 2.420 s, Omega with 4 schedulers 2.389 s."""
    instance = omega_jobs(1, machines=2, load=1.2, span=60.0, batch_tasks=3.0, batch_duration=20.0,
                          service_tasks=2.0, service_duration=60.0)  # fmt: skip
    exact = solve(instance, "spacetime-cp", placement="servers", objective="avg-jct", time_limit=60, workers=1)
    assert exact.status == "optimal" and exact.verified
    length = np.mean([job.stages[0].duration for job in instance.jobs])
    optimum = exact.objective - length  # every job is one stage of equal tasks: JCT = wait + task length
    waits = [_run(instance, policy, **extra).extra["wait_mean"] for policy, extra in
             (("monolithic", {"t_job": 0.0, "t_task": 0.0}), ("monolithic", {"t_job": 1.0}),
              ("omega", {"schedulers": 4, "t_job": 1.0}))]  # fmt: skip
    assert optimum == pytest.approx(0.663, abs=0.001)
    assert waits == pytest.approx([1.167, 2.420, 2.389], abs=0.001)
    assert min(waits) > optimum
