"""The activity-list genetic algorithm of spacetime-cp's pooled makespan warm start (solver.spacetime.rcpsp_ga)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairpack.solver.spacetime import cp
from fairpack.solver.spacetime.rcpsp_ga import JUSTIFY_ROUNDS, POPULATION, Rcpsp, evolve
from fairpack.solver.spacetime.warmstart import serial_sgs


def random_rcpsp(seed: int) -> Rcpsp:
    """A random pooled problem: up to 12 stages of 1-3 tasks, 1-3 resources, a random DAG, releases."""
    rng = np.random.default_rng(seed)
    n, n_res = int(rng.integers(2, 13)), int(rng.integers(1, 4))
    capacity = rng.integers(1, 6, size=n_res)
    demand = rng.integers(0, capacity + 1, size=(n, n_res))
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.25]
    return Rcpsp(rng.integers(0, 6, size=n), rng.integers(1, 4, size=n), demand, capacity,
                 rng.integers(0, 4, size=n), np.array(pairs, dtype=np.int64).reshape(-1, 2))  # fmt: skip


def list_schedule(problem: Rcpsp, priority: np.ndarray) -> np.ndarray:
    """The warm start's own serial SGS (every stage its own job, so releases are per stage)."""
    n = problem.tasks.size
    capacity = problem.capacity[None, :].astype(np.float64)
    found = serial_sgs(np.arange(n), problem.tasks, problem.duration, problem.demand.astype(np.float64),
                       problem.release, problem.edges, priority, capacity)  # fmt: skip
    assert found is not None
    return found[0]


def makespan(problem: Rcpsp, start: np.ndarray) -> int:
    return int((start + np.repeat(problem.duration, problem.tasks)).max(initial=0))


def assert_feasible(problem: Rcpsp, start: np.ndarray) -> None:
    """Releases, barriers (every task of a parent ends before any task of its child starts) and capacity."""
    stage = np.repeat(np.arange(problem.tasks.size), problem.tasks)
    end = start + problem.duration[stage]
    assert np.all(start >= problem.release[stage])
    for parent, child in problem.edges.tolist():
        assert start[stage == child].min() >= end[stage == parent].max()
    assert cp.within_capacity(start, end, problem.demand[stage], np.zeros_like(start), problem.capacity[None, :])


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.integers(0, 10**6))
def test_schedules_are_feasible_and_never_worse_than_the_seed(seed: int) -> None:
    problem = random_rcpsp(seed)
    # The seed: stages in the reverse of their number (a poor order), so the GA has something to improve.
    first = list_schedule(problem, -np.arange(problem.tasks.size, dtype=np.float64))
    start, value, _ = evolve(problem, [first], time.perf_counter() + 30, seed, population=8, stall=15)
    assert_feasible(problem, start)
    assert value == makespan(problem, start) <= makespan(problem, first)


def test_finds_the_known_optimum_from_a_poor_seed() -> None:
    # Capacity 3: A and B (demand 2) cannot overlap, C and D (demand 1) fit beside either; C must follow A.
    # The optimum pairs A with D and B with C: 6 = the work bound (18 / 3). The seed runs A, B, then C and D.
    problem = Rcpsp(np.array([3, 3, 3, 3]), np.ones(4, dtype=np.int64), np.array([[2], [2], [1], [1]]),
                    np.array([3]), np.zeros(4, dtype=np.int64), np.array([[0, 2]]))  # fmt: skip
    poor = np.array([0, 3, 6, 6])
    assert_feasible(problem, poor)
    start, value, _ = evolve(problem, [poor], time.perf_counter() + 30, 0)
    assert value == 6 and makespan(problem, start) == 6
    assert_feasible(problem, start)


def test_the_same_seed_gives_the_same_schedule() -> None:
    problem = random_rcpsp(7)
    first = list_schedule(problem, -np.arange(problem.tasks.size, dtype=np.float64))
    runs = [evolve(problem, [first], time.perf_counter() + 60, 3, population=10, stall=20) for _ in range(2)]
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][2] == runs[1][2]


