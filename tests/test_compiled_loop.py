"""FIFO's compiled event loop (``solver.sim.compiled_loop``) gives the engine's schedule, bit for bit.

Random instances in its domain (one to three resources, a resource some machine classes lack, several machine
classes or the pooled cluster, DAG jobs of several multi-task stages, releases and durations on a grid so that
ends, releases and both coincide, demands repeated between groups, horizons) run in the engine with the FIFO
policy and in the compiled loop; every task's job, stage, index, start, end, server and machine must be equal, in
the same order, with the same event and launch counts and the same unfinished jobs. The pinned fingerprints of
``tests/test_sim_equivalence.py`` (the schedules recorded before any speed work) are the second oracle. Both
kernels run every case: the C extension (``solver/sim/_fifo_loop.pyx``, which the dev install builds) and numba's.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairpack.models.types import Instance, Job, ServerClass, Stage, Tenant
from fairpack.solver import api
from fairpack.solver.sim import run as sim_run
from fairpack.solver.sim.compiled_loop import KERNELS, CompiledRun, in_domain, kernel
from fairpack.solver.sim.engine import Simulation
from fairpack.solver.sim.policies.flat import Fifo
from fairpack.solver.sim.workload import Workload
from tests.test_sim_equivalence import PINNED, arrivals, fingerprint


def _instance(seed: int, resources: int, grid: bool) -> Instance:
    rng = np.random.default_rng(seed)
    names = ("cpu", "mem", "gpu")[:resources]
    servers = []
    for c in range(int(rng.integers(1, 4))):
        capacity = np.round(rng.uniform(2, 8, resources), 1)
        if resources > 1 and rng.random() < 0.3:
            capacity[-1] = 0.0
        servers.append(ServerClass(f"m{c}", capacity, int(rng.integers(1, 5))))
    top = np.array([s.capacity for s in servers]).max(axis=0)
    shapes = [np.round(rng.uniform(0.1, 0.6, resources) * top, 1) * (rng.random(resources) < 0.8)
              for _ in range(int(rng.integers(1, 4)))]  # fmt: skip
    jobs = []
    for k in range(int(rng.integers(1, 30))):
        stages = []
        for s in range(int(rng.integers(1, 4))):
            after = tuple(int(p) for p in range(s) if rng.random() < 0.5)
            duration = float(rng.integers(1, 4)) if grid else float(rng.exponential(2.0)) + 0.001
            demand = shapes[int(rng.integers(len(shapes)))]
            stages.append(Stage(f"s{s}", int(rng.integers(1, 6)), duration, demand, after))
        release = float(rng.integers(0, 6)) if grid else float(rng.uniform(0, 6))
        jobs.append(Job(f"j{k}", tuple(stages), 1.0, release, f"t{k % 3}"))
    return Instance(names, tuple(servers), jobs=tuple(jobs), name=f"c{seed}")


def _columns(run: Simulation | CompiledRun) -> list[np.ndarray]:
    schedule = run.schedule()
    columns = [schedule.job, schedule.stage, schedule.index, schedule.start, schedule.end]
    return columns + [c for c in (schedule.server, schedule.machine) if c is not None]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(seed=st.integers(0, 100_000), resources=st.integers(1, 3), grid=st.booleans(),
       pooled=st.booleans(), horizon=st.sampled_from([None, 3.0, 7.5]))  # fmt: skip
def test_the_compiled_loop_gives_the_engines_fifo_schedule(seed: int, resources: int, grid: bool, pooled: bool,
                                                          horizon: float | None) -> None:  # fmt: skip
    instance = _instance(seed, resources, grid)
    placement = "pooled" if pooled else "servers"
    try:
        jobs = Workload.of_jobs(instance, placement)
    except ValueError:  # a stage fits no machine: the simulator refuses it before any run
        return
    assert in_domain(instance, jobs, placement)
    engine = Simulation(instance, jobs, Fifo(), placement, horizon=horizon).run()
    for name in KERNELS:
        compiled = CompiledRun(instance, jobs, placement, horizon, kernel_name=name).run()
        for got, expected in zip(_columns(compiled), _columns(engine), strict=True):
            assert got.dtype == expected.dtype and np.array_equal(got, expected), name
        assert compiled.counters() == engine.counters(), name
        assert np.array_equal(compiled.unfinished(), engine.unfinished()), name


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("seed", [s for s in range(16) if all(t.tasks == float("inf") for t in arrivals(s).tenants)])
def test_the_compiled_loop_reproduces_the_pinned_fifo_schedules(seed: int, name: str) -> None:
    instance = arrivals(seed)
    jobs = Workload.of_jobs(instance, "servers")
    assert in_domain(instance, jobs, "servers")
    schedule = CompiledRun(instance, jobs, "servers", kernel_name=name).run().schedule()
    assert fingerprint(schedule) == PINNED[(seed, "fifo")]


def test_the_c_kernel_is_built_and_preferred() -> None:
    # The dev install builds the extension (setup.py); were it missing, every run above would have tested numba's
    # kernel twice and the simulator would pay numba's start-up cost.
    from fairpack.models import tolerance
    from fairpack.solver.sim import _fifo_loop, fifo_numba, fifo_state

    assert kernel("auto") is kernel("c") is _fifo_loop.slice_run
    assert kernel("numba") is fifo_numba.slice_run
    # The C code keeps its own copies of the tolerances and of the launch limit: they must be the engine's.
    assert _fifo_loop.TOLERANCES == (tolerance.FIT_EPS, tolerance.TIME_RTOL, tolerance.TIME_ATOL, fifo_state.MOST)
    with pytest.raises(ValueError, match="kernel must be one of"):
        kernel("fortran")


def test_what_the_compiled_loop_cannot_run_goes_to_the_engine() -> None:
    instance = _instance(3, 2, True)
    capped = replace(instance, tenants=(Tenant("t0", np.ones(2), 1.0, 2.0),))
    assert not in_domain(capped, Workload.of_jobs(capped, "servers"), "servers")  # a finite tenant cap
    jobs = Workload.of_jobs(instance, "servers")
    assert in_domain(instance, jobs, "servers")
    assert not in_domain(instance, replace(jobs, exponential=True), "servers")  # drawn durations
    assert not in_domain(instance, replace(jobs, kind="backlogs"), "servers")


def test_simulate_runs_fifo_compiled_at_every_size_with_the_c_kernel_and_from_a_size_with_numba_only(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    from fairpack.solver.sim import compiled_loop

    instance = _instance(11, 2, True)
    used: list[str] = []
    real = sim_run._compiled

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        made = real(*args, **kwargs)
        used.append("compiled" if made is not None else "engine")
        return made

    monkeypatch.setattr(sim_run, "_compiled", spy)
    with_c = api.simulate(instance, "fifo")  # a few dozen tasks: the C kernel beats the engine at any size
    other = api.simulate(instance, "first-fit")  # not FIFO: the engine
    monkeypatch.setattr(compiled_loop, "c_built", lambda: False)  # as where only numba's kernel is there
    small = api.simulate(instance, "fifo")
    monkeypatch.setattr(sim_run, "COMPILED_MIN_TASKS", 1)
    large = api.simulate(instance, "fifo")
    assert used == ["compiled", "engine", "engine", "compiled"]
    assert with_c.verified and small.verified and large.verified and other.verified
    assert fingerprint(small.schedule) == fingerprint(with_c.schedule) == fingerprint(large.schedule)


@pytest.mark.parametrize("name", KERNELS)
def test_a_deadline_already_past_stops_before_the_first_event(name: str) -> None:
    instance = _instance(5, 1, True)
    jobs = Workload.of_jobs(instance, "servers")
    run = CompiledRun(instance, jobs, "servers", deadline=0.0, kernel_name=name).run()
    assert run.stopped_at == 0.0 and run.schedule().job.size == 0
    assert run.unfinished().size == len(instance.jobs)


@pytest.mark.parametrize("name", KERNELS)
def test_row_buffers_grow_mid_event(name: str) -> None:
    # Many one-task groups released together on many machines: the first event launches more rows than the
    # initial buffers hold, so the loop returns mid-event, grows them and continues.
    servers = (ServerClass("m", np.array([1.0]), 64),)
    jobs = tuple(Job(f"j{k}", (Stage("s", 1, 1.0 + k % 3, np.array([1.0])),), 1.0, 0.0, "t") for k in range(200))
    instance = Instance(("cpu",), servers, jobs=jobs)
    workload = Workload.of_jobs(instance, "servers")
    compiled = CompiledRun(instance, workload, "servers", kernel_name=name)
    compiled._allocate(8)
    compiled.run()
    engine = Simulation(instance, workload, Fifo(), "servers").run()
    for got, expected in zip(_columns(compiled), _columns(engine), strict=True):
        assert np.array_equal(got, expected)


def test_a_bulk_read_trace_hands_over_the_stage_table_a_walk_over_its_jobs_builds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fairpack.models.stages import _walk, stage_table
    from fairpack.models.traces import read_trace

    path = tmp_path / "t.csv"
    path.write_text("arrival,duration,tenant,cpu,mem,tasks\n2,1.5,a,1,,2\n0,2,b,0.5,1,\n1,0,,2,0,3\n")
    base = _instance(7, 2, True)  # jobs of its own, with edges: the trace's are numbered after them
    trace = read_trace(path, base.resources)
    combined = trace.on(base)
    seeded, walked = stage_table(combined), _walk(combined)
    for name in ("job", "local", "tasks", "duration", "demand", "release", "job_tasks", "offset", "edges"):
        assert np.array_equal(getattr(seeded, name), getattr(walked, name)), name
    assert walked.edges.size  # the base instance's DAG edges are there


def test_a_parquet_trace_written_by_pandas_reads_in_columns_as_its_csv(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pandas as pd

    from fairpack.models.traces import TraceJobs, read_trace

    csv = tmp_path / "t.csv"
    csv.write_text("arrival,duration,tenant,cpu,mem,tasks\n2,1.5,a,1,,2\n0,2,b,0.5,1,1\n1,0,,2,0,3\n")
    parquet = tmp_path / "t.parquet"
    frame = pd.DataFrame({"arrival": [2.0, 0.0, 1.0], "duration": [1.5, 2.0, 0.0], "tenant": ["a", "b", None],
                          "cpu": [1.0, 0.5, 2.0], "mem": [None, 1.0, 0.0], "tasks": [2, 1, 3]})  # fmt: skip
    frame.to_parquet(parquet, index=False)  # tenant as large_string, with a null
    from_csv, from_parquet = read_trace(csv, ("cpu", "mem")), read_trace(parquet, ("cpu", "mem"))
    assert isinstance(from_parquet.jobs, TraceJobs) and isinstance(from_csv.jobs, TraceJobs)
    assert from_parquet.jobs == from_csv.jobs and from_parquet.jobs[1].tenant == "row3"  # in arrival order


def test_a_bulk_trace_numbers_its_tenants_as_a_walk_over_its_jobs_does(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fairpack.models.stages import job_tenant_names, job_tenants
    from fairpack.models.traces import read_trace

    path = tmp_path / "t.csv"
    path.write_text("arrival,duration,tenant,cpu\n5,1,z,1\n0,1,b,1\n1,1,z,1\n2,1,a,1\n3,1,b,1\n")
    instance = read_trace(path, ("cpu",)).on(Instance(("cpu",), (ServerClass("m", np.array([1.0]), 2),)))
    names = job_tenant_names(instance)
    walked = list(dict.fromkeys(names))
    assert job_tenants(instance)[0] == walked == ["b", "z", "a"]
    assert job_tenants(instance)[1].tolist() == [walked.index(n) for n in names]
