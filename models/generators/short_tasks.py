"""Arrival streams for the decentralised and shared-state schedulers: Sparrow's short parallel jobs, Omega's
batch and service jobs. Every draw comes from ``numpy.random.default_rng(seed)``, in a fixed order.

* :func:`sparrow_jobs` -- ``machines`` workers of ``slots`` slots each (resource ``slot``; a task holds one
  slot); Poisson arrivals of jobs of ``tasks`` parallel tasks (no barriers), at a rate that keeps the
  offered load at ``load`` of the slots: ``rate = load * machines * slots / (tasks * mean_duration)``.
  Task durations are ``fixed`` (every task ``mean_duration``), ``exponential`` or ``lognormal`` (sigma
  ``LOGNORMAL_SIGMA``, coefficient of variation about 2.9), each with mean ``mean_duration``. With fixed
  durations a job is one stage of ``tasks`` tasks; otherwise every task is a stage of its own (a stage's
  tasks share one duration), all without parents, so the job is the same set of parallel tasks.
* :func:`omega_jobs` -- a cell of ``machines`` machines (``cpu`` and ``mem``); two Poisson streams over
  ``span`` seconds: *batch* jobs (tenant ``batch``: many short tasks) and *service* jobs (tenant
  ``service``: few long tasks). ``load`` is the offered load on the dominant resource (expected
  demand-time per second over the cell's capacity), ``service_share`` the part of it that is service
  work. Per job: tasks ``1 + Poisson(mean - 1)`` (at most ``MAX_TASKS_FRACTION`` of the machines' count
  times ``MAX_TASKS_PER_MACHINE``), one duration drawn from an exponential of the stream's mean, and a
  per-task demand drawn from the stream's shapes (``BATCH_SHAPES``, ``SERVICE_SHAPES``).

Times are rounded to microseconds (durations at least one), so an instance written to YAML reads back equal.
"""

from __future__ import annotations

import math

import numpy as np

from fairpack.models.types import FloatArray, Instance, InstanceError, Job, ServerClass, Stage

DURATIONS = ("fixed", "exponential", "lognormal")
#: Sigma of the log-normal task durations (coefficient of variation ``sqrt(exp(sigma^2) - 1)`` = 2.9).
LOGNORMAL_SIGMA = 1.5
#: Times are multiples of this (seconds).
TICK = 1e-6
TICK_DIGITS = 6
#: Omega cell machines: cpu cores and memory (GB).
OMEGA_MACHINE = (8.0, 32.0)
#: Per-task (cpu, mem) demands of batch and service jobs, one drawn per job (uniformly).
Shapes = tuple[tuple[float, float], ...]
BATCH_SHAPES: Shapes = ((0.5, 1.0), (1.0, 2.0), (1.0, 4.0), (2.0, 4.0))
SERVICE_SHAPES: Shapes = ((1.0, 4.0), (2.0, 8.0), (4.0, 8.0), (2.0, 16.0))
#: A job never has more tasks than this many per machine of the cell (keeps it placeable).
MAX_TASKS_PER_MACHINE = 2
MAX_TASKS_FRACTION = 0.5


def _ticks(values: FloatArray, least: float = 1.0) -> FloatArray:
    """Whole ticks (at least ``least`` of them), as the double nearest the decimal (YAML prints it short)."""
    ticks = np.maximum(np.round(np.asarray(values, dtype=np.float64) / TICK), least)
    return np.round(ticks * TICK, TICK_DIGITS)


def _arrivals(rng: np.random.Generator, rate: float, count: int) -> FloatArray:
    """``count`` Poisson arrival times at ``rate`` per second, the first one gap after 0."""
    return _ticks(np.cumsum(rng.exponential(1.0 / rate, size=count)), least=0.0)


def task_durations(rng: np.random.Generator, kind: str, mean: float, size: int) -> FloatArray:
    """``size`` durations of mean ``mean`` drawn as ``kind`` (:data:`DURATIONS`), in ticks."""
    if kind == "fixed":
        return _ticks(np.full(size, mean))
    if kind == "exponential":
        return _ticks(rng.exponential(mean, size=size))
    if kind == "lognormal":
        mu = math.log(mean) - LOGNORMAL_SIGMA**2 / 2  # E[exp(N(mu, s^2))] = exp(mu + s^2 / 2) = mean
        return _ticks(rng.lognormal(mu, LOGNORMAL_SIGMA, size=size))
    raise InstanceError(f"durations must be one of {', '.join(DURATIONS)}, got {kind!r}", "durations")