def test_stops_at_the_lower_bound_and_at_the_deadline() -> None:
    problem = random_rcpsp(11)
    first = list_schedule(problem, np.zeros(problem.tasks.size))
    _, _, stats = evolve(problem, [first], time.perf_counter() + 60, 0, lower=10**9)
    assert stats.generations == 0  # the seed already meets the (absurd) bound: nothing to search
    # A deadline already passed: the first population is decoded (each order once and justified forward and
    # backward for at most JUSTIFY_ROUNDS rounds), and no generation after it, however many the stall allows.
    # The work is counted in decoded schedules.
    _, _, stats = evolve(problem, [first], time.perf_counter(), 0, stall=10**9)
    assert stats.generations == 0 and 0 < stats.schedules <= POPULATION * (1 + 2 * JUSTIFY_ROUNDS)


@pytest.mark.data
def test_the_warm_start_of_a_j30_instance_comes_from_the_ga(data_dir: Path) -> None:
    from fairpack.models.psplib import load_psplib

    path = data_dir / "psplib" / "j30" / "j3013_1.sm"
    if not path.exists():
        pytest.skip(f"{path} not found")
    problem = cp._Problem.of(load_psplib(path), "makespan", 0.5, None, "pooled")
    hint = cp._warm_start(problem, cp.Deadline.after(30), seed=0)
    assert hint is not None and problem.feasible(hint.start, hint.machine)
    # The list schedules and heuristics reach 64 at best; the GA finds the proven optimum, 58.
    assert hint.rule == "ga" and hint.value == 58


@pytest.mark.data
def test_a_psplib_solve_with_the_default_fair_cap_runs_the_ga(data_dir: Path) -> None:
    """Through ``solve()`` (the CLI's and the benchmarks' path) a lone job is capped at its fair completion
    time by default; the GA still runs, since it cannot make a lone job later than the seed it starts from."""
    from fairpack.models.psplib import load_psplib
    from fairpack.solver.api import solve

    path = data_dir / "psplib" / "j30" / "j3013_1.sm"
    if not path.exists():
        pytest.skip(f"{path} not found")
    result = solve(load_psplib(path), "spacetime-cp", time_limit=30, objective="makespan", workers=1, seed=0)
    assert result.verified and result.extra["fair_cap"]
    assert result.extra["heuristic"] == "ga" and result.extra["heuristic_objective"] == 58


@pytest.mark.parametrize("seed", [1, 2])
def test_several_jobs_with_many_tasks_per_stage_verify(seed: int) -> None:
    from fairpack.models.generators import random_dag_jobs
    from fairpack.solver.api import solve

    instance = random_dag_jobs(seed, jobs=4, stages_range=(3, 5))
    problem = cp._Problem.of(instance, "makespan", 0.5, None, "pooled")
    assert cp._ga_applies(problem, cp.Deadline.after(5.0)) and int(problem.flat.stage_tasks.max()) > 1
    assert not cp._ga_applies(problem, cp.Deadline.after(None))  # no limit: the exact search alone
    assert not cp._ga_applies(cp._Problem.of(instance, "avg-jct", 0.5, None, "pooled"), cp.Deadline.after(5.0))
    with_ga = cp._warm_start(problem, cp.Deadline.after(5.0), seed=seed)
    saved, cp.GA_SHARE = cp.GA_SHARE, 0.0
    try:
        without = cp._warm_start(problem, cp.Deadline.after(5.0), seed=seed)
    finally:
        cp.GA_SHARE = saved
    assert with_ga is not None and without is not None and with_ga.value <= without.value
    assert problem.feasible(with_ga.start, with_ga.machine)
    result = solve(instance, "spacetime-cp", time_limit=3.0, objective="makespan", workers=1, fair_cap=False)
    assert result.verified and result.objective is not None and result.objective <= with_ga.value + 1e-9
