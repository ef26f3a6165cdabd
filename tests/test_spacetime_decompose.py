"""``spacetime-cp`` by parts (``solver.spacetime.decompose``) on small instances."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairpack.models.generators import random_dag_jobs
from fairpack.models.types import Instance, Job, ServerClass, Stage
from fairpack.solver.api import solve
from fairpack.solver.registry import OptionError
from fairpack.solver.spacetime import decompose as dec
from fairpack.solver.spacetime.cp import SpacetimeCp, _horizon, _Problem, _windows


def _pool(jobs: list[Job], capacity: float = 1.0) -> Instance:
    return Instance(("cpu",), (ServerClass("pool", np.array([capacity]), 1),), jobs=tuple(jobs), name="pool")


def _job(name: str, duration: float, tasks: int = 1) -> Job:
    return Job(name, (Stage("s0", tasks, duration, np.array([1.0]), ()),), 1.0, 0.0)


def _cp(instance: Instance, fair: dict[str, float] | None = None) -> SpacetimeCp:
    problem = _Problem.of(instance, "avg-jct", 1.0, fair, "pooled")
    horizon = _horizon(problem, None)
    return SpacetimeCp(problem, horizon, _windows(problem, horizon)).scale_objective()


def _incumbent(cp: SpacetimeCp, order: list[int]) -> tuple[dec.Incumbent, dec.Layout]:
    problem = cp.problem
    layout = dec.Layout.of(problem)
    start = dec.priority_schedule(problem, layout, dec.rank_of(np.array(order)))
    return dec.Incumbent(problem, layout.sorted_within_stages(start), cp.job_coef, cp.makespan_coef), layout


def test_cp_parts_strictly_improve_a_bad_order() -> None:
    """Long job first on a one-slot pool (completions 10, 11, 13) is no local optimum for a model that frees
    whole jobs: CP-SAT puts the short jobs first (1, 3, 13), which a left shift alone cannot do."""
    cp = _cp(_pool([_job("long", 10.0), _job("short", 1.0), _job("mid", 2.0)]))
    incumbent, layout = _incumbent(cp, [0, 1, 2])
    assert incumbent.completion.tolist() == [10, 11, 13]
    assert dec.left_shift(cp.problem, layout, incumbent.start).tolist() == incumbent.start.tolist()
    stats = dec.DecomposeStats()
    best = dec.improve_schedule(incumbent, layout, time.perf_counter() + 5.0, np.random.default_rng(0), 0, 1, stats)
    assert best.score() < incumbent.score()
    assert sorted(best.completion.tolist()) == [1, 3, 13]
    assert stats.improved >= 1
    assert cp.problem.feasible(best.start, np.zeros(best.start.size, dtype=np.int64))


def test_cp_parts_keep_the_fair_deadlines() -> None:
    """With T_k = the incumbent's completions for the long job, CP-SAT may not move it later: the short jobs
    can only go after it, so nothing improves and the incumbent comes back."""
    instance = _pool([_job("long", 10.0), _job("short", 1.0), _job("mid", 2.0)])
    cp = _cp(instance, {"long": 10.0, "short": 100.0, "mid": 100.0})
    incumbent, layout = _incumbent(cp, [0, 1, 2])
    best = dec.improve_schedule(incumbent, layout, time.perf_counter() + 2.0, np.random.default_rng(0), 0, 1,
                                dec.DecomposeStats())  # fmt: skip
    assert best.completion[0] <= 10
    assert best.score() <= incumbent.score()
    assert cp.problem.feasible(best.start, np.zeros(best.start.size, dtype=np.int64))


@settings(derandomize=True, max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), delay=st.integers(1, 30))
def test_left_shift_never_moves_a_task_later(seed: int, delay: int) -> None:
    cp = _cp(random_dag_jobs(seed, jobs=4, stages_range=(2, 4)))
    problem = cp.problem
    layout = dec.Layout.of(problem)
    start = layout.sorted_within_stages(dec.priority_schedule(problem, layout, np.arange(4)) + delay)
    shifted = dec.left_shift(problem, layout, start)
    machine = np.zeros(start.size, dtype=np.int64)
    assert problem.feasible(start, machine) and problem.feasible(shifted, machine)
    assert np.all(shifted <= start)  # both sorted within stages: task by task no later
    assert shifted.min() == 0 or np.any(shifted < start)
    assert dec.left_shift(problem, layout, start, until=0.0).tolist() == start.tolist()  # out of time: as it was


@settings(derandomize=True, max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), fair_cap=st.booleans())
def test_by_parts_verifies_and_is_never_worse_than_its_warm_start(seed: int, fair_cap: bool) -> None:
    instance = random_dag_jobs(seed, jobs=6, stages_range=(2, 4))
    result = solve(instance, "spacetime-cp", time_limit=3.0, workers=1, fair_cap=fair_cap,
                   extra={"decompose": True})  # fmt: skip
    assert result.verified, result.violations
    parts = result.extra["decomposition"]
    warm = parts["warm_starts"]
    assert result.objective is not None and result.objective <= min(warm.values()) * (1 + 1e-9)
    if parts["order_late_ticks"] == 0:  # the job-order schedule meets every cap: the result is no worse
        assert result.objective <= parts["order_objective"] * (1 + 1e-9)
    assert result.status in ("time_limit", "feasible")
    if fair_cap:  # the caps are in the schedule, so the checker held every C_k <= T_k
        assert result.schedule is not None and result.schedule.fair_completion is not None


def test_by_parts_strictly_improves_its_warm_start() -> None:
    """On this mix (8 random DAG jobs, seed 0) the best warm start (SJF, drf-strict, the list schedules by
    job work and critical path) is 91.875 and the job-order moves find a better schedule."""
    result = solve(random_dag_jobs(0, jobs=8, stages_range=(2, 4)), "spacetime-cp", time_limit=5.0, workers=1,
                   fair_cap=False, extra={"decompose": True})  # fmt: skip
    assert result.verified
    parts = result.extra["decomposition"]
    assert result.objective is not None and result.objective < min(parts["warm_starts"].values()) - 1e-9
    assert parts["order_improvements"] >= 1


def test_job_work_order_beats_sjf_when_work_and_critical_path_disagree() -> None:
    """A wide short job (4 tasks of 3 s) and two narrow long ones (one task of 4 s) on 4 cpus: SJF runs the
    wide job first (avg JCT 17/3), Smith's rule on the work runs the narrow ones first (14/3)."""
    wide = Job("wide", (Stage("s0", 4, 3.0, np.array([1.0]), ()),), 1.0, 0.0)
    result = solve(_pool([wide, _job("narrow", 4.0), _job("narrow2", 4.0)], 4.0), "spacetime-cp", workers=1,
                   time_limit=5.0, extra={"decompose": True}, fair_cap=False)  # fmt: skip
    assert result.verified
    assert result.extra["decomposition"]["warm_starts"]["sjf"] == pytest.approx(17 / 3)
    assert result.objective == pytest.approx(14 / 3)


