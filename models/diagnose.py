"""What a user should know about an instance before solving it: parts that cannot run, and why.

These are not errors (the instance is valid and methods handle them), but they change answers quietly,
so ``fairpack validate`` lists them and ``solve`` puts them in ``Result.warnings``.
"""

from __future__ import annotations

import math

import numpy as np

from fairpack.models.stages import stage_table
from fairpack.models.tolerance import FIT_EPS, TIME_RTOL, time_tol
from fairpack.models.types import BoolArray, Instance, InstanceError


def _names(items: list[str], most: int = 5) -> str:
    shown = ", ".join(repr(name) for name in items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def tenant_warnings(instance: Instance) -> list[str]:
    """Tenants that need a resource no server has, or whose task fits on no single machine."""
    warnings = []
    total = instance.total_capacity
    for i in np.flatnonzero(~instance.runnable).tolist():
        missing = [r for r, d, c in zip(instance.resources, instance.demand[i], total, strict=True) if d > 0 and c <= 0]
        warnings.append(f"tenant {instance.tenants[i].name!r} needs {', '.join(missing)}, which no server has: "
                        "it runs nothing, and the objective f leaves it out")  # fmt: skip
    unplaceable = [instance.tenants[i].name for i in np.flatnonzero(instance.runnable & ~instance.placeable)]
    if unplaceable:
        warnings.append(f"the task of tenant(s) {_names(unplaceable)} fits on no single machine: whole-task "
                        "methods (drfh-int and the heuristics) run none of it and leave it out of f; divisible "
                        "drf/drfh may still spread it over machines")  # fmt: skip
    return warnings


def _stage_names(instance: Instance, groups: np.ndarray) -> list[str]:
    """``job/stage`` of global stages ``groups`` (``models.stages`` numbering)."""
    table = stage_table(instance)
    names = []
    for g in groups.tolist():
        job = instance.jobs[int(table.job[g])]
        names.append(f"{job.name}/{job.stages[int(table.local[g])].name}")
    return names


def job_warnings(instance: Instance) -> list[str]:
    """DAG stages whose task fits on no single machine (``--placement servers`` refuses them)."""
    table = stage_table(instance)
    fits = np.all(table.demand[:, None, :] <= instance.capacity[None, :, :] * (1 + 1e-12), axis=2).any(axis=1)
    stages = _stage_names(instance, np.flatnonzero(~fits))
    if not stages:
        return []
    return [f"the task of stage(s) {_names(stages)} fits on no single machine: only the pooled placement can "
            "schedule them (--placement servers is refused)"]  # fmt: skip


def time_warnings(instance: Instance) -> list[str]:
    """Stages whose tasks are no longer than the time resolution (``models.tolerance``) at the latest time a
    schedule may reach (the last release plus every task's duration, at the slowest locality): there, an end
    and a start that close are one instant, so such a task's use of capacity is not resolved."""
    slowest, fastest = (max(instance.data.factors), min(instance.data.factors)) if instance.data else (1.0, 1.0)
    table = stage_table(instance)
    work = math.fsum((table.tasks * table.duration).tolist())
    span = float(table.release.max()) if table.release.size else 0.0
    span += slowest * work
    resolution = time_tol(span)
    short = _stage_names(instance, np.flatnonzero((fastest * table.duration > 0)
                                                 & (fastest * table.duration <= resolution)))  # fmt: skip
    if not short:
        return []
    return [f"the tasks of stage(s) {_names(short)} are no longer than the time resolution near the latest time "
            f"a schedule may reach ({span:.3g} x {TIME_RTOL:g} = {resolution:.3g}): there, ends and starts that "
            "close are one instant, so their use of capacity is not resolved"]  # fmt: skip


def instance_warnings(instance: Instance) -> list[str]:
    """Every warning about ``instance``."""
    return tenant_warnings(instance) + job_warnings(instance) + time_warnings(instance)


def placement_fits(instance: Instance, placement: str = "pooled") -> BoolArray:
    """Whether one task of every stage (global numbering, jobs in order) fits a unit of capacity.

    ``placement='pooled'``: the whole cluster, shape ``(stages, 1)``; ``'servers'``: one machine of
    every server class, shape ``(stages, classes)``.

    Raises
    ------
    InstanceError
        Naming the first stage whose task fits nowhere: its field ``jobs[k].stages[s].demand``.
    """
    if placement not in ("pooled", "servers"):
        raise ValueError(f"placement must be 'pooled' or 'servers', not {placement!r}")
    table = stage_table(instance)
    capacity = instance.total_capacity[None, :] if placement == "pooled" else instance.capacity
    fits: BoolArray = np.all(table.demand[:, None, :] <= capacity[None, :, :] * (1 + FIT_EPS), axis=2)
    if placement == "servers" and instance.has_option_demands:
        # A task of a stage with placement options runs under one of them, at that option's demand (the
        # loader checked each fits a machine its selector matches): the stage's own demand may fit nowhere.
        stages = [stage for job in instance.jobs for stage in job.stages]
        for g, stage in enumerate(stages):
            for o in range(len(stage.options)):
                under = stage.demand_under(o)
                fits[g] |= np.all(under[None, :] <= capacity * (1 + FIT_EPS), axis=1)
    bad = np.flatnonzero(~fits.any(axis=1))
    if bad.size:
        k, s = int(table.job[bad[0]]), int(table.local[bad[0]])
        stage = instance.jobs[k].stages[s]
        needs = ", ".join(f"{r} {v:g}" for r, v in zip(instance.resources, stage.demand, strict=True) if v > 0)
        where = (
            "more than the whole cluster has"
            if placement == "pooled"
            else "more than any one machine has (placement 'servers' runs every task on a single machine)"
        )
        raise InstanceError(f"a task of stage {stage.name!r} of job {instance.jobs[k].name!r} needs {needs}: "
                            f"{where}", f"jobs[{k}].stages[{s}].demand")  # fmt: skip
    return fits
