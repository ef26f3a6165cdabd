"""Property tests of static H-DRF on random trees (hypothesis, derandomized): it places within
capacity, meets every hierarchical share guarantee on one pool, is Pareto-efficient pooled and on
servers, and a random group of leaves never gains together by misreporting."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairpack.models.check import group_strategyproof, hierarchical_pareto, random_group_misreports, share_guarantee
from fairpack.models.generators import random_tree_instance
from fairpack.solver.api import solve

trees = st.builds(
    random_tree_instance,
    seed=st.integers(0, 10_000),
    leaves=st.integers(2, 14),
    depth=st.integers(1, 4),
    resources=st.integers(1, 4),
    capped_fraction=st.sampled_from([0.0, 0.5, 1.0]),
)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(trees)
def test_pooled_hdrf_meets_guarantees_and_is_pareto(instance) -> None:  # type: ignore[no-untyped-def]
    result = solve(instance, "hdrf", placement="pooled")
    assert result.status == "optimal" and result.verified, result.violations
    guarantee = share_guarantee(instance, result.allocation)
    assert guarantee.holds, guarantee.detail
    ratio = result.extra["min_share_guarantee"]  # None: every node satisfied
    assert result.objective == 0 and (ratio is None or ratio >= 1 - 1e-6)  # no shortfall: every guarantee met
    pareto = hierarchical_pareto(instance, result.allocation)
    assert pareto.holds, pareto.detail


@settings(derandomize=True, max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 10), st.integers(2, 4))
def test_hdrf_on_servers_is_placeable_and_pareto(seed: int, leaves: int, servers: int) -> None:
    instance = random_tree_instance(seed, leaves, 3, 3, servers=servers)
    result = solve(instance, "hdrf", placement="servers")
    assert result.status == "optimal" and result.verified, result.violations
    pareto = hierarchical_pareto(instance, result.allocation)
    assert pareto.holds, pareto.detail


@settings(derandomize=True, max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_groups_gain_nothing_by_misreporting(seed: int) -> None:
    instance = random_tree_instance(seed, 6, 2, 3)
    rng = np.random.default_rng(seed)
    group = sorted(rng.choice(len(instance.tenants), size=2, replace=False).tolist())
    misreports = random_group_misreports(instance, group, 6, seed)
    check = group_strategyproof(
        instance, lambda probe: solve(probe, "hdrf", placement="pooled"), group, misreports, tol=1e-6
    )
    assert check.holds, check.detail