def test_decompose_option() -> None:
    instance = random_dag_jobs(1, jobs=3, stages_range=(2, 3))
    small = solve(instance, "spacetime-cp", time_limit=5.0, workers=1)
    assert "decomposition" not in small.extra  # below DECOMPOSE_MIN_TASKS: the monolithic model
    with pytest.raises(OptionError, match="decompose"):
        solve(instance, "spacetime-cp", extra={"decompose": "yes"})


def test_a_search_by_parts_that_stalls_before_its_limit_is_feasible_not_time_limit() -> None:
    """Forced by parts on instances/dag_two_jobs.yaml (4 tasks), every phase stalls in a second or two of a
    60 s limit: the schedule is unproven but the limit did not stop it, so the status is ``feasible`` (it said
    ``time_limit``). ``"true"`` as a string is accepted, as for every other yes/no setting."""
    from pathlib import Path

    from fairpack.models.io import load_instance

    instance = load_instance(Path(__file__).resolve().parents[1] / "instances" / "dag_two_jobs.yaml")
    result = solve(instance, "spacetime-cp", time_limit=60.0, workers=1, extra={"decompose": "true"})
    assert result.verified and "searched by parts" in result.message
    assert result.status == "feasible", result.status  # the phases stalled: the 60 s limit did not stop them


