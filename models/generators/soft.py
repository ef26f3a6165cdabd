"""Tetrisched-style workloads: soft placement preferences, gangs and deadlines on a labelled, racked cluster.

:func:`soft_workload` draws, from ``numpy.random.default_rng(seed)`` in a fixed order:

* the cluster: ``racks`` racks (label ``rack: r<i>``) of ``per_rack`` one-slot machines (``cpu: 1``; a task
  holds a machine, as Tetrisched's nodes); the first ``gpu_racks`` racks hold ``gpus_per_rack`` GPU machines
  each (label ``gpu: "true"``);
* ``jobs`` single-stage jobs, each one of three kinds (shares ``gpu_share``, ``mpi_share``, the rest
  unconstrained), with a preferred duration ``d`` drawn uniformly from ``durations`` (whole time units):

  - GPU-preferring: 1-2 tasks, options ``[{on: {gpu: "true"}, duration: d}, {duration: ceil(gpu_slowdown d)}]``;
  - MPI, rack-preferring: 2 to ``per_rack`` tasks, options ``[{same: rack, duration: d},
    {duration: ceil(mpi_slowdown d)}]`` (a gang in one rack, or spread and slower);
  - unconstrained: 1-3 tasks of duration ``d`` anywhere;

* a share ``slo_share`` of the jobs are SLO jobs: a deadline ``release + round(slack d)`` with ``slack``
  uniform in ``[slack_low, slack_high]`` and a utility worth ``value`` until the deadline, falling to 0 one
  time unit later (Tetrisched's SLO jobs: all or nothing); the others are best-effort (no deadline, utility
  ``-JCT``);
* Poisson arrivals (whole time units) at a rate that makes the offered load, work at preferred durations over
  the cluster's machines, equal ``load``: mean gap ``sum(tasks x d) / (load x machines x jobs)``.
"""

from __future__ import annotations

import math

import numpy as np

from fairpack.models.types import Instance, Job, Option, ServerClass, Stage

KINDS = ("gpu", "mpi", "plain")


def _cluster(racks: int, per_rack: int, gpu_racks: int, gpus_per_rack: int) -> tuple[ServerClass, ...]:
    servers = []
    for r in range(racks):
        gpus = gpus_per_rack if r < gpu_racks else 0
        if gpus:
            servers.append(ServerClass(f"r{r}-gpu", np.ones(1), gpus, (("gpu", "true"), ("rack", f"r{r}"))))
        if per_rack - gpus:
            servers.append(ServerClass(f"r{r}", np.ones(1), per_rack - gpus, (("rack", f"r{r}"),)))
    return tuple(servers)


def _stage(kind: str, tasks: int, d: int, gpu_slowdown: float, mpi_slowdown: float) -> Stage:
    demand = np.ones(1)
    if kind == "gpu":
        options = (Option(float(d), (("gpu", "true"),)), Option(float(math.ceil(gpu_slowdown * d))))
        return Stage("run", tasks, float(d), demand, options=options)
    if kind == "mpi":
        options = (Option(float(d), (), "rack"), Option(float(math.ceil(mpi_slowdown * d))))
        return Stage("run", tasks, float(d), demand, options=options)
    return Stage("run", tasks, float(d), demand)


def soft_workload(seed: int = 0, jobs: int = 30, racks: int = 4, per_rack: int = 4, gpu_racks: int = 2,
                  gpus_per_rack: int = 2, load: float = 0.9, gpu_share: float = 1 / 3, mpi_share: float = 1 / 3,
                  slo_share: float = 0.7, durations: tuple[int, int] = (2, 6), gpu_slowdown: float = 2.5,
                  mpi_slowdown: float = 1.5, slack_low: float = 1.5, slack_high: float = 3.0,
                  value: float = 100.0) -> Instance:  # fmt: skip
    """A seeded Tetrisched-style workload (module docstring)."""
    if not (jobs >= 1 and racks >= 1 and per_rack >= 2 and 0 <= gpu_racks <= racks and 0 <= gpus_per_rack
            <= per_rack and load > 0):  # fmt: skip
        raise ValueError("need jobs >= 1, racks >= 1, per_rack >= 2, gpu racks and GPUs within the cluster, load > 0")
    if gpu_racks * gpus_per_rack == 0:
        gpu_share = 0.0
    rng = np.random.default_rng(seed)
    kind = rng.choice(len(KINDS), size=jobs, p=[gpu_share, mpi_share, 1 - gpu_share - mpi_share])
    preferred = rng.integers(durations[0], durations[1] + 1, size=jobs)
    tasks = np.where(kind == 0, rng.integers(1, 3, size=jobs),
                     np.where(kind == 1, rng.integers(2, per_rack + 1, size=jobs), rng.integers(1, 4, size=jobs)))
    slo = rng.random(jobs) < slo_share
    slack = rng.uniform(slack_low, slack_high, size=jobs)
    machines = racks * per_rack
    gap = float((tasks * preferred).sum()) / (load * machines * jobs)
    release = np.round(np.cumsum(rng.exponential(gap, size=jobs)) - gap).clip(min=0)
    built = []
    for k in range(jobs):
        stage = _stage(KINDS[int(kind[k])], int(tasks[k]), int(preferred[k]), gpu_slowdown, mpi_slowdown)
        deadline = float(release[k] + max(1, round(slack[k] * preferred[k])))
        fields = {"deadline": deadline, "utility": ((deadline, value), (deadline + 1.0, 0.0))} if slo[k] else {}
        built.append(Job(f"{KINDS[int(kind[k])]}{k}{'-slo' if slo[k] else ''}", (stage,), 1.0,
                         float(release[k]), **fields))  # type: ignore[arg-type]  # fmt: skip
    return Instance(("cpu",), _cluster(racks, per_rack, gpu_racks, gpus_per_rack), jobs=tuple(built),
                    name=f"soft-s{seed}")  # fmt: skip
