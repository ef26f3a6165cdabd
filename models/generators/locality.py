"""Seeded HDFS-like data placement on a racked cluster, and MapReduce jobs that read it (delay scheduling).

The cluster: ``racks`` racks of equal machines (one server class per rack, labelled ``rack: rN``), each
machine with ``slots`` task slots (the resource ``slot``). Every job is a map stage of ``tasks`` tasks,
task ``i`` reading its own block ``<job>-b<i>``, optionally followed by a reduce stage. Blocks are placed
as HDFS's default policy does (``replicas`` = 3): the first copy on a random machine (the writer's, on
its "local" rack), the other two on two distinct random machines of one other random rack.

Job sizes follow the shape of the Facebook workload of Zaharia et al. (EuroSys'10, Table 3: most jobs
have one or a few map tasks, a few have hundreds): map counts drawn from ``SIZES`` with ``SIZE_WEIGHTS``
(capped at ``max_tasks``); arrivals are a Poisson process with mean gap ``interarrival`` (rounded to 0.1); every job
belongs to one of ``users`` tenants, uniformly.
"""

from __future__ import annotations

import numpy as np

from fairpack.models.types import RACK_LABEL, DataPlacement, Instance, InstanceError, Job, ServerClass, Stage

#: Map-task counts of the job-size bins and how often each is drawn (the Facebook bins' shape: 1, 2,
#: 3-20, 21-60, 61-150, 151-300, 301-500 maps with the paper's job shares 39/16/14/9/6/6/4 %, the rest
#: of the probability on 501+ folded into the largest bin).
SIZES = (1, 2, 10, 50, 100, 200, 400)
SIZE_WEIGHTS = (0.39, 0.16, 0.14, 0.09, 0.06, 0.06, 0.10)


