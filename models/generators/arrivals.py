"""Seeded arrival streams for the simulator: flat tenants' tasks, TPC-H query DAGs, a Google-like day.

All three return an ``Instance`` whose jobs carry their arrival as ``release`` and their tenant; the
simulator replays them (``fairpack simulate``).

* :func:`tenant_arrivals` -- every tenant submits task groups (one task shape per tenant, as in the DRFH
  paper's evaluation) as a Poisson process, or a bursty one (an on/off modulated Poisson process with the
  same mean rate); the rates are set so that the offered load of the cluster's busiest resource is
  ``load`` (1 = every resource-second offered equals what the cluster has).
* :func:`tpch_arrivals` -- Spark TPC-H query DAGs (``models.generators.jobs.tpch_jobs``) arriving as a
  Poisson process, on ``machines`` identical machines.
* :func:`google_day` -- **synthetic** tasks on machines drawn from the real Google 2011 machine table: the
  real task events of that trace are not available here, so the task stream is generated (users with one
  task shape each, Poisson arrivals of task groups over a day, lognormal durations). Say so wherever it is
  used.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from fairpack.models.generators.clusters import google_servers
from fairpack.models.generators.jobs import tpch_jobs
from fairpack.models.types import Instance, InstanceError, Job, ServerClass, Stage

#: The most task groups :func:`tenant_arrivals` makes (expected: its rate times the horizon). A group is one job
#: of about 170 bytes of YAML, so this many fill some 50 MiB, within what the loader reads back (64 MiB by
#: default, ``models.io.Limits.max_bytes``); a larger request is refused before anything is drawn (a horizon of
#: 3e6 once grew to 16.5 GB).
MAX_ARRIVAL_GROUPS = 300_000


def _shapes(rng: np.random.Generator, tenants: int, machine: np.ndarray, max_fraction: float) -> np.ndarray:
    """One task shape per tenant: every resource a little, one resource (its dominant one) more."""
    r = machine.size
    demand = rng.uniform(0.05, 0.3, size=(tenants, r)) * max_fraction * machine[None, :]
    dominant = rng.integers(0, r, size=tenants)
    demand[np.arange(tenants), dominant] = rng.uniform(0.3, 1.0, size=tenants) * max_fraction * machine[dominant]
    # Three significant decimals of the machine's size: exact models (spacetime-cp scales data to integers)
    # can then prove their optimum on the same arrivals, as a yardstick must.
    unit = 10.0 ** (np.floor(np.log10(np.where(machine > 0, machine, 1.0))) - 3)
    return np.asarray(np.maximum(np.round(demand / unit[None, :]), 1.0) * unit[None, :])


def _arrival_times(rng: np.random.Generator, rate: float, horizon: float, bursty: bool, period: float) -> np.ndarray:
    """Poisson arrivals of ``rate`` over ``[0, horizon)``; bursty: on/off periods (exponential, mean ``period``)
    with twice the rate when on and none when off (the same mean rate)."""
    if rate <= 0:
        return np.zeros(0)
    if not bursty:
        count = rng.poisson(rate * horizon)
        return np.sort(rng.uniform(0.0, horizon, size=count))
    times: list[np.ndarray] = []
    t, on = 0.0, bool(rng.integers(0, 2))
    while t < horizon:
        length = float(rng.exponential(period))
        end = min(t + length, horizon)
        if on:
            count = rng.poisson(2.0 * rate * (end - t))
            times.append(rng.uniform(t, end, size=count))
        t, on = end, not on
    return np.sort(np.concatenate(times)) if times else np.zeros(0)


def tenant_arrivals(
    servers: tuple[ServerClass, ...],
    resources: tuple[str, ...],
    tenants: int,
    seed: int,
    load: float = 0.9,
    horizon: float = 1000.0,
    mean_duration: float = 10.0,
    tasks_per_group: int = 1,
    bursty: bool = False,
    burst_period: float = 100.0,
    max_fraction: float = 0.1,
    name: str = "arrivals",
) -> Instance:
    """Flat tenants' task groups arriving over ``[0, horizon)`` (module docstring).

    Durations are exponential with mean ``mean_duration`` per group; a group has ``tasks_per_group`` tasks.
    """
    if not (tenants >= 1 and load > 0 and horizon > 0 and mean_duration > 0 and tasks_per_group >= 1):
        raise InstanceError("tenants, load, horizon, mean_duration and tasks_per_group must be positive", "arrivals")
    rng = np.random.default_rng(seed)
    capacity = np.array([s.capacity for s in servers])
    counts = np.array([s.count for s in servers])
    total = (capacity * counts[:, None]).sum(axis=0)
    shapes = _shapes(rng, tenants, capacity.max(axis=0), max_fraction)
    # Equal rates per tenant, so that the offered load of the busiest resource is `load`: a group comes
    # from each tenant with probability 1/tenants, so one group per time unit offers the *mean* shape.
    offered_per_rate = (shapes * tasks_per_group * mean_duration).mean(axis=0) / np.where(total > 0, total, np.inf)
    rate = load / float(offered_per_rate.max())  # groups per time unit, over all tenants
    expected = rate * horizon
    if not expected <= MAX_ARRIVAL_GROUPS:
        raise InstanceError(f"about {expected:,.0f} task groups ({rate:.4g} per time unit at load {load:g} over "
                            f"horizon {horizon:g}), more than the {MAX_ARRIVAL_GROUPS:,} an arrivals file holds "
                            "(what fairpack reads back); lower the horizon or the load, or raise mean_duration or "
                            "tasks_per_group", "horizon")  # fmt: skip
    jobs = []
    for t in range(tenants):
        times = _arrival_times(rng, rate / tenants, horizon, bursty, burst_period)
        lengths = rng.exponential(mean_duration, size=times.size)
        for k, (arrival, length) in enumerate(zip(times.tolist(), lengths.tolist(), strict=True)):
            stage = Stage("s0", tasks_per_group, round(max(length, 1e-3), 3), shapes[t])
            jobs.append(Job(f"u{t}-{k}", (stage,), 1.0, round(arrival, 3), f"u{t}"))
    jobs.sort(key=lambda job: (job.release, job.name))
    return Instance(resources, servers, jobs=tuple(jobs), name=f"{name}-s{seed}")


def tpch_arrivals(
    data_dir: str | Path,
    queries: int,
    seed: int,
    mean_interarrival: float = 30.0,
    machines: int = 100,
    cores: float = 20.0,
    memory: float = 128.0,
    size: str = "2g",
) -> Instance:
    """``queries`` TPC-H query DAGs (drawn with replacement when more than the size has) arriving as a
    Poisson process, on ``machines`` machines of ``cores`` cores and ``memory`` GB."""
    import json

    from fairpack.models.generators.jobs import TPCH_DIR

    summary = json.loads((Path(data_dir) / TPCH_DIR / "tpch_dag_summary.json").read_text())
    prefix = f"{size}-q"
    numbers = sorted(int(key[len(prefix):]) for key in summary if key.startswith(prefix))
    if queries < 1 or not numbers:
        raise InstanceError(f"queries must be at least 1 and size {size!r} must exist", "queries")
    rng = np.random.default_rng(seed)
    picked = rng.choice(numbers, size=queries, replace=queries > len(numbers))
    pooled = tpch_jobs(data_dir, [int(q) for q in picked], seed, size)
    arrivals = np.cumsum(rng.exponential(mean_interarrival, size=queries)) - mean_interarrival
    arrivals = np.maximum(arrivals, 0.0)
    jobs = tuple(Job(job.name, job.stages, job.weight, round(float(t), 3), job.name)
                 for job, t in zip(pooled.jobs, arrivals, strict=True))  # fmt: skip
    server = ServerClass("m", np.array([cores, memory]), machines)
    return Instance(pooled.resources, (server,), jobs=jobs, name=f"tpch-arrivals-{queries}-s{seed}")


def google_day(
    data_dir: str | Path,
    seed: int,
    machines: int = 2000,
    users: int = 100,
    tasks: int = 1_000_000,
    load: float = 0.95,
    horizon: float = 86_400.0,
    tasks_per_group: float = 10.0,
    max_fraction: float = 0.1,
) -> Instance:
    """A synthetic day of tasks on ``machines`` machines drawn from the real Google 2011 table (module
    docstring): about ``tasks`` tasks in groups of geometric size (mean ``tasks_per_group``), each user with
    one task shape; durations lognormal (sigma 1) with the mean that makes the offered load ``load``."""
    rng = np.random.default_rng(seed)
    servers = google_servers(data_dir, machines)
    capacity = np.array([s.capacity for s in servers])
    counts = np.array([s.count for s in servers])
    total = (capacity * counts[:, None]).sum(axis=0)
    shapes = _shapes(rng, users, capacity.max(axis=0), max_fraction)
    groups = max(1, round(tasks / tasks_per_group))
    user = rng.integers(0, users, size=groups)
    size = rng.geometric(1.0 / tasks_per_group, size=groups)
    arrival = np.sort(rng.uniform(0.0, horizon, size=groups))
    work = (shapes[user] * size[:, None]).sum(axis=0)  # resource per unit of duration, summed
    mean = load * horizon * float(np.min(total / np.where(work > 0, work, np.inf)))
    sigma = 1.0
    durations = rng.lognormal(math.log(mean) - sigma**2 / 2, sigma, size=groups)
    jobs = tuple(
        Job(f"g{k}", (Stage("s0", int(n), round(max(float(d), 1e-3), 3), shapes[u]),), 1.0, round(float(a), 3), f"u{u}")
        for k, (u, n, a, d) in enumerate(zip(user.tolist(), size.tolist(), arrival.tolist(), durations.tolist(),
                                              strict=True))
    )  # fmt: skip
    return Instance(("cpu", "mem"), servers, jobs=jobs, name=f"google-day-s{seed}")