def _memory_mix() -> Instance:
    """Single-stage jobs on 4 cpus and 8 GB, every task 1 cpu and the job's memory: ``a`` 6 x 2 s at 1 GB,
    ``b`` 2 x 3 s at 0.5 GB (cpu-heavy), ``c`` 6 x 2 s at 4 GB, ``d`` 6 x 3 s at 3 GB (memory-heavy).
    drf-strict finishes them at T = (12, 6, 12, 18), avg JCT 12."""
    spec = (("a", 1.0, 6, 2.0), ("b", 0.5, 2, 3.0), ("c", 4.0, 6, 2.0), ("d", 3.0, 6, 3.0))
    jobs = tuple(Job(name, (Stage("s0", tasks, duration, np.array([1.0, memory]), ()),), 1.0, 0.0)
                 for name, memory, tasks, duration in spec)  # fmt: skip
    return Instance(("cpu", "mem"), (ServerClass("pool", np.array([4.0, 8.0]), 1),), jobs=jobs, name="memory-mix")


def test_bottleneck_list_schedule_meets_the_fair_caps_where_the_plain_one_cannot() -> None:
    """In job-work order (b, a, c, d) the plain list schedule gives the cpu-heavy jobs every cpu at first
    while most of the memory lies idle, and ``d`` ends at 20 > T = 18; making it urgent earlier does not
    help (``repair_order`` fails). Holding the cpus the memory-heavy jobs need to fill the memory (the
    bottleneck) meets every cap, with avg JCT 10.5 against the fair-share schedule's 12."""
    from fairpack.solver.spacetime.fair import fair_share

    instance = _memory_mix()
    share = fair_share(instance, "pooled")
    assert share is not None and share.completion.tolist() == [12.0, 6.0, 12.0, 18.0]
    cp = _cp(instance, dict(zip("abcd", share.completion.tolist(), strict=True)))
    problem = cp.problem
    layout = dec.Layout.of(problem)
    plain = dec.Decoder(problem, layout, cp.job_coef, cp.makespan_coef)
    order = np.argsort(dec.job_priority_keys(problem, cp.relaxation()[2])["job-work"], kind="stable")
    assert order.tolist() == [1, 0, 2, 3]
    start, (late, _) = plain(order)
    assert late > 0 and problem.completions(start)[3] == 20
    assert dec.repair_order(plain, order) is None
    assert dec.bottleneck_of(problem) == 1  # memory: 78 GB x s of work on 8 GB against 38 cpu x s on 4 cpus
    start, (late, _) = replace(plain, bottleneck=1)(order)
    assert late == 0 and problem.completions(start).tolist() == [9, 3, 12, 18]
    assert problem.feasible(start, np.zeros(start.size, dtype=np.int64))
    assert problem.value(start) == pytest.approx(10.5)


def test_warm_starts_under_fair_caps_include_the_bottleneck_list_schedule() -> None:
    result = solve(_memory_mix(), "spacetime-cp", time_limit=5.0, workers=1, extra={"decompose": True})
    assert result.verified, result.violations
    warm = result.extra["decomposition"]["warm_starts"]
    assert warm["drf-strict"] == pytest.approx(12.0)
    assert warm["job-work-bottleneck"] == pytest.approx(10.5)
    assert "job-work" not in warm  # late: not a warm start under the caps
    assert result.objective is not None and result.objective <= 10.5 + 1e-9
