"""``carbyne`` and ``drf-strict`` pick incrementally and ``pack`` runs waves apart; all as before, to the bit.

The reference (``tests/dag_reference.py``) is the code before the change: every pick ranks every pending group
with numpy and Carbyne plans every active job at every event. Random DAG mixes, pooled and on several machines,
with releases, altruism below 1 and Carbyne's ``reverse_order``, must give exactly the same tasks at exactly the
same times on the same machines.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fairpack.models.generators import random_dag_jobs, tpch_jobs
from fairpack.models.generators.soft import soft_workload
from fairpack.models.types import Instance, ServerClass
from fairpack.solver.sim.engine import BasePolicy, Simulation
from fairpack.solver.sim.pack import pack
from fairpack.solver.sim.policies.dag import Carbyne, DrfStrict
from fairpack.solver.sim.workload import Workload
from tests.dag_reference import ReferenceCarbyne, ReferenceDrfStrict, reference_pack


def _run(instance: Instance, policy: BasePolicy, jobs: Workload, placement: str) -> tuple[np.ndarray, ...]:
    sim = Simulation(instance, jobs, policy, placement).run()
    schedule = sim.schedule()
    columns = [schedule.job, schedule.stage, schedule.index, schedule.start, schedule.end]
    if schedule.machine is not None and schedule.server is not None:
        columns += [schedule.server, schedule.machine]
    order = np.lexsort(tuple(reversed(columns[:3])))
    return tuple(column[order] for column in columns)


def _same(instance: Instance, placement: str, make: dict[str, tuple[BasePolicy, BasePolicy]]) -> None:
    jobs = Workload.of_jobs(instance, placement)
    for name, (new, old) in make.items():
        got, expected = _run(instance, new, jobs, placement), _run(instance, old, jobs, placement)
        for a, b in zip(got, expected, strict=True):
            assert np.array_equal(a, b), f"{name} on {placement}: schedules differ"


def _split(instance: Instance, machines: int) -> Instance:
    """The pooled capacity cut into ``machines`` machines of two sizes (every task still fits one of them)."""
    total = instance.servers[0].capacity
    largest = np.max([stage.demand for job in instance.jobs for stage in job.stages], axis=0)
    big = np.maximum(total / machines * 1.5, largest)
    small = np.maximum(total / machines * 0.75, 0.0)
    return replace(instance, servers=(ServerClass("big", big, max(1, machines // 2)),
                                      ServerClass("small", small, max(1, machines - machines // 2))))  # fmt: skip


def _policies(jobs_seed: int, altruism: float, jobs: Workload) -> dict[str, tuple[BasePolicy, BasePolicy]]:
    return {
        "drf-strict": (DrfStrict(jobs), ReferenceDrfStrict(jobs)),
        "carbyne": (Carbyne(jobs, altruism, False, jobs_seed), ReferenceCarbyne(jobs, altruism, False, jobs_seed)),
        "carbyne reverse": (Carbyne(jobs, altruism, True, jobs_seed),
                            ReferenceCarbyne(jobs, altruism, True, jobs_seed)),
        # Plans by the compiled pack (solver.sim.pack_compiled), which Carbyne runs by default on large workloads,
        # against the pure-Python plans (themselves held to the reference just above: a cheaper run than it).
        "carbyne compiled": (Carbyne(jobs, altruism, False, jobs_seed, compiled=True),
                             Carbyne(jobs, altruism, False, jobs_seed, compiled=False)),
    }


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    jobs=st.integers(1, 7),
    resources=st.integers(1, 3),
    barrier_rich=st.booleans(),
    spread=st.sampled_from([0.0, 4.0, 25.0]),
    capacity=st.sampled_from([20.0, 50.0, 100.0]),
    altruism=st.sampled_from([1.0, 1.0, 0.5, 0.0]),
    machines=st.sampled_from([0, 2, 5]),
)
def test_incremental_picks_give_the_reference_schedules(seed: int, jobs: int, resources: int, barrier_rich: bool,
                                                        spread: float, capacity: float, altruism: float,
                                                        machines: int) -> None:  # fmt: skip
    instance = random_dag_jobs(seed, jobs, (1, 5), resources, barrier_rich, capacity, spread)
    placement = "pooled"
    if machines:
        instance, placement = _split(instance, machines), "servers"
    workload = Workload.of_jobs(instance, placement)
    _same(instance, placement, _policies(seed, altruism, workload))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hard_placement_options_give_the_reference_schedules(seed: int) -> None:
    # Only each stage's first option: GPU jobs must land on GPU machines, MPI jobs run as a gang in one rack.
    # A group fits only where an option lets it land (Simulation.fits), not wherever its demand fits.
    instance = soft_workload(seed, jobs=25)
    jobs = tuple(replace(job, stages=tuple(replace(stage, options=stage.options[:1]) for stage in job.stages))
                 for job in instance.jobs)  # fmt: skip
    instance = replace(instance, jobs=jobs)
    workload = Workload.of_jobs(instance, "servers")
    _same(instance, "servers", _policies(seed, 0.5, workload))


@pytest.mark.data
def test_tpch_mix_schedules_equal_the_reference(data_dir: Path) -> None:
    # Stages of one query share one demand (1 cpu and the query's memory): the alignment scores of a job's
    # groups tie exactly and the lower group wins, in the reference and per job alike.
    instance = tpch_jobs(data_dir, [2, 3, 5, 9, 11, 16], seed=3, executors=40, release_spread=20)
    workload = Workload.of_jobs(instance, "pooled")
    _same(instance, "pooled", _policies(3, 1.0, workload))


@pytest.mark.data
def test_carbyne_on_the_36k_tpch_mix_is_the_schedule_recorded_before_the_speed_work(data_dir: Path) -> None:
    # The speed mix (benchmarks/dag_carbyne.py: tpch family, 50 queries, 250 executors, seed 0,
    # 36,008 tasks). sha256 of every task's (job, stage, index) and (start, end), recorded with main at 922b43a,
    # before the steady-batch replay of pack and the shortcuts of Carbyne's picks.
    from fairpack.models.generators.families import FAMILIES

    instance = FAMILIES["tpch"].instance({"queries": 50, "executors": 250}, 0, data_dir)
    jobs = Workload.of_jobs(instance, "pooled")
    schedule = Simulation(instance, jobs, Carbyne(jobs), "pooled").run().schedule()
    order = np.lexsort((schedule.index, schedule.stage, schedule.job))
    rows = np.column_stack([schedule.job, schedule.stage, schedule.index])[order].astype(np.int64)
    times = np.column_stack([schedule.start, schedule.end])[order].astype(np.float64)
    assert len(order) == 36_008
    assert hashlib.sha256(rows.tobytes() + times.tobytes()).hexdigest()[:16] == "0f40e1fa8a4fe970"


@st.composite
def _dags(draw: st.DrawFn) -> tuple:  # type: ignore[type-arg]
    """A random DAG of stages with running tasks, on a capacity that may be a fraction of a task or many."""
    stages = draw(st.integers(1, 6))
    resources = draw(st.integers(1, 3))
    values = st.sampled_from([0.0, 0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 4.0])
    duration = np.array(draw(st.lists(st.sampled_from([0.0, 0.1, 0.3, 1.0, 1.3, 2.0, 7.0]),
                                      min_size=stages, max_size=stages)))  # fmt: skip
    demand = np.array(draw(st.lists(st.lists(values, min_size=resources, max_size=resources),
                                    min_size=stages, max_size=stages)))  # fmt: skip
    count = np.array(draw(st.lists(st.integers(0, 60), min_size=stages, max_size=stages)), dtype=np.float64)
    parents = [tuple(p for p in range(g) if draw(st.booleans())) for g in range(stages)]
    capacity = np.array(draw(st.lists(st.sampled_from([0.7, 1.0, 2.5, 3.0, 6.1, 10.0, 1 / 3]),
                                      min_size=resources, max_size=resources)))  # fmt: skip
    priority = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 2.5, 3.0]), min_size=stages, max_size=stages)))
    running = [(g, draw(st.sampled_from([0.05, 0.1, 0.3, 1.0, 2.2])), draw(st.integers(1, 3)))
               for g in draw(st.lists(st.integers(0, stages - 1), max_size=3))]  # fmt: skip
    return duration, demand, count, parents, capacity, priority, running


ONE = np.ones(1)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_dags())
# A running task larger than the capacity: once it ends, the last task of its stage never fits (inf).
@example((ONE, np.array([[4.0]]), ONE, [()], ONE, ONE, [(0, 0.5, 1)]))
# Waves of 3, then 1 task, while a slower second stage runs beside them.
@example((np.array([1.3, 5.0]), np.array([[1.0], [1.0]]), np.array([10.0, 1.0]), [(), ()], np.array([3.5]),
          np.array([2.0, 1.0]), [(0, 0.2, 3)]))
# Batches of one stage ending in turn (rounds of steady batches), a lower stage ready beside them that never fits.
@example((np.array([1.0, 2.0]), np.array([[1.0, 0.3], [1.0, 0.6]]), np.array([40.0, 5.0]), [(), ()],
          np.array([3.5, 10.0]), np.array([2.0, 1.0]), [(0, 0.2, 2), (0, 0.7, 1)]))
# Steady batches of two stages, each replacing itself: the higher one's tasks do not fit the lower one's room.
@example((np.array([1.3, 1.0]), np.array([[2.0], [1.0]]), np.array([30.0, 30.0]), [(), ()], np.array([3.0]),
          np.array([2.0, 1.0]), [(0, 0.5, 1), (1, 0.2, 1)]))
def test_pack_waves_give_the_reference_pack(dag: tuple) -> None:  # type: ignore[type-arg]
    expected = reference_pack(*dag)
    got = pack(*dag)
    assert got.makespan == expected.makespan or (np.isinf(got.makespan) and np.isinf(expected.makespan))
    assert got.launches == expected.launches
    assert pack(*dag, record=False).makespan == got.makespan


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_dags())
# A running task larger than the capacity: once it ends, the last task of its stage never fits (inf).
@example((ONE, np.array([[4.0]]), ONE, [()], ONE, ONE, [(0, 0.5, 1)]))
# Rounds of steady batches of one stage beside a lower stage that never fits (the compiled `_rounds`).
@example((np.array([1.0, 2.0]), np.array([[1.0, 0.3], [1.0, 0.6]]), np.array([40.0, 5.0]), [(), ()],
          np.array([3.5, 10.0]), np.array([2.0, 1.0]), [(0, 0.2, 2), (0, 0.7, 1)]))
# Steady batches of two stages, each replacing itself.
@example((np.array([1.3, 1.0]), np.array([[2.0], [1.0]]), np.array([30.0, 30.0]), [(), ()], np.array([3.0]),
          np.array([2.0, 1.0]), [(0, 0.5, 1), (1, 0.2, 1)]))
# Thousands of waves (the fixed point of `_waves`), three resources (the general fit test), a zero-duration
# stage between two others (a cascade of completions in one launch pass), and a repeated parent.
@example((np.array([0.7, 0.0, 0.3]), np.array([[0.5, 0.2, 0.1], [0.0, 0.0, 0.0], [0.3, 1.0, 0.25]]),
          np.array([5000.0, 3.0, 4000.0]), [(), (0,), (1, 1)], np.array([2.5, 6.1, 1.0]),
          np.array([1.0, 3.0, 2.0]), [(0, 0.3, 2)]))
# Two steady batches 1e-6 apart: from t ~ 1000 on the time resolution (1e-9 relative) makes them end together.
@example((ONE, ONE[:, None], np.array([6000.0]), [()], np.array([2.5]), ONE, [(0, 0.5, 1), (0, 0.5 + 1e-6, 1)]))
# Nothing to launch at all, and a stage with no tasks whose children must still run.
@example((np.array([1.0, 2.0]), np.array([[1.0], [1.0]]), np.array([0.0, 7.0]), [(), (0,)], np.array([2.5]),
          np.array([0.0, 0.0]), []))
def test_compiled_pack_is_the_python_pack(dag: tuple) -> None:  # type: ignore[type-arg]
    # solver.sim.pack_compiled.run is pack's loop on arrays, compiled: the same floats and launches to the bit.
    from fairpack.solver.sim.pack_compiled import pack_compiled

    for record in (True, False):
        expected = pack(*dag, record=record)
        got = pack_compiled(*dag, record=record)
        assert got.makespan == expected.makespan or (np.isinf(got.makespan) and np.isinf(expected.makespan))
        assert got.launches == expected.launches
