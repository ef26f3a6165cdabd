"""The checker's own fair-share schedule (``models.check.fairshare``) gives the solver's fair completion times.

``fairpack check`` recomputes every ``T_k`` a result relies on without importing ``solver``: the ``drf-strict``
schedule simulated again. It must agree with ``solver.sim.fairshare.fair_completion_times`` -- completions
and the shares at arrival -- on every kind of instance: releases and barriers, weights, several resources,
heterogeneous machines, input blocks (locality), placement options, pooled and per machine.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairpack.models.check.fairshare import drf_levels, fair_times, rounded_up, whole_multiples
from fairpack.models.generators.families import FAMILIES
from fairpack.models.io import load_instance
from fairpack.models.types import Instance
from fairpack.solver.sim.fairshare import fair_completion_times
from fairpack.solver.sim.shares import drf_shares
from fairpack.solver.spacetime.fair import slotted
from tests.check_cases import INSTANCES, instance_files

GENERATED = [
    ("dag-random", {"jobs": 6, "release_spread": 5.0}, 1),
    ("dag-random", {"jobs": 8, "resources": 3}, 4),
    ("arrivals", {"tenants": 4, "machines": 6, "horizon": 40.0}, 2),
    ("hdfs", {"jobs": 4, "machines": 6, "racks": 2, "max_tasks": 20, "reduce_tasks": 2}, 3),
    ("sparrow", {"jobs": 8, "machines": 10}, 1),
    ("omega", {"span": 300.0, "machines": 10}, 2),
    ("soft", {"jobs": 8}, 5),
]


def _generated(name: str, params: dict[str, object], seed: int) -> Instance:
    family = FAMILIES[name]
    return family.instance({**{k: v.default for k, v in family.params.items()}, **params}, seed)


@pytest.fixture(scope="module")
def instances(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Instance]:
    files: dict[str, Path] = instance_files(tmp_path_factory.mktemp("instances"))
    found = {name: load_instance(files[name]) for name in INSTANCES}
    found.update({f"{name}-{seed}": _generated(name, params, seed) for name, params, seed in GENERATED})
    return {name: instance for name, instance in found.items() if instance.jobs}


@pytest.mark.parametrize("placement", ["pooled", "servers"])
def test_the_checkers_fair_share_schedule_is_the_solvers(instances: dict[str, Instance], placement: str) -> None:
    compared = 0
    for name, instance in instances.items():
        mine = fair_times(instance, placement, shares=True)
        try:
            theirs = fair_completion_times(instance, placement)
        except Exception:  # a stage that fits no unit of the placement, or runs only as a gang: no T_k
            assert mine is None, name
            continue
        assert mine is not None, name
        np.testing.assert_allclose(mine.completion, theirs.completion, rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(mine.share, theirs.share, rtol=1e-12, atol=1e-15, err_msg=name)
        compared += 1
    assert compared >= 10


def test_drf_levels_are_the_solvers_drf_shares() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        work = rng.random((6, 3)) * (rng.random((6, 3)) > 0.3)
        weights = rng.uniform(0.5, 3, 6)
        present = rng.random(6) > 0.3
        np.testing.assert_array_equal(drf_levels(work, weights, present), drf_shares(work, weights, present))


def test_rounding_to_a_time_unit_is_the_exact_models(instances: dict[str, Instance]) -> None:
    instance = instances["blocks"]
    for unit in (0.3, 0.5, 2.0):
        mine, theirs = rounded_up(instance, unit), slotted(instance, unit)
        assert [job.release for job in mine.jobs] == [job.release for job in theirs.jobs]
        assert [s.duration for job in mine.jobs for s in job.stages] == [
            s.duration for job in theirs.jobs for s in job.stages]  # fmt: skip
    assert whole_multiples(instance, 1.0) and not whole_multiples(instance, 0.3)
