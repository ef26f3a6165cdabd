"""Lower bounds of the clairvoyant yardstick (``solver.spacetime.bounds``): hand cases and validity."""

from __future__ import annotations

import numpy as np
import pytest

from fairpack.models.generators.families import FAMILIES
from fairpack.solver.api import solve
from fairpack.solver.spacetime.bounds import job_lower_bounds, objective_lower_bound, srpt_completions


def test_srpt_runs_the_shortest_remaining_piece_and_preempts_for_a_shorter_arrival() -> None:
    # B (1) before A (3); C arrives at 1 and runs before A: A ends at 5.
    np.testing.assert_allclose(srpt_completions(np.array([0.0, 0.0, 1.0]), np.array([3.0, 1.0, 1.0])), [5, 1, 2])
    # A runs alone until B (1 unit) arrives at 1 with less left than A's 3: B runs [1, 2], A ends at 5.
    np.testing.assert_allclose(srpt_completions(np.array([0.0, 1.0]), np.array([4.0, 1.0])), [5, 2])
    # An idle gap: the second job arrives after the first is done.
    np.testing.assert_allclose(srpt_completions(np.array([0.0, 10.0]), np.array([2.0, 1.0])), [2, 11])


def test_two_jobs_that_each_need_the_whole_cluster_cannot_both_end_at_their_critical_path() -> None:
    release, critical = np.zeros(2), np.ones(2)
    work = np.ones((2, 1))  # each: the whole of the one resource for one unit
    np.testing.assert_allclose(job_lower_bounds(release, critical, work), [1, 1])  # alone: 1 each
    # Jointly one must wait: sum of completions >= 1 + 2 (SRPT), the optimum; makespan >= 2.
    assert objective_lower_bound(release, critical, work, np.ones(2), 0.0) == pytest.approx(3.0)
    assert objective_lower_bound(release, critical, work, np.zeros(2), 1.0) == pytest.approx(2.0)
    # Unequal weights: SRPT is no longer a bound for the weighted sum, so only the per-job part counts.
    assert objective_lower_bound(release, critical, work, np.array([1.0, 2.0]), 0.0) == pytest.approx(3.0)


@pytest.mark.parametrize("seed", range(4))
def test_the_bound_never_exceeds_a_proven_optimum_and_is_reported(seed: int) -> None:
    instance = FAMILIES["arrivals"].instance({"tenants": 2, "machines": 2, "horizon": 3.0, "mean_duration": 3.0},
                                             seed)  # fmt: skip
    result = solve(instance, "spacetime-cp", time_limit=30, objective="avg-jct", placement="servers")
    assert result.verified and result.status == "optimal"
    assert result.bound is not None and result.bound <= result.objective + 1e-9


def test_a_time_limited_yardstick_reports_at_least_the_pooled_work_bound() -> None:
    # Three one-task jobs at 0 on one machine, each needing all of it for 2: the optimum is (2+4+6)/3 = 4,
    # and SRPT on the pooled work proves it without search.
    from fairpack.models.types import Instance, Job, ServerClass, Stage

    jobs = tuple(Job(f"j{k}", (Stage("s0", 1, 2.0, np.array([1.0])),), 1.0, 0.0) for k in range(3))
    instance = Instance(("cpu",), (ServerClass("m", np.array([1.0]), 1),), jobs=jobs, name="three")
    result = solve(instance, "spacetime-cp", time_limit=10, objective="avg-jct")
    assert result.status == "optimal" and result.objective == pytest.approx(4.0)
    assert result.bound == pytest.approx(4.0)
