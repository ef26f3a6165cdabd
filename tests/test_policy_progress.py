"""Every online policy finishes what can run: a run that is not cut short leaves unfinished only jobs that could
never run, and the in-process verification says so, as ``fairpack check`` does of a saved answer.

``tetrisched`` and ``alsched`` used to stall on one job of two independent stages on one machine of 2 cpu and 2 mem
(``s0``: 2 tasks of 2 cpu, ``s1``: 3 tasks of 1 cpu and 2 mem): alsched binds every ready stage's first task to
now, and both cannot start at once; tetrisched's window of three durations cannot hold the job's five serial
ticks. Either way the job was left out of every plan, nothing ran, no event came, and the run ended with every task
unlaunched -- verified, since the in-process verification had no rule for jobs left unfinished. Both now commit the
list schedule's start-now tasks when a plan starts nothing on an idle cluster; the answer is 5, the job's serial
length. Both also crashed (an assertion) on a pooled run, which now plans on the pool.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairpack.models.types import Instance, Job, ServerClass, Stage
from fairpack.solver.api import simulate
from fairpack.solver.registry import OptionError, policies
from fairpack.solver.spacetime import online

JOB_POLICIES = [name for name, record in policies().items() if "jobs" in record.workloads]
#: The planners' cycles kept short and deterministic.
SHORT = {"tetrisched": {"cycle_limit": 0.2, "deterministic": True},
         "alsched": {"cycle_limit": 0.2, "deterministic": True}}  # fmt: skip


def two_stage_job(first: int = 2, second: int = 3) -> Instance:
    stages = (Stage("s0", first, 1.0, np.array([2.0, 0.0])), Stage("s1", second, 1.0, np.array([1.0, 2.0])))
    return Instance(("cpu", "mem"), (ServerClass("m0", np.array([2.0, 2.0]), 1),),
                    jobs=(Job("j0", stages, 1.0, 0.0),), name="two-stages")  # fmt: skip


@pytest.mark.parametrize("placement", ["servers", "pooled"])
@pytest.mark.parametrize("policy", ["tetrisched", "alsched"])
@pytest.mark.parametrize(("first", "second"), [(1, 1), (2, 3)])
def test_the_planners_run_two_stages_that_cannot_start_together(policy: str, placement: str, first: int,
                                                                second: int) -> None:  # fmt: skip
    result = simulate(two_stage_job(first, second), policy, placement=placement, extra=dict(SHORT[policy]))
    assert result.verified, result.violations
    assert result.objective == first + second  # no two tasks overlap (3 cpu or 4 mem): the serial length
    assert result.schedule is not None and result.schedule.job.size == first + second
    # The cases that stalled: alsched always, tetrisched when the job's serial length passes its window (3 ticks).
    assert (result.extra["idle_starts"] >= 1) == (policy == "alsched" or first + second > 3)


def test_a_stalled_run_is_not_verified_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the idle start the planner stalls as it used to; the run is then refused, naming the job and stage.
    monkeypatch.setattr(online.Tetrisched, "start_listed", lambda self, sim, problem, groups: None)
    result = simulate(two_stage_job(), "alsched", extra=dict(SHORT["alsched"]))
    assert not result.verified
    assert result.schedule is not None and result.schedule.job.size == 0
    assert any("job j0 is called unfinished, but stage s0 could run" in v for v in result.violations)


def test_a_run_cut_at_its_horizon_may_leave_runnable_jobs() -> None:
    result = simulate(two_stage_job(), "fifo", extra={"horizon": 1.5})
    assert result.verified and result.extra["unfinished_jobs"] == ["j0"]


@st.composite
def dag_jobs(draw: st.DrawFn) -> Instance:
    servers = tuple(ServerClass(f"m{c}", np.array([float(draw(st.integers(2, 4))), float(draw(st.integers(2, 4)))]),
                                draw(st.integers(1, 2))) for c in range(draw(st.integers(1, 2))))  # fmt: skip
    jobs = []
    for k in range(draw(st.integers(1, 3))):
        stages = []
        for s in range(draw(st.integers(1, 3))):
            demand = np.array([float(draw(st.integers(0, 2))), float(draw(st.integers(0, 2)))])
            demand[0] = max(demand[0], 1.0 - demand[1])  # some demand
            after = (s - 1,) if s > 0 and draw(st.booleans()) else ()
            stages.append(Stage(f"s{s}", draw(st.integers(1, 4)), float(draw(st.integers(1, 3))), demand, after))
        jobs.append(Job(f"j{k}", tuple(stages), 1.0, float(draw(st.integers(0, 3)))))
    return Instance(("cpu", "mem"), servers, jobs=tuple(jobs), name="dags")


@pytest.mark.parametrize("policy", JOB_POLICIES)
@settings(derandomize=True, max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=dag_jobs(), pooled=st.booleans())
def test_every_job_policy_finishes_every_job_it_can_run(policy: str, instance: Instance, pooled: bool) -> None:
    try:
        result = simulate(instance, policy, placement="pooled" if pooled else "servers",
                          extra=dict(SHORT.get(policy, {})))  # fmt: skip
    except OptionError as error:  # a policy that cannot run pooled says so up front, naming the option
        assert pooled and error.field == "placement", error
        return
    assert result.verified, result.violations
    assert result.schedule is not None
    if policies()[policy].saved_rules().stage_rule == "machine":
        # Every stage of these jobs fits some machine (2 cpu and 2 mem at most, machines of 2 to 4), so every task
        # ran (``slots`` may find a task larger than its slot: the verification above excuses exactly those).
        assert result.schedule.job.size == sum(stage.tasks for job in instance.jobs for stage in job.stages)