def sparrow_jobs(
    seed: int,
    machines: int = 100,
    slots: int = 4,
    tasks: int = 10,
    load: float = 0.8,
    jobs: int = 500,
    mean_duration: float = 0.1,
    durations: str = "exponential",
) -> Instance:
    """Sparrow-like short parallel jobs at offered load ``load`` (module docstring).

    Draws: the ``jobs`` inter-arrival gaps, then every job's task durations in job order.
    """
    if machines < 1 or slots < 1 or tasks < 1 or jobs < 1:
        raise InstanceError("machines, slots, tasks and jobs must be at least 1", "machines")
    if not (load > 0 and math.isfinite(load)):
        raise InstanceError(f"load must be positive, got {load!r}", "load")
    if not mean_duration > 0:
        raise InstanceError(f"mean_duration must be positive, got {mean_duration!r}", "mean_duration")
    rng = np.random.default_rng(seed)
    rate = load * machines * slots / (tasks * mean_duration)
    release = _arrivals(rng, rate, jobs)
    demand = np.ones(1)
    job_list = []
    for k in range(jobs):
        length = task_durations(rng, durations, mean_duration, tasks)
        if durations == "fixed":
            stages: tuple[Stage, ...] = (Stage("tasks", tasks, float(length[0]), demand),)
        else:
            stages = tuple(Stage(f"t{i}", 1, float(d), demand) for i, d in enumerate(length.tolist()))
        job_list.append(Job(f"j{k}", stages, 1.0, float(release[k])))
    worker = ServerClass("worker", np.array([float(slots)]), machines)
    name = f"sparrow-{machines}x{slots}-m{tasks}-load{load:g}-{durations}-s{seed}"
    return Instance(("slot",), (worker,), jobs=tuple(job_list), name=name)


def omega_jobs(
    seed: int,
    machines: int = 100,
    load: float = 0.6,
    span: float = 1800.0,
    service_share: float = 0.5,
    batch_tasks: float = 20.0,
    batch_duration: float = 60.0,
    service_tasks: float = 5.0,
    service_duration: float = 600.0,
) -> Instance:
    """Omega-like batch and service job streams over ``span`` seconds (module docstring).

    Draws: batch arrivals, then service arrivals (each a Poisson count over ``span``, then uniform times),
    then per job in release order its task count, duration and demand shape.
    """
    if machines < 1 or not span > 0:
        raise InstanceError("machines must be at least 1 and span positive", "machines")
    if not 0 <= service_share <= 1 or not load > 0:
        raise InstanceError("load must be positive and service_share within [0, 1]", "service_share")
    if min(batch_tasks, service_tasks) < 1 or min(batch_duration, service_duration) <= 0:
        raise InstanceError("task means must be at least 1 and durations positive", "batch_tasks")
    rng = np.random.default_rng(seed)
    capacity = np.array(OMEGA_MACHINE)
    most = max(1, int(MAX_TASKS_FRACTION * machines * MAX_TASKS_PER_MACHINE))
    streams: list[tuple[float, str, float, float, Shapes]] = []
    for kind, share, mean_tasks, mean_duration, shapes in (
        ("batch", 1.0 - service_share, batch_tasks, batch_duration, BATCH_SHAPES),
        ("service", service_share, service_tasks, service_duration, SERVICE_SHAPES),
    ):
        dominant = float(np.mean([np.max(np.array(s) / capacity) for s in shapes]))  # per task, of one machine
        work = mean_tasks * mean_duration * dominant  # expected machine-seconds of a job on its dominant resource
        rate = share * load * machines / work
        count = int(rng.poisson(rate * span)) if share > 0 else 0
        times = np.sort(rng.uniform(0.0, span, size=count))
        streams.extend((float(t), kind, mean_tasks, mean_duration, shapes) for t in times)
    streams.sort(key=lambda entry: entry[0])
    if not streams:
        raise InstanceError("the load and span give no job at all; raise them", "load")
    job_list = []
    for k, (release, kind, mean_tasks, mean_duration, shapes) in enumerate(streams):
        n = int(min(most, 1 + rng.poisson(mean_tasks - 1)))
        length = float(_ticks(np.array([rng.exponential(mean_duration)]))[0])
        shape = shapes[int(rng.integers(len(shapes)))]
        stage = Stage("tasks", n, length, np.array(shape, dtype=np.float64))
        arrival = float(_ticks(np.array([release]), least=0.0)[0])
        job_list.append(Job(f"{kind[0]}{k}", (stage,), 1.0, arrival, tenant=kind))
    cell = ServerClass("machine", capacity, machines)
    name = f"omega-{machines}m-load{load:g}-service{service_share:g}-s{seed}"
    return Instance(("cpu", "mem"), (cell,), jobs=tuple(job_list), name=name)
