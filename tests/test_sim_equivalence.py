"""The flat policies' schedules are pinned: speed work on the simulator must not move a single task.

Each case is a random small cluster (a few classes of identical machines, one resource some classes lack),
tenants with weights and running-task caps, and DAG jobs arriving over time with ties in releases and
durations (simultaneous events). The fingerprint of every schedule (every task's job, stage, index, start,
end, server class and machine, exactly) was recorded with the simulator as it was before the speed work
(main at d71c5bf); the check is that today's simulator reproduces it bit for bit. The exception: ``fifo`` ignored
the tenants' running-task caps until the engine made them its one rule, and on the nine seeds (1, 6, 7, 8, 9, 11,
12, 14, 15) where its old schedule ran more tasks of a tenant than its cap (the schedule checker now rejects each
of them) its fingerprint is the one recorded with the rule; every other schedule, including fifo's on the seeds
where no cap held it back, is the old one.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairpack.models.result import Schedule
from fairpack.models.types import Instance, Job, ServerClass, Stage, Tenant
from fairpack.solver.api import simulate
from fairpack.solver.sim.cluster import Cluster
from fairpack.solver.sim.policies.flat import best_fitness_machine, best_fitness_run

#: (seed, policy) -> sha256 prefix of the schedule recorded before the speed work.
PINNED: dict[tuple[int, str], str] = {
    (0, "first-fit"): "2d83a630cb748811", (0, "best-fit"): "bb68ecca8f5155c2", (0, "slots"): "f07a676df9395ea1",
    (0, "per-server-drf"): "2d83a630cb748811", (0, "fifo"): "e17bcf40d1527007",
    (1, "first-fit"): "4bc80802a4d80fa8", (1, "best-fit"): "054baba30603fb72", (1, "slots"): "a60c36c52a5cd199",
    (1, "per-server-drf"): "4bc80802a4d80fa8", (1, "fifo"): "95bf02f2c7dd03a0",
    (2, "first-fit"): "b6df3c8401ede94e", (2, "best-fit"): "4a8c48e85ba7099c", (2, "slots"): "6d1da235def3e980",
    (2, "per-server-drf"): "d261ceb7e764181c", (2, "fifo"): "041592f42aebf9d6",
    (3, "first-fit"): "25eb4d9bdee7988e", (3, "best-fit"): "23095290accf76a2", (3, "slots"): "fe5794bf7b87c540",
    (3, "per-server-drf"): "bd5cdd16c881dfc9", (3, "fifo"): "c8dc99757ee10b03",
    (4, "first-fit"): "fbb3e3ba3d3898b4", (4, "best-fit"): "7f1235e83f79a9d0", (4, "slots"): "7eff5e9544af88fd",
    (4, "per-server-drf"): "84acbfce8ecbd8e3", (4, "fifo"): "c8046ca56d81c498",
    (5, "first-fit"): "ad69a3bf6af4d21c", (5, "best-fit"): "9a1d162d64cd4902", (5, "slots"): "81670f53c8a82843",
    (5, "per-server-drf"): "d5e7885519c50351", (5, "fifo"): "37ad5ae650f30155",
    (6, "first-fit"): "b484793fa910712e", (6, "best-fit"): "ae5bf405fdad1eea", (6, "slots"): "05017f62a54d580e",
    (6, "per-server-drf"): "d181b90f603c234d", (6, "fifo"): "c16072cf0f2ed99e",
    (7, "first-fit"): "d6528eab5dcfebe4", (7, "best-fit"): "554bcab3662d9215", (7, "slots"): "173894b7b4af0d37",
    (7, "per-server-drf"): "a07331872e256f98", (7, "fifo"): "72de0f3ba9161288",
    (8, "first-fit"): "8839a3d6f7566dcf", (8, "best-fit"): "fcbb5d0a55b3e477", (8, "slots"): "a3b0383f04be1d8a",
    (8, "per-server-drf"): "11e0fdfa8f0c6f86", (8, "fifo"): "0202e2dd77491edf",
    (9, "first-fit"): "772c7f436cc1264a", (9, "best-fit"): "503adbdd803aa2dc", (9, "slots"): "21e25456b4a2e2d3",
    (9, "per-server-drf"): "64738925e6e8c5b2", (9, "fifo"): "c1bc5fb21e2c9c82",
    (10, "first-fit"): "f46d02a320707267", (10, "best-fit"): "9ab3a6737d83129c", (10, "slots"): "e3b0c44298fc1c14",
    (10, "per-server-drf"): "c861f85db9930fe4", (10, "fifo"): "9f4ead219309f57e",
    (11, "first-fit"): "e6f456608d040f46", (11, "best-fit"): "e6f456608d040f46", (11, "slots"): "22f469733c6a1f22",
    (11, "per-server-drf"): "736c7013df7f041f", (11, "fifo"): "cc9a87d4a19f3d62",
    (12, "first-fit"): "1c27bb8e307b1f45", (12, "best-fit"): "1c27bb8e307b1f45", (12, "slots"): "e3b0c44298fc1c14",
    (12, "per-server-drf"): "4c9e7b6451246680", (12, "fifo"): "119635703fb8cf6d",
    (13, "first-fit"): "16b30fd1afaeb75e", (13, "best-fit"): "3f5bd9ab72babb19", (13, "slots"): "3034500ea3df28e3",
    (13, "per-server-drf"): "51d813e7942342a7", (13, "fifo"): "ec1bcc9d7cd2eb65",
    (14, "first-fit"): "88a7b1b7e5620ba7", (14, "best-fit"): "ac15f3060edf9348", (14, "slots"): "6ff36dcbe5275115",
    (14, "per-server-drf"): "c7b834b11fdccce1", (14, "fifo"): "4141617d9022efc1",
    (15, "first-fit"): "66db51545b0a9e6d", (15, "best-fit"): "3c74f2dcccba0eb9", (15, "slots"): "936167513d233507",
    (15, "per-server-drf"): "f3d0ca2f1c52078e", (15, "fifo"): "8daf7cab473c8b03",
}


def arrivals(seed: int) -> Instance:
    """A random small cluster and jobs arriving over time (module docstring)."""
    rng = np.random.default_rng(seed)
    classes = int(rng.integers(2, 5))
    servers = []
    for c in range(classes):
        capacity = np.round(rng.uniform(2, 10, 3), 1)
        if rng.random() < 0.4:
            capacity[2] = 0.0  # a class without the third resource (as machines without GPUs)
        servers.append(ServerClass(f"m{c}", capacity, int(rng.integers(1, 5))))
    top = np.array([s.capacity for s in servers]).max(axis=0)
    tenants = []
    for i in range(int(rng.integers(2, 6))):
        demand = np.round(rng.uniform(0.2, 0.45, 3) * top, 1) * (rng.random(3) < [1.0, 0.9, 0.3])
        cap = float(rng.integers(2, 8)) if rng.random() < 0.3 else float("inf")
        tenants.append(Tenant(f"u{i}", demand, float(rng.choice([1.0, 2.0, 0.5])), cap))
    jobs = []
    for k in range(int(rng.integers(8, 30))):
        tenant = tenants[int(rng.integers(len(tenants)))]
        stages = []
        for s in range(int(rng.integers(1, 4))):
            demand = tenant.demand if rng.random() < 0.7 else np.round(tenant.demand * rng.uniform(0.5, 1.0), 2)
            after = (s - 1,) if s > 0 and rng.random() < 0.7 else ()
            duration = float(rng.integers(1, 6)) if rng.random() < 0.6 else round(float(rng.uniform(0.5, 5)), 3)
            stages.append(Stage(f"s{s}", int(rng.integers(1, 7)), duration, demand, after))
        release = float(rng.integers(0, 10)) if rng.random() < 0.6 else round(float(rng.uniform(0, 10)), 3)
        jobs.append(Job(f"j{k}", tuple(stages), 1.0, release, tenant.name))
    return Instance(("cpu", "mem", "gpu"), tuple(servers), tuple(tenants), jobs=tuple(jobs), name=f"eq{seed}")


def fingerprint(schedule: Schedule) -> str:
    """sha256 (first 16 hex digits) of every task's row, rows in (job, stage, index) order."""
    assert schedule.server is not None and schedule.machine is not None
    order = np.lexsort((schedule.index, schedule.stage, schedule.job))
    rows = np.column_stack([schedule.job, schedule.stage, schedule.index, schedule.server, schedule.machine])[order]
    times = np.column_stack([schedule.start, schedule.end])[order]
    digest = hashlib.sha256(rows.astype(np.int64).tobytes() + times.astype(np.float64).tobytes())
    return digest.hexdigest()[:16]


