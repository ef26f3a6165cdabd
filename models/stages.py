"""Every stage of an instance's jobs as flat arrays, built once per instance and shared by its readers.

The simulator's workload, the warnings, the job table and the schedule checker all need the same per-stage
numbers (job, tasks, duration, demand, parents) and per-job numbers (release, tasks in all, tenant). Each used to
walk ``Instance.jobs`` itself; on a million-job trace every walk costs about a second. :func:`stage_table` walks
once and caches the arrays in the (frozen) instance; a trace read in bulk (``models.traces``) hands over the
arrays it read, so a long one-stage trace is never walked at all (:func:`seed`).

Stages are numbered globally, jobs in instance order (the numbering of ``solver.sim.workload``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairpack.models.types import BoolArray, FloatArray, Instance, IntArray

_FIELDS = ("job", "local", "tasks", "duration", "demand", "release", "job_tasks", "offset", "edges", "weight",
           "deadline", "utility")


@dataclass(frozen=True)
class StageTable:
    """The instance's stages and jobs as arrays (read-only).

    Attributes
    ----------
    job, local : (stages,) int64
        The job of every stage and its index within the job.
    tasks : (stages,) int64
    duration : (stages,) float64
    demand : (stages, resources) float64
    release : (jobs,) float64
    job_tasks : (jobs,) int64
        Tasks of every job, over its stages.
    offset : (jobs + 1,) int64
        The first global stage of every job (and the number of stages last).
    edges : (edges, 2) int64
        Every precedence edge, ``(parent, child)`` in global stage numbers, jobs in order, a child's parents in
        its ``after`` order.
    weight, deadline : (jobs,) float64
    utility : (jobs,) bool
        Whether the job has utility points.
    """

    job: IntArray
    local: IntArray
    tasks: IntArray
    duration: FloatArray
    demand: FloatArray
    release: FloatArray
    job_tasks: IntArray
    offset: IntArray
    edges: IntArray
    weight: FloatArray
    deadline: FloatArray
    utility: BoolArray

    @property
    def stages(self) -> int:
        return int(self.job.size)

    @staticmethod
    def single(release: FloatArray, tasks: IntArray, duration: FloatArray, demand: FloatArray,
               deadline: FloatArray) -> StageTable:  # fmt: skip
        """One-stage jobs (a trace of one row per job), straight from their columns."""
        n = int(release.size)
        arange = np.arange(n, dtype=np.int64)
        tasks = np.asarray(tasks, dtype=np.int64)
        return StageTable(arange, np.zeros(n, dtype=np.int64), tasks, np.asarray(duration, dtype=np.float64),
                          np.asarray(demand, dtype=np.float64).reshape(n, -1), np.asarray(release, dtype=np.float64),
                          tasks.copy(), np.arange(n + 1, dtype=np.int64), np.zeros((0, 2), dtype=np.int64),
                          np.ones(n), np.asarray(deadline, dtype=np.float64), np.zeros(n, dtype=bool))  # fmt: skip

    @staticmethod
    def concat(first: StageTable, second: StageTable) -> StageTable:
        """``first``'s jobs, then ``second``'s (renumbered after them)."""
        jobs, stages = first.release.size, first.job.size
        if jobs == 0:  # (a trace on a cluster without jobs of its own: its arrays as they are, not a copy)
            return second
        return StageTable(np.concatenate([first.job, second.job + jobs]), np.concatenate([first.local, second.local]),
                          np.concatenate([first.tasks, second.tasks]),
                          np.concatenate([first.duration, second.duration]),
                          np.concatenate([first.demand, second.demand]),
                          np.concatenate([first.release, second.release]),
                          np.concatenate([first.job_tasks, second.job_tasks]),
                          np.concatenate([first.offset[:-1], second.offset + stages]),
                          np.concatenate([first.edges, second.edges + stages]),
                          np.concatenate([first.weight, second.weight]),
                          np.concatenate([first.deadline, second.deadline]),
                          np.concatenate([first.utility, second.utility]))  # fmt: skip


def _walk(instance: Instance) -> StageTable:
    """The table by one walk over the jobs."""
    jobs = instance.jobs
    counts = np.fromiter((len(job.stages) for job in jobs), dtype=np.int64, count=len(jobs))
    offset = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    stages = [stage for job in jobs for stage in job.stages]
    tasks = np.fromiter((s.tasks for s in stages), dtype=np.int64, count=len(stages))
    edges = [(int(offset[k]) + p, int(offset[k]) + s) for k, job in enumerate(jobs)
             for s, stage in enumerate(job.stages) for p in stage.after]  # fmt: skip
    job = np.repeat(np.arange(len(jobs), dtype=np.int64), counts)
    job_tasks = np.zeros(len(jobs), dtype=np.int64)
    np.add.at(job_tasks, job, tasks)
    return StageTable(
        job=job,
        local=np.arange(len(stages), dtype=np.int64) - np.repeat(offset[:-1], counts),
        tasks=tasks,
        duration=np.fromiter((s.duration for s in stages), dtype=np.float64, count=len(stages)),
        demand=np.array([s.demand for s in stages], dtype=np.float64).reshape(-1, len(instance.resources)),
        release=np.fromiter((j.release for j in jobs), dtype=np.float64, count=len(jobs)),
        job_tasks=job_tasks,
        offset=offset,
        edges=np.array(edges, dtype=np.int64).reshape(-1, 2),
        weight=np.fromiter((j.weight for j in jobs), dtype=np.float64, count=len(jobs)),
        deadline=np.fromiter((j.deadline for j in jobs), dtype=np.float64, count=len(jobs)),
        utility=np.fromiter((bool(j.utility) for j in jobs), dtype=bool, count=len(jobs)),
    )


def stage_table(instance: Instance) -> StageTable:
    """The instance's table (module docstring), built on the first call and cached in the instance."""
    if "stages.job" not in instance._arrays:
        seed(instance, _walk(instance))
    return StageTable(*(instance._arrays[f"stages.{name}"] for name in _FIELDS))


def seed(instance: Instance, table: StageTable) -> None:
    """Cache ``table`` as ``instance``'s (its caller knows it is the instance's jobs exactly)."""
    if table.release.size != len(instance.jobs):
        raise ValueError(f"a table of {table.release.size} jobs for an instance of {len(instance.jobs)}")
    for name in _FIELDS:
        instance._cached(f"stages.{name}", getattr(table, name))


def job_tenant_names(instance: Instance) -> list[str]:
    """Every job's tenant name (the job's own name when it names none), without making a trace's jobs."""
    names = getattr(instance.jobs, "tenant_names", None)
    return names() if callable(names) else [job.tenant or job.name for job in instance.jobs]


def job_tenants(instance: Instance) -> tuple[list[str], IntArray]:
    """Tenant names in order of first appearance and the tenant of every job (:func:`job_tenant_names`), cached
    in the instance."""
    if "tenants.codes" not in instance._arrays:
        numbered = getattr(instance.jobs, "tenant_codes", None)
        found = numbered() if callable(numbered) else None
        if found is None:
            index: dict[str, int] = {}
            names = job_tenant_names(instance)
            codes = np.fromiter((index.setdefault(name, len(index)) for name in names), dtype=np.int64,
                                count=len(names))  # fmt: skip
            found = (list(index), codes)
        instance._cached("tenants.names", np.array(found[0], dtype=object))
        instance._cached("tenants.codes", found[1])
    return list(instance._arrays["tenants.names"]), instance._arrays["tenants.codes"]
