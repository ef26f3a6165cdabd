"""The fair completion times ``T_k``: when each job finishes in the fair-share schedule itself.

The fair-share schedule runs the jobs present at each moment under their DRF shares (Carbyne's inter-job
scheduler, :func:`fairpack.solver.sim.shares.drf_shares`), releases included, on the same placement model as the
method it is for (the pooled cluster, or every task on one machine): it is the ``drf-strict`` policy of
:mod:`fairpack.solver.sim.policies.dag`. Every job is held to its share; a job running nothing may launch one task
larger than its share, as a real fair scheduler would offer it whatever it can use, so every job finishes
and ``T_k`` is always a number. Because the schedule exists, ``C_k <= T_k`` for every job at once is
always feasible, and the schedule is a warm start for the exact methods.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fairpack.models.result import Schedule
from fairpack.models.types import FloatArray, Instance, InstanceError
from fairpack.solver.sim.engine import Observer, Simulation
from fairpack.solver.sim.policies.dag import DrfStrict
from fairpack.solver.sim.shares import drf_shares
from fairpack.solver.sim.workload import Workload

__all__ = ["FairShare", "drf_shares", "fair_completion_times", "given_completion_times"]


@dataclass(frozen=True)
class FairShare:
    """Fair completion times and the schedule that realises them.

    Attributes
    ----------
    completion : array (jobs,)
        ``T_k``: the job's completion in the ``drf-strict`` schedule.
    share : array (jobs, resources)
        ``A_k`` at the job's arrival, among the jobs present then (fractions of each resource).
    schedule : Schedule
        The ``drf-strict`` schedule (a witness that every ``T_k`` can be met at once).
    placement : str
        ``pooled`` or ``servers``.
    """

    completion: FloatArray
    share: FloatArray
    schedule: Schedule
    placement: str

    @property
    def method(self) -> tuple[str, ...]:
        return ("drf-strict",) * int(self.completion.size)


def fair_completion_times(instance: Instance, placement: str = "pooled", jobs: Workload | None = None,
                          observers: Sequence[Observer] = (), deadline: float | None = None) -> FairShare:  # fmt: skip
    """``T_k`` of every job: its completion under ``drf-strict`` on ``placement`` (module docstring).

    ``observers`` watch the run (an observer may stop it by raising, e.g. at a time limit); past
    ``deadline`` (a ``time.perf_counter()`` value) the run stops and unfinished jobs get ``T_k = inf``.
    """
    jobs = jobs or Workload.of_jobs(instance, placement)
    jobs.refuse_gangs(instance, "the fair-share schedule (drf-strict)")
    sim = Simulation(instance, jobs, DrfStrict(jobs), placement, observers=observers, deadline=deadline).run()
    work = jobs.work()
    share = np.zeros_like(work)
    finished = sim.completion
    for k in range(jobs.num_jobs):
        r = jobs.release[k]
        present = (jobs.release <= r) & ((jobs.release == r) | (finished > r))
        share[k] = drf_shares(work, jobs.weight, present)[k]
    return FairShare(sim.completion.copy(), share, sim.schedule(), placement)


def given_completion_times(instance: Instance, times: Mapping[str, float | None]) -> FloatArray:
    """Given ``T_k`` (job name -> time) as an array over the instance's jobs; a job not named, or named with
    ``None``, has no fair completion time (``inf``). An unknown name is an ``InstanceError`` naming it."""
    index = {job.name: k for k, job in enumerate(instance.jobs)}
    completion = np.full(len(instance.jobs), np.inf)
    for name, value in times.items():
        if name not in index:
            raise InstanceError(f"unknown job {name!r}", f"fair_completion.{name}")
        completion[index[name]] = math.inf if value is None else float(value)
    return completion
