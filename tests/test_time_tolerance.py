"""One time rule (``models.tolerance``) for the simulator and the checker, at every time scale.

The simulator merged events within a relative ``1e-9 max(1, |t|)`` while the checker compared times on an
absolute ``1e-6`` grid. At times of 1e15 the simulator freed a task 1.5 units before its end (inside its
merge window) and the checker, rightly by its own rule, saw an overload: ``tetris``, ``carbyne``, ``sjf`` and
``drf-dag`` failed verification on a fuzzed instance. At durations of 1e-9 the simulator merged events a
whole task apart (its floor was 1e-9) and the checker accepted a task overlapping another for its whole
length. Now both use ``settled(t) = t - max(TIME_RTOL |t|, TIME_ATOL)``: every policy's schedule is the same
schedule at scale 1e-9, 1 and 1e13 (and verified), and the checker resolves a nanosecond.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fairpack.models.check import verify_schedule
from fairpack.models.diagnose import instance_warnings
from fairpack.models.generators import random_dag_jobs
from fairpack.models.generators.locality import hdfs_jobs
from fairpack.models.io import parse_instance
from fairpack.models.result import Schedule
from fairpack.models.tolerance import TIME_ATOL, TIME_RTOL, settled, settled_all, time_tol
from fairpack.models.types import Instance, InstanceError
from fairpack.solver.api import simulate, solve
from fairpack.solver.registry import policies
from fairpack.solver.sim.policies.dag import HEURISTICS
from fairpack.solver.spacetime.warmstart import schedule_starts

#: The fuzz campaign's input: durations of 1e15 beside durations of 2 and a release of 0.5.
MIXED = """
name: mixed-scales
resources: [cpu]
servers: [{name: node, capacity: {cpu: 2}}]
jobs:
  - name: long
    stages:
      - {name: load, tasks: 1, duration: 2, demand: {cpu: 1}}
      - {name: join, tasks: 1, duration: 2, demand: {cpu: 2}, after: [load]}
  - name: short
    weight: 2
    release: 0.5
    stages:
      - {name: scan, tasks: 2, duration: 1.0e+15, demand: {cpu: 1}}