def hdfs_cluster(racks: int, machines: int, slots: int) -> tuple[ServerClass, ...]:
    """``machines`` machines spread evenly over ``racks`` racks (one class per rack), ``slots`` slots each."""
    if racks < 2:
        raise InstanceError(f"HDFS placement needs at least 2 racks, got {racks}", "racks")
    if machines < 2 * racks:
        raise InstanceError(f"{machines} machines for {racks} racks: at least 2 per rack are needed", "machines")
    if slots < 1:
        raise InstanceError(f"slots must be at least 1, got {slots}", "slots")
    per_rack = [machines // racks + (1 if r < machines % racks else 0) for r in range(racks)]
    return tuple(ServerClass(f"rack{r}", np.array([float(slots)]), n, ((RACK_LABEL, f"r{r}"),))
                 for r, n in enumerate(per_rack))  # fmt: skip


def hdfs_replicas(servers: tuple[ServerClass, ...], blocks: int, rng: np.random.Generator,
                  replicas: int = 3) -> list[tuple[int, ...]]:  # fmt: skip
    """Replica machines (global indices) of ``blocks`` blocks: one on a random machine, the rest on distinct
    random machines of one other random rack (HDFS's default placement)."""
    counts = np.array([s.count for s in servers])
    first = np.concatenate([[0], np.cumsum(counts)])[:-1]
    rack_of = np.repeat(np.arange(counts.size), counts)
    placed = []
    writers = rng.integers(0, int(counts.sum()), size=blocks)
    for writer in writers.tolist():
        other = int(rng.integers(0, counts.size - 1))
        other += other >= rack_of[writer]  # any rack but the writer's
        extra = min(replicas - 1, int(counts[other]))
        picks = rng.choice(int(counts[other]), size=extra, replace=False) + first[other]
        placed.append((writer, *sorted(int(m) for m in picks)))
    return placed


def hdfs_jobs(seed: int, jobs: int = 50, machines: int = 40, racks: int = 4, slots: int = 4, users: int = 4,
              interarrival: float = 2.0, map_duration: float = 10.0, reduce_tasks: int = 0,
              reduce_duration: float = 10.0, max_tasks: int = 400,
              locality: tuple[float, float, float] = (1.0, 1.3, 2.0)) -> Instance:  # fmt: skip
    """A seeded multi-user MapReduce workload on an HDFS-placed, racked cluster (module docstring)."""
    if jobs < 1 or users < 1 or max_tasks < 1:
        raise InstanceError("jobs, users and max_tasks must be at least 1", "jobs")
    rng = np.random.default_rng(seed)
    servers = hdfs_cluster(racks, machines, slots)
    sizes = np.minimum(rng.choice(SIZES, size=jobs, p=np.array(SIZE_WEIGHTS) / sum(SIZE_WEIGHTS)), max_tasks)
    gaps = rng.exponential(interarrival, size=jobs)
    release = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    owner = rng.integers(0, users, size=jobs)
    names: list[str] = []
    job_list = []
    demand = np.array([1.0])
    for k in range(jobs):
        tasks = int(sizes[k])
        blocks = [f"j{k}-b{i}" for i in range(tasks)]
        names.extend(blocks)
        stages = [Stage("map", tasks, float(map_duration), demand, (), tuple(blocks))]
        if reduce_tasks > 0:
            stages.append(Stage("reduce", reduce_tasks, float(reduce_duration), demand, (0,)))
        job_list.append(Job(f"j{k}", tuple(stages), 1.0, round(float(release[k]), 1), f"user{owner[k]}"))
    replicas = hdfs_replicas(servers, len(names), rng)
    data = DataPlacement(tuple(names), tuple(replicas), locality)
    return Instance(("slot",), servers, jobs=tuple(job_list), data=data, name=f"hdfs-{jobs}j-s{seed}")


def locality_probe(seed: int, probes: int = 400, machines: int = 20, holders: int = 2, gap: float = 2.0,
                   background_mean: float = 1.0, probe_duration: float = 0.01) -> Instance:  # fmt: skip
    """The set-up of the delay-scheduling analysis: single-task probe jobs in a full cluster.

    ``machines`` one-slot machines (two racks) are kept full by a background job of one-task stages with
    independent exponential durations (mean ``background_mean``; no input), so by memorylessness every
    slot that frees is on a uniformly random machine, independently of the past. Probe job ``i`` arrives
    at ``gap * (i + 1)`` with one task reading a block held by ``holders`` random machines (``p =
    holders / machines``); its task runs ``probe_duration``. ``gap`` should leave time for a probe to launch
    before the next arrives (it sees about ``machines / background_mean`` offers per time unit).
    """
    if not 0 < holders <= machines:
        raise InstanceError(f"holders must be in 1..{machines}, got {holders}", "holders")
    rng = np.random.default_rng(seed)
    servers = (ServerClass("left", np.array([1.0]), machines // 2, ((RACK_LABEL, "r0"),)),
               ServerClass("right", np.array([1.0]), machines - machines // 2, ((RACK_LABEL, "r1"),)))  # fmt: skip
    horizon = gap * (probes + 2)
    count = int(horizon * machines / background_mean * 1.2) + 10 * machines  # enough to stay full past the end
    one = np.array([1.0])
    lengths = rng.exponential(background_mean, size=count)
    # Lengths on a grid of 1/1000 of the mean: distinct task ends are then far more than the simulator's
    # time tolerance apart (relative 1e-9 of the clock), so no two ends are merged into one event.
    grid = background_mean / 1000
    background = Job("background", tuple(Stage(f"s{i}", 1, grid * max(1, round(float(d) / grid)), one)
                                          for i, d in enumerate(lengths.tolist())))  # fmt: skip
    names = tuple(f"x{i}" for i in range(probes))
    replicas = tuple(tuple(sorted(int(m) for m in rng.choice(machines, size=holders, replace=False)))
                     for _ in range(probes))  # fmt: skip
    probe_jobs = tuple(Job(f"probe{i}", (Stage("read", 1, probe_duration, one, (), (names[i],)),), 1.0,
                           gap * (i + 1)) for i in range(probes))  # fmt: skip
    data = DataPlacement(names, replicas, (1.0, 1.0, 1.0))
    return Instance(("slot",), servers, jobs=(background, *probe_jobs), data=data, name=f"locality-probe-s{seed}")