@pytest.mark.parametrize("policy", ["first-fit", "best-fit", "slots", "per-server-drf", "fifo"])
@pytest.mark.parametrize("seed", range(16))
def test_flat_schedules_are_those_recorded_before_the_speed_work(policy: str, seed: int) -> None:
    # Two slots per largest machine: every task fits a slot.
    result = simulate(arrivals(seed), policy, **({"slots": 2} if policy == "slots" else {}))
    assert result.verified and result.schedule is not None
    assert fingerprint(result.schedule) == PINNED[(seed, policy)]


@settings(derandomize=True, max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), most=st.integers(1, 40))
def test_a_best_fit_run_places_each_task_where_one_by_one_best_fit_would(seed: int, most: int) -> None:
    instance = arrivals(seed)
    rng = np.random.default_rng(seed)
    batch, single = Cluster(instance, "servers"), Cluster(instance, "servers")
    for cluster in (batch, single):  # the same partly used machines in both
        used = np.random.default_rng(seed).uniform(0, 0.8, cluster.free.shape) * cluster.capacity
        used *= seed % 2  # every other case on empty machines: identical ones tie
        for machine in range(cluster.machines):
            cluster.take(machine, used[machine], 1)
    demand = instance.jobs[int(rng.integers(len(instance.jobs)))].stages[0].demand
    inverse = batch.inverse_total
    expected = []
    for _ in range(most):
        fitting = single.fits(demand)
        if not fitting.any():
            break
        machine = best_fitness_machine(single.free, fitting, demand, inverse)
        expected.append((machine, 1))
        single.take(machine, demand, 1)
    assert best_fitness_run(batch, batch.fits(demand), demand, inverse, most) == expected