time: {slot: 5.0e-10}
"""

#: Every online policy that runs jobs (the backlog-only hierarchical ones run no schedule).
JOB_POLICIES = sorted(name for name, policy in policies().items() if "jobs" in policy.workloads)
#: Policy options that are times (they scale with the workload).
TIME_OPTIONS = {"random": ("rtt",), "sparrow": ("rtt",),
                "omega": ("t_job", "t_task"), "monolithic": ("t_job", "t_task")}  # fmt: skip
DEFAULT_TIMES = {"rtt": 0.001, "t_job": 0.1, "t_task": 0.005}


def scaled(instance: Instance, factor: float) -> Instance:
    """The instance with every duration, release and the slot multiplied by ``factor``."""
    jobs = tuple(replace(job, release=job.release * factor,
                         stages=tuple(replace(stage, duration=stage.duration * factor) for stage in job.stages))
                 for job in instance.jobs)  # fmt: skip
    return replace(instance, jobs=jobs, time_slot=instance.time_slot * factor)


def _run(instance: Instance, policy: str, factor: float) -> tuple[bool, tuple[str, ...], Schedule]:
    extra = {key: DEFAULT_TIMES[key] * factor for key in TIME_OPTIONS.get(policy, ())}
    if policy not in policies():
        result = solve(instance, policy)
    else:  # two slots per machine: the default ten are too small for these one-cpu tasks
        result = simulate(instance, policy, extra=extra, **({"slots": 2} if policy == "slots" else {}))
    assert result.schedule is not None
    return result.verified, result.violations, result.schedule


WORKLOADS = {"dag": random_dag_jobs(3, jobs=4, stages_range=(2, 4)), "hdfs": hdfs_jobs(2, jobs=6, machines=6,
                                                                                   racks=2, slots=1)}  # fmt: skip


@pytest.mark.parametrize("factor", [1e-9, 1e13])
@pytest.mark.parametrize("policy", [*JOB_POLICIES, *(f"solve:{name}" for name in HEURISTICS)])
def test_every_policy_schedules_the_same_at_every_time_scale(policy: str, factor: float) -> None:
    name = policy.removeprefix("solve:")
    for label, base in WORKLOADS.items():
        if label == "hdfs" and name not in ("fifo", "fair", "delay"):
            continue
        ok, violations, schedule = _run(scaled(base, factor), name, factor)
        assert ok, (label, violations)
        _, _, reference = _run(base, name, 1.0)
        order, reference_order = np.lexsort((schedule.index, schedule.stage, schedule.job)), np.lexsort(
            (reference.index, reference.stage, reference.job))  # fmt: skip
        np.testing.assert_allclose(schedule.start[order] / factor, reference.start[reference_order], rtol=1e-9,
                                   atol=1e-9, err_msg=f"{label}: {name} at scale {factor:g}")  # fmt: skip


@pytest.mark.parametrize("policy", [*JOB_POLICIES, *(f"solve:{name}" for name in HEURISTICS)])
def test_durations_of_1e15_beside_durations_of_2_verify(policy: str) -> None:
    instance = parse_instance(MIXED, "mixed.yaml")
    ok, violations, schedule = _run(instance, policy.removeprefix("solve:"), 1.0)
    assert ok, violations
    assert schedule.end.max() >= 1e15


def test_the_checker_resolves_a_nanosecond() -> None:
    """At scale 1e-9, a task moved half its length into its parent (and into the cluster's only room) is
    rejected; the old absolute 1e-6 grid saw every time as 0 and accepted it."""
    base = parse_instance(MIXED.replace("1.0e+15", "1"), "small.yaml")
    instance = scaled(base, 1e-9)
    result = solve(instance, "tetris")
    assert result.verified and result.schedule is not None
    schedule = result.schedule
    join = (schedule.job == 0) & (schedule.stage == 1)
    start, end = schedule.start.copy(), schedule.end.copy()
    start[join] -= 1e-9  # half of its 2e-9 length earlier: overlaps `load` and both `scan` tasks
    end[join] -= 1e-9
    moved = replace(schedule, start=start, end=end)
    report = verify_schedule(instance, moved)
    assert not report.ok
    assert any("before parent stage load ends" in v for v in report.violations)
    assert any("exceeds capacity" in v for v in report.violations)
    longer = replace(schedule, end=np.where(join, schedule.end + 0.5e-9, schedule.end))
    assert any("duration" in v for v in verify_schedule(instance, longer).violations)


def test_a_task_may_start_at_another_end_within_the_shared_resolution() -> None:
    """The checker counts a task ending at ``e`` as gone from ``settled(e)`` (what the simulator frees at an
    event there): a start at ``settled(1e15)`` fits, a start one time unit earlier overloads the cluster."""
    instance = parse_instance("""
resources: [cpu]
servers: [{name: node, capacity: {cpu: 1}}]
jobs:
  - {name: a, stages: [{name: s, tasks: 1, duration: 1.0e+15, demand: {cpu: 1}}]}
  - {name: b, stages: [{name: s, tasks: 1, duration: 1.0e+7, demand: {cpu: 1}}]}
""", "edge.yaml")  # fmt: skip
    for start, ok in ((settled(1e15), True), (settled(1e15) - 1.0, False)):
        schedule = Schedule(np.array([0, 1]), np.array([0, 0]), np.array([0, 0]), np.array([0.0, start]),
                            np.array([1e15, start + 1e7]))  # fmt: skip
        report = verify_schedule(instance, schedule)
        assert report.ok == ok, report.violations


def test_the_rule_is_relative_with_an_absolute_floor_and_identical_in_bulk() -> None:
    assert time_tol(1e15) == TIME_RTOL * 1e15 and time_tol(0.0) == TIME_ATOL and time_tol(1e-9) == TIME_ATOL
    values = np.array([0.0, 1e-12, 0.3, 1.0, 7.5e3, 1e15 + 0.5, 2.0**60])
    assert settled_all(values).tolist() == [settled(float(v)) for v in values]


def test_tasks_below_the_resolution_of_the_schedule_span_are_named() -> None:
    """Beside 1e15-long tasks the 2-long ones are below the resolution (1e-9 of 2e15): validate says so."""
    warnings = instance_warnings(parse_instance(MIXED, "mixed.yaml"))
    assert len(warnings) == 1 and "'long/load', 'long/join'" in warnings[0] and "2e+06" in warnings[0]
    assert not instance_warnings(parse_instance(MIXED.replace("1.0e+15", "1"), "small.yaml"))
    assert not instance_warnings(scaled(parse_instance(MIXED.replace("1.0e+15", "1"), "small.yaml"), 1e-9))


@pytest.mark.filterwarnings("error")
def test_spacetime_refuses_more_slots_than_integers_hold_without_a_warning() -> None:
    """1e15 in slots of 5e-10 is 2e24 slots: casting it to int64 warned ("invalid value encountered in cast")
    and printed a size of 9,223,371,916,854,775,825 nonzeros; a slot of 1e-300 made inf slots. Now the
    span is judged in floats first, and a simulated schedule in such steps is no warm start."""
    instance = parse_instance(MIXED, "mixed.yaml")
    for slot in (5e-10, 1e-300):
        with pytest.raises(InstanceError, match=r"time\.slot: .*MAX_SLOTS = 2\*\*53"):
            solve(replace(instance, time_slot=slot), "spacetime")
    tiny = solve(instance, "tetris").schedule
    assert tiny is not None and schedule_starts(instance, tiny, 1e-300) is None
    assert schedule_starts(instance, tiny, 0.5) is not None
    with pytest.raises(InstanceError, match="MAX_NONZEROS") as refused:  # 4e15 slots: whole, and far too many
        solve(replace(instance, time_slot=0.5), "spacetime")
    size = int(str(refused.value).split("about ")[1].split(" nonzeros")[0].replace(",", ""))
    assert 4e15 <= size < 1e17


#: The same two jobs at one time scale (durations 2 and 1, time slot 1), the second released a nanosecond in.
NANOSECOND_RELEASE = (MIXED.replace("1.0e+15", "1").replace("release: 0.5", "release: 1.0e-9")
                      .replace("time: {slot: 5.0e-10}\n", ""))  # fmt: skip


@pytest.mark.parametrize("method", ["spacetime-cp", "spacetime", "locality-cp"])
def test_a_release_of_a_nanosecond_is_not_read_as_zero(method: str) -> None:
    """The integer models judged a value whole within 1e-9 of their *unit*: at a slot of 1 a release of 1e-9
    became 0, and ``spacetime`` and ``spacetime-cp`` started the short job before its release ("optimal,
    verified NO"). Now every integer model scales by the checker's rule (``solver.spacetime.units``): the
    release is rounded up to a whole tick and the schedule verifies (not called optimal: the ticks rounded),
    or, for ``locality-cp``, which does not round, the instance is refused with the field named."""
    instance = parse_instance(NANOSECOND_RELEASE, "nanosecond.yaml")
    if method == "locality-cp":
        with pytest.raises(InstanceError, match="not whole multiples"):
            solve(instance, method)
        return
    result = solve(instance, method, fair_cap=False)
    assert result.verified and result.schedule is not None, result.message
    short = result.schedule.job == 1
    assert float(result.schedule.start[short].min()) >= 1e-9
    assert result.status == "feasible"  # optimal only for the durations and releases in whole ticks


def test_the_utilisation_series_never_counts_a_task_on_top_of_one_ending_within_the_resolution() -> None:
    # At t = 500 the resolution is 5e-7: b starts 4e-7 before a ends, which the checker accepts (a's capacity
    # is free by settled(500)). The series follows the same rule, so it never reads above the capacity (1.05
    # and 2.0 were printed before).
    from fairpack.models.timeline import utilisation_series

    instance = parse_instance(b"""
resources: [cpu]
servers: [{name: m, capacity: {cpu: 1}}]
jobs:
  - {name: a, stages: [{name: s, tasks: 1, duration: 500, demand: {cpu: 1}}]}
  - {name: b, stages: [{name: s, tasks: 1, duration: 1, demand: {cpu: 1}}]}
""", "yaml", "overlap")  # fmt: skip
    early = 500 - 4e-7
    schedule = Schedule(np.array([0, 1]), np.array([0, 0]), np.array([0, 0]), np.array([0.0, early]),
                        np.array([500.0, early + 1]))  # fmt: skip
    assert verify_schedule(instance, schedule).ok
    series = utilisation_series(instance, schedule)
    assert max(series["cpu"]) == pytest.approx(1.0)
    assert series["cpu"][-1] == 0.0
